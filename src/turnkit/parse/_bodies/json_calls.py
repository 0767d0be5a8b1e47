"""``JsonCalls``: a JSON call object ``{"name": ..., "arguments": {...}}`` or a list of them.

A depth-1 walk over the object's members: the name, id and content members are collected and decoded,
the arguments value is streamed raw as it arrives (its end found by :class:`JsonValueScanner`).
"""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import Any

from turnkit._json import json_loads
from turnkit.parse._bodies.base import MAX_NAME, REJECT, WS, Body, Fed, ToolTypes, after_fence, check_depth
from turnkit.parse._bodies.json_args import JsonArgsBody
from turnkit.parse._emit import Delta, Emitter
from turnkit.parse._json_scan import (
    QUOTES,
    REMEMBERED,
    REMEMBERED_CHUNK,
    JsonValueScanner,
    json_text,
    plain_string,
    quote_kind,
)
from turnkit.parse._spec import JsonCalls

__all__ = ["JsonCallsBody"]


class _State(enum.Enum):
    START = enum.auto()
    """Before the value: whitespace, an opening fence or wrapping tag, then ``{`` or ``[``."""
    FENCE = enum.auto()
    """Inside the opening fence's info line."""
    WRAP_OPEN = enum.auto()
    """Reading a wrapping tag ``<tag>``."""
    OBJ = enum.auto()
    """Inside a call object, before a member (or ``}``)."""
    KEY = enum.auto()
    """Inside a member's key."""
    COLON = enum.auto()
    """After a member's key."""
    VALUE = enum.auto()
    """Inside a member's value."""
    AFTER = enum.auto()
    """After a member's value: ``,`` or ``}``."""
    LIST_NEXT = enum.auto()
    """In a list of calls, between objects: ``{``, ``,`` or ``]``."""
    REPEAT = enum.auto()
    """After an object, when further objects may follow (``JsonCalls.repeat``)."""
    FENCE_TAIL = enum.auto()
    """After a fenced value: the closing fence."""
    WRAP_CLOSE = enum.auto()
    """After a wrapped value: the closing ``</tag>``."""
    DONE = enum.auto()
    """The value ended; the rest is not the body's."""
    SEP = enum.auto()
    """After a call, when a separator may follow it (``JsonCalls.separators``)."""


(
    _START,
    _FENCE,
    _WRAP_OPEN,
    _OBJ,
    _KEY,
    _COLON,
    _VALUE,
    _AFTER,
    _LIST_NEXT,
    _REPEAT,
    _FENCE_TAIL,
    _WRAP_CLOSE,
    _DONE,
    _SEP,
) = _State


class _Role(enum.Enum):
    """What a member's value is to the call."""

    NAME = enum.auto()
    ARGS = enum.auto()
    ID = enum.auto()
    CONTENT = enum.auto()
    """A string that is the message content (``{"response": "..."}``)."""
    ENVELOPE = enum.auto()
    """A call or a list of calls (``{"tool_calls": [...]}``), decoded by a nested walker."""
    SKIP = enum.auto()


_NAME, _ARGS, _ID, _CONTENT, _ENVELOPE, _SKIP = _Role


class _Edge:
    """A pattern matched at a chunk's start: its end and groups (``""`` for a group that did not take part; ``()``
    when it does not match), remembered in :attr:`seen`, read there first."""

    __slots__ = ("match", "seen")

    def __init__(self, pattern: str) -> None:
        self.match = re.compile(pattern).match
        self.seen: dict[str, tuple[Any, ...]] = {}

    def find(self, text: str) -> tuple[Any, ...]:
        """The match of a chunk not in :attr:`seen` (remembered there while it has room)."""
        found = self.match(text)
        result = () if found is None else (found.end(), *found.groups(""))
        if len(self.seen) < REMEMBERED and len(text) <= REMEMBERED_CHUNK:
            self.seen[text] = result
        return result


