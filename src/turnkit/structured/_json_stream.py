"""The incremental JSON parser: push text, get the partial value and the operations that changed it.

Work is proportional to the new input. The value tree is built in place (one live tree, never
rebuilt); the one open string is kept as a list of parts and joined only when the value is read.
Spans (string runs, whitespace, numbers) are scanned with compiled regexes, not per character.

Interim values never contradict the final document: a string shows its prefix (an escape or a
surrogate pair only once complete), a number or literal appears only once complete, and an object
key appears only together with the start of its value.
"""

from __future__ import annotations

import enum
import json.decoder
import re
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any

from turnkit._args import expect
from turnkit._astream import astream
from turnkit._json import escape_token
from turnkit.errors import IncompleteInputError, LimitExceededError, ParseError, UsageError, snippet_around
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.structured._patch import Op
from turnkit.structured._wire import OpEncoder, _encode_str

__all__ = ["JsonStream", "loads", "loads_partial"]


class _State(enum.Enum):
    """Parser states. Compared by identity: in feed()'s long loop CPython 3.11 cannot specialise
    ``==`` before a far jump (it compares generically), while ``is`` is always one pointer test."""

    VALUE = "a value is expected (top level, after ':', '[' or ',' in an array; ']' only in an empty array)"
    OBJ_KEY = "a key is expected (after '{' or ',' in an object; '}' only in an empty object)"
    KEY = "inside a key string"
    COLON = "after a key: ':'"
    AFTER = "after a value inside a container: ',' or the closer"
    STRING = "inside a string value"
    NUMBER = "inside a number (complete only at a delimiter or at close)"
    DONE = "the top-level value is complete: only whitespace may follow"
    PREFIX = "skip_prefix: skipping text before the first '{' or '['"
    TRAIL = "skip_prefix: the value is complete, everything after it is ignored"
    DEAD = "closed, or failed with an error"


_VALUE = _State.VALUE
_OBJ_KEY = _State.OBJ_KEY
_KEY = _State.KEY
_COLON = _State.COLON
_AFTER = _State.AFTER
_STRING = _State.STRING
_NUMBER = _State.NUMBER
_DONE = _State.DONE
_PREFIX = _State.PREFIX
_TRAIL = _State.TRAIL
_DEAD = _State.DEAD

# Scanning uses str methods (find, lstrip, isprintable) on the common paths: with pieces of a few
# characters a regex call costs several times more than the work it does. The regexes below handle
# what those cannot: escapes, control characters, whitespace runs, number syntax.
_WS = re.compile(r"[ \t\n\r]*")
_NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_NUMBER_CHARS = "0123456789eE.+-"
# The longest start of a number token that some continuation can still make a number ("-", "1.", "1e+"
# are such starts): where a token stops matching it is the first character no completion can accept.
_NUMBER_PREFIX = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.(?:[0-9]+(?:[eE][+-]?[0-9]*)?)?|[eE][+-]?[0-9]*)?)?")
_number_prefix = _NUMBER_PREFIX.match


def _number_shape(token: str) -> str:
    """A valid number start reduced to the shortest one with the same continuations ("-12.50e" -> "1.1e")."""
    if token == "-":
        return token
    e = max(token.find("e"), token.find("E"))
    if e >= 0:
        return "1e" + ("1" if token[-1].isdigit() else "+" if e < len(token) - 1 else "")
    dot = token.find(".")
    if dot >= 0:
        return "1.1" if dot < len(token) - 1 else "1."
    return "0" if token.lstrip("-") == "0" else "1"


def _common_prefix(word: str, text: str) -> int:
    """How many leading characters of ``text`` spell the start of ``word``."""
    k = 0
    while k < len(word) and k < len(text) and word[k] == text[k]:
        k += 1
    return k


_NUMBER_START = "-0123456789"
_HEX_DIGITS = "0123456789abcdefABCDEF"
# String content up to the next quote, backslash that starts an unfinished escape, or control character
# (possessive: never backtracks, so a failed full match costs one pass).
_STR_BODY = re.compile(
    r'(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u(?![dD][89abAB])[0-9a-fA-F]{4}'
    r"|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})*+"
)
# An escape cut by the end of a piece: its start, or a high surrogate waiting for its low half.
_ESCAPE_TAIL = re.compile(
    r"\\(?:u(?:[0-9a-fA-F]{0,3}|[dD][89abAB][0-9a-fA-F]{2}(?:\\(?:u(?:[dD](?:[c-fC-F][0-9a-fA-F]{0,2})?)?)?)?))?"
)
_PREFIX_START = re.compile(r"[\[{]")
_HEX_RUN = re.compile(r"[0-9a-fA-F]*")
_LOW_ESCAPE = re.compile(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_LOW_ESCAPE_PREFIX = re.compile(r"(?:\\(?:u(?:[dD](?:[c-fC-F][0-9a-fA-F]{0,2})?)?)?)?")
_EAGER_LIMIT = 4096  # an open string is kept current in its container until this much input has gone into it
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS: dict[str, tuple[str, Any]] = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}

