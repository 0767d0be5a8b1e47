"""Vercel AI SDK UI message stream v1: ``POST /api/chat`` takes ``useChat``'s body and streams UI message chunks.

Request: ``{id, messages: UIMessage[], trigger, messageId, ...}``; each UIMessage's ``parts`` (text, reasoning,
``tool-<name>`` / ``dynamic-tool`` parts with ``input`` and, once known, ``output`` or ``errorText``;
``step-start`` splits an assistant message into model turns) become OpenAI messages. Other fields of the body
(``useChat``'s ``body`` option) are ignored.

Response (header ``x-vercel-ai-ui-message-stream: v1``): ``start{messageId}``; per model turn ``start-step``,
then ``reasoning-start/-delta/-end{id}``, ``text-start/-delta/-end{id}``, ``tool-input-start{toolCallId,
toolName}`` → ``tool-input-delta{toolCallId, inputTextDelta}`` → ``tool-input-available{toolCallId, toolName,
input}`` (or ``tool-input-error`` when the arguments are not valid JSON), ``tool-output-available`` /
``tool-output-error`` for tools the server ran, ``finish-step``; then ``finish{finishReason}`` and
``data: [DONE]``. A failure mid-stream is ``error{errorText}``. Every part has exactly the fields of
``uiMessageChunkSchema`` listed here, nothing more.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from turnkit.agent import AgentEvent, AgentFinished, StepDelta, StepFinished, StepStarted, ToolResult
from turnkit.serve._chat import ChatRequest
from turnkit.serve._errors import BadRequestError, ServeError
from turnkit.serve._gateway import Gateway
from turnkit.serve._http import read_json_body, unless_disconnected
from turnkit.serve._loop import start_loop
from turnkit.serve._segments import Segment, Segmenter, new_id
from turnkit.serve._sse import sse_event, sse_response

__all__ = ["UI_MESSAGE_STREAM_HEADERS", "parse_chat_body", "routes", "stream_parts", "ui_messages"]

UI_MESSAGE_STREAM_HEADERS: dict[str, str] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
_DONE = b"data: [DONE]\n\n"
_FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool-calls"}


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class _Turns:
    """Collects one assistant UIMessage's parts into OpenAI messages, a model turn at a time."""

    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []
        self._reset()

    def _reset(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] = []

    def flush(self) -> None:
        if not (self.text or self.reasoning or self.calls):
            return
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = self.calls
        self.out.append(message)
        self.out.extend(self.results)
        self._reset()

    def part(self, part: Mapping[str, Any], where: str) -> None:
        kind = part.get("type")
        if kind == "step-start":
            self.flush()
        elif kind in ("text", "reasoning"):
            text = part.get("text")
            if not isinstance(text, str):
                raise BadRequestError(f"a {kind} part needs a string text", param=f"{where}.text")
            if self.calls:
                self.flush()
            (self.text if kind == "text" else self.reasoning).append(text)
        elif isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool"):
            name = part.get("toolName") if kind == "dynamic-tool" else kind.removeprefix("tool-")
            call_id = part.get("toolCallId")
            if not isinstance(name, str) or not isinstance(call_id, str):
                raise BadRequestError("a tool part needs toolCallId (and toolName for dynamic-tool)", param=where)
            value = part.get("input")
            arguments = _json_text({} if value is None else value)
            self.calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
            state = part.get("state")
            if state == "output-available":
                content = _json_text(part.get("output"))
            elif state == "output-error":
                content = f"Error: {part.get('errorText') or 'the tool failed'}"
            elif state == "output-denied":
                content = "Error: the user denied this tool call"
            else:
                return
            self.results.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": content})
        # file, source-*, data-* and other parts carry nothing a text-only chat template shows


def ui_messages(messages: Any) -> list[dict[str, Any]]:
    """``UIMessage[]`` → OpenAI wire messages (400 naming the field on a malformed message)."""
    if not isinstance(messages, list) or not messages:
        raise BadRequestError("messages must be a non-empty list of UI messages", param="messages")
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping):
            raise BadRequestError("a message must be an object", param=where)
        role = message.get("role")
        parts = message.get("parts")
        if role not in ("system", "user", "assistant"):
            raise BadRequestError(f"unknown role {role!r}: expected system, user or assistant", param=f"{where}.role")
        if not isinstance(parts, list):
            raise BadRequestError("a UI message needs parts (a list)", param=f"{where}.parts")
        if role == "assistant":
            turns = _Turns()
            for j, part in enumerate(parts):
                if not isinstance(part, Mapping):
                    raise BadRequestError("a part must be an object", param=f"{where}.parts[{j}]")
                turns.part(part, f"{where}.parts[{j}]")
            turns.flush()
            out.extend(turns.out)
            continue
        texts = []
        for j, part in enumerate(parts):
            if not isinstance(part, Mapping):
                raise BadRequestError("a part must be an object", param=f"{where}.parts[{j}]")
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif part.get("type") == "file":
                raise BadRequestError("file parts are not supported (text-only models)", param=f"{where}.parts[{j}]")
        out.append({"role": role, "content": "\n".join(texts)})
    return out


