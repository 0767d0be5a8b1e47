"""Finding where a JSON value ends in a stream, without parsing it.

Tool-call bodies embed a JSON value and then go on (a closing marker, another call). The scanner
tracks only nesting depth and string state, jumping over runs of ordinary characters with a regex,
so each chunk costs time proportional to its length. Validation is left to ``json.loads`` once the
value is complete. Nesting deeper than ``Limits.max_json_depth`` raises :func:`too_deep`'s error the
moment the opening bracket arrives, so a whole parse and any chunking of it fail alike.
"""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring
from typing import Any

from turnkit.errors import LimitExceededError, snippet_around

__all__ = [
    "QUOTES",
    "REMEMBERED",
    "REMEMBERED_CHUNK",
    "WALKS",
    "JsonDepthGauge",
    "JsonValueScanner",
    "json_string_body",
    "json_text",
    "plain_string",
    "quote_kind",
    "too_deep",
]

_STRING_STOP = re.compile(r'["\\]')
_NEST_STOP = re.compile(r'["{}\[\]]')
_SCALAR = re.compile(r"[^\s,\]}\)<]*")
_PLAIN_STRING = re.compile(r'"([^"\\\x00-\x1f]*)"')


class JsonValueScanner:
    """Incremental end-of-value detection for one JSON value (leading whitespace already skipped)."""

    __slots__ = ("depth", "in_string", "escape", "started", "scalar", "max_depth")

    def __init__(self, *, max_depth: int) -> None:
        self.depth = 0
        self.in_string = False
        self.escape = False
        self.started = False
        self.scalar = False
        self.max_depth = max_depth

    def feed(self, text: str) -> int:
        """Index in ``text`` just past the end of the value, or ``-1`` if it continues."""
        depth = self.depth
        if depth and not self.escape:  # inside an object or array: a short chunk's walk is remembered (see WALKS)
            walks = WALKS.get(text)
            if walks is None and len(WALKS) < REMEMBERED and len(text) <= REMEMBERED_CHUNK:
                walks = WALKS[text] = _walks(text)
            if walks:
                in_string, change, peak, ends = walks[self.in_string]
                if depth + peak <= self.max_depth:  # (else the loop, which raises where the value nests too deep)
                    if depth <= len(ends):
                        self.depth, self.in_string = 0, False
                        return ends[depth - 1]
                    self.depth, self.in_string = depth + change, in_string
                    return -1
        pos = 0
        end = len(text)
        if not self.started and end:
            self.started = True
            first = text[0]
            if first in "{[":
                self.depth = 1
                pos = 1
            elif first == '"':
                self.in_string = True
                pos = 1
            else:
                self.scalar = True
        if self.scalar:
            stop = _SCALAR.match(text, pos)
            assert stop is not None
            return stop.end() if stop.end() < end else -1
        while pos < end:
            if self.escape:
                self.escape = False
                pos += 1
                continue
            if self.in_string:
                found = _STRING_STOP.search(text, pos)
                if found is None:
                    return -1
                pos = found.start()
                if text[pos] == "\\":
                    self.escape = True
                    pos += 1
                    continue
                self.in_string = False
                pos += 1
                if self.depth == 0:
                    return pos
                continue
            found = _NEST_STOP.search(text, pos)
            if found is None:
                return -1
            pos = found.start()
            char = text[pos]
            pos += 1
            if char == '"':
                self.in_string = True
            elif char in "{[":
                self.depth += 1
                if self.depth > self.max_depth:
                    raise too_deep(self.max_depth, text, pos - 1)
            else:
                self.depth -= 1
                if self.depth == 0:
                    return pos
        return -1


REMEMBERED = 4096
REMEMBERED_CHUNK = 16
"""What a chunk does at an edge or inside JSON arguments is remembered by its text (the chunks of a stream are the
model's tokens, and the same few, ``", "`` or ``": {"``, come again and again): for at most this many chunks per
table, each at most this long (other chunks are read anew each time)."""

QUOTES: dict[str, int] = {}
"""Chunks by what their quotes do inside an object or array (see :func:`quote_kind`), remembered."""


def quote_kind(text: str) -> int:
    """What a non-empty ``text`` does to a :class:`JsonValueScanner` inside an object or array, outside an escape:
    0 or 1 when it has no bracket or backslash, its quotes' count modulo 2 (each opens or closes a string, the value
    goes on); 2 else."""
    if "\\" in text or "{" in text or "}" in text or "[" in text or "]" in text:
        kind = 2
    else:
        kind = text.count('"') & 1
    if len(QUOTES) < REMEMBERED and 0 < len(text) <= REMEMBERED_CHUNK:  # ("" never: a lane's lookup of it fails)
        QUOTES[text] = kind
    return kind