_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
"""json's own string decoder (C): decodes runs of complete escapes in one call."""
_ws = _WS.match
_plain_full = re.compile(r'[^"\\\x00-\x1f]*').fullmatch
"""Text with no quote, backslash or control character; the slow check behind ``str.isprintable``,
which refuses more (other C0/C1 controls, format characters such as the emoji joiner, separators)."""
_number_full = _NUMBER_RE.fullmatch
_str_body = _STR_BODY.match
_escape_tail = _ESCAPE_TAIL.fullmatch


_ESCAPE_MEMO_SIZE = 4096
_ESCAPE_MEMO_KEY = 24  # longest piece remembered
_escape_memo: dict[str, tuple[str, str]] = {}
"""Short string pieces with escapes, split by :func:`_split_escaped` (a pure function of the piece).
Streamed pieces are tokens, and ``\\n``, ``\\"``, ``\\uXXXX`` and their fragments recur: a hit costs a
dict lookup instead of the tail tests and a call of json's decoder. Bounded; emptied when full."""


def _split_escaped(text: str) -> tuple[str, str] | None:
    """String text with escapes as (decoded complete part, unfinished escape to carry over to the next
    piece); None when the loop must look (the string ends here, or the text is invalid)."""
    k = text.rfind("\\")
    tail = len(text) - k  # characters from the last backslash
    cut = len(text)  # where the carried-over escape starts
    if (
        (tail == 1 or tail < 7 and text[k + 1] == "u")
        and not (k and text[k - 1] == "\\" and (k - len(text[:k].rstrip("\\"))) % 2)  # not the end of `\\\\`
        and (tail < 6 or text[k + 2] in "dD" and text[k + 3] in "89abAB")  # unfinished, or a high surrogate
        and not text[k + 2 :].lstrip(_HEX_DIGITS)  # (not hex: the decoder refuses it below)
    ):
        cut = k
        if k >= 6 and text[k - 4] in "dD" and text[k - 3] in "89abAB" and _escape_tail(text, k - 6):
            cut = k - 6  # a surrogate pair, its low half unfinished
    head = text[:cut]
    if "\\" in head:
        try:
            piece, end = _scanstring(head + '"', 0)
        except ValueError:
            return None
        if end <= cut:  # stopped at an unescaped quote: the string ends in this piece
            return None
    elif '"' in head or not (head.isprintable() or _plain_full(head) is not None):
        return None
    else:
        piece = head
    split = piece, text[cut:]
    if len(text) <= _ESCAPE_MEMO_KEY:
        if len(_escape_memo) >= _ESCAPE_MEMO_SIZE:
            _escape_memo.clear()
        _escape_memo[text] = split
    return split


# An open array or object, as a tuple (cheap to build, one per container):
# (container, is_object, closer, prefix = path + "/", path, slot it fills in its parent, depth = tokens in path).
_Frame = tuple[dict[str, Any] | list[Any], bool, str, str, str, str | int | None, int]


def _frame(container: dict[str, Any] | list[Any], path: str, slot: str | int | None, depth: int) -> _Frame:
    is_object = type(container) is dict
    return (container, is_object, "}" if is_object else "]", path + "/", path, slot, depth)


class _JoinedValue:
    """``JsonStream.value`` while a long string has unjoined parts.

    A non-data descriptor: the current value normally sits in the instance dict, which Python reads
    first (a dict lookup, not a call); this is consulted only when it is missing, and joins the parts.
    """

    def __get__(self, stream: JsonStream | None, owner: type[JsonStream]) -> Any:
        if stream is None:
            return self
        return stream._join_string()