def parse_chat_body(body: Any) -> ChatRequest:
    """``useChat``'s request body → ChatRequest."""
    if not isinstance(body, dict):
        raise BadRequestError("the request body must be a JSON object")
    return ChatRequest(messages=ui_messages(body.get("messages")))


def _part(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


class _Mapper:
    def __init__(self) -> None:
        self.segments = Segmenter()

    def _segment(self, seg: Segment) -> list[dict[str, Any]]:
        if seg.kind in ("reasoning", "text"):
            return [
                _part(f"{seg.kind}-{'start' if seg.action == 'open' else 'end'}", id=seg.id)
                if seg.action != "delta"
                else _part(f"{seg.kind}-delta", id=seg.id, delta=seg.text)
            ]
        if seg.action == "open":
            return [_part("tool-input-start", toolCallId=seg.id, toolName=seg.name)]
        if seg.action == "delta":
            return [_part("tool-input-delta", toolCallId=seg.id, inputTextDelta=seg.text)]
        try:
            value = json.loads(seg.text) if seg.text.strip() else {}
        except (ValueError, RecursionError) as exc:
            return [
                _part(
                    "tool-input-error",
                    toolCallId=seg.id,
                    toolName=seg.name,
                    input=seg.text,
                    errorText=f"the arguments are not valid JSON: {exc}",
                )
            ]
        return [_part("tool-input-available", toolCallId=seg.id, toolName=seg.name, input=value)]

    def _close(self) -> list[dict[str, Any]]:
        return [p for seg in self.segments.close() for p in self._segment(seg)]

    def map(self, event: AgentEvent) -> list[dict[str, Any]]:
        if isinstance(event, StepStarted):
            self.segments = Segmenter()
            return [_part("start-step")]
        if isinstance(event, StepDelta):
            return [p for seg in self.segments.feed(event.delta) for p in self._segment(seg)]
        if isinstance(event, ToolResult):
            if event.error is not None:
                return [*self._close(), _part("tool-output-error", toolCallId=event.call_id, errorText=event.error)]
            try:
                output = json.loads(json.dumps(event.output, ensure_ascii=False))
            except (TypeError, ValueError):
                output = event.content
            return [*self._close(), _part("tool-output-available", toolCallId=event.call_id, output=output)]
        if isinstance(event, StepFinished):
            return [*self._close(), _part("finish-step")]
        if isinstance(event, AgentFinished):
            last = event.message
            reason = "tool-calls" if last.get("tool_calls") else "stop"
            if event.reason == "length":
                reason = "length"
            return [_part("finish", finishReason=reason)]
        return []


async def stream_parts(events: AsyncIterator[AgentEvent]) -> AsyncIterator[dict[str, Any]]:
    """The UI message chunks of one response (dicts), ``start`` to ``finish`` (or ``error``)."""
    mapper = _Mapper()
    yield _part("start", messageId=new_id("msg"))
    try:
        async for event in events:
            for part in mapper.map(event):
                yield part
    except ServeError as exc:
        yield _part("error", errorText=exc.message)
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


async def _frames(parts: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    try:
        async for part in parts:
            yield sse_event(json.dumps(part, ensure_ascii=False, separators=(",", ":")))
        yield _DONE
    finally:
        aclose = getattr(parts, "aclose", None)
        if aclose is not None:
            await aclose()


def routes(gateway: Gateway) -> list[Route]:
    """``POST /api/chat``."""

    async def chat(request: Request) -> Response:
        chat_request = parse_chat_body(await read_json_body(request))
        events = await unless_disconnected(request, start_loop(gateway, chat_request))
        return sse_response(_frames(stream_parts(events)), headers=UI_MESSAGE_STREAM_HEADERS)

    return [Route("/api/chat", chat, methods=["POST"])]
