"""OpenAI ``POST /v1/chat/completions``, streamed (``chat.completion.chunk`` over SSE) and not.

Stream contract: the first chunk is ``delta: {role: "assistant", content: ""}``; then one chunk per delta
(reasoning in ``reasoning_content`` and/or ``reasoning``; a tool call's first delta carries index, id, type,
name and ``arguments: ""``, later ones only index and argument text); then a chunk with an empty delta and
the ``finish_reason``; a usage chunk if ``stream_options.include_usage``; then ``data: [DONE]``. The deltas
joined are exactly the non-stream ``message``. turnkit's checks (not-allowed tool calls, invalid arguments,
tool_choice or response_format not met) are reported in ``choices[0].turnkit_problems``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from turnkit.serve._chat import ChatRequest
from turnkit.serve._errors import BadRequestError, ServeError
from turnkit.serve._gateway import Gateway, ReasoningField, Run
from turnkit.serve._http import read_json_body, unless_disconnected
from turnkit.serve._sse import sse_event, sse_response
from turnkit.serve.backends._base import SamplingParams, Usage

__all__ = ["parse_chat_request", "routes"]

_KNOWN = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "stop",
        "seed",
        "response_format",
        "chat_template_kwargs",
        "n",
        "user",
        "metadata",
        "store",
        "logprobs",
    }
)
_DONE = b"data: [DONE]\n\n"
_COMPACT = (",", ":")


def _number(body: Mapping[str, Any], name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise BadRequestError(f"{name} must be a number from {low:g} to {high:g}", param=name)
    return float(value)


def _integer(body: Mapping[str, Any], name: str, low: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise BadRequestError(f"{name} must be an integer ≥ {low}", param=name)
    return value


def _boolean(body: Mapping[str, Any], name: str, default: bool) -> bool:
    value = body.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise BadRequestError(f"{name} must be a boolean", param=name)
    return value


def _tools(body: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    tools = body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise BadRequestError("tools must be a list", param="tools")
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise BadRequestError('each tool must be {"type": "function", "function": {...}}', param=f"tools[{i}]")
        function = tool.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise BadRequestError("a tool needs function.name (a non-empty string)", param=f"tools[{i}].function.name")
        parameters = function.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            raise BadRequestError(
                "function.parameters must be a JSON schema object", param=f"tools[{i}].function.parameters"
            )
    return tools or None


def _tool_choice(body: Mapping[str, Any], tools: list[dict[str, Any]] | None) -> str | dict[str, Any]:
    choice = body.get("tool_choice")
    if choice is None:
        return "auto"
    if choice in ("auto", "none", "required"):
        if choice == "required" and not tools:
            raise BadRequestError('tool_choice "required" needs tools', param="tool_choice")
        return str(choice)
    if isinstance(choice, dict) and choice.get("type") == "function":
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str):
            raise BadRequestError("a named tool_choice needs function.name", param="tool_choice.function.name")
        if name not in [t["function"]["name"] for t in tools or ()]:
            raise BadRequestError(f"tool_choice names {name!r}, which is not in tools", param="tool_choice")
        return choice
    raise BadRequestError(
        'tool_choice must be "auto", "none", "required" or {"type": "function", ...}', param="tool_choice"
    )


def _stop(body: Mapping[str, Any]) -> tuple[str, ...] | None:
    stop = body.get("stop")
    if stop is None:
        return None
    if isinstance(stop, str):
        return (stop,)
    if isinstance(stop, list) and len(stop) <= 4 and all(isinstance(s, str) for s in stop):
        return tuple(stop)
    raise BadRequestError("stop must be a string or a list of up to 4 strings", param="stop")


def _response_format(body: Mapping[str, Any]) -> dict[str, Any] | None:
    fmt = body.get("response_format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object", "json_schema"):
        raise BadRequestError(
            'response_format.type must be "text", "json_object" or "json_schema"', param="response_format"
        )
    if fmt["type"] == "json_schema":
        spec = fmt.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("schema", {}), dict | bool):
            raise BadRequestError(
                "response_format.json_schema must be an object with a schema", param="response_format.json_schema"
            )
    return None if fmt["type"] == "text" else fmt


def parse_chat_request(body: Any) -> tuple[ChatRequest, bool, bool]:
    """A request body → (ChatRequest, stream, include_usage); every fault is a 400 naming its field."""
    if not isinstance(body, dict):
        raise BadRequestError("the request body must be a JSON object")
    unknown = sorted(set(body) - _KNOWN)
    if unknown:
        raise BadRequestError(
            f"unrecognized request argument: {unknown[0]}", param=unknown[0], code="unknown_parameter"
        )
    if "messages" not in body:
        raise BadRequestError("messages is required", param="messages", code="missing_parameter")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRequestError("model must be a string", param="model")
    n = _integer(body, "n", 1)
    if n is not None and n != 1:
        raise BadRequestError("only n=1 is supported", param="n")
    if body.get("logprobs"):
        raise BadRequestError("logprobs are not supported (the backend's text stream carries none)", param="logprobs")
    stream = _boolean(body, "stream", False)
    options = body.get("stream_options")
    include_usage = False
    if options is not None:
        if not stream:
            raise BadRequestError("stream_options is only allowed with stream=true", param="stream_options")
        if not isinstance(options, dict):
            raise BadRequestError("stream_options must be an object", param="stream_options")
        include_usage = _boolean(options, "include_usage", False)
    kwargs = body.get("chat_template_kwargs")
    kwargs = {} if kwargs is None else kwargs
    if not isinstance(kwargs, dict):
        raise BadRequestError("chat_template_kwargs must be an object", param="chat_template_kwargs")
    tools = _tools(body)
    max_tokens = _integer(body, "max_completion_tokens", 1)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", 1)
    params = SamplingParams(
        max_tokens=max_tokens,
        temperature=_number(body, "temperature", 0, 2),
        top_p=_number(body, "top_p", 0, 1),
        stop=_stop(body),
        seed=_integer(body, "seed", -(2**63)),
    )
    chat = ChatRequest(
        messages=body["messages"],
        tools=tools,
        tool_choice=_tool_choice(body, tools),
        parallel_tool_calls=_boolean(body, "parallel_tool_calls", True),
        params=params,
        chat_template_kwargs=kwargs,
        response_format=_response_format(body),
    )
    return chat, stream, include_usage


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=_COMPACT)  # json.dumps(..., these options), reused
_encode = _ENCODER.encode
_string = json.encoder.encode_basestring  # a str as _ENCODER writes it (ensure_ascii=False)


class _Wire:
    """Maps gateway deltas to OpenAI chunks for one response.

    ``delta`` + ``chunk`` are the reference encoding of one delta; ``events`` is the fast path a stream uses
    (the same bytes: a text delta is a precomputed prefix + its JSON string + a precomputed suffix, and the
    chunks of one batch are encoded at once).
    """

    def __init__(self, gateway: Gateway) -> None:
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.model = gateway.served_model_name
        self.reasoning: ReasoningField = gateway.reasoning_field
        self.head = (
            f'{{"id":"{self.id}","object":"chat.completion.chunk","created":{self.created},'
            f'"model":{json.dumps(self.model)},"system_fingerprint":null,"choices":[{{"index":0,"delta":'
        )
        self.tail = ',"logprobs":null,"finish_reason":null}]}'
        self._open = "data: " + self.head  # + the delta's JSON + self._close
        self._close = self.tail + "\n\n"
        self._content = self._open + '{"content":'
        self._text_close = "}" + self._close
        mode = self.reasoning
        self._reasoning: tuple[str, str] | None = None  # reasoning text → prefix + (JSON string + middle)*n
        if mode in ("both", "reasoning_content"):
            self._reasoning = (self._open + '{"reasoning_content":', ',"reasoning":' if mode == "both" else "")
        elif mode == "reasoning":
            self._reasoning = (self._open + '{"reasoning":', "")

    def delta(self, delta: dict[str, Any]) -> dict[str, Any] | None:
        text = delta.get("reasoning_content")
        if text is None:
            return delta
        mode = self.reasoning
        if mode == "both":
            return {"reasoning_content": text, "reasoning": text}
        if mode == "reasoning":
            return {"reasoning": text}
        if mode == "reasoning_content":
            return delta
        return None

    def chunk(self, delta: dict[str, Any]) -> bytes:
        data = self.head + json.dumps(delta, ensure_ascii=False, separators=_COMPACT) + self.tail
        return b"data: " + data.encode("utf-8") + b"\n\n"

    def events(self, deltas: list[dict[str, Any]]) -> bytes:
        """``b"".join(chunk(delta(d)) for d in deltas)`` (skipping deltas that map to None), built faster."""
        parts: list[str] = []
        for delta in deltas:
            if len(delta) == 1:
                text = delta.get("content")
                if text is not None:
                    parts.append(self._content + _string(text) + self._text_close)
                    continue
                text = delta.get("reasoning_content")
                if text is not None:
                    reasoning = self._reasoning
                    if reasoning is None:
                        continue
                    prefix, middle = reasoning
                    encoded = _string(text)
                    if middle:
                        parts.append(prefix + encoded + middle + encoded + self._text_close)
                    else:
                        parts.append(prefix + encoded + self._text_close)
                    continue
            mapped = self.delta(delta)
            if mapped is not None:
                parts.append(self._open + _encode(mapped) + self._close)
        return "".join(parts).encode("utf-8")

    def final(self, run: Run) -> bytes:
        choice: dict[str, Any] = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": run.finish_reason}
        if run.problems:
            choice["turnkit_problems"] = run.problems
        return sse_event(json.dumps(self.envelope("chat.completion.chunk", [choice]), ensure_ascii=False))

    def usage_chunk(self, usage: Usage | None) -> bytes:
        body = self.envelope("chat.completion.chunk", [])
        body["usage"] = _usage(usage)
        return sse_event(json.dumps(body))

    def envelope(self, kind: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": kind,
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
            "choices": choices,
        }

    def message(self, message: dict[str, Any]) -> dict[str, Any]:
        reasoning = message.pop("reasoning_content", None)
        out = {"role": "assistant", "content": message.get("content")}
        if reasoning is not None:
            if self.reasoning in ("both", "reasoning_content"):
                out["reasoning_content"] = reasoning
            if self.reasoning in ("both", "reasoning"):
                out["reasoning"] = reasoning
        if "tool_calls" in message:
            out["tool_calls"] = message["tool_calls"]
        return out


def _usage(usage: Usage | None) -> dict[str, int]:
    usage = usage or Usage()
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def _error_event(error: ServeError) -> bytes:
    return sse_event(json.dumps(error.to_openai(), ensure_ascii=False))


_ROLE: dict[str, Any] = {"role": "assistant", "content": ""}


async def _stream(run: Run, wire: _Wire, include_usage: bool) -> AsyncIterator[bytes]:
    """The chunks of a started run. Writes are coalesced (the bytes are those of one event per chunk): the role
    chunk goes with the deltas of the backend chunk already received, each later backend chunk's deltas in one
    write, and the finish chunk, the usage chunk and ``[DONE]`` in one write."""
    try:
        role = wire.chunk(_ROLE)
        try:
            first = wire.events(run.ready())
        except ServeError:
            yield role
            raise
        yield role + first
        async for batch in run.batches():
            data = wire.events(batch)
            if data:
                yield data
        end = wire.final(run)
        if include_usage:
            end += wire.usage_chunk(run.usage)
        yield end + _DONE
    except ServeError as exc:
        yield _error_event(exc)
    finally:
        await run.aclose()


def routes(gateway: Gateway) -> list[Route]:
    """``POST /v1/chat/completions``."""

    async def chat_completions(request: Request) -> Response:
        chat, stream, include_usage = parse_chat_request(await read_json_body(request))
        run = gateway.run(chat)
        wire = _Wire(gateway)
        try:
            await unless_disconnected(request, run.start())
        except BaseException:
            await run.aclose()
            raise
        if stream:
            return sse_response(_stream(run, wire, include_usage))
        try:
            message = await unless_disconnected(request, run.complete())
        finally:
            await run.aclose()
        choice: dict[str, Any] = {
            "index": 0,
            "message": wire.message(message),
            "logprobs": None,
            "finish_reason": run.finish_reason,
        }
        if run.problems:
            choice["turnkit_problems"] = run.problems
        body = wire.envelope("chat.completion", [choice])
        body["usage"] = _usage(run.usage)
        return JSONResponse(body)

    return [Route("/v1/chat/completions", chat_completions, methods=["POST"])]
