"""Finding where a JSON value ends in a stream, without parsing it.

Tool-call bodies embed a JSON value and then go on (a closing marker, another call). The scanner
tracks only nesting depth and string state, jumping over runs of ordinary characters with a regex,
so each chunk costs time proportional to its length. Validation is left to ``json.loads`` once the
value is complete.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["JsonValueScanner", "json_text"]

_STRING_STOP = re.compile(r'["\\]')
_NEST_STOP = re.compile(r'["{}\[\]]')
_SCALAR = re.compile(r"[^\s,\]}\)<]*")


class JsonValueScanner:
    """Incremental end-of-value detection for one JSON value (leading whitespace already skipped)."""

    __slots__ = ("depth", "in_string", "escape", "started", "scalar", "max_depth", "too_deep")

    def __init__(self, *, max_depth: int = 512) -> None:
        self.depth = 0
        self.in_string = False
        self.escape = False
        self.started = False
        self.scalar = False
        self.max_depth = max_depth
        self.too_deep = False

    def feed(self, text: str) -> int:
        """Index in ``text`` just past the end of the value, or ``-1`` if it continues."""
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
                    self.too_deep = True
            else:
                self.depth -= 1
                if self.depth == 0:
                    return pos
        return -1



def json_text(value: Any) -> str:
    """Compact-ish JSON text as OpenAI servers emit it (``", "`` and ``": "`` separators, UTF-8 kept)."""
    return json.dumps(value, ensure_ascii=False)
