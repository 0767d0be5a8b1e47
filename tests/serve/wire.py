"""Independent readers of the AG-UI and AI SDK streams: SSE parsing, AG-UI's verify.ts invariants, the strict
UI-chunk field sets, and "rebuild the assistant message from the events" for both protocols."""

from __future__ import annotations

import json
from typing import Any


def sse_data(raw: bytes) -> list[str]:
    """The ``data`` of each SSE event; LF-only framing, ``data:`` lines only (what @ag-ui/client accepts)."""
    assert b"\r" not in raw, "CRLF framing"
    out = []
    for block in raw.decode("utf-8").split("\n\n"):
        if not block:
            continue
        lines = block.split("\n")
        assert all(line.startswith(("data: ", ":")) for line in lines), block
        data = [line[6:] for line in lines if line.startswith("data: ")]
        if data:
            out.append("\n".join(data))
    return out


# -- AG-UI ------------------------------------------------------------------------------------------
AGUI_FIELDS: dict[str, tuple[set[str], set[str]]] = {  # type -> (required, optional) in camelCase
    "RUN_STARTED": ({"threadId", "runId"}, set()),
    "RUN_FINISHED": ({"threadId", "runId"}, {"usage", "result"}),
    "RUN_ERROR": ({"message"}, {"code"}),
    "STEP_STARTED": ({"stepName"}, set()),
    "STEP_FINISHED": ({"stepName"}, set()),
    "REASONING_START": ({"messageId"}, set()),
    "REASONING_MESSAGE_START": ({"messageId", "role"}, set()),
    "REASONING_MESSAGE_CONTENT": ({"messageId", "delta"}, set()),
    "REASONING_MESSAGE_END": ({"messageId"}, set()),
    "REASONING_END": ({"messageId"}, set()),
    "TEXT_MESSAGE_START": ({"messageId", "role"}, set()),
    "TEXT_MESSAGE_CONTENT": ({"messageId", "delta"}, set()),
    "TEXT_MESSAGE_END": ({"messageId"}, set()),
    "TOOL_CALL_START": ({"toolCallId", "toolCallName", "parentMessageId"}, set()),
    "TOOL_CALL_ARGS": ({"toolCallId", "delta"}, set()),
    "TOOL_CALL_END": ({"toolCallId"}, set()),
    "TOOL_CALL_RESULT": ({"messageId", "toolCallId", "content", "role"}, set()),
    "STATE_SNAPSHOT": ({"snapshot"}, set()),
    "STATE_DELTA": ({"delta"}, set()),
    "CUSTOM": ({"name", "value"}, set()),
}


def verify_agui(events: list[dict[str, Any]]) -> None:
    """The invariants @ag-ui/client's verifyEvents enforces, plus turnkit's own (schema, no empty deltas)."""
    assert events and events[0]["type"] == "RUN_STARTED", "the first event must be RUN_STARTED"
    text: set[str] = set()
    tools: set[str] = set()
    spans: set[str] = set()
    reasoning: set[str] = set()
    steps: set[str] = set()
    finished = False
    for event in events:
        kind = event["type"]
        assert not finished, f"{kind} after the run ended"
        required, optional = AGUI_FIELDS[kind]
        keys = set(event) - {"type"}
        assert required <= keys <= required | optional, (kind, keys)
        assert all(
            isinstance(event[k], str)
            for k in keys
            if k in ("messageId", "toolCallId", "delta") and kind != "STATE_DELTA"
        )
        if kind in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS"):
            assert event["delta"], f"empty delta in {kind}"
        mid = event.get("messageId")
        if kind == "TEXT_MESSAGE_START":
            assert event["role"] == "assistant" and mid not in text
            text.add(mid)
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert mid in text, "TEXT_MESSAGE_CONTENT without an open TEXT_MESSAGE_START"
        elif kind == "TEXT_MESSAGE_END":
            text.remove(mid)
        elif kind == "TOOL_CALL_START":
            assert event["toolCallId"] not in tools
            tools.add(event["toolCallId"])
        elif kind == "TOOL_CALL_ARGS":
            assert event["toolCallId"] in tools
        elif kind == "TOOL_CALL_END":
            tools.remove(event["toolCallId"])
        elif kind == "REASONING_START":
            assert mid not in spans
            spans.add(mid)
        elif kind == "REASONING_MESSAGE_START":
            assert event["role"] == "reasoning" and mid not in reasoning
            reasoning.add(mid)
        elif kind == "REASONING_MESSAGE_CONTENT":
            assert mid in reasoning
        elif kind == "REASONING_MESSAGE_END":
            reasoning.remove(mid)
        elif kind == "REASONING_END":
            assert mid not in reasoning
            spans.remove(mid)
        elif kind == "STEP_STARTED":
            steps.add(event["stepName"])
        elif kind == "STEP_FINISHED":
            steps.remove(event["stepName"])
        elif kind == "RUN_FINISHED":
            assert not (text or tools or spans or reasoning or steps), "RUN_FINISHED with open constructs"
            finished = True
        elif kind == "RUN_ERROR":
            finished = True
        # at most one channel open at a time (turnkit's own rule: triads closed on a switch)
        assert len(text) + len(tools) + len(reasoning) <= 1
    assert finished, "the run never ended"


