"""``XmlParams``: a function with XML-style parameters whose raw text values are typed by the tool schema.

Each parameter becomes JSON text as it completes; string values stream as they arrive.
"""

from __future__ import annotations

import enum
import re

from turnkit.parse._bodies.base import (
    MAX_NAME,
    REJECT,
    Body,
    Fed,
    ToolTypes,
    check_depth,
    param_type,
    typed_value,
)
from turnkit.parse._emit import Delta, Emitter
from turnkit.parse._json_scan import json_string_body, json_text
from turnkit.parse._markers import MarkerScanner, MarkerSet
from turnkit.parse._spec import XmlParams

__all__ = ["XmlParamsBody"]


class _State(enum.Enum):
    AWAIT = enum.auto()
    """Before a function: its opening marker (``function_open``)."""
    NAME = enum.auto()
    """Reading the function name."""
    PARAMS = enum.auto()
    """Between parameters: the next one opens, or the function closes."""
    KEY = enum.auto()
    """Reading a parameter key, up to a marker that declares its value type."""
    VALUE_OPEN = enum.auto()
    """Before the value's own opening marker (``value_open``)."""
    VALUE = enum.auto()
    """Inside a raw value."""
    CLOSING = enum.auto()
    """After a value's close marker: it closes the value only if what follows (whitespace aside) is another
    parameter, the function's or the region's close, or the end of the output; else it is value text."""


_AWAIT, _NAME, _PARAMS, _KEY, _VALUE_OPEN, _VALUE, _CLOSING = _State

_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\u2028\u2029]')


class _Plan:
    """What every body of one declaration and region close shares (built once, read only): the marker set of
    each state, the key markers' declared types, the followers that decide a value's close marker."""

    __slots__ = (
        "spec",
        "region_close",
        "await_",
        "name",
        "params",
        "key",
        "vopen",
        "value",
        "key_types",
        "followers",
        "undecided",
        "value_stops",
        "next_param_whole",
    )

    def __init__(self, spec: XmlParams, region_close: str | None) -> None:
        self.spec = spec
        self.region_close = region_close
        closers = [region_close] if region_close else []
        fclose = [spec.function_close] if spec.function_close else []
        self.await_ = MarkerSet([m for m in [spec.function_open] if m] + closers)
        self.name = MarkerSet(list(spec.name_ends) + [spec.param_open] + closers)
        self.params = MarkerSet([spec.param_open] + fclose + closers)
        self.key = MarkerSet([marker for marker, _kind in spec.key_ends])
        self.vopen = MarkerSet([spec.value_open] if spec.value_open else [])
        self.value = MarkerSet([spec.param_close] + fclose + closers)
        firsts = sorted({marker[0] for marker in self.value.markers})
        self.value_stops = "".join(firsts) if len(firsts) <= 2 else ""
        """Where a value's markers can start, when one or two characters (a raw value's lane, see Body.lane_to)."""
        self.key_types = dict(spec.key_ends)
        self.followers = tuple(m for m in (spec.param_open, spec.function_close, region_close) if m)
        self.undecided = _undecided(self.followers)
        self.next_param_whole = spec.param_open not in self.params.prefixes_of_longer and not any(
            m[0].isspace() for m in self.params.markers
        )
        """Whether text that is whitespace and then exactly the parameter opening marker, read between parameters,
        is that marker (no other marker found first, none it may still become)."""


_PLANS: dict[tuple[int, str | None], _Plan] = {}
"""Plans by ``id`` of their declaration and the region close (the plan keeps the declaration, so the ``id`` is
not reused while cached; a body is made per call, and hashing the frozen declaration would cost more than the
rest of its set-up)."""
_MAX_PLANS = 256


def _plan(spec: XmlParams, region_close: str | None) -> _Plan:
    key = (id(spec), region_close)
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        plan = _PLANS[key] = _Plan(spec, region_close)
    return plan


def _undecided(followers: tuple[str, ...]) -> frozenset[str]:
    """The texts after a value's close marker (leading whitespace stripped) that leave it undecided: nothing
    yet, or the beginning of a follower that does not already start with a whole follower."""
    return frozenset(f[:k] for f in followers for k in range(len(f)) if not f[:k].startswith(followers))


