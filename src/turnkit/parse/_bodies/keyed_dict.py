"""``KeyedDict``: ``call:NAME{key:value,...}`` with bare keys and strings between special quote tokens (Gemma 4)."""

from __future__ import annotations

import re

from turnkit._held import held_tail
from turnkit.parse._bodies.base import MAX_NAME, REJECT, Body, Fed, ToolTypes
from turnkit.parse._emit import Emitter
from turnkit.parse._json_scan import json_text, too_deep
from turnkit.parse._spec import KeyedDict

__all__ = ["KeyedDictBody"]

_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][\w\-]*)\s*:")
_BRACKET = re.compile(r"[{}\[\]]")


class KeyedDictBody(Body):
    """``call:NAME{key:<|"|>text<|"|>,n:1}``: collected until the braces balance, then converted to JSON."""

    def __init__(
        self, spec: KeyedDict, emitter: Emitter, types: ToolTypes, max_depth: int, region_close: str | None = None
    ) -> None:
        super().__init__(spec, emitter, types, max_depth, region_close)
        self.spec = spec
        self.head = ""
        self.name: str | None = None
        self.parts: list[str] = []
        self.carry = ""
        self.depth = 0
        self.in_quote = False

    def feed(self, text: str) -> Fed:
        if self.name is None:
            self.head += text
            brace = self.head.find("{")
            if brace < 0:
                return REJECT if len(self.head) > MAX_NAME else None
            head = self.head[:brace].strip()
            if not head.startswith(self.spec.name_prefix):
                return REJECT
            self.name = head[len(self.spec.name_prefix) :].strip()
            if not self.name:
                return REJECT
            self.out.start_call(self.name)
            text = self.head[brace:]
            self.head = ""
        quote = self.spec.quote
        data = self.carry + text if self.carry else text
        self.carry = ""
        i, end = 0, len(data)
        while i < end:
            at = data.find(quote, i)
            if self.in_quote:
                if at < 0:
                    keep = held_tail(data, quote)
                    self.parts.append(data[i : end - keep])
                    self.carry = data[end - keep :]
                    return None
                self.parts.append(data[i : at + len(quote)])
                i = at + len(quote)
                self.in_quote = False
                continue
            stop = at if at >= 0 else end - held_tail(data, quote)
            for found in _BRACKET.finditer(data, i, stop):
                if found.group() in "{[":
                    self.depth += 1
                    if self.depth > self.max_depth:
                        raise too_deep(self.max_depth, data, found.start())
                else:
                    self.depth -= 1
                    if self.depth == 0:
                        self.parts.append(data[i : found.end()])
                        self._emit("".join(self.parts))
                        return data[found.end() :]
            self.parts.append(data[i:stop])
            if at < 0:
                self.carry = data[stop:]
                return None
            self.parts.append(quote)
            i = at + len(quote)
            self.in_quote = True
        return None

    def _emit(self, source: str) -> None:
        parts = source.split(self.spec.quote)
        out = []
        for i, part in enumerate(parts):
            if i % 2:
                out.append(json_text(part))
            else:
                out.append(_BARE_KEY.sub(lambda m: f'{m.group(1)}"{m.group(2)}":', part))
        self.out.args("".join(out))
        self.out.end_call()

    def close(self) -> None:
        if self.name:
            self.out.incomplete = True