def agui_message(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant turn the events add up to (one model turn)."""
    content, reasoning = [], []
    calls: dict[str, dict[str, Any]] = {}
    for event in events:
        kind = event["type"]
        if kind == "TEXT_MESSAGE_CONTENT":
            content.append(event["delta"])
        elif kind == "REASONING_MESSAGE_CONTENT":
            reasoning.append(event["delta"])
        elif kind == "TOOL_CALL_START":
            calls[event["toolCallId"]] = {
                "id": event["toolCallId"],
                "type": "function",
                "function": {"name": event["toolCallName"], "arguments": ""},
            }
        elif kind == "TOOL_CALL_ARGS":
            calls[event["toolCallId"]]["function"]["arguments"] += event["delta"]
    return _message(content, reasoning, list(calls.values()))


def _message(content: list[str], reasoning: list[str], calls: list[dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = calls
    return message


# -- AI SDK -----------------------------------------------------------------------------------------
UI_CHUNK_FIELDS: dict[str, set[str]] = {  # exactly the fields turnkit sends
    "start": {"messageId"},
    "start-step": set(),
    "finish-step": set(),
    "reasoning-start": {"id"},
    "reasoning-delta": {"id", "delta"},
    "reasoning-end": {"id"},
    "text-start": {"id"},
    "text-delta": {"id", "delta"},
    "text-end": {"id"},
    "tool-input-start": {"toolCallId", "toolName"},
    "tool-input-delta": {"toolCallId", "inputTextDelta"},
    "tool-input-available": {"toolCallId", "toolName", "input"},
    "tool-input-error": {"toolCallId", "toolName", "input", "errorText"},
    "tool-output-available": {"toolCallId", "output"},
    "tool-output-error": {"toolCallId", "errorText"},
    "finish": {"finishReason"},
    "error": {"errorText"},
}
FINISH_REASONS = {"stop", "length", "content-filter", "tool-calls", "error", "other"}


def check_ui_chunks(chunks: list[dict[str, Any]]) -> None:
    """Strict fields, no empty deltas, start/end pairing, steps bracketed, ``start`` first, ``finish`` last."""
    assert chunks[0]["type"] == "start"
    assert chunks[-1]["type"] in ("finish", "error")
    open_ids: set[str] = set()
    in_step = False
    for chunk in chunks:
        kind = chunk["type"]
        assert set(chunk) - {"type"} == UI_CHUNK_FIELDS[kind], (kind, chunk)
        if kind == "finish":
            assert chunk["finishReason"] in FINISH_REASONS
        if kind in ("text-delta", "reasoning-delta"):
            assert chunk["delta"] and chunk["id"] in open_ids
        if kind == "tool-input-delta":
            assert chunk["inputTextDelta"] and chunk["toolCallId"] in open_ids
        if kind in ("text-start", "reasoning-start", "tool-input-start"):
            key = chunk.get("id") or chunk["toolCallId"]
            assert not open_ids, "two channels open at once"
            open_ids.add(key)
        if kind in ("text-end", "reasoning-end", "tool-input-available", "tool-input-error"):
            open_ids.remove(chunk.get("id") or chunk["toolCallId"])
        if kind == "start-step":
            assert not in_step
            in_step = True
        if kind == "finish-step":
            assert in_step and not open_ids
            in_step = False
    assert not in_step or chunks[-1]["type"] == "error"


def ui_message(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant turn the chunks add up to (one model turn); tool arguments as the streamed text."""
    content, reasoning = [], []
    calls: dict[str, dict[str, Any]] = {}
    for chunk in chunks:
        kind = chunk["type"]
        if kind == "text-delta":
            content.append(chunk["delta"])
        elif kind == "reasoning-delta":
            reasoning.append(chunk["delta"])
        elif kind == "tool-input-start":
            calls[chunk["toolCallId"]] = {
                "id": chunk["toolCallId"],
                "type": "function",
                "function": {"name": chunk["toolName"], "arguments": ""},
            }
        elif kind == "tool-input-delta":
            calls[chunk["toolCallId"]]["function"]["arguments"] += chunk["inputTextDelta"]
        elif kind == "tool-input-available":
            raw = calls[chunk["toolCallId"]]["function"]["arguments"]
            assert json.loads(raw or "{}") == chunk["input"]
    return _message(content, reasoning, list(calls.values()))
