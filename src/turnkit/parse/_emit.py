"""The output side of a stream parser: OpenAI-style deltas and the message they add up to.

Every piece of parsed output goes through one :class:`Emitter`, which appends the
``choices[0].delta``-shaped dict and updates the running message in the same step, so the message a
complete parse returns is by construction the sum of the deltas. The message is kept up to date as
deltas are added (joined text, finished calls built once), so reading it costs only what changed.
"""

from __future__ import annotations

from typing import Any

from turnkit._json import json_loads, loads_or_none
from turnkit.errors import ToolCallError
from turnkit.messages import AssistantMessage, CallError, ToolCall

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
    __slots__ = ("name", "id", "parts", "value", "done", "valid", "seen", "error")

    def __init__(self, name: str, call_id: str) -> None:
        self.name = name
        self.id = call_id
        self.parts = _Text()
        self.value: Any = None  # decoded arguments once done; while open, as of ``seen`` parts
        self.done = False
        self.valid = False
        self.seen = -1
        self.error: CallError | None = None

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
        "_open",
        "_open_into",
        "_open_name",
        "_open_parts",
        "_hold",
        "holding",
        "_bad_calls",
        "known_tools",
        "strict",
    )

    def __init__(
        self, *, strip: bool, id_pattern: str, known_tools: frozenset[str] | None = None, strict: bool = False
    ) -> None:
        self.deltas: list[Delta] = []
        self._texts = {CONTENT: _Text(), REASONING: _Text()}
        self.calls: list[_Call] = []
        self._bad_calls = 0  # calls that are open or whose arguments are not valid JSON
        self._pending = {CONTENT: "", REASONING: ""}
        self._started = {CONTENT: False, REASONING: False}
        self.strip = strip
        self.id_pattern = id_pattern
        self.incomplete = False
        # The last delta stays "open" while pieces of the same kind follow (text of one field, or arguments of one
        # call: ``_open`` is the field's name or the call's index); joined once in ``_seal`` into
        # ``_open_into[_open_name]``.
        self._open: str | int | None = None
        self._open_into: dict[str, Any] = {}
        self._open_name = ""
        self._open_parts: list[str] = []
        # While a region is held: the deltas index it starts at and the state to restore if it is dropped.
        self._hold: tuple[int, int, int, int, dict[str, str], dict[str, bool], bool, int] | None = None
        self.holding = False
        """Whether deltas are held back (``hold`` until ``release`` or ``drop``): a plain attribute, read per chunk."""
        self.known_tools = known_tools
        """The request's tool names (``tools=`` given): a call to any other name is flagged ``unknown_tool``."""
        self.strict = strict
        """Raise :class:`~turnkit.errors.ToolCallError` on a per-call error instead of flagging the call."""

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
        self.holding = True

    def release(self) -> None:
        """The held deltas stand: the next ``take`` returns them."""
        self._hold = None
        self.holding = False

    def drop(self) -> None:
        """Forget the held deltas — never returned, so nothing is retracted — and the state they built."""
        hold, self._hold = self._hold, None
        self.holding = False
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
        if self.strip:
            text = self._stripped(field, text)
        if text:
            self._raw_text(field, text)

    def text_now(self, field: str, text: str) -> list[Delta]:
        """Hot path: ``text(field, text)`` then ``take()``, when no delta is pending and no region held."""
        if self.strip:
            text = self._stripped(field, text)
        if not text:
            return []
        self._texts[field].parts.append(text)
        return [{field: text}]

    def _stripped(self, field: str, text: str) -> str:
        """What of ``text`` is emitted now when edges are trimmed: a field's leading whitespace is dropped, a
        piece's trailing whitespace held until more text of the field follows."""
        if not self._started[field]:
            text = text.lstrip()
            if not text:
                return ""
            self._started[field] = True
        core = text.rstrip()
        if not core:
            self._pending[field] += text
            return ""
        text, self._pending[field] = self._pending[field] + core, text[len(core) :]
        return text

    def _raw_text(self, field: str, text: str) -> None:
        self._texts[field].parts.append(text)
        if self._open == field:
            self._open_parts.append(text)
            return
        if self._open is not None:  # (the common case, nothing open, without the call)
            self._seal()
        delta = {field: ""}
        self.deltas.append(delta)
        self._open, self._open_into, self._open_name, self._open_parts = field, delta, field, [text]

    def _seal(self) -> None:
        """Join the pieces of the open delta into it."""
        if self._open is None:
            return
        self._open_into[self._open_name] = "".join(self._open_parts)
        self._open = None

    # -- tool calls --------------------------------------------------------------------------------
    def start_call(self, name: str, call_id: str | None = None) -> None:
        if self._open is not None:
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
        calls = self.calls
        calls[-1].parts.parts.append(text)
        index = len(calls) - 1
        if self._open == index:
            self._open_parts.append(text)
            return
        if self._open is not None:
            self._seal()
        function = {"arguments": ""}
        self.deltas.append({"tool_calls": [{"index": index, "function": function}]})
        self._open, self._open_into, self._open_name, self._open_parts = index, function, "arguments", [text]

    def args_delta(self, text: str) -> list[Delta]:
        """Hot path: one argument fragment as this feed's only delta (nothing else is pending)."""
        calls = self.calls
        calls[-1].parts.parts.append(text)
        return [{"tool_calls": [{"index": len(calls) - 1, "function": {"arguments": text}}]}]

    def end_call(self, *, cut: bool = False) -> None:
        """The current call's arguments are complete (``cut``: the output ended inside them): decode them
        once, then check the call (a known tool name, a JSON object as arguments)."""
        call = self.calls[-1]
        if call.done:
            return
        call.done = True
        raw = "".join(call.parts.parts)  # (once done, the call's arguments are its value: no joined text is kept)
        if not raw.strip():
            self.args("{}")
            call.value, call.valid = {}, True
        else:
            try:
                call.value, call.valid = json_loads(raw), True
            except (ValueError, RecursionError):
                call.value, call.valid = raw, False
        if call.valid:
            self._bad_calls -= 1
            if self.known_tools is None and isinstance(call.value, dict):
                return  # (nothing for _check to flag)
        self._check(len(self.calls) - 1, cut=cut)

    def _check(self, index: int, *, cut: bool) -> None:
        call = self.calls[index]
        known = self.known_tools
        if known is not None and call.name not in known:
            names = sorted(known)
            offered = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "") or "none"
            self.flag(index, "unknown_tool", f"{call.name!r} is not one of the request's tools ({offered})")
        elif cut and not call.valid:
            self.flag(index, "incomplete", "the output ended inside the call's arguments")
        elif not call.valid:
            self.flag(index, "invalid_arguments", "the arguments are not valid JSON")
        elif not isinstance(call.value, dict):
            kind = type(call.value).__name__
            self.flag(index, "invalid_arguments", f"the arguments are JSON but not an object ({kind})")

    def flag(self, index: int, code: str, message: str) -> None:
        """Give call ``index`` a per-call error (once): on the call in the message and as an ``error`` key in
        one more delta for that call — or, ``strict``, raise :class:`~turnkit.errors.ToolCallError`."""
        call = self.calls[index]
        if call.error is not None:
            return
        if self.strict:
            raise ToolCallError(f"tool call {index} ({call.name!r}): {message}", index=index, code=code)
        call.error = {"code": code, "message": message}
        self._seal()
        self.deltas.append({"tool_calls": [{"index": index, "error": {"code": code, "message": message}}]})

    def cut_open_calls(self) -> None:
        """End of output: a call still open (its arguments unfinished) gets the error ``incomplete``."""
        calls = self.calls
        if calls and not calls[-1].done:
            known = self.known_tools
            if known is not None and calls[-1].name not in known:
                self._check(len(calls) - 1, cut=True)
            else:
                self.flag(len(calls) - 1, "incomplete", "the output ended inside the call")

    @property
    def in_call(self) -> bool:
        return bool(self.calls) and not self.calls[-1].done

    # -- end ---------------------------------------------------------------------------------------
    def take(self) -> list[Delta]:
        if self._open is not None:  # (_seal, inlined: take ends every chunk that emits)
            self._open_into[self._open_name] = "".join(self._open_parts)
            self._open = None
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
            entry: ToolCall = {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments()},
            }
            if call.error is not None:
                entry["error"] = {"code": call.error["code"], "message": call.error["message"]}
            calls.append(entry)
        message: AssistantMessage = {
            "role": "assistant",
            "content": self._texts[CONTENT].upto(n_content) or None,
            "reasoning_content": self._texts[REASONING].upto(n_reasoning) or None,
            "tool_calls": calls,
        }
        if incomplete or bad_calls > 0:
            message["incomplete"] = True
        return message
