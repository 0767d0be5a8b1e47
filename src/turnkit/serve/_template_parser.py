"""A model folder's ``response_template`` as the gateway's stream parser.

The gateway reads turnkit deltas (``content``, ``reasoning_content``, numbered ``tool_calls`` with string
arguments and per-call ``error``); a :class:`~turnkit.ResponseTemplateStream` gives deltas keyed by the
template's own fields, in transformers' message shape (``thinking``, calls with dict arguments, each call
whole). This turns the one into the other, so every protocol serves a folder's response template unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from turnkit.messages import REASONING_FIELDS
from turnkit.parse import Delta
from turnkit.parse._response_template import ResponseTemplateStream

__all__ = ["TemplateDeltas"]


class TemplateDeltas:
    """``feed``/``close`` like :class:`~turnkit.parse.StreamParser`, over a response-template stream."""

    incomplete = False  # a response template has no notion of an unfinished region

    def __init__(self, stream: ResponseTemplateStream) -> None:
        self._stream = stream
        self._calls = 0

    def feed(self, text: str) -> list[Delta]:
        return self._convert(self._stream.feed(text))

    def close(self) -> list[Delta]:
        return self._convert(self._stream.close())

    def _convert(self, deltas: list[dict[str, Any]]) -> list[Delta]:
        out: list[Delta] = []
        for delta in deltas:
            for key, value in delta.items():
                if value is None or value == "":
                    continue
                if key == "content" or key in REASONING_FIELDS:
                    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                    out.append({"content" if key == "content" else "reasoning_content": text})
                elif key == "tool_calls" and isinstance(value, list):
                    for call in value:
                        out += self._call(call)
        return out

    def _call(self, call: Any) -> list[Delta]:
        """One whole call (the template gives a call once its region closes): its first delta, with arguments,
        then an ``invalid_arguments`` error when they are not a JSON object."""
        index, self._calls = self._calls, self._calls + 1
        raw = call if isinstance(call, Mapping) else {}
        function = raw.get("function", raw)
        function = function if isinstance(function, Mapping) else {}
        name = function.get("name")
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            text = arguments
            try:
                arguments = json.loads(arguments)
            except ValueError:
                pass
        else:
            text = json.dumps(arguments, ensure_ascii=False)
        call_id = raw.get("id")
        deltas: list[Delta] = [
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": str(call_id) if call_id is not None else f"call_{index}",
                        "type": "function",
                        "function": {"name": name if isinstance(name, str) else "", "arguments": text},
                    }
                ]
            }
        ]
        if not isinstance(arguments, dict):
            problem = {"code": "invalid_arguments", "message": "the arguments are not a JSON object"}
            deltas.append({"tool_calls": [{"index": index, "error": problem}]})
        return deltas
