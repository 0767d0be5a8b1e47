"""AG-UI over SSE: ``POST /agui`` takes a ``RunAgentInput`` and streams AG-UI events (camelCase JSON).

Events: RUN_STARTED; per model turn (STEP_STARTED / STEP_FINISHED when the server runs tools) the lazily opened
channels REASONING_START, REASONING_MESSAGE_START{role: "reasoning"} / _CONTENT / _END, REASONING_END;
TEXT_MESSAGE_START{role: "assistant"} / _CONTENT / _END; TOOL_CALL_START{toolCallId, toolCallName,
parentMessageId} / TOOL_CALL_ARGS / TOOL_CALL_END, each closed when the model switches channel, never an empty
delta; TOOL_CALL_RESULT for each tool the server ran; then RUN_FINISHED{threadId, runId, usage}, or RUN_ERROR
{message, code}. Framing is the one SSE framing (``data:`` lines, LF only), which ``@ag-ui/client`` needs.

Input: ``messages`` (roles developer/system/user/assistant/tool; ``toolCalls`` and ``toolCallId`` camelCase;
activity and reasoning messages are skipped), ``tools`` ({name, description, parameters}: the client runs them),
``context`` (added to the system prompt as "description: value" lines); ``state`` is accepted and ignored.

Structured runs (state): when ``forwardedProps.response_format`` is an OpenAI ``json_schema`` (or
``json_object``) response format, the model's JSON output is streamed as agent state instead of a text
message: RUN_STARTED, CUSTOM{name: "turnkit.stream", value: {id, token}} (the sync stream's id: the run goes on
without the connection and can be read at ``GET /v1/streams/{id}/events``), STATE_SNAPSHOT (``{}`` before
anything), STATE_DELTA{delta} per patch (RFC 6902 only: turnkit's ``append`` downgraded to ``replace`` of the
whole string, a value added before it is replaced), then RUN_FINISHED{result: the validated value} or
RUN_ERROR{message, code}. ``forwardedProps.transform`` names a registered transform, ``forwardedProps.markers``
adds ``$partial`` markers.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from turnkit.agent import AgentEvent, StepDelta, StepFinished, StepStarted, ToolResult
from turnkit.serve._chat import ChatRequest
from turnkit.serve._errors import BadRequestError, ServeError
from turnkit.serve._gateway import Gateway
from turnkit.serve._http import read_json_body, unless_disconnected
from turnkit.serve._loop import start_loop
from turnkit.serve._segments import Segment, Segmenter, new_id
from turnkit.serve._sse import sse_event, sse_response
from turnkit.serve._sync import SyncRun

__all__ = ["encode_event", "parse_run_input", "routes", "stream_events"]

_ROLES = ("developer", "system", "user", "assistant", "tool")
_SKIPPED_ROLES = ("activity", "reasoning")


def _get(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    return obj[camel] if camel in obj else obj.get(snake)


def _content(content: Any, where: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            if not isinstance(part, Mapping) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise BadRequestError("only text content parts are supported (text-only models)", param=f"{where}[{j}]")
            texts.append(part["text"])
        return "\n".join(texts)
    raise BadRequestError("content must be a string or a list of text parts", param=where)


def _message(message: Any, where: str) -> dict[str, Any] | None:
    if not isinstance(message, Mapping):
        raise BadRequestError("a message must be an object", param=where)
    role = message.get("role")
    if role in _SKIPPED_ROLES:
        return None
    if role not in _ROLES:
        raise BadRequestError(f"unknown role {role!r}", param=f"{where}.role")
    out: dict[str, Any] = {"role": role, "content": _content(message.get("content"), f"{where}.content")}
    if role == "assistant":
        calls = _get(message, "toolCalls", "tool_calls")
        if calls:
            if not isinstance(calls, list):
                raise BadRequestError("toolCalls must be a list", param=f"{where}.toolCalls")
            out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = _get(message, "toolCallId", "tool_call_id")
        error = message.get("error")
        if not out["content"] and isinstance(error, str):
            out["content"] = f"Error: {error}"
    if isinstance(message.get("name"), str):
        out["name"] = message["name"]
    return out


def _tools(tools: Any) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise BadRequestError("tools must be a list", param="tools")
    out = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str) or not tool["name"]:
            raise BadRequestError("a tool needs a name (a non-empty string)", param=f"tools[{i}].name")
        function: dict[str, Any] = {"name": tool["name"]}
        if isinstance(tool.get("description"), str):
            function["description"] = tool["description"]
        parameters = tool.get("parameters")
        if parameters is not None:
            if not isinstance(parameters, Mapping):
                raise BadRequestError("parameters must be a JSON schema object", param=f"tools[{i}].parameters")
            function["parameters"] = dict(parameters)
        out.append({"type": "function", "function": function})
    return out or None


def _with_context(messages: list[dict[str, Any]], context: Any) -> list[dict[str, Any]]:
    if not context:
        return messages
    if not isinstance(context, list):
        raise BadRequestError("context must be a list", param="context")
    lines = []
    for i, item in enumerate(context):
        if not isinstance(item, Mapping) or not isinstance(item.get("description"), str):
            raise BadRequestError("a context entry needs description and value", param=f"context[{i}]")
        value = item.get("value")
        lines.append(f"{item['description']}: {value if isinstance(value, str) else json.dumps(value)}")
    text = "Context:\n" + "\n".join(lines)
    if messages and messages[0]["role"] in ("system", "developer") and isinstance(messages[0]["content"], str):
        return [{**messages[0], "content": messages[0]["content"] + "\n\n" + text}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def parse_run_input(body: Any) -> tuple[ChatRequest, str, str]:
    """A ``RunAgentInput`` body → (ChatRequest, threadId, runId); every fault is a 400 naming its field."""
    if not isinstance(body, dict):
        raise BadRequestError("the request body must be a JSON object (RunAgentInput)")
    thread_id = _get(body, "threadId", "thread_id") or new_id("thread")
    run_id = _get(body, "runId", "run_id") or new_id("run")
    if not isinstance(thread_id, str) or not isinstance(run_id, str):
        raise BadRequestError("threadId and runId must be strings", param="threadId")
    raw = body.get("messages")
    if not isinstance(raw, list):
        raise BadRequestError("messages must be a list", param="messages")
    messages = [m for i, message in enumerate(raw) if (m := _message(message, f"messages[{i}]")) is not None]
    messages = _with_context(messages, body.get("context"))
    if not messages:
        raise BadRequestError("messages must not be empty", param="messages")
    return ChatRequest(messages=messages, tools=_tools(body.get("tools"))), thread_id, run_id


def encode_event(event: dict[str, Any]) -> bytes:
    """One AG-UI event as an SSE ``data:`` frame."""
    return sse_event(json.dumps(event, ensure_ascii=False, separators=(",", ":")))


class _Mapper:
    """Agent events → AG-UI event dicts for one run."""

    def __init__(self, steps: bool) -> None:
        self.steps = steps
        self.segments = Segmenter()
        self.message_id = new_id("msg")
        self.text_ids: dict[str, str] = {}
        self.used_message_id = False
        self.input_tokens = 0
        self.output_tokens = 0
        self.usage_seen = False

    def _segment(self, seg: Segment) -> list[dict[str, Any]]:
        if seg.kind == "reasoning":
            if seg.action == "open":
                return [
                    {"type": "REASONING_START", "messageId": seg.id},
                    {"type": "REASONING_MESSAGE_START", "messageId": seg.id, "role": "reasoning"},
                ]
            if seg.action == "delta":
                return [{"type": "REASONING_MESSAGE_CONTENT", "messageId": seg.id, "delta": seg.text}]
            return [
                {"type": "REASONING_MESSAGE_END", "messageId": seg.id},
                {"type": "REASONING_END", "messageId": seg.id},
            ]
        if seg.kind == "text":
            if seg.action == "open":
                mid = new_id("msg") if self.used_message_id else self.message_id
                self.used_message_id = True
                self.text_ids[seg.id] = mid
                return [{"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"}]
            mid = self.text_ids[seg.id]
            if seg.action == "delta":
                return [{"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": seg.text}]
            return [{"type": "TEXT_MESSAGE_END", "messageId": mid}]
        if seg.action == "open":
            self.used_message_id = True
            return [
                {
                    "type": "TOOL_CALL_START",
                    "toolCallId": seg.id,
                    "toolCallName": seg.name,
                    "parentMessageId": self.message_id,
                }
            ]
        if seg.action == "delta":
            return [{"type": "TOOL_CALL_ARGS", "toolCallId": seg.id, "delta": seg.text}]
        return [{"type": "TOOL_CALL_END", "toolCallId": seg.id}]

    def _close(self) -> list[dict[str, Any]]:
        return [e for seg in self.segments.close() for e in self._segment(seg)]

    def map(self, event: AgentEvent) -> list[dict[str, Any]]:
        if isinstance(event, StepStarted):
            self.segments = Segmenter()
            self.message_id = new_id("msg")
            self.used_message_id = False
            return [{"type": "STEP_STARTED", "stepName": f"step {event.step}"}] if self.steps else []
        if isinstance(event, StepDelta):
            return [e for seg in self.segments.feed(event.delta) for e in self._segment(seg)]
        if isinstance(event, ToolResult):
            return [
                *self._close(),
                {
                    "type": "TOOL_CALL_RESULT",
                    "messageId": new_id("msg"),
                    "toolCallId": event.call_id,
                    "content": event.content,
                    "role": "tool",
                },
            ]
        if isinstance(event, StepFinished):
            usage = event.usage
            if usage is not None:
                self.usage_seen = True
                self.input_tokens += int(getattr(usage, "prompt_tokens", 0))
                self.output_tokens += int(getattr(usage, "completion_tokens", 0))
            out = self._close()
            if self.steps:
                out.append({"type": "STEP_FINISHED", "stepName": f"step {event.step}"})
            return out
        return []

    def usage(self) -> list[dict[str, int]] | None:
        if not self.usage_seen:
            return None
        return [
            {
                "inputTokens": self.input_tokens,
                "outputTokens": self.output_tokens,
                "totalTokens": self.input_tokens + self.output_tokens,
            }
        ]


async def stream_events(
    events: AsyncIterator[AgentEvent], thread_id: str, run_id: str, *, steps: bool
) -> AsyncIterator[dict[str, Any]]:
    """The AG-UI events of one run (dicts in wire form), RUN_STARTED to RUN_FINISHED or RUN_ERROR."""
    mapper = _Mapper(steps)
    yield {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id}
    try:
        async for event in events:
            for out in mapper.map(event):
                yield out
    except ServeError as exc:
        yield {"type": "RUN_ERROR", "message": exc.message, "code": exc.code}
        return
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
    finished: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id}
    usage = mapper.usage()
    if usage is not None:
        finished["usage"] = usage
    yield finished


async def _frames(events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    try:
        async for event in events:
            yield encode_event(event)
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


def structured_request(body: Any) -> tuple[dict[str, Any], str | None, bool] | None:
    """``(response_format, transform, markers)`` when ``forwardedProps`` asks for a structured (state) run."""
    props = _get(body, "forwardedProps", "forwarded_props") if isinstance(body, Mapping) else None
    if not isinstance(props, Mapping) or props.get("response_format") is None:
        return None
    fmt = props["response_format"]
    if not isinstance(fmt, Mapping):
        raise BadRequestError("response_format must be an object", param="forwardedProps.response_format")
    transform = props.get("transform")
    return dict(fmt), transform, props.get("markers") in (True, 1, "1", "true")


async def state_events(run: SyncRun, thread_id: str, run_id: str) -> AsyncIterator[dict[str, Any]]:
    """A structured run as AG-UI state events (RUN_STARTED ... RUN_FINISHED / RUN_ERROR)."""
    yield {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id}
    yield {"type": "CUSTOM", "name": "turnkit.stream", "value": {"id": run.id, "token": run.token}}
    sub = run.subscribe(None, protocol="json-patch")
    try:
        async for event in sub:
            if event.kind == "snapshot":
                yield {"type": "STATE_SNAPSHOT", "snapshot": {} if event.payload is None else event.payload}
            elif event.kind == "patch":
                yield {"type": "STATE_DELTA", "delta": event.payload}
            elif "error" in event.payload:
                error = event.payload["error"]
                yield {"type": "RUN_ERROR", "message": error.get("message", ""), "code": error.get("code")}
            else:
                yield {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id, "result": event.payload["value"]}
    finally:
        sub.close()


def routes(gateway: Gateway) -> list[Route]:
    """``POST /agui``."""
    from turnkit.serve.protocols.sync import start_structured_run, structured_source, sync_registry

    async def agui(request: Request) -> Response:
        body = await read_json_body(request)
        chat, thread_id, run_id = parse_run_input(body)
        structured = structured_request(body)
        if structured is not None:
            fmt, transform, markers = structured
            registry = sync_registry(gateway)
            source = structured_source(fmt, transform, registry, where="forwardedProps.")
            chat = dataclasses.replace(chat, response_format=fmt)
            run = await start_structured_run(gateway, chat, source, registry=registry, markers=markers)
            return sse_response(_frames(state_events(run, thread_id, run_id)))
        events = await unless_disconnected(request, start_loop(gateway, chat))
        return sse_response(_frames(stream_events(events, thread_id, run_id, steps=bool(gateway.tool_functions))))

    return [Route("/agui", agui, methods=["POST"])]
