"""The output side of a stream parser: OpenAI-style deltas and the message they add up to.

Every piece of parsed output goes through one :class:`Emitter`, which appends the
``choices[0].delta``-shaped dict and updates the running message in the same step, so the message a
complete parse returns is by construction the sum of the deltas.
"""

from __future__ import annotations

import json
from typing import Any

from turnkit._json import loads_or_none
from turnkit.messages import AssistantMessage, ToolCall

__all__ = ["Delta", "Emitter"]

Delta = dict[str, Any]
"""One ``choices[0].delta`` of an OpenAI ``chat.completion.chunk``."""


class _Call:
    __slots__ = ("name", "id", "parts", "value", "done", "valid")

    def __init__(self, name: str, call_id: str) -> None:
        self.name = name
        self.id = call_id
        self.parts: list[str] = []
        self.value: Any = None
        self.done = False
        self.valid = False


class Emitter:
    """Collects deltas for the current ``feed`` and keeps the message they add up to."""

    __slots__ = ("deltas", "content", "reasoning", "calls", "_pending", "_started", "strip", "id_pattern",
                 "incomplete", "_open_key", "_open_parts", "_hold")

    def __init__(self, *, strip: bool, id_pattern: str) -> None:
        self.deltas: list[Delta] = []
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[_Call] = []
        self._pending = {"content": "", "reasoning_content": ""}
        self._started = {"content": False, "reasoning_content": False}
        self.strip = strip
        self.id_pattern = id_pattern
        self.incomplete = False
        # The last delta stays "open" while pieces of the same kind follow; joined once in ``_seal``.
        self._open_key: tuple[str, int] | None = None
        self._open_parts: list[str] = []
        # While a region is held: the deltas index it starts at and the state to restore if it is dropped.
        self._hold: tuple[int, int, int, int, dict[str, str], dict[str, bool], bool] | None = None

    # -- holding a region back ---------------------------------------------------------------------
    def hold(self) -> None:
        """Deltas from here on are kept back (not returned by ``take``) until ``release`` or ``drop``."""
        self._seal()
        self._hold = (len(self.deltas), len(self.calls), len(self.content), len(self.reasoning),
                      dict(self._pending), dict(self._started), self.incomplete)

    @property
    def holding(self) -> bool:
        return self._hold is not None

    def release(self) -> None:
        """The held deltas stand: the next ``take`` returns them."""
        self._hold = None

    def drop(self) -> None:
        """Forget the held deltas — never returned, so nothing is retracted — and the state they built."""
        hold, self._hold = self._hold, None
        if hold is None:
            return
        self._seal()
        at, calls, content, reasoning, pending, started, incomplete = hold
        del self.deltas[at:], self.calls[calls:], self.content[content:], self.reasoning[reasoning:]
        self._pending, self._started, self.incomplete = pending, started, incomplete

    # -- text ------------------------------------------------------------------------------------
    def text(self, field: str, text: str) -> None:
        """Append text to ``content`` or ``reasoning_content`` (edges trimmed when ``strip``)."""
        if not text:
            return
        if self.strip:
            if not self._started[field]:
                text = text.lstrip()
                if not text:
                    return
                self._started[field] = True
            core = text.rstrip()
            if not core:
                self._pending[field] += text
                return
            text, self._pending[field] = self._pending[field] + core, text[len(core) :]
        self._raw_text(field, text)

    def boundary(self, field: str) -> None:
        """A region of ``field`` ended. Whitespace held at its edge stays held: it is emitted if more text of
        the field follows (``"A\n<think>..</think>\nB"`` keeps both newlines) and dropped at the end."""

    def _raw_text(self, field: str, text: str) -> None:
        (self.content if field == "content" else self.reasoning).append(text)
        key = (field, -1)
        if self._open_key == key:
            self._open_parts.append(text)
            return
        self._seal()
        self.deltas.append({field: ""})
        self._open_key = key
        self._open_parts = [text]

    def _seal(self) -> None:
        """Join the pieces of the open delta into it."""
        key = self._open_key
        if key is None:
            return
        joined = "".join(self._open_parts)
        last = self.deltas[-1]
        if key[1] < 0:
            last[key[0]] = joined
        else:
            last["tool_calls"][0]["function"]["arguments"] = joined
        self._open_key = None
        self._open_parts = []

    # -- tool calls --------------------------------------------------------------------------------
    def start_call(self, name: str, call_id: str | None = None) -> None:
        self._seal()
        index = len(self.calls)
        if not call_id:
            call_id = self.id_pattern.format(index=index)
        self.calls.append(_Call(name, call_id))
        self.deltas.append(
            {"tool_calls": [{"index": index, "id": call_id, "type": "function",
                             "function": {"name": name, "arguments": ""}}]}
        )

    def args(self, text: str) -> None:
        """Append a fragment of the current call's JSON arguments."""
        if not text:
            return
        call = self.calls[-1]
        call.parts.append(text)
        index = len(self.calls) - 1
        key = ("args", index)
        if self._open_key == key:
            self._open_parts.append(text)
            return
        self._seal()
        self.deltas.append({"tool_calls": [{"index": index, "function": {"arguments": ""}}]})
        self._open_key = key
        self._open_parts = [text]

    def args_delta(self, text: str) -> list[Delta]:
        """Hot path: one argument fragment as this feed's only delta (nothing else is pending)."""
        calls = self.calls
        calls[-1].parts.append(text)
        return [{"tool_calls": [{"index": len(calls) - 1, "function": {"arguments": text}}]}]

    def end_call(self) -> None:
        """The current call's arguments are complete: decode them once."""
        call = self.calls[-1]
        if call.done:
            return
        call.done = True
        raw = "".join(call.parts)
        if not raw.strip():
            self.args("{}")
            call.value, call.valid = {}, True
            return
        try:
            call.value, call.valid = json.loads(raw), True
        except (ValueError, RecursionError):
            call.value, call.valid = raw, False

    @property
    def in_call(self) -> bool:
        return bool(self.calls) and not self.calls[-1].done

    # -- end ---------------------------------------------------------------------------------------
    def take(self) -> list[Delta]:
        if self._open_key is not None:
            self._seal()
        if self._hold is not None:
            at = self._hold[0]
            out, self.deltas = self.deltas[:at], self.deltas[at:]
            self._hold = (0, *self._hold[1:])
            return out
        out, self.deltas = self.deltas, []
        return out

    def message(self) -> AssistantMessage:
        calls: list[ToolCall] = []
        incomplete = self.incomplete
        own_calls, content, reasoning = self.calls, self.content, self.reasoning
        if self._hold is not None:  # what the returned deltas add up to: the held region not yet
            _at, n_calls, n_content, n_reasoning, _pending, _started, incomplete = self._hold
            own_calls, content, reasoning = own_calls[:n_calls], content[:n_content], reasoning[:n_reasoning]
        for call in own_calls:
            if not call.done:
                raw = "".join(call.parts)
                ok, value = loads_or_none(raw) if raw.strip() else (False, None)
                call_value: Any = value if ok else raw
                incomplete = True
            else:
                call_value = call.value
                incomplete = incomplete or not call.valid
            calls.append({"id": call.id, "type": "function", "function": {"name": call.name,
                                                                           "arguments": call_value}})
        message: AssistantMessage = {
            "role": "assistant",
            "content": "".join(content) or None,
            "reasoning_content": "".join(reasoning) or None,
            "tool_calls": calls,
        }
        if incomplete:
            message["incomplete"] = True
        return message

