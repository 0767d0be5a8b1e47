"""``Pythonic``: Python call syntax ``[f(a=1, b="x"), g()]``, each argument's literal converted to JSON."""

from __future__ import annotations

import ast
import enum
import re

from turnkit.parse._bodies.base import MAX_NAME, REJECT, WS, Body, Fed, ToolTypes, check_depth, param_type, typed_value
from turnkit.parse._emit import Emitter
from turnkit.parse._json_scan import json_text, too_deep
from turnkit.parse._spec import Pythonic

__all__ = ["PythonicBody"]


class _State(enum.Enum):
    START = enum.auto()
    """Before the opening ``[``."""
    NAME = enum.auto()
    """Reading a function name (up to ``(``)."""
    ARG = enum.auto()
    """After ``(`` or ``,``: an argument or ``)``."""
    KEY = enum.auto()
    """Reading an argument name (up to ``=``)."""
    VALUE = enum.auto()
    """Inside an argument's literal (up to ``,`` or ``)`` outside brackets and quotes)."""
    AFTER_ARG = enum.auto()
    """After a literal: ``,`` or ``)``."""
    AFTER_CALL = enum.auto()
    """After a call in brackets: ``,`` or ``]``."""
    DONE = enum.auto()


_START, _NAME, _ARG, _KEY, _VALUE, _AFTER_ARG, _AFTER_CALL, _DONE = _State

_IDENT = re.compile(r"[A-Za-z_][\w.\-]*")
_IDENT_REST = re.compile(r"[\w.\-]*")


class PythonicBody(Body):
    """``[f(a=1, b="x"), g()]``: Python literals converted to JSON per argument."""

    def __init__(
        self, spec: Pythonic, emitter: Emitter, types: ToolTypes, max_depth: int, region_close: str | None = None
    ) -> None:
        super().__init__(spec, emitter, types, max_depth, region_close)
        self.spec = spec
        self.state = _START if spec.bracketed else _NAME
        self.buf = ""
        self.count = 0
        self.depth = 0
        self.quote = ""
        self.escape = False
        self.function = ""
        self.key = ""
        self.value_parts: list[str] = []

    def feed(self, text: str) -> Fed:
        pos, end = 0, len(text)
        while pos < end:
            char = text[pos]
            state = self.state
            if state is _DONE:  # the calls ended (an unbracketed call has no closing bracket): the rest is not ours
                return text[pos:]
            if state is _VALUE:
                pos = self._value(text, pos)
                continue
            if state is _NAME or state is _KEY:
                found = _IDENT_REST.match(text, pos) if self.buf else _IDENT.match(text, pos)
                assert found is not None or not self.buf
                if found is not None and found.end() > pos:
                    self.buf += text[pos : found.end()]
                    pos = found.end()
                    if len(self.buf) > MAX_NAME:
                        return self._fail(text[pos:])
                    continue
                if char in WS:
                    pos += 1
                    continue
                if state is _NAME and char == "(" and self.buf:
                    name = self.buf
                    if self.spec.name_suffix and name.endswith(self.spec.name_suffix):
                        name = name[: -len(self.spec.name_suffix)]
                    self.out.start_call(name)
                    self.function = name
                    self.out.args("{")
                    self.count = 0
                    self.buf = ""
                    self.state = _ARG
                    pos += 1
                    continue
                if state is _NAME and not self.buf and self.spec.many and self.out.calls:
                    self.state = _DONE
                    return text[pos:]
                if state is _KEY and char == "=" and self.buf:
                    sep = ", " if self.count else ""
                    self.count += 1
                    self.out.args(f"{sep}{json_text(self.buf)}: ")
                    self.key = self.buf
                    self.buf = ""
                    self.state = _VALUE
                    self.depth = 0
                    self.quote = ""
                    pos += 1
                    continue
                return self._fail(text[pos:])
            if char in WS:
                pos += 1
                continue
            pos += 1
            if state is _START:
                if char != "[":
                    return REJECT
                self.state = _NAME
            elif state is _ARG:
                if char == ")":
                    self._end_call()
                else:
                    self.state = _KEY
                    self.buf = ""
                    pos -= 1
            elif state is _AFTER_ARG:
                if char == ",":
                    self.state = _ARG
                elif char == ")":
                    self._end_call()
                else:
                    return self._fail(text[pos - 1 :])
            elif state is _AFTER_CALL:
                if char == ",":
                    self.state = _NAME
                    self.buf = ""
                elif char == "]":
                    self.state = _DONE
                    return text[pos:]
                else:
                    return self._fail(text[pos - 1 :])
        return None

    def _end_call(self) -> None:
        self.out.args("}")
        self.out.end_call()
        if self.spec.bracketed:
            self.state = _AFTER_CALL
        elif self.spec.many:
            self.state = _NAME
            self.buf = ""
        else:
            self.state = _DONE

    def _value(self, text: str, pos: int) -> int:
        end = len(text)
        start = pos
        while pos < end:
            char = text[pos]
            if self.quote:
                if self.escape:
                    self.escape = False
                elif char == "\\":
                    self.escape = True
                elif char == self.quote:
                    self.quote = ""
            elif char in "\"'":
                self.quote = char
            elif char in "([{":
                self.depth += 1
                if self.depth > self.max_depth:
                    raise too_deep(self.max_depth, text, pos)
            elif char in ")]}" and self.depth > 0:
                self.depth -= 1
            elif char in ",)" and self.depth == 0:
                self.value_parts.append(text[start:pos])
                self._emit_value()
                self.state = _AFTER_ARG
                return pos
            pos += 1
        self.value_parts.append(text[start:pos])
        return pos

    def _emit_value(self) -> None:
        raw = "".join(self.value_parts).strip()
        self.value_parts = []
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            value = {"true": True, "false": False, "null": None}.get(raw, raw)
        if isinstance(value, str) and param_type(self.types, self.function, self.key) in ("object", "array"):
            check_depth(value, self.max_depth)
            value = typed_value(value, "json")
        try:
            self.out.args(json_text(value))
        except (TypeError, ValueError):
            self.out.args(json_text(repr(value)))

    def _fail(self, rest: str) -> str:
        self.out.incomplete = True
        if self.out.in_call:
            self.out.end_call()
        self.state = _DONE
        return rest

    def close(self) -> None:
        if self.state is _DONE or self.state is _START:
            return
        if self.state is _AFTER_CALL and not self.spec.bracketed:
            return
        if self.state is _NAME and not self.buf and self.spec.many and not self.out.in_call:
            return
        if self.state is _VALUE and "".join(self.value_parts).strip():
            self._emit_value()
        self.out.incomplete = True


# --------------------------------------------------------------------------------------------------
