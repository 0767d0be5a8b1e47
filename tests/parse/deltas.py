"""An independent re-implementation of "add the deltas up", as an OpenAI client would.

Tests use it to check that the stream's deltas sum to ``parse()``'s message and that every delta has
the ``chat.completion.chunk`` shape: id/type/name only on a call's first fragment, contiguous indices.
:func:`join_response_deltas` does the same for response-template streams (keys are the template's fields).
"""

from __future__ import annotations

import json
from typing import Any


def accumulate(deltas: list[dict[str, Any]]) -> dict[str, Any]:
    content, reasoning = [], []
    calls: list[dict[str, Any]] = []
    errors: dict[int, dict[str, Any]] = {}
    for delta in deltas:
        assert delta, "empty delta"
        for key in delta:
            assert key in ("content", "reasoning_content", "tool_calls"), key
        if "content" in delta:
            assert isinstance(delta["content"], str) and delta["content"]
            content.append(delta["content"])
        if "reasoning_content" in delta:
            assert isinstance(delta["reasoning_content"], str) and delta["reasoning_content"]
            reasoning.append(delta["reasoning_content"])
        for fragment in delta.get("tool_calls", []):
            index = fragment["index"]
            if "error" in fragment:  # a call's per-call error: one extra fragment, after its arguments
                assert set(fragment) == {"index", "error"} and index < len(calls) and index not in errors
                assert set(fragment["error"]) == {"code", "message"}
                errors[index] = fragment["error"]
                continue
            if "id" in fragment:
                assert index == len(calls), f"call index {index} not contiguous"
                assert fragment["type"] == "function" and fragment["function"]["name"]
                calls.append(
                    {
                        "id": fragment["id"],
                        "name": fragment["function"]["name"],
                        "arguments": [fragment["function"].get("arguments", "")],
                    }
                )
            else:
                assert index == len(calls) - 1, "argument fragment for a call that is not the latest"
                assert index not in errors, "argument fragment after the call's error"
                assert set(fragment) == {"index", "function"} and set(fragment["function"]) == {"arguments"}
                calls[index]["arguments"].append(fragment["function"]["arguments"])
    out_calls = []
    for index, call in enumerate(calls):
        raw = "".join(call["arguments"])
        try:
            arguments = json.loads(raw)
        except ValueError:
            arguments = raw
        out: dict[str, Any] = {
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": arguments},
        }
        if index in errors:
            out["error"] = errors[index]
        out_calls.append(out)
    return {
        "role": "assistant",
        "content": "".join(content) or None,
        "reasoning_content": "".join(reasoning) or None,
        "tool_calls": out_calls,
    }


def without_flags(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k != "incomplete"}


def join_response_deltas(deltas: list[dict[str, Any]]) -> dict[str, Any]:
    """A response-template stream's deltas added up: a key's first delta sets it, a later string is appended to
    it, a later list extends it; anything else may come once only."""
    out: dict[str, Any] = {}
    for delta in deltas:
        assert delta and isinstance(delta, dict), "empty delta"
        for key, value in delta.items():
            if key not in out:
                out[key] = value
            elif isinstance(value, str) and isinstance(out[key], str):
                assert value, f"empty text delta for {key!r}"
                out[key] += value
            elif isinstance(value, list) and isinstance(out[key], list):
                assert value, f"empty list delta for {key!r}"
                out[key] = out[key] + value
            else:
                raise AssertionError(f"{key!r} given twice: {out[key]!r}, then {value!r}")
    return out
