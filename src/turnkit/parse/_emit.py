"""The output side of a stream parser: OpenAI-style deltas and the message they add up to.

Every piece of parsed output goes through one :class:`Emitter`, which appends the
``choices[0].delta``-shaped dict and updates the running message in the same step, so the message a
complete parse returns is by construction the sum of the deltas. The message is kept up to date as
deltas are added (joined text, finished calls built once), so reading it costs only what changed.
"""

from __future__ import annotations

import json
from typing import Any

from turnkit._json import loads_or_none
from turnkit.messages import AssistantMessage, ToolCall

__all__ = ["CONTENT", "REASONING", "Delta", "Emitter"]

Delta = dict[str, Any]
"""One ``choices[0].delta`` of an OpenAI ``chat.completion.chunk``."""

CONTENT = "content"
REASONING = "reasoning_content"
"""The two text fields of a delta and of the message."""


class _Text:
    """One text field's pieces and their join, extended by the new pieces only."""

    __slots__ = ("parts", "joined", "count")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.joined = ""
        self.count = 0

    def upto(self, count: int) -> str:
        if count != self.count:
            if count > self.count:
                self.joined += "".join(self.parts[self.count : count])
            else:
                self.joined = "".join(self.parts[:count])
            self.count = count
        return self.joined


_JSON_LAST = frozenset('}]"0123456789elNy')
"""The characters valid JSON text (as ``json.loads`` reads it, ``NaN`` and ``Infinity`` included) can end with."""


class _Call:
    __slots__ = ("name", "id", "parts", "value", "done", "valid", "seen")

    def __init__(self, name: str, call_id: str) -> None:
        self.name = name
        self.id = call_id
        self.parts = _Text()
        self.value: Any = None  # decoded arguments once done; while open, as of ``seen`` parts
        self.done = False
        self.valid = False
        self.seen = -1

    def arguments(self) -> Any:
        """The arguments as the message shows them: decoded when they are valid JSON, else the raw text."""
        if self.done:
            return self.value
        count = len(self.parts.parts)
        if self.seen != count:  # looked at again only when fragments arrived since the last look
            raw = self.parts.upto(count)
            core = raw.rstrip()
            ok, value = loads_or_none(raw) if core and core[-1] in _JSON_LAST else (False, None)
            self.value, self.seen = (value if ok else raw), count
        return self.value


class Emitter:
    """Collects deltas for the current ``feed`` and keeps the message they add up to."""

    __slots__ = (
        "deltas",
        "_texts",
        "calls",
        "_pending",
        "_started",
        "strip",
        "id_pattern",
        "incomplete",
        "_open_key",
        "_open_parts",
        "_hold",
        "_bad_calls",
    )

    def __init__(self, *, strip: bool, id_pattern: str) -> None:
        self.deltas: list[Delta] = []
        self._texts = {CONTENT: _Text(), REASONING: _Text()}
        self.calls: list[_Call] = []
        self._bad_calls = 0  # calls that are open or whose arguments are not valid JSON
        self._pending = {CONTENT: "", REASONING: ""}
        self._started = {CONTENT: False, REASONING: False}
        self.strip = strip
        self.id_pattern = id_pattern
        self.incomplete = False
        # The last delta stays "open" while pieces of the same kind follow; joined once in ``_seal``.
        self._open_key: tuple[str, int] | None = None
        self._open_parts: list[str] = []
        # While a region is held: the deltas index it starts at and the state to restore if it is dropped.
        self._hold: tuple[int, int, int, int, dict[str, str], dict[str, bool], bool, int] | None = None

    # -- holding a region back ---------------------------------------------------------------------
    def hold(self) -> None:
        """Deltas from here on are kept back (not returned by ``take``) until ``release`` or ``drop``."""
        self._seal()
        self._hold = (
            len(self.deltas),
            len(self.calls),
            len(self._texts[CONTENT].parts),
            len(self._texts[REASONING].parts),
            dict(self._pending),
            dict(self._started),
            self.incomplete,
            self._bad_calls,
        )

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
        at, calls, content, reasoning, pending, started, incomplete, bad_calls = hold
        del self.deltas[at:], self.calls[calls:], self._texts[CONTENT].parts[content:]
        del self._texts[REASONING].parts[reasoning:]
        self._pending, self._started, self.incomplete, self._bad_calls = pending, started, incomplete, bad_calls

    # -- text ------------------------------------------------------------------------------------
    def text(self, field: str, text: str) -> None:
        """Append text to ``content`` or ``reasoning_content`` (edges trimmed when ``strip``).

        Whitespace at the end of a piece is held: emitted if more text of the field follows (``"A\n<think>..
        </think>\nB"`` keeps both newlines), dropped at the end of the output."""
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

    def _raw_text(self, field: str, text: str) -> None:
        self._texts[field].parts.append(text)
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
        self._bad_calls += 1
        self.deltas.append(
            {
                "tool_calls": [
                    {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
                ]
            }
        )

    def args(self, text: str) -> None:
        """Append a fragment of the current call's JSON arguments."""
        if not text:
            return
        call = self.calls[-1]
        call.parts.parts.append(text)
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
        calls[-1].parts.parts.append(text)
        return [{"tool_calls": [{"index": len(calls) - 1, "function": {"arguments": text}}]}]

    def end_call(self) -> None:
        """The current call's arguments are complete: decode them once."""
        call = self.calls[-1]
        if call.done:
            return
        call.done = True
        raw = call.parts.upto(len(call.parts.parts))
        if not raw.strip():
            self.args("{}")
            call.value, call.valid = {}, True
        else:
            try:
                call.value, call.valid = json.loads(raw), True
            except (ValueError, RecursionError):
                call.value, call.valid = raw, False
        if call.valid:
            self._bad_calls -= 1

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

    def _returned(self) -> tuple[int, int, int, bool, int]:
        """What the deltas returned so far add up to (a held region not yet): the number of calls and of
        content and reasoning pieces, the incomplete flag and the number of open or invalid calls."""
        hold = self._hold
        if hold is not None:
            return hold[1], hold[2], hold[3], hold[6], hold[7]
        texts = self._texts
        return len(self.calls), len(texts[CONTENT].parts), len(texts[REASONING].parts), self.incomplete, self._bad_calls

    def message_incomplete(self) -> bool:
        """Whether the message so far is flagged ``incomplete`` (without building it)."""
        _calls, _content, _reasoning, incomplete, bad_calls = self._returned()
        return incomplete or bad_calls > 0

    def message(self) -> AssistantMessage:
        n_calls, n_content, n_reasoning, incomplete, bad_calls = self._returned()
        calls: list[ToolCall] = []
        for call in self.calls[:n_calls]:
            calls.append(
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments()}}
            )
        message: AssistantMessage = {
            "role": "assistant",
            "content": self._texts[CONTENT].upto(n_content) or None,
            "reasoning_content": self._texts[REASONING].upto(n_reasoning) or None,
            "tool_calls": calls,
        }
        if incomplete or bad_calls > 0:
            message["incomplete"] = True
        return message