_Walk = tuple[bool, int, int, tuple[int, ...]]
"""What a chunk does inside an object or array: the string state after it, the change of depth, the deepest it
goes (relative), and the position just past the bracket at which it first closes 1, 2, ... levels."""

WALKS: dict[str, tuple[_Walk, _Walk] | tuple[()]] = {}
"""Short chunks by their walk from outside and from inside a string (``()``: a backslash, walked by the loop),
remembered."""


def _walks(text: str) -> tuple[_Walk, _Walk] | tuple[()]:
    """:data:`WALKS`' entry for ``text``: its walk (see ``_Walk``) starting outside and starting inside a string."""
    if "\\" in text:
        return ()
    found = []
    for in_string in (False, True):
        depth = peak = 0
        ends: list[int] = []
        for pos, char in enumerate(text):
            if char == '"':
                in_string = not in_string
            elif in_string:
                continue
            elif char in "{[":
                depth += 1
                peak = max(peak, depth)
            elif char in "}]":
                depth -= 1
                if -depth > len(ends):
                    ends.append(pos + 1)
        found.append((in_string, depth, peak, tuple(ends)))
    return found[0], found[1]


class JsonDepthGauge:
    """Nesting depth over a run of JSON text whose end is found elsewhere (harmony arguments end at a marker).

    Strings are skipped; brackets closing more than were opened are ignored. Raises :func:`too_deep`'s
    error when the text nests deeper than ``max_depth``.
    """

    __slots__ = ("depth", "in_string", "escape", "max_depth")

    def __init__(self, *, max_depth: int) -> None:
        self.depth = 0
        self.in_string = False
        self.escape = False
        self.max_depth = max_depth

    def feed(self, text: str) -> None:
        pos = 0
        while 0 <= pos < len(text):
            pos = self.feed_to_end(text, pos)

    def feed_to_end(self, text: str, pos: int = 0) -> int:
        """Feed ``text`` from ``pos``; the position just past the bracket that closes the outermost object or
        array, or -1 when none closes in ``text`` (reading stops at that position)."""
        end = len(text)
        while pos < end:
            if self.escape:
                self.escape = False
                pos += 1
            elif self.in_string:
                found = _STRING_STOP.search(text, pos)
                if found is None:
                    return -1
                pos = found.end()
                if found.group() == "\\":
                    self.escape = True
                else:
                    self.in_string = False
            else:
                found = _NEST_STOP.search(text, pos)
                if found is None:
                    return -1
                pos = found.end()
                char = found.group()
                if char == '"':
                    self.in_string = True
                elif char in "{[":
                    self.depth += 1
                    if self.depth > self.max_depth:
                        raise too_deep(self.max_depth, text, pos - 1)
                elif self.depth:
                    self.depth -= 1
                    if not self.depth:
                        return pos
        return -1


def too_deep(max_depth: int, text: str, pos: int) -> LimitExceededError:
    """The error for tool-call arguments nested deeper than ``max_depth`` (the bracket at ``text[pos]``)."""
    return LimitExceededError(
        f"tool-call arguments nest deeper than max_json_depth={max_depth}",
        code="json_too_deep",
        snippet=snippet_around(text, pos),
    )


_ENCODER = json.JSONEncoder(ensure_ascii=False)
"""``json.dumps(value, ensure_ascii=False)`` builds an encoder on every call; this one is built once (it
keeps no state between calls)."""


def json_text(value: Any) -> str:
    """Compact-ish JSON text as OpenAI servers emit it (``", "`` and ``": "`` separators, UTF-8 kept)."""
    kind = type(value)
    if kind is str:  # the encoder's own steps for the common scalars, without setting up an encoding pass
        text: str = encode_basestring(value)
        return text
    if kind is int:
        return int.__repr__(value)
    return _ENCODER.encode(value)


def plain_string(raw: str) -> str | None:
    """The value of a JSON string literal with no escapes or control characters (most keys and names): what
    ``json.loads(raw)`` gives, without its cost; ``None`` for any other text (then ``json.loads`` decides)."""
    plain = _PLAIN_STRING.fullmatch(raw)
    return None if plain is None else plain.group(1)


def json_string_body(text: str) -> str:
    """``text`` as the inside of a JSON string (escaped, UTF-8 kept, without the quotes): what
    ``json_text(text)[1:-1]`` is, without building an encoder."""
    body: str = encode_basestring(text)
    return body[1:-1]