class XmlParamsBody(Body):
    """XML-style parameters, converted to JSON text as each parameter completes (strings stream)."""

    __slots__ = (
        "spec",
        "region_close",
        "plan",
        "key_types",
        "state",
        "scan",
        "key_held",
        "text_buf",
        "function",
        "kind",
        "count",
        "value_started",
        "held_newline",
        "value_parts",
        "followers",
        "undecided",
        "closing",
    )

    def __init__(
        self, spec: XmlParams, emitter: Emitter, types: ToolTypes, max_depth: int, region_close: str | None
    ) -> None:
        super().__init__(spec, emitter, types, max_depth, region_close)
        self.spec = spec
        self.region_close = region_close
        self.plan = plan = _plan(spec, region_close)
        self.key_types = plan.key_types
        # One scanner: its marker set is the state's, switched where the state changes (held text is empty there,
        # a marker having just been found; but see ``key_held``).
        if spec.function_open:
            self.state, self.scan = _AWAIT, MarkerScanner(plan.await_)
        else:
            self.state, self.scan = _NAME, MarkerScanner(plan.name)
        self.key_held = ""  # a key's held beginning when the key ran over MAX_NAME: the next key starts from it
        self.text_buf = ""
        self.function = ""
        self.kind = ""
        self.count = 0
        self.value_started = False
        self.held_newline = ""
        self.value_parts: list[str] = []
        self.followers = plan.followers
        self.undecided = plan.undecided
        self.closing = ""  # the text after a value's close marker, until it decides

    def feed(self, text: str) -> Fed:
        spec = self.spec
        scan = self.scan
        plan = self.plan
        while text:
            state = self.state
            if state is _AWAIT:
                before, marker, text = scan.scan(text)
                if before.strip() and not self.out.calls:
                    return REJECT
                if marker is None:
                    return None
                if marker == self.region_close:
                    return marker + text
                self.state, scan.markers = _NAME, plan.name
                self.text_buf = ""
            elif state is _NAME:
                before, marker, text = scan.scan(text)
                self.text_buf += before
                if len(self.text_buf) > MAX_NAME:
                    return REJECT
                if marker is None:
                    return None
                name = self.text_buf.strip()
                if not name:
                    if marker in spec.name_ends:
                        continue
                    return REJECT
                self.function = name
                self.out.start_call(name)
                self.out.args("{")
                self.count = 0
                self.state, scan.markers = _PARAMS, plan.params
                if marker not in spec.name_ends:
                    text = marker + text
            elif state is _PARAMS:
                _before, marker, text = scan.scan(text)
                if marker is None:
                    return None
                if marker == spec.param_open:
                    self.state, scan.markers = _KEY, plan.key
                    scan.held, self.key_held = self.key_held, ""
                    self.text_buf = ""
                    continue
                self.out.args("}")
                self.out.end_call()
                if marker == self.region_close:
                    return marker + text
                if spec.function_open:
                    self.state, scan.markers = _AWAIT, plan.await_
                else:
                    self.state, scan.markers = _NAME, plan.name
                self.text_buf = ""
                if not spec.function_open:
                    return text
            elif state is _KEY:
                before, marker, text = scan.scan(text)
                self.text_buf += before
                if len(self.text_buf) > MAX_NAME:
                    self.out.incomplete = True
                    self.state, scan.markers = _PARAMS, plan.params
                    scan.held, self.key_held = "", scan.held
                    continue
                if marker is None:
                    return None
                key = self.text_buf.strip().strip('"')
                declared = self.key_types[marker]
                self.kind = declared or (param_type(self.types, self.function, key) if self.types else "")
                if declared == "json" and self.kind != "string":
                    self.kind = "json"
                sep = ", " if self.count else ""
                self.count += 1
                self.out.args(f"{sep}{json_text(key)}: ")
                self.text_buf = ""
                self.value_started = False
                self.held_newline = ""
                if spec.value_open:
                    self.state, scan.markers = _VALUE_OPEN, plan.vopen
                else:
                    self.state, scan.markers = _VALUE, plan.value
            elif state is _VALUE_OPEN:
                _before, marker, text = scan.scan(text)
                if marker is None:
                    return None
                self.state, scan.markers = _VALUE, plan.value
            elif state is _VALUE:
                before, marker, text = scan.scan(text)
                self._value_text(before)
                if marker is None:
                    return None
                if marker == spec.param_close:
                    self.state = _CLOSING
                    self.closing = ""
                else:
                    self._value_end()
                    text = marker + text
                    self.state, scan.markers = _PARAMS, plan.params
            elif state is _CLOSING:
                self.closing += text
                head = self.closing.lstrip()
                if head in self.undecided:
                    return None  # may still become a follower
                text, self.closing = self.closing, ""
                if head.startswith(self.followers):
                    self._value_end()
                    self.state, scan.markers = _PARAMS, plan.params
                else:  # the close marker was part of the value: read on as value text
                    self._value_text(spec.param_close)
                    self.state = _VALUE
        return None

    def fast(self, text: str) -> list[Delta] | None:
        """Value text, name and key text, text between parameters and more of a marker's beginning in one step; any
        other chunk through ``fed`` (see :meth:`Body.fast`)."""
        state = self.state
        scan = self.scan
        if state is _VALUE:
            held = scan.held
            found = None
            if held:
                if (buffer := held + text) in scan.markers.holds:  # (scan.hold_more, inlined)
                    scan.held = buffer
                    return []
            elif (found := scan.markers.loud(text)) is None:  # no value-ending marker can start here: value text
                if self.kind != "string":  # kept until the value ends: so are the next chunks where none can start
                    stops = self.plan.value_stops
                    to = self.lane_to
                    if stops and to is not None:
                        to._lane = (stops[0], stops[-1], self.value_parts, -1)
                    self.value_parts.append(text)
                    return []
                if self.spec.trim == "space" and self.value_started and _NEEDS_ESCAPE.search(text) is None:
                    core = text.rstrip()
                    if core:
                        held, self.held_newline = self.held_newline, text[len(core) :]
                        if held:
                            core = (json_string_body(held) if _NEEDS_ESCAPE.search(held) else held) + core
                        return self.out.args_delta(core)
                self._value_text(text)
                return self.out.take()
            # What feed() does with the chunk, when the body goes on past it: text before a marker's possible
            # beginning is value text; a value's close marker followed by what may still become a follower waits.
            markers = scan.markers
            if found is not None and text[found.start() :] in markers.holds:
                before, marker, rest = text[: found.start()], None, ""  # (what scan finds, without its search)
                scan.held = text[found.start() :]
            else:
                before, marker, rest = scan.scan(text)
            if marker is None:
                if self.kind != "string":
                    if before:
                        self.value_parts.append(before)  # (as _value_text)
                    return []
                self._value_text(before)
                return self.out.take()
            if marker == self.spec.param_close and rest.lstrip() in self.undecided:
                self.state = _CLOSING
                self.closing = rest
                if not before:  # (the close marker's end alone: nothing to emit)
                    return []
                self._value_text(before)
                return self.out.take()
            scan.held = held
            return self.fed(text)
        if state is _CLOSING:
            # After a value's close marker: text that may still become a follower is kept (as feed() does); what
            # decides goes through feed().
            closing = self.closing + text
            head = closing.lstrip()
            if head in self.undecided:
                self.closing = closing
                return []
            if head == self.spec.param_open and self.plan.next_param_whole:
                # The next parameter opens right after the close marker: the value ends, its key begins (as feed()).
                self.closing = ""
                self._value_end()
                self.state, scan.markers = _KEY, self.plan.key
                scan.held, self.key_held = self.key_held, ""
                self.text_buf = ""
                return self.out.take()
            return self.fed(text)
        held = scan.held
        if held:  # inside a marker's beginning: feed() waits while it goes on (scan.hold_more, inlined)
            if (buffer := held + text) in scan.markers.holds:
                scan.held = buffer
                return []
            return self.fed(text)
        if state is _PARAMS or (state is _AWAIT and self.out.calls):
            # Between parameters or functions the text before a marker is skipped: what matters is whether a
            # marker completes here (then feed() does the work, on the scanner as it was).
            markers = scan.markers
            found = markers.loud(text)
            if found is None:
                return []
            if text[found.start() :] in markers.holds:
                scan.held = text[found.start() :]  # only a marker's beginning from there (what scan finds, no search)
                return []
            if scan.scan(text)[1] is None:
                return []
            scan.held = ""
        elif (state is _NAME or state is _KEY) and scan.markers.loud(text) is None:
            if len(self.text_buf) + len(text) <= MAX_NAME:
                self.text_buf += text  # more of the name or key (as feed() collects it)
                return []
        return self.fed(text)

    def _value_text(self, text: str) -> None:
        if not text:
            return
        if self.kind != "string":
            self.value_parts.append(text)
            return
        if self.spec.trim == "newline":
            if not self.value_started:
                self.out.args('"')
                self.value_started = True
                if text.startswith("\n"):
                    text = text[1:]
            text, self.held_newline = self.held_newline + text, ""
            if text.endswith("\n"):
                text, self.held_newline = text[:-1], "\n"
            if text:
                self.out.args(json_string_body(text))
            return
        if not self.value_started:
            text = text.lstrip()
            if not text:
                return
            self.out.args('"')
            self.value_started = True
        core = text.rstrip()
        if not core:
            self.held_newline += text
            return
        text, self.held_newline = self.held_newline + core, text[len(core) :]
        self.out.args(json_string_body(text))

    def _value_end(self) -> None:
        if self.kind == "string":
            if not self.value_started:
                self.out.args('"')
            self.out.args('"')
            return
        raw = "".join(self.value_parts)
        if self.spec.trim == "newline":
            raw = raw[1:] if raw.startswith("\n") else raw
            raw = raw[:-1] if raw.endswith("\n") else raw
        else:
            raw = raw.strip()
        check_depth(raw, self.max_depth)
        self.out.args(json_text(typed_value(raw, self.kind)))
        self.value_parts = []

    def close(self) -> None:
        if self.state is _CLOSING:  # the output ended after a close marker: it closed the value
            self._value_end()
            self.state, self.scan.markers = _PARAMS, self.plan.params
        state = self.state
        if state is _AWAIT and not self.out.in_call:
            return
        if state is _VALUE:
            self.out.incomplete = True
            if self.kind != "string":
                raw = "".join(self.value_parts).strip()
                if raw:
                    check_depth(raw, self.max_depth)
                    self.out.args(json_text(typed_value(raw, self.kind)))
            return
        if self.out.in_call or state is _NAME or state is _KEY or state is _VALUE_OPEN:
            self.out.incomplete = True


# --------------------------------------------------------------------------------------------------