_KEY_START = _Edge(r'[ \t\r\n,]*("[^"\\]*)?\Z')
"""In an object before a member: a chunk that only begins the next key (its opening quote and plain text), or holds
no more than whitespace and commas (the group ``""``)."""
_NEXT_KEY_START = _Edge(r'[ \t\r\n]*,[ \t\r\n,]*("[^"\\]*)?\Z')
"""After a member's value: the same after the comma."""
_OBJECT_KEY_START = _Edge(r'[ \t\r\n]*\{[ \t\r\n,]*("[^"\\]*)?\Z')
"""Before the value: the same after the call object's ``{`` (leading whitespace is kept only while a fence may
follow, which ``{`` rules out)."""
_OBJECT_END = re.compile(r"[ \t\r\n]*\}")
"""After a call's streamed arguments: the call object's closing brace."""
_COLON_MARK = _Edge(r"[ \t\r\n]*:[ \t\r\n]*")
"""After a member's key: the colon (a value may begin after it)."""
_KEY_END = _Edge(r'([^"\\]*")[ \t\r\n]*(:[ \t\r\n]*)?\Z')
"""Inside a key: a chunk that ends it (plain text, the closing quote), perhaps with the colon, no value yet."""

_MAX_FENCE_LINE = 64
_MAX_WRAP_TAG = 32


class _End:
    """What a step method returns to end the current ``feed`` with ``value``."""

    __slots__ = ("value",)

    def __init__(self, value: Fed) -> None:
        self.value = value


_WAIT = _End(None)
"""The common end: the body goes on (built once; an ``_End`` is never changed)."""