class JsonStream:
    """Push parser for one JSON document arriving in pieces.

    ``feed(text)`` returns the operations that changed :attr:`value`; ``close()`` ends the input.

    >>> s = JsonStream()
    >>> s.feed('{"title": "Hel')
    [{'op': 'add', 'path': '', 'value': {}}, {'op': 'add', 'path': '/title', 'value': 'Hel'}]
    >>> s.feed('lo", "n": 4')
    [{'op': 'append', 'path': '/title', 'value': 'lo'}]
    >>> s.value
    {'title': 'Hello'}
    >>> s.feed('2}')
    [{'op': 'add', 'path': '/n', 'value': 42}]
    >>> s.close(), s.done
    ([], True)
    """

    __slots__ = (
        "__dict__",  # holds only "value" (see _JoinedValue)
        "_box",
        "_carry",
        "_checkpoint",
        "_encoder",
        "_end_state",
        "_key",
        "_kparts",
        "_limits",
        "_max_chars",
        "_max_depth",
        "_nparts",
        "_nshape",
        "_nstart",
        "_scont",
        "_scur",
        "_skey",
        "_skip_prefix",
        "_spath",
        "_sparts",
        "_stack",
        "_started",
        "_steps",
        "_state",
        "_total",
        "_why_dead",
        "_wire",
    )

    def __init__(self, *, skip_prefix: bool = False, limits: Limits | None = None) -> None:
        expect(skip_prefix, bool, name="skip_prefix", func="JsonStream")
        expect(limits, Limits, name="limits", func="JsonStream", none=True)
        self._limits = limits or DEFAULT_LIMITS
        self._max_chars = self._limits.max_input_chars
        # the input total at which feed() takes a closer look: the size limit, or earlier where the open
        # string stops being kept current (one comparison per piece for both); -1 once the stream is dead
        self._checkpoint = self._max_chars
        self._max_depth = self._limits.max_json_depth
        self._skip_prefix = skip_prefix
        self._state = _PREFIX if skip_prefix else _VALUE
        self._end_state = _TRAIL if skip_prefix else _DONE
        self._stack: list[_Frame] = []
        # the root value lives in a one-slot list, so a string at the root is stored like any other
        self._box: list[Any] = [None]
        self._started = False
        self._total = 0
        self._carry = ""
        # the open string value: its container and slot (the box and 0 at the root)
        self._sparts: list[str] = []
        self._scur: str | None = None  # the open string's text while short (kept current in its container)
        self._spath = ""
        self._scont: dict[str, Any] | list[Any] = self._box
        self._skey: str | int = 0
        # the key being read, and the key whose value comes next
        self._kparts: list[str] = []
        self._key = ""
        # the number being read
        self._nparts: list[str] = []
        self._nshape = ""  # the number so far, or an equivalent short one (read only while _nparts is not empty)
        self._nstart = 0
        self._why_dead = ""
        # feed_encoded: the wire state, and the parent frame of each add / replace the parser emits
        self._encoder: OpEncoder | None = None
        self._steps: list[_Frame | None] | None = None
        self._wire = False  # set while feed_encoded runs feed: the fast path returns the wire form itself
        self.__dict__["value"] = None

    # ------------------------------------------------------------------ reading the state

    value: Any = _JoinedValue()
    """The value so far (``None`` before it starts). Live and shared: treat it as read-only."""

    def _join_string(self) -> Any:
        """Join the open long string's parts into its container; the value is current again.

        The text so far is extended in place: with its other references (the parts list, the
        container) dropped first, ``joined += tail`` lets CPython resize the one string instead of
        copying it (``PyUnicode_Append`` on a string nobody else holds), so a read after every piece
        costs the new text, not the string's length. (Where the caller still holds the old string, or
        another interpreter, it is an ordinary copy: correct, only not amortised.)
        """
        parts = self._sparts
        cont = self._scont
        key = self._skey
        joined = parts[0]
        tail = parts[1] if len(parts) == 2 else "".join(parts[1:])
        parts.clear()
        cont[key] = None  # type: ignore[index]
        joined += tail
        parts.append(joined)
        cont[key] = joined  # type: ignore[index]
        self.__dict__["value"] = value = self._box[0]
        return value

    @property
    def started(self) -> bool:
        """Whether the top-level value has begun (so :attr:`value` is meaningful)."""
        return self._started

    @property
    def done(self) -> bool:
        """Whether the top-level value is complete."""
        return self._state in (_DONE, _TRAIL) or (self._state is _DEAD and self._why_dead == "closed")

    @property
    def incomplete(self) -> list[str]:
        """JSON Pointers of the values still open, from the root down (``[]`` once complete)."""
        paths = [frame[4] for frame in self._stack]
        if self._state is _STRING:
            paths.append(self._spath)
        return paths

    def annotated(self, marker: str = "$partial") -> Any:
        """The value with partial markers: every open object gets ``marker: {open_key: True, ...}``.

        Only the open path is copied (shallowly); the complete parts are shared with :attr:`value`.
        An open object with no open member gets ``marker: {}`` (more members may follow). Arrays
        cannot carry a marker: an open array shows as ``True`` in its parent object's marker, and
        objects inside it carry their own.
        """
        expect(marker, str, name="marker", func="JsonStream.annotated")
        value = self.value
        stack = self._stack
        if not stack:
            return value
        string_open = self._state is _STRING
        inner: Any = None
        inner_slot: str | int | None = None
        for i in range(len(stack) - 1, -1, -1):
            frame = stack[i]
            copy: Any
            if frame[1]:
                copy = dict(frame[0])
            else:
                copy = list(frame[0])
            if inner_slot is not None:
                copy[inner_slot] = inner
            if frame[1]:
                if i + 1 < len(stack):
                    open_key: str | int | None = stack[i + 1][5]
                elif string_open:
                    open_key = self._skey
                else:
                    open_key = None
                copy[marker] = {} if open_key is None else {open_key: True}
            inner = copy
            inner_slot = frame[5]
        return inner

    # ------------------------------------------------------------------ pushing input

    def feed(self, text: str) -> list[Op]:
        """Parse the next piece of input; return the operations that turn the old value into the new.

        With pieces of a few characters the per-piece overhead (calls, attribute traffic), not the
        per-character work, dominates: the commonest pieces (more of an open string, more of a key) are
        handled here with few locals, everything else by :meth:`_scan`.
        """
        try:
            total = self._total + len(text)
            if total > self._checkpoint:
                self._at_checkpoint(total)
            self._total = total
            if self._state is _STRING:
                if self._carry:
                    text = self._carry + text
                    self._carry = ""
                # Fast path: the piece continues the open string and does not end it.
                if "\\" not in text:
                    # (not when empty, nor with a control character: _scan refuses those)
                    if '"' in text or not text or not (text.isprintable() or _plain_full(text) is not None):
                        return self._scan(text, _STRING)
                    piece = text
                else:
                    # Escapes: complete ones are decoded, an unfinished last one is carried over to the next piece
                    # (a high surrogate too, until its low half is complete: never half an emoji).
                    split = _escape_memo.get(text) or _split_escaped(text)
                    if split is None:
                        return self._scan(text, _STRING)
                    piece, carry = split
                    if carry:
                        self._carry = carry
                        if not piece:
                            return []
                cur = self._scur
                if cur is not None:
                    cur += piece
                    self._scont[self._skey] = cur  # type: ignore[index]
                    self._scur = cur
                else:
                    self._lazy_add(piece)
                if self._wire:  # feed_encoded: this append in the wire form, at the previous operation's path
                    return f"[{_encode_str(piece)}]"  # type: ignore[return-value]
                return [{"op": "append", "path": self._spath, "value": piece}]
            state = self._state
            if self._carry:
                text = self._carry + text
                self._carry = ""
            elif state is _KEY:  # fast path: the piece continues the key and does not end it
                if '"' not in text and "\\" not in text and (text.isprintable() or _plain_full(text) is not None):
                    self._kparts.append(text)
                    return []
            return self._scan(text, state)
        except (TypeError, AttributeError):
            if isinstance(text, str):
                raise
            # not text: the operations on str refused it (checked here, off the hot path)
            self._die("failed")
            raise UsageError(f"feed() takes str, not {type(text).__name__}") from None

    def _scan(self, text: str, state: _State) -> list[Op]:
        """The general case of feed(): one loop over the piece, the hot states inline with locals; rare
        cases (literals split across pieces, escapes cut inside a key, the root) go through helpers."""
        total = self._total
        n = len(text)
        ops: list[Op] = []
        sop: Op | None = None  # this piece's op for the open string: later text of it is added to its value
        pos = 0
        stack = self._stack
        steps = self._steps  # feed_encoded: the parent frame of every add / replace (None: not recorded)
        try:
            while True:  # not `while pos < n`: a compare before a far jump is not specialised (3.11)
                if pos >= n:
                    break
                if state is _STRING:
                    end = text.find('"', pos)
                    if end < 0:
                        end = n
                    piece = text[pos:end]
                    if "\\" in piece or not piece.isprintable() and _plain_full(piece) is None:
                        end = _str_body(text, pos).end()  # type: ignore[union-attr]
                        piece = text[pos:end]
                        if "\\" in piece:
                            piece = _scanstring(piece + '"', 0)[0]
                    if piece:
                        self._string_add(piece)
                        if sop is not None:
                            sop["value"] += piece
                        else:
                            sop = {"op": "append", "path": self._spath, "value": piece}
                            ops.append(sop)
                        pos = end
                        if pos >= n:
                            break
                    c = text[pos]
                    if c == '"':
                        if self._scur is None:  # a long string: its parts, joined once more
                            sparts = self._sparts
                            self._scont[self._skey] = sparts[0] if len(sparts) == 1 else "".join(sparts)  # type: ignore[index]
                            self._sparts = []
                            self.__dict__["value"] = self._box[0]  # current again, if a read was pending
                        self._scur = None
                        sop = None
                        pos += 1
                        state = _AFTER if stack else self._end_state
                    elif c == "\\":
                        if _escape_tail(text, pos) is not None:
                            self._carry = text[pos:]  # the escape continues in the next piece
                            break
                        decoded, pos = self._escape(text, pos)
                        if decoded is None:  # pragma: no cover - _escape_tail covers every unfinished escape
                            self._carry = text[pos:]
                            break
                        self._string_add(decoded)
                        if sop is not None:
                            sop["value"] += decoded
                        else:
                            sop = {"op": "append", "path": self._spath, "value": decoded}
                            ops.append(sop)
                    else:
                        raise self._error(f"control character {c!r} in a string must be escaped", text, pos)
                    continue
                c = text[pos]
                if state is _AFTER:
                    if c == ",":
                        pos += 1
                        state = _OBJ_KEY if stack[-1][1] else _VALUE
                        if pos < n and text[pos] == " ":
                            pos += 1
                    elif c == stack[-1][2]:
                        stack.pop()
                        state = _AFTER if stack else self._end_state
                        pos += 1
                    elif c == " " or c == "\n" or c == "\r" or c == "\t":
                        pos = _ws(text, pos).end()  # type: ignore[union-attr]
                    else:
                        expected = "',' or '}'" if stack[-1][1] else "',' or ']'"
                        raise self._error(f"expected {expected}, found {c!r}", text, pos)
                elif state is _VALUE:
                    if c == '"' and stack:  # the most common value: a string in a container
                        frame = stack[-1]
                        cont = frame[0]
                        if frame[1]:
                            key = self._key
                            path = frame[3] + (escape_token(key) if "~" in key or "/" in key else key)
                            sop = {"op": "replace" if key in cont else "add", "path": path, "value": ""}
                            cont[key] = ""  # type: ignore[call-overload]
                            self._skey = key
                        else:
                            index = len(cont)
                            path = frame[3] + str(index)
                            sop = {"op": "add", "path": path, "value": ""}
                            cont.append("")  # type: ignore[union-attr]
                            self._skey = index
                        ops.append(sop)
                        if steps is not None:
                            steps.append(frame)
                        self._scur = ""
                        checkpoint = total + _EAGER_LIMIT  # (a conditional: cheaper than min() here)
                        self._checkpoint = checkpoint if checkpoint < self._max_chars else self._max_chars
                        self._spath = path
                        self._scont = cont
                        state = _STRING
                        pos += 1
                    elif c in _NUMBER_START:  # read by the number state, at this position
                        self._nstart = total - n + pos
                        state = _NUMBER
                    elif c == " " or c == "\n" or c == "\r" or c == "\t":
                        pos = _ws(text, pos).end()  # type: ignore[union-attr]
                    elif c == "]" and stack and not stack[-1][1] and not stack[-1][0]:  # an empty array
                        stack.pop()
                        state = _AFTER if stack else self._end_state
                        pos += 1
                    elif (c == "{" or c == "[" or c in _LITERALS) and stack and len(stack) < self._max_depth:
                        if c == "{":
                            value: Any = {}
                        elif c == "[":
                            value = []
                        else:
                            word, value = _LITERALS[c]
                            if text.startswith(word, pos):
                                pos += len(word)
                            elif pos + len(word) > n and word.startswith(text[pos:]):
                                self._carry = text[pos:]  # the rest of the literal is in the next piece
                                break
                            else:
                                raise self._literal_error(word, text, pos)
                        frame = stack[-1]
                        cont = frame[0]
                        if frame[1]:
                            key = self._key
                            path = frame[3] + (escape_token(key) if "~" in key or "/" in key else key)
                            ops.append({"op": "replace" if key in cont else "add", "path": path, "value": value})
                            cont[key] = value  # type: ignore[call-overload]
                            slot: str | int = key
                        else:
                            slot = len(cont)
                            path = frame[3] + str(slot)
                            ops.append({"op": "add", "path": path, "value": value})
                            cont.append(value)  # type: ignore[union-attr]
                        if steps is not None:
                            steps.append(frame)
                        if c == "{":
                            stack.append((value, True, "}", path + "/", path, slot, len(stack)))
                            ops[-1]["value"] = {}
                            state = _OBJ_KEY
                            pos += 1
                        elif c == "[":
                            stack.append((value, False, "]", path + "/", path, slot, len(stack)))
                            ops[-1]["value"] = []
                            state = _VALUE
                            pos += 1
                        else:
                            state = _AFTER
                    else:
                        self._state = state
                        pos = self._start_value(text, pos, ops)
                        state = self._state
                        if state is _STRING:
                            sop = ops[-1]
                elif state is _OBJ_KEY:
                    if c == '"':
                        pos += 1
                        end = text.find('"', pos)
                        key = text[pos:] if end < 0 else text[pos:end]
                        if "\\" in key or not key.isprintable() and _plain_full(key) is None:
                            self._kparts = []  # escapes or control characters: the key state decodes or refuses them
                            state = _KEY
                        elif end < 0:  # the key continues in the next piece
                            self._kparts = [key]
                            state = _KEY
                            break
                        else:
                            self._key = key
                            pos = end + 1
                            state = _COLON
                            if pos < n and text[pos] == ":":
                                pos += 1
                                state = _VALUE
                                if pos < n and text[pos] == " ":
                                    pos += 1
                    elif c == " " or c == "\n" or c == "\r" or c == "\t":
                        pos = _ws(text, pos).end()  # type: ignore[union-attr]
                    elif c == "}" and not stack[-1][0]:  # an empty object
                        stack.pop()
                        state = _AFTER if stack else self._end_state
                        pos += 1
                    else:
                        expected = "a key" if stack[-1][0] else "a key or '}'"
                        raise self._error(f"expected {expected}, found {c!r}", text, pos)
                elif state is _KEY:
                    end = text.find('"', pos)
                    if end < 0:
                        end = n
                    piece = text[pos:end]
                    if "\\" in piece or not piece.isprintable() and _plain_full(piece) is None:
                        end = _str_body(text, pos).end()  # type: ignore[union-attr]
                        piece = text[pos:end]
                        if "\\" in piece:
                            piece = _scanstring(piece + '"', 0)[0]
                    if piece:
                        self._kparts.append(piece)
                    pos = end
                    if pos >= n:
                        break
                    c = text[pos]
                    if c == '"':
                        self._key = "".join(self._kparts)
                        self._kparts = []
                        pos += 1
                        state = _COLON
                        if pos < n and text[pos] == ":":
                            pos += 1
                            state = _VALUE
                            if pos < n and text[pos] == " ":
                                pos += 1
                    elif c == "\\":
                        if _escape_tail(text, pos) is not None:
                            self._carry = text[pos:]
                            break
                        decoded, pos = self._escape(text, pos)
                        self._kparts.append(decoded or "")
                    else:
                        raise self._error(f"control character {c!r} in a key must be escaped", text, pos)
                elif state is _NUMBER:
                    rest = text[pos:].lstrip(_NUMBER_CHARS)
                    if not rest:  # the number may continue in the next piece, if it can still become one
                        token = text[pos:]
                        if token.isdigit():  # digits: valid after any start but "0", "-0" and a sign
                            shape = self._nshape if self._nparts else "1" if token[0] != "0" else ""
                            if shape and shape[-1] != "-" and shape != "0" and shape != "-0":
                                self._nshape = shape if shape[-1].isdigit() else shape + "1"
                                self._nparts.append(token)
                                break
                        seen = self._nshape + token if self._nparts else token
                        valid = _number_prefix(seen).end()  # type: ignore[union-attr]
                        if valid < len(seen):
                            raise self._error(
                                f"invalid number: {seen[valid]!r} cannot follow {seen[:valid]!r}",
                                text,
                                pos + valid - (len(seen) - len(token)),
                            )
                        # the number so far, or once long an equivalent short one (linear on endless digits)
                        self._nshape = seen if len(seen) < 32 else _number_shape(seen)
                        self._nparts.append(token)
                        break
                    end = n - len(rest)
                    token = text[pos:end]
                    pos = end
                    if self._nparts:  # it began in an earlier piece
                        self._nparts.append(token)
                        token = "".join(self._nparts)
                        self._nparts = []
                    number: int | float
                    if len(token) < 19 and token.isdigit() and (token[0] != "0" or len(token) == 1):
                        number = int(token)
                    else:
                        m = _number_full(token)
                        if m is not None and len(token) < 19:
                            number = int(token) if m.lastindex is None else float(token)
                        else:  # invalid, or long: the checks and their errors live in _number
                            number = self._number(token, self._nstart)
                    if stack:
                        frame = stack[-1]
                        cont = frame[0]
                        if frame[1]:
                            key = self._key
                            path = frame[3] + (escape_token(key) if "~" in key or "/" in key else key)
                            ops.append({"op": "replace" if key in cont else "add", "path": path, "value": number})
                            cont[key] = number  # type: ignore[call-overload]
                        else:
                            ops.append({"op": "add", "path": frame[3] + str(len(cont)), "value": number})
                            cont.append(number)  # type: ignore[union-attr]
                        if steps is not None:
                            steps.append(frame)
                        state = _AFTER
                    else:
                        self._put(number, number, ops)
                        state = self._end_state
                elif state is _COLON:
                    if c == ":":
                        state = _VALUE
                        pos = _ws(text, pos + 1).end()  # type: ignore[union-attr]
                    elif c == " " or c == "\n" or c == "\r" or c == "\t":
                        pos = _ws(text, pos).end()  # type: ignore[union-attr]
                    else:
                        raise self._error(f"expected ':' after an object key, found {c!r}", text, pos)
                elif state is _DONE:
                    if c == " " or c == "\n" or c == "\r" or c == "\t":
                        pos = _ws(text, pos).end()  # type: ignore[union-attr]
                    else:
                        raise self._error("extra data after the JSON value", text, pos)
                elif state is _PREFIX:
                    m = _PREFIX_START.search(text, pos)
                    if m is None:
                        break
                    pos = m.start()
                    state = _VALUE
                elif state is _TRAIL:
                    if not isinstance(text, str):
                        raise TypeError("feed() takes str")
                    break
                else:  # pragma: no cover - _DEAD is refused by the budget check
                    raise UsageError("JSON stream in an impossible state")
            self._state = state
        except (ParseError, LimitExceededError):
            self._die("failed")
            raise
        return ops

    def feed_encoded(self, text: str) -> str:
        """:meth:`feed`, its operations in the compact wire form: exactly what one :class:`OpEncoder` writes
        for every batch of the stream, ``""`` for a piece that changed nothing (nothing to send).

        Cheaper than ``encoder.encode(stream.feed(text))``: the parser records where each new member
        sits, so a relative path is a subtraction, not a comparison of paths. A stream is read with
        this (and :meth:`close_encoded`) from its first piece on, not mixed with :meth:`feed`.
        """
        steps = self._steps
        if steps is None or steps:
            steps = self._encoded_steps("feed_encoded")
        self._wire = True
        try:
            ops: list[Op] | str = self.feed(text)
        finally:
            self._wire = False
        if type(ops) is str:  # the string fast path wrote its append
            return ops
        if not ops:
            return ""
        return self._encoder._encode_parsed(ops, steps)  # type: ignore[union-attr,arg-type]

    def close_encoded(self) -> str:
        """:meth:`close` for a stream read with :meth:`feed_encoded`: its last operations in the wire form."""
        steps = self._encoded_steps("close_encoded")
        ops = self.close()
        return self._encoder._encode_parsed(ops, steps) if ops else ""  # type: ignore[union-attr]

    def _encoded_steps(self, func: str) -> list[_Frame | None]:
        """The parser's record for feed_encoded, started with the stream, empty between pieces; a frame
        left over means feed() returned operations the wire form did not see."""
        steps = self._steps
        if steps is None:
            if self._total:
                raise UsageError(f"{func}() on a JSON stream read with feed(): the wire form starts with the stream")
            self._encoder = OpEncoder()
            steps = self._steps = []
        elif steps and self._state is not _DEAD:  # (a failed piece leaves frames: feed() then says it failed)
            raise UsageError(f"{func}() after feed() returned operations: the wire form lost track")
        steps.clear()
        return steps

    def close(self) -> list[Op]:
        """End the input: complete a trailing number; an unfinished document is IncompleteInputError."""
        if self._state is _DEAD:
            raise UsageError(f"close() on a JSON stream that is {self._why_dead}")
        ops: list[Op] = []
        if self._state is _NUMBER:
            try:
                self._finish_number(ops)
            except (ParseError, IncompleteInputError):
                self._die("failed")
                raise
        if self._state not in (_DONE, _TRAIL):
            pointer = self.incomplete[-1] if self.incomplete else None
            what = "no JSON value found" if not self._started else "the JSON document is incomplete"
            self._die("failed")
            raise IncompleteInputError(what, code="json_incomplete", position=self._total, pointer=pointer)
        self._die("closed")
        return ops

    def astream(self, chunks: AsyncIterable[str]) -> AsyncIterator[Op]:
        """Feed every chunk of an async source, then close: yields exactly the ops ``feed`` and ``close`` return."""
        return astream(self, chunks, func="JsonStream.astream")

    # ------------------------------------------------------------------ internals

    def _die(self, why: str) -> None:
        self._state = _DEAD
        self._why_dead = why
        self._checkpoint = -1  # feed() compares with it first: the one test that also refuses a dead stream

    def _at_checkpoint(self, total: int) -> None:
        """feed() passed the checkpoint: refuse a dead stream or too much input, or stop keeping a long
        string current (its parts are joined when the value is read)."""
        if self._state is _DEAD:
            raise UsageError(f"feed() on a JSON stream that is {self._why_dead}")
        if total > self._max_chars:
            self._die("limit")
            raise LimitExceededError(
                f"JSON input exceeds max_input_chars={self._max_chars}", code="json_too_large", position=total
            )
        if self._scur is not None:
            self._sparts = [self._scur]
            self._scur = None
        self._checkpoint = self._max_chars

    def _error(self, message: str, text: str, pos: int) -> ParseError:
        """A syntax error at ``text[pos]`` (``text`` is this piece, with any carried-over start)."""
        if not isinstance(text, str):  # not a syntax error: feed() says what it was given
            raise TypeError("feed() takes str")
        position = self._total - len(text) + pos
        return ParseError(message, code="json_syntax", position=position, snippet=snippet_around(text, pos))

    def _string_add(self, piece: str) -> None:
        """More text of the open string: kept current in its container while the string is short
        (reading :attr:`value` then costs nothing), as parts joined on read once it is long (so a long
        string never costs its length per piece unless it is read)."""
        cur = self._scur
        if cur is not None:
            cur += piece
            self._scont[self._skey] = cur  # type: ignore[index]
            self._scur = cur
            return
        self._lazy_add(piece)

    def _lazy_add(self, piece: str) -> None:
        """More text of a long string (or of one at the root, which has no container to keep current)."""
        self._sparts.append(piece)
        self.__dict__.pop("value", None)  # the next read joins the parts (_JoinedValue)

    def _put(self, value: Any, op_value: Any, ops: list[Op]) -> tuple[str, str | int | None]:
        """Place a new value in the open container (or at the root); emit its add/replace."""
        stack = self._stack
        steps = self._steps
        if stack:
            frame = stack[-1]
            if steps is not None:
                steps.append(frame)
            cont = frame[0]
            if frame[1]:
                key = self._key
                if "~" in key or "/" in key:
                    path = frame[4] + "/" + escape_token(key)
                else:
                    path = frame[4] + "/" + key
                op = "replace" if key in cont else "add"
                cont[key] = value  # type: ignore[call-overload]
                ops.append({"op": op, "path": path, "value": op_value})
                return path, key
            index = len(cont)
            path = frame[4] + "/" + str(index)
            cont.append(value)  # type: ignore[union-attr]
            ops.append({"op": "add", "path": path, "value": op_value})
            return path, index
        self._box[0] = self.__dict__["value"] = value
        self._started = True
        if steps is not None:
            steps.append(None)
        ops.append({"op": "add", "path": "", "value": op_value})
        return "", None

    def _start_value(self, text: str, pos: int, ops: list[Op]) -> int:
        c = text[pos]
        if c == '"':
            path, slot = self._put("", "", ops)
            self._sparts = []
            if self._stack:
                self._scur = ""
                checkpoint = self._total + _EAGER_LIMIT
                self._checkpoint = checkpoint if checkpoint < self._max_chars else self._max_chars
            else:  # a root string is not in a container: always parts
                self._scur = None
            self._spath = path
            self._scont = self._stack[-1][0] if self._stack else self._box
            self._skey = slot if slot is not None else 0
            self._state = _STRING
            return pos + 1
        if c == "{" or c == "[":
            if len(self._stack) >= self._limits.max_json_depth:
                raise LimitExceededError(
                    f"JSON nesting deeper than max_json_depth={self._limits.max_json_depth}",
                    code="json_too_deep",
                    position=self._total - len(text) + pos,
                    snippet=snippet_around(text, pos),
                )
            container: dict[str, Any] | list[Any]
            if c == "{":
                container = {}
                path, slot = self._put(container, {}, ops)
                self._stack.append(_frame(container, path, slot, len(self._stack)))
                self._state = _OBJ_KEY
                return pos + 1
            container = []
            path, slot = self._put(container, [], ops)
            self._stack.append(_frame(container, path, slot, len(self._stack)))
            self._state = _VALUE
            return pos + 1
        literal = _LITERALS.get(c)
        if literal is not None:
            word, value = literal
            piece = text[pos : pos + len(word)]
            if piece == word:
                self._put(value, value, ops)
                self._state = _AFTER if self._stack else self._end_state
                return pos + len(word)
            if pos + len(piece) == len(text) and word.startswith(piece):
                self._carry = piece  # the rest of the literal is in the next piece
                return len(text)
            raise self._literal_error(word, text, pos)
        raise self._error(f"expected a JSON value, found {c!r}", text, pos)

    def _literal_error(self, word: str, text: str, pos: int) -> ParseError:
        """``text[pos:]`` starts like ``word`` but is not it: the error is at the first character that differs."""
        k = _common_prefix(word, text[pos : pos + len(word)])
        return self._error(f"invalid literal: expected {word!r}, found {text[pos + k]!r}", text, pos + k)

    def _finish_number(self, ops: list[Op]) -> None:
        token = "".join(self._nparts)
        self._nparts = []
        if _number_prefix(token).end() == len(token) and _number_full(token) is None:  # type: ignore[union-attr]
            raise IncompleteInputError(
                f"the number {token[:40]!r} is incomplete", code="json_incomplete", position=self._total
            )
        number = self._number(token, self._nstart)
        self._put(number, number, ops)
        self._state = _AFTER if self._stack else self._end_state

    def _number(self, token: str, position: int) -> int | float:
        """A complete number token as ``json.loads`` reads it (syntax checked here)."""
        m = _number_full(token)
        if m is None:
            # the first character no continuation accepts: inside the token, or the one after it ("1." then "]")
            valid = _number_prefix(token).end()  # type: ignore[union-attr]
            raise ParseError(
                f"invalid number {token[:40]!r}", code="json_syntax", position=position + valid, snippet=token[:40]
            )
        if m.lastindex is None:
            try:
                return int(token)
            except ValueError as exc:  # more digits than int() accepts (sys.int_max_str_digits), as json.loads
                raise ParseError(
                    f"number too long ({len(token)} digits)", code="json_number", position=position
                ) from exc
        return float(token)

    def _escape(self, text: str, pos: int) -> tuple[str | None, int]:
        """Decode the escape at ``text[pos] == '\\'``; ``(None, pos)`` when it continues in the next piece."""
        n = len(text)
        if pos + 1 >= n:
            return None, pos
        c = text[pos + 1]
        if c != "u":
            decoded = _SIMPLE_ESCAPES.get(c)
            if decoded is None:
                raise self._error(f"invalid escape '\\{c}' in a string", text, pos + 1)
            return decoded, pos + 2
        hexpart = text[pos + 2 : pos + 6]
        valid = _HEX_RUN.match(hexpart).end()  # type: ignore[union-attr]
        if valid < len(hexpart):  # the first character that is not a hex digit
            raise self._error("invalid \\u escape in a string", text, pos + 2 + valid)
        if len(hexpart) < 4:
            return None, pos
        code = int(hexpart, 16)
        if 0xD800 <= code <= 0xDBFF:
            follow = text[pos + 6 : pos + 12]
            if _LOW_ESCAPE.match(follow):
                low = int(follow[2:], 16)
                return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), pos + 12
            if len(follow) < 6 and _LOW_ESCAPE_PREFIX.fullmatch(follow):
                return None, pos  # might still become a surrogate pair: never show half of it
        return chr(code), pos + 6  # lone surrogates decode as json.loads does


def loads_partial(text: str, *, skip_prefix: bool = False, limits: Limits | None = None) -> Any:
    """The partial value of a JSON prefix (``None`` if no value has started); invalid JSON raises ParseError."""
    _check_loads("loads_partial", text, skip_prefix, limits)
    stream = JsonStream(skip_prefix=skip_prefix, limits=limits)
    stream.feed(text)
    return stream.value


def loads(text: str, *, skip_prefix: bool = False, limits: Limits | None = None) -> Any:
    """A complete JSON document: the stream fed once and closed (same results as ``json.loads``)."""
    _check_loads("loads", text, skip_prefix, limits)
    stream = JsonStream(skip_prefix=skip_prefix, limits=limits)
    stream.feed(text)
    stream.close()
    return stream.value


def _check_loads(func: str, text: Any, skip_prefix: Any, limits: Any) -> None:
    expect(text, str, name="text", func=func)
    expect(skip_prefix, bool, name="skip_prefix", func=func)
    expect(limits, Limits, name="limits", func=func, none=True)