class JsonCallsBody(Body):
    """``{"name": ..., "arguments": {...}}`` or ``[{...}, ...]``: a depth-1 walk, argument values streamed raw."""

    __slots__ = (
        "spec",
        "state",
        "listed",
        "scanner",
        "key_raw",
        "role",
        "value_parts",
        "inner",
        "inner_fed",
        "produced",
        "wrapped",
        "fenced",
        "opening",
        "tail",
        "delegate",
        "name",
        "call_id",
        "started",
        "pending_args",
        "string_args",
        "sep_space",
        "sep_seen",
        "sink",
        "sink_index",
    )

    def __init__(
        self, spec: JsonCalls, emitter: Emitter, types: ToolTypes, max_depth: int, region_close: str | None = None
    ) -> None:
        super().__init__(spec, emitter, types, max_depth, region_close)
        self.spec = spec
        self.state = _START
        self.listed = False
        self.scanner: JsonValueScanner | None = None
        self.key_raw = ""
        self.role = _SKIP
        self.value_parts: list[str] = []
        self.inner: JsonCallsBody | None = None
        self.inner_fed: list[str] = []  # the envelope value's text, replayed as a plain value if it is no call
        self.produced = False
        self.wrapped = ""
        self.fenced = False
        self.opening = ""  # leading whitespace and the fence line, bounded by _MAX_FENCE_LINE
        self.tail = ""
        self.delegate: JsonArgsBody | None = None
        self.name: str | None = None
        self.call_id: str | None = None
        self.started = False
        self.pending_args: str | None = None
        self.string_args = False
        self.sep_space = ""  # whitespace after a call, given back unless a separator follows
        self.sep_seen = False
        self.sink: list[str] | None = None  # the streamed arguments' fragments (set where a member value starts)
        self.sink_index = 0

    def _reset_object(self) -> None:
        self.name = None
        self.call_id = None
        self.started = False
        self.pending_args = None
        self.string_args = False

    # -- the walk ------------------------------------------------------------------------------------
    def feed(self, text: str, pos: int = 0) -> Fed:
        """``text`` from ``pos`` on (the default: all of it)."""
        if self.delegate is not None:
            return self.delegate.feed(text[pos:])
        end = len(text)
        while pos < end:
            state = self.state
            step: int | _End
            if state is _VALUE:
                step = self._value(text, pos)
            elif state is _KEY:
                step = self._key(text, pos)
            elif state is _DONE:
                return text[pos:]
            elif state is _SEP:
                step = self._separator(text, pos)
            elif state is _FENCE_TAIL or state is _WRAP_CLOSE or state is _WRAP_OPEN:
                step = self._edge(text, pos)
            else:
                char = text[pos]
                if char in WS and state is not _FENCE:
                    if state is _START:
                        self.opening += char
                    pos += 1
                    continue
                if state is _START or state is _FENCE:
                    step = self._opening(text, pos, char)
                elif state is _LIST_NEXT or state is _REPEAT:
                    step = self._between_objects(text, pos, char)
                else:
                    step = self._members(text, pos, char)
            if isinstance(step, _End):
                return step.value
            pos = step
        return None

    def _opening(self, text: str, pos: int, char: str) -> int | _End:
        """START and FENCE: what the value is (an object, a list, fenced, wrapped, or a ``NAME{args}`` call)."""
        spec = self.spec
        if self.state is _FENCE:
            newline = text.find("\n", pos)
            self.opening += text[pos : len(text) if newline < 0 else newline + 1]
            if len(self.opening) > _MAX_FENCE_LINE:
                return _End(REJECT)
            if newline < 0:
                return _WAIT
            self.state = _START
            self.fenced = True
            return newline + 1
        if spec.fence and char == "`":
            self.state = _FENCE
            return pos
        if char == "[":
            self.listed = True
            self.state = _LIST_NEXT
            return pos + 1
        if char == "{":
            self.state = _OBJ
            return pos + 1
        if char == "<" and spec.wrap_tags and not self.wrapped:
            self.state = _WRAP_OPEN
            self.tail = ""
            return pos
        if spec.or_named is not None and not self.out.in_call:
            self.delegate = JsonArgsBody(spec.or_named, self.out, self.types, self.max_depth)
            return _End(self.delegate.feed(text[pos:]))
        return _End(REJECT)

    def _edge(self, text: str, pos: int) -> int | _End:
        """WRAP_OPEN, WRAP_CLOSE and FENCE_TAIL: the tag or fence around the value."""
        state = self.state
        if state is _WRAP_OPEN:
            close = text.find(">", pos)
            self.tail += text[pos:] if close < 0 else text[pos : close + 1]
            if close < 0:
                return _End(None if len(self.tail) <= _MAX_WRAP_TAG else REJECT)
            tag = self.tail[1:-1].strip()
            if tag not in self.spec.wrap_tags:
                return _End(REJECT)
            self.wrapped, self.tail = tag, ""
            self.state = _START
            return close + 1
        self.tail += text[pos:]
        if state is _FENCE_TAIL:
            return _End(after_fence(self.tail))
        stripped = self.tail.lstrip(WS)
        closing = f"</{self.wrapped}>"
        if stripped.startswith(closing):
            self.wrapped = ""
            return _End(self._done(stripped[len(closing) :]))
        if closing.startswith(stripped):
            return _WAIT
        self.wrapped = ""
        return _End(self._done(stripped))

    def _members(self, text: str, pos: int, char: str) -> int | _End:
        """OBJ, COLON and AFTER: the punctuation between an object's members."""
        state = self.state
        if state is _OBJ:
            if char == "}":
                return self._object_done(text, pos + 1)
            if char == ",":
                return pos + 1
            if char == '"':
                self.scanner = JsonValueScanner(max_depth=self.max_depth)
                self.key_raw = ""
                self.state = _KEY
                return pos
            return _End(self._give_up(text[pos:]))
        if state is _COLON:
            if char != ":":
                return _End(self._give_up(text[pos:]))
            self.state = _VALUE
            self.scanner = None
            return pos + 1
        if char == ",":
            self.state = _OBJ
            return pos + 1
        if char == "}":
            return self._object_done(text, pos + 1)
        return _End(self._give_up(text[pos:]))

    def _between_objects(self, text: str, pos: int, char: str) -> int | _End:
        """LIST_NEXT and REPEAT: between the call objects of a list, or of objects written one after another."""
        if char == "{":
            self.state = _OBJ
            if self.listed:
                self._reset_object()
            return pos + 1
        if self.state is _REPEAT:
            return _End(text[pos:])
        if char == ",":
            return pos + 1
        if char == "]":
            return _End(self._done(text[pos + 1 :]))
        return _End(self._give_up(text[pos:]))

    def _separator(self, text: str, pos: int) -> int | _End:
        """SEP: whitespace, at most one separator, whitespace; then the rest is not the body's."""
        end = len(text)
        while pos < end:
            char = text[pos]
            if char in WS:
                if not self.sep_seen:
                    self.sep_space += char
                pos += 1
            elif not self.sep_seen and char in self.spec.separators:
                self.sep_seen = True
                pos += 1
            else:
                rest = text[pos:] if self.sep_seen else self.sep_space + text[pos:]
                self.state = _DONE
                return _End(self._done(rest))
        return pos

    def _object_done(self, text: str, pos: int) -> int | _End:
        self._finish_object()
        if self.state is _SEP:
            return pos
        if self.state is _DONE:
            return _End(self._done(text[pos:]))
        return pos

    def _key(self, text: str, pos: int) -> int | _End:
        assert self.scanner is not None
        stop = self.scanner.feed(text[pos:])
        if stop < 0:
            self.key_raw += text[pos:]
            if len(self.key_raw) > MAX_NAME:
                return _End(self._give_up(""))
            return _WAIT
        self.key_raw += text[pos : pos + stop]
        self._key_done()
        return pos + stop

    def _key_done(self) -> None:
        """The key string ended (``key_raw``, quotes included): what its value is to the call."""
        key = plain_string(self.key_raw)
        if key is None:
            try:
                key = json_loads(self.key_raw)
            except ValueError:
                key = self.key_raw
        self.role = self._role(str(key))
        self.state = _COLON

    def _role(self, key: str) -> _Role:
        spec = self.spec
        if key in spec.envelope_keys:
            return _ENVELOPE
        if key in spec.content_keys:
            return _CONTENT
        if spec.name_is_key:
            if not key.strip():
                return _SKIP
            self.name = key
            return _ARGS
        if key in spec.name_keys:
            return _NAME
        if key in spec.args_keys:
            return _ARGS
        if key in spec.id_keys:
            return _ID
        return _SKIP

    # -- member values -------------------------------------------------------------------------------
    def fast(self, text: str) -> list[Delta] | None:
        """Chunks inside a member's key or value that do not end it in one step; any other through ``fed`` (see
        :meth:`Body.fast`)."""
        scanner = self.scanner
        if self.state is not _VALUE or scanner is None:  # (a delegating body stays in START)
            return self._fast_edge(text)
        if scanner.escape or not scanner.in_string or '"' in text or "\\" in text:  # (else: more string text)
            if scanner.scalar:
                return self.fed(text)
            quotes = 2
            if scanner.depth and not scanner.escape:
                known = QUOTES.get(text)
                quotes = quote_kind(text) if known is None else known
            if quotes != 2:  # quotes only, inside an object or array: each opens or closes a string, the value goes on
                if quotes:
                    scanner.in_string = not scanner.in_string
            else:
                stop = scanner.feed(text)
                if stop >= 0:  # the value ends in the chunk: the walk goes on from there (as fed)
                    spec = self.spec
                    if (
                        self.sink is not None
                        and (close := _OBJECT_END.match(text, stop)) is not None
                        and self.pending_args is None
                        and not (self.listed or self.wrapped or self.fenced or spec.repeat or spec.separators)
                    ):  # streamed arguments, then the lone call object's end: the walk's steps to _done, in one
                        self.out.args(text[:stop])
                        self.out.end_call()
                        self._reset_object()
                        self.state = _DONE
                        self.end = text[close.end() :]
                        return None
                    pos = self._value_piece(text, 0, stop)
                    return self._after_value(text[pos:]) if pos < len(text) else self.out.take()
        sink = self.sink
        if sink is not None:  # Emitter.args_delta, inlined: one argument fragment as this feed's only delta
            if scanner.depth and not scanner.escape and (to := self.lane_to) is not None:
                # streamed arguments inside an object or array: inside a string, so are the next chunks without a
                # quote or backslash; quote-only chunks only flip the string state (see Lane)
                index = self.sink_index
                to._lane = ('"', "\\", sink, index) if scanner.in_string else ("", "", sink, index)
                to._lane_scanner = scanner
            sink.append(text)
            return [{"tool_calls": [{"index": self.sink_index, "function": {"arguments": text}}]}]
        if self.role is not _SKIP:
            self.value_parts.append(text)
        return []

    def _fast_edge(self, text: str) -> list[Delta] | None:
        """Chunks where a member value has not begun, in one step: more of a key, a key's beginning after ``{`` or
        ``,``, a key's end with its colon (what feed's walk does with them); anything else through ``fed``."""
        state = self.state
        scanner = self.scanner
        if state is _KEY and scanner is not None and not scanner.escape:
            if '"' not in text and "\\" not in text:
                if len(self.key_raw) + len(text) <= MAX_NAME:  # only more key text (as _key)
                    self.key_raw += text
                    return []
            else:
                end = _KEY_END.seen.get(text)
                if end is None:
                    end = _KEY_END.find(text)
                if end:
                    self.key_raw += end[1]
                    scanner.in_string = False
                    self._key_done()
                    if end[2]:
                        self.state = _VALUE
                        self.scanner = None
                    return []
        elif state is _OBJ or state is _AFTER or (state is _START and self.delegate is None):
            edge = _KEY_START if state is _OBJ else _NEXT_KEY_START if state is _AFTER else _OBJECT_KEY_START
            start = edge.seen.get(text)
            if start is None:
                start = edge.find(text)
            if start and len(start[1]) <= MAX_NAME:
                if not start[1]:  # only whitespace and commas (after the comma or brace)
                    self.state = _OBJ
                    return []
                scanner = self.scanner = JsonValueScanner(max_depth=self.max_depth)  # (_key_begins, inlined)
                scanner.started = scanner.in_string = True
                self.key_raw = start[1]
                self.state = _KEY
                return []
        elif state is _COLON and self.role is not _ENVELOPE:
            colon = _COLON_MARK.seen.get(text)
            if colon is None:
                colon = _COLON_MARK.find(text)
            if colon and colon[0] < len(text):  # the colon, then the value begins: read from there
                self.state = _VALUE
                self.scanner = None
                pos = self._value(text, colon[0])
                assert not isinstance(pos, _End)  # (only an envelope's value ends the feed there)
                return self._after_value(text[pos:]) if pos < len(text) else self.out.take()
        return self.fed(text)

    def _key_begins(self, key: str) -> None:
        """A key-start edge matched (see ``_KEY_START``): in the object, before a member; ``key``: its beginning, from
        the opening quote (``""``: none yet)."""
        if key:
            scanner = self.scanner = JsonValueScanner(max_depth=self.max_depth)
            scanner.started = scanner.in_string = True
            self.key_raw = key
            self.state = _KEY
        else:
            self.state = _OBJ

    def _after_value(self, rest: str) -> list[Delta] | None:
        """:meth:`fast`'s end for a chunk in which a member's value ended before ``rest`` (not empty): a comma and
        perhaps the next key's beginning in one step (``_NEXT_KEY_START``), else the walk; then the chunk's deltas,
        or ``None`` with :attr:`end` set when the body ended."""
        start = _NEXT_KEY_START.seen.get(rest)
        if start is None:
            start = _NEXT_KEY_START.find(rest)
        if start and len(start[1]) <= MAX_NAME:
            self._key_begins(start[1])
        else:
            end = self.feed(rest)
            if end is not None:
                self.end = end
                return None
        return self.out.take()

    def _value(self, text: str, pos: int) -> int | _End:
        end = len(text)
        role = self.role
        if role is _ENVELOPE:
            return self._envelope_value(text, pos)
        if self.scanner is None:
            while pos < end and text[pos] in WS:
                pos += 1
            if pos == end:
                return pos
            self.scanner = JsonValueScanner(max_depth=self.max_depth)
            self.value_parts = []
            self.sink = None
            if role is _ARGS:
                self.string_args = text[pos] == '"'
                if self.name is not None and not self.started and not self.string_args and not self.spec.defer:
                    self._start()
                if self.started and not self.string_args:  # streamed: the fast path appends to the call at once
                    calls = self.out.calls
                    self.sink, self.sink_index = calls[-1].parts.parts, len(calls) - 1
        return self._value_piece(text, pos, self.scanner.feed(text[pos:]))

    def _value_piece(self, text: str, pos: int, stop: int) -> int:
        """The value's text from ``pos``, to ``pos + stop`` where its scanner found its end (``-1``: all)."""
        end = len(text)
        role = self.role
        piece = text[pos:] if stop < 0 else text[pos : pos + stop]
        streamed = role is _ARGS and self.started and not self.string_args
        if streamed:
            self.out.args(piece)
        elif role is not _SKIP:
            self.value_parts.append(piece)
        if stop < 0:
            return end
        if not streamed and role is not _SKIP:  # (streamed arguments and skipped values leave nothing to do)
            self._value_done()
        self.state = _AFTER
        return pos + stop

    def _envelope_value(self, text: str, pos: int) -> int | _End:
        """The value of an envelope key is itself a call or a list of calls: a nested walker decodes it. If it
        is not one, its text is read again as a plain value, so the result does not depend on the chunking."""
        if self.inner is None:
            inner_spec = dataclasses.replace(self.spec, envelope_keys=(), content_keys=())
            self.inner = JsonCallsBody(inner_spec, self.out, self.types, self.max_depth)
            self.inner_fed = []
        piece = text[pos:]
        if not self.inner.produced:
            self.inner_fed.append(piece)
        rest = self.inner.feed(piece)
        if rest is None:
            return len(text)
        produced = self.inner.produced
        self.produced = self.produced or produced
        self.inner = None
        fed, self.inner_fed = self.inner_fed, []
        if rest is REJECT:
            self.role = _SKIP
            self.state = _VALUE
            return _End(self.feed("".join(fed)))
        self.state = _AFTER
        return _End(self.feed(rest))

    def _value_done(self) -> None:
        raw = "".join(self.value_parts)
        role = self.role
        if role is _CONTENT:
            try:
                value = json_loads(raw)
            except ValueError:
                value = raw
            if isinstance(value, str):
                self.out.text("content", value)
                self.produced = True
        elif role is _NAME:
            name = plain_string(raw)
            if name is None:
                try:
                    name = json_loads(raw)
                except ValueError:
                    name = raw.strip('"')
            self.name = str(name) if isinstance(name, str) and name.strip() else None
            if (
                self.name is not None
                and not self.spec.defer
                and not self.spec.require_args
                and not self.started
                and self.pending_args is None
            ):
                self._start()  # the name is known: announce the call before its arguments arrive
        elif role is _ID:
            try:
                self.call_id = str(json_loads(raw))
            except ValueError:
                self.call_id = raw
        elif role is _ARGS:
            if self.string_args:
                try:
                    inner = json_loads(raw)
                except ValueError:
                    inner = raw
                if isinstance(inner, str):
                    check_depth(inner, self.max_depth)  # JSON arguments inside a JSON string
                self.pending_args = inner if isinstance(inner, str) else json_text(inner)
            elif not self.started:
                self.pending_args = raw

    # -- calls ---------------------------------------------------------------------------------------
    def _start(self) -> None:
        assert self.name is not None
        self.out.start_call(self.name, self.call_id)
        self.started = True
        self.produced = True

    def _finish_object(self) -> None:
        if self.spec.require_args and not self.started and self.pending_args is None:
            self.name = None  # no arguments: not a call
        if self.name is not None:
            if not self.started:
                self._start()
            if self.pending_args is not None:
                self.out.args(self.pending_args)
            self.out.end_call()
        self._reset_object()
        if self.listed:
            self.state = _LIST_NEXT
        elif self.spec.repeat:
            self.state = _REPEAT
        elif self.spec.separators and self.produced and not self.wrapped and not self.fenced:
            self.state = _SEP
            self.sep_space, self.sep_seen = "", False
        else:
            self.state = _DONE

    def _done(self, rest: str) -> Fed:
        if not self.produced:
            # An ordinary JSON value, not a call, envelope or call list (``[{"a": 1}]`` in xLAM output): the
            # engine gives the region back as content.
            return REJECT
        if self.wrapped:
            self.state = _WRAP_CLOSE
            self.tail = ""
            return self.feed(rest)
        if self.fenced:
            self.state = _FENCE_TAIL
            self.tail = ""
            return self.feed(rest)
        return rest

    def _give_up(self, rest: str) -> Fed:
        """Not the expected shape after all: close what is open, hand the rest back as text."""
        if self.started:
            self.out.incomplete = True
            self.out.end_call()
        elif self.state is _START or self.state is _FENCE or not self.produced:
            # Nothing was emitted yet (``[see docs]``, ``[1, 2]``): the region's text is content, not lost.
            return REJECT
        return rest

    def close(self) -> None:
        if self.delegate is not None:
            self.delegate.close()
            return
        if self.inner is not None:
            self.inner.close()
            self.out.incomplete = True
            return
        state = self.state
        if (
            state is _START
            or state is _FENCE
            or state is _DONE
            or state is _FENCE_TAIL
            or state is _REPEAT
            or state is _WRAP_OPEN
            or state is _WRAP_CLOSE
            or state is _SEP
        ):
            return
        if state is not _LIST_NEXT or self.started:
            self.out.incomplete = True
        if self.name is not None and not self.started:
            self._start()
            if self.role is _ARGS and self.value_parts:
                self.out.args("".join(self.value_parts))
        if state is _LIST_NEXT and self.listed:
            self.out.incomplete = True
