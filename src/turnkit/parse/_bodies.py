"""Argument encodings: push decoders for the body of one tool-call region.

Each decoder is built from one declaration (``_spec.py``) and is pushed text with :meth:`feed`, which
returns ``None`` while the body continues, or the unconsumed rest once it ended. A decoder that sees
the body is not in its encoding at all returns :data:`REJECT` before emitting anything; the engine then
treats the region's text as content. Tool calls are emitted through the shared ``Emitter`` as they
become known: the name first, then JSON argument text fragments.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import json
import re
from functools import lru_cache
from typing import Any

from turnkit._held import held_tail
from turnkit.parse._emit import Delta, Emitter
from turnkit.parse._json_scan import JsonDepthGauge, JsonValueScanner, json_text, too_deep
from turnkit.parse._markers import MarkerScanner, MarkerSet
from turnkit.parse._spec import JsonArgs, JsonCalls, KeyedDict, Pythonic, XmlParams

__all__ = ["REJECT", "Body", "ToolTypes", "make_body"]

ToolTypes = dict[str, dict[str, Any]]
"""Tool name -> parameter name -> JSON schema of that parameter."""



class Reject(enum.Enum):
    """The type of :data:`REJECT` (one member, compared with ``is``)."""

    REJECT = "reject"


REJECT = Reject.REJECT
"""Returned by ``feed`` when the body is not in the decoder's encoding: an object no model output can spell."""

Fed = str | None | Reject
"""What ``feed`` returns: ``None`` (the body continues), the unconsumed rest (it ended), or :data:`REJECT`."""

_JSON_SPECIAL = re.compile(r'["\\{}\[\]]')
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\u2028\u2029]')

_MAX_NAME = 512
_WS = " \t\r\n"


class Body:
    """Base of the decoders: holds the emitter and the tool schemas."""

    consumed: str

    def __init__(self, emitter: Emitter, types: ToolTypes, max_depth: int) -> None:
        self.out = emitter
        self.types = types
        self.max_depth = max_depth
        self.consumed = ""

    def feed(self, text: str) -> Fed:  # pragma: no cover - abstract
        raise NotImplementedError

    def fast(self, text: str) -> list[Delta] | None:
        """The deltas for ``text`` in one step when it cannot change the decoder's state (the hot streaming
        path), else ``None`` and the text goes through :meth:`feed`."""
        return None

    def close(self) -> None:
        """End of input inside the body: whatever was open stays open (the message is incomplete)."""
        self.out.incomplete = True


def _param_type(types: ToolTypes, function: str, param: str) -> str:
    schema = types.get(function, {}).get(param)
    if not isinstance(schema, dict):
        return ""
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else ""
    if kind is None and ("enum" in schema or "const" in schema):
        values = schema.get("enum", [schema.get("const")])
        kind = "string" if all(isinstance(v, str) for v in values) else ""
    return kind if isinstance(kind, str) else ""


def typed_value(raw: str, kind: str) -> Any:
    """An XML parameter's raw text as a JSON value: strings stay text; other types parse when they can."""
    if kind == "string":
        return raw
    stripped = raw.strip()
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        if kind in ("integer", "number", "boolean", "object", "array", "null", "json"):
            try:
                return ast.literal_eval(stripped)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return raw
        return raw
    return value


# --------------------------------------------------------------------------------------------------
class JsonCallsBody(Body):
    """``{"name": ..., "arguments": {...}}`` or ``[{...}, ...]``: a depth-1 walk, argument values streamed raw."""

    START, FENCE, OBJ, KEY, COLON, VALUE, AFTER, LIST_NEXT, FENCE_TAIL, DONE, REPEAT, WRAP_OPEN, WRAP_CLOSE = range(13)

    def __init__(self, spec: JsonCalls, emitter: Emitter, types: ToolTypes, max_depth: int) -> None:
        super().__init__(emitter, types, max_depth)
        self.spec = spec
        self.state = self.START
        self.listed = False
        self.scanner: JsonValueScanner | None = None
        self.key_raw = ""
        self.role = ""
        self.value_parts: list[str] = []
        self.inner: JsonCallsBody | None = None
        self.produced = False
        self.wrapped = ""
        self.pending_rest: str | None = None
        self._fenced = False
        self.tail = ""
        self.delegate: JsonArgsBody | None = None
        self._reset_object()

    def _reset_object(self) -> None:
        self.name: str | None = None
        self.call_id: str | None = None
        self.started = False
        self.pending_args: str | None = None
        self.string_args = False

    def feed(self, text: str) -> Fed:
        if self.delegate is not None:
            return self.delegate.feed(text)
        pos, end = 0, len(text)
        while pos < end:
            state = self.state
            if state == self.VALUE:
                pos = self._value(text, pos)
                if self.pending_rest is not None:
                    text, self.pending_rest = self.pending_rest, None
                    pos, end = 0, len(text)
                continue
            if state == self.DONE:
                return text[pos:]
            if state == self.WRAP_OPEN:
                close = text.find(">", pos)
                self.tail += text[pos:] if close < 0 else text[pos : close + 1]
                if close < 0:
                    return None if len(self.tail) <= 32 else REJECT
                tag = self.tail[1:-1].strip()
                if tag not in self.spec.wrap_tags:
                    return REJECT
                self.wrapped, self.tail = tag, ""
                self.state = self.START
                pos = close + 1
                continue
            if state == self.WRAP_CLOSE:
                self.tail += text[pos:]
                stripped = self.tail.lstrip(_WS)
                closing = f"</{self.wrapped}>"
                if stripped.startswith(closing):
                    self.wrapped = ""
                    return self._done(stripped[len(closing) :])
                if closing.startswith(stripped):
                    return None
                self.wrapped = ""
                return self._done(stripped)
            if state == self.FENCE_TAIL:
                self.tail += text[pos:]
                stripped = self.tail.lstrip(_WS)
                if stripped.startswith("```"):
                    return stripped[3:]
                if "```".startswith(stripped):
                    return None
                return stripped
            char = text[pos]
            if state == self.KEY:
                assert self.scanner is not None
                stop = self.scanner.feed(text[pos:])
                if stop < 0:
                    self.key_raw += text[pos:]
                    if len(self.key_raw) > _MAX_NAME:
                        return self._give_up(text[end:])
                    return None
                self.key_raw += text[pos : pos + stop]
                pos += stop
                try:
                    key = json.loads(self.key_raw)
                except ValueError:
                    key = self.key_raw
                self.role = self._role(str(key))
                self.state = self.COLON
                continue
            if char in _WS and state != self.FENCE:
                if state == self.START or state == self.FENCE_TAIL:
                    self.consumed += char
                pos += 1
                continue
            if state == self.START:
                if self.spec.fence and char == "`":
                    self.state = self.FENCE
                    continue
                if char == "[":
                    self.listed = True
                    self.state = self.LIST_NEXT
                    pos += 1
                    continue
                if char == "{":
                    self.state = self.OBJ
                    pos += 1
                    continue
                if char == "<" and self.spec.wrap_tags and not self.wrapped:
                    self.state = self.WRAP_OPEN
                    self.tail = ""
                    continue
                if self.spec.or_named is not None and not self.out.in_call:
                    self.delegate = JsonArgsBody(self.spec.or_named, self.out, self.types, self.max_depth)
                    return self.delegate.feed(text[pos:])
                return REJECT
            elif state == self.FENCE:
                newline = text.find("\n", pos)
                self.consumed += text[pos : end if newline < 0 else newline + 1]
                if len(self.consumed) > 64:
                    return REJECT
                if newline < 0:
                    return None
                pos = newline + 1
                self.state = self.START
                self._fenced = True
            elif state == self.OBJ:
                if char == "}":
                    pos += 1
                    self._finish_object()
                    if self.state == self.DONE:
                        return self._done(text[pos:])
                    continue
                if char == ",":
                    pos += 1
                    continue
                if char == '"':
                    self.scanner = JsonValueScanner(max_depth=self.max_depth)
                    self.key_raw = ""
                    self.state = self.KEY
                    continue
                return self._give_up(text[pos:])
            elif state == self.COLON:
                if char != ":":
                    return self._give_up(text[pos:])
                pos += 1
                self.state = self.VALUE
                self.scanner = None
            elif state == self.AFTER:
                pos += 1
                if char == ",":
                    self.state = self.OBJ
                elif char == "}":
                    self._finish_object()
                    if self.state == self.DONE:
                        return self._done(text[pos:])
                else:
                    return self._give_up(text[pos - 1 :])
            elif state == self.LIST_NEXT:
                if char == "{":
                    self.state = self.OBJ
                    self._reset_object()
                    pos += 1
                elif char == ",":
                    pos += 1
                elif char == "]":
                    pos += 1
                    return self._done(text[pos:])
                else:
                    return self._give_up(text[pos:])
            elif state == self.REPEAT:
                if char == "{":
                    self.state = self.OBJ
                    pos += 1
                    continue
                return text[pos:]
        return None

    def fast(self, text: str) -> list[Delta] | None:
        scanner = self.scanner
        if (
            self.state == self.VALUE
            and scanner is not None
            and self.started
            and self.role == "args"
            and not self.string_args
            and not scanner.escape
            and not scanner.scalar
            and _JSON_SPECIAL.search(text) is None
        ):
            return self.out.args_delta(text)
        return None

    def _role(self, key: str) -> str:
        spec = self.spec
        if key in spec.envelope_keys:
            return "envelope"
        if key in spec.content_keys:
            return "content"
        if spec.name_is_key:
            if not key.strip():
                return "skip"
            self.name = key
            return "args"
        if key in spec.name_keys:
            return "name"
        if key in spec.args_keys:
            return "args"
        if key in spec.id_keys:
            return "id"
        return "skip"

    def _value(self, text: str, pos: int) -> int:
        end = len(text)
        if self.role == "envelope":
            return self._envelope_value(text, pos)
        if self.scanner is None:
            while pos < end and text[pos] in _WS:
                pos += 1
            if pos == end:
                return pos
            self.scanner = JsonValueScanner(max_depth=self.max_depth)
            self.value_parts = []
            if self.role == "args":
                self.string_args = text[pos] == '"'
                if self.name is not None and not self.started and not self.string_args and not self.spec.defer:
                    self._start()
        stop = self.scanner.feed(text[pos:])
        piece = text[pos:] if stop < 0 else text[pos : pos + stop]
        if self.role == "args" and self.started and not self.string_args:
            self.out.args(piece)
        elif self.role != "skip":
            self.value_parts.append(piece)
        if stop < 0:
            return end
        self._value_done()
        self.state = self.AFTER
        return pos + stop

    def _envelope_value(self, text: str, pos: int) -> int:
        """The value of an envelope key is itself a call or a list of calls: a nested walker decodes it."""
        if self.inner is None:
            inner_spec = dataclasses.replace(self.spec, envelope_keys=(), content_keys=())
            self.inner = JsonCallsBody(inner_spec, self.out, self.types, self.max_depth)
        rest = self.inner.feed(text[pos:])
        if rest is None:
            return len(text)
        self.produced = self.produced or self.inner.produced
        self.inner = None
        self.state = self.AFTER
        if rest is REJECT:
            return len(text)
        # Continue with what the nested walker did not consume.
        self.pending_rest = rest
        return len(text)

    def _value_done(self) -> None:
        raw = "".join(self.value_parts)
        if self.role == "content":
            try:
                value = json.loads(raw)
            except ValueError:
                value = raw
            if isinstance(value, str):
                self.out.text("content", value)
                self.produced = True
            return
        if self.role == "name":
            try:
                name = json.loads(raw)
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
        elif self.role == "id":
            try:
                self.call_id = str(json.loads(raw))
            except ValueError:
                self.call_id = raw
        elif self.role == "args":
            if self.string_args:
                try:
                    inner = json.loads(raw)
                except ValueError:
                    inner = raw
                if isinstance(inner, str):
                    JsonDepthGauge(max_depth=self.max_depth).feed(inner)  # JSON arguments inside a JSON string
                self.pending_args = inner if isinstance(inner, str) else json_text(inner)
            elif not self.started:
                self.pending_args = raw

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
            self.state = self.LIST_NEXT
        elif self.spec.repeat:
            self.state = self.REPEAT
        else:
            self.state = self.DONE

    def _done(self, rest: str) -> Fed:
        if not self.produced:
            # An ordinary JSON value, not an envelope or call list (formats2: for every JSON call region, e.g.
            # ``[{"a": 1}]`` in xLAM output): the engine gives it back as content.
            return REJECT
        if self.wrapped:
            self.state = self.WRAP_CLOSE
            self.tail = ""
            return self.feed(rest)
        if self._fenced:
            self.state = self.FENCE_TAIL
            self.tail = ""
            return self.feed(rest)
        return rest

    def _give_up(self, rest: str) -> Fed:
        """Not the expected shape after all: close what is open, hand the rest back as text."""
        if self.started:
            self.out.incomplete = True
            self.out.end_call()
        elif self.state in (self.START, self.FENCE) or not self.produced:
            # formats2 fix: nothing was emitted yet (``[see docs]``, ``[1, 2]``): the text is content, not lost
            return REJECT
        return rest

    def feed_after(self, text: str) -> Fed:
        return self.feed(text)

    def close(self) -> None:
        if self.delegate is not None:
            self.delegate.close()
            return
        if self.inner is not None:
            self.inner.close()
            self.out.incomplete = True
            return
        if self.state in (self.START, self.FENCE, self.DONE, self.FENCE_TAIL, self.REPEAT, self.WRAP_OPEN,
                          self.WRAP_CLOSE):
            return
        if self.state != self.LIST_NEXT or self.started:
            self.out.incomplete = True
        if self.name is not None and not self.started:
            self._start()
            if self.role == "args" and self.value_parts:
                self.out.args("".join(self.value_parts))
        if self.state == self.LIST_NEXT and self.listed:
            self.out.incomplete = True




# --------------------------------------------------------------------------------------------------
class JsonArgsBody(Body):
    """``NAME<sep>{arguments}``: the name up to a marker, then one JSON value streamed raw."""

    NAME, ID, ARGS_START, FENCE, ARGS, FENCE_TAIL, DONE, RAW = range(8)

    def __init__(self, spec: JsonArgs, emitter: Emitter, types: ToolTypes, max_depth: int) -> None:
        super().__init__(emitter, types, max_depth)
        self.spec = spec
        name_set, id_set = _name_sets(spec)
        self.name_scan = MarkerScanner(name_set)
        self.id_scan = MarkerScanner(id_set) if id_set is not None else None
        self.state = self.NAME
        self.name_raw = ""
        self.id_raw = ""
        self.call_id: str | None = None
        self.scanner: JsonValueScanner | None = None
        self.fenced = False
        self.fence_buf = ""
        self.name = ""

    def feed(self, text: str) -> Fed:
        while text or self.state == self.ARGS_START and not text:
            if not text:
                return None
            state = self.state
            if state == self.NAME:
                before, marker, text = self.name_scan.scan(text)
                self.name_raw += before
                if len(self.name_raw) > _MAX_NAME:
                    return REJECT
                if marker is None:
                    return None
                if marker == self.spec.id_marker:
                    self.state = self.ID
                    continue
                if marker in self.spec.name_ends_kept:
                    text = marker + text
                if self.spec.content_name is not None and self.name_raw.strip() == self.spec.content_name:
                    self.state = self.DONE
                    return text
                if not self._begin():
                    return REJECT
            elif state == self.ID:
                assert self.id_scan is not None
                before, marker, text = self.id_scan.scan(text)
                self.id_raw += before
                if marker is None:
                    return None
                self.call_id = self.id_raw.strip()
                if not self._begin():
                    return REJECT
            elif state == self.ARGS_START:
                stripped = text.lstrip(_WS)
                if not stripped:
                    return None
                text = stripped
                if self.spec.fence and text[0] == "`" and not self.fenced:
                    self.state = self.FENCE
                    continue
                raw_key = dict(self.spec.raw_args).get(self.name)
                if raw_key is not None and text[0] not in "{[":
                    # Raw text arguments (functionary's ``python``): streamed as one JSON string.
                    self.out.args("{" + json_text(raw_key) + ': "')
                    self.state = self.RAW
                    continue
                self.scanner = JsonValueScanner(max_depth=self.max_depth)
                self.state = self.ARGS
            elif state == self.RAW:
                self.out.args(json.dumps(text, ensure_ascii=False)[1:-1])
                return None
            elif state == self.FENCE:
                newline = text.find("\n")
                self.fence_buf += text if newline < 0 else text[: newline + 1]
                if newline < 0:
                    return None
                text = text[newline + 1 :]
                self.fenced = True
                self.state = self.ARGS_START
            elif state == self.ARGS:
                assert self.scanner is not None
                stop = self.scanner.feed(text)
                if stop < 0:
                    self.out.args(text)
                    return None
                self.out.args(text[:stop])
                self.out.end_call()
                text = text[stop:]
                if not self.fenced:
                    return text
                self.state = self.FENCE_TAIL
                self.fence_buf = ""
            elif state == self.FENCE_TAIL:
                self.fence_buf += text
                stripped = self.fence_buf.lstrip(_WS)
                if stripped.startswith("```"):
                    return stripped[3:]
                if "```".startswith(stripped):
                    return None
                return stripped
        return None

    def _begin(self) -> bool:
        name = self.name_raw.strip()
        call_id = self.call_id
        if self.spec.id_from_name:
            call_id = name
        if self.spec.name_prefix and name.startswith(self.spec.name_prefix):
            name = name[len(self.spec.name_prefix) :].strip()
        if self.spec.name_cut and self.spec.name_cut in name:
            name = name.rpartition(self.spec.name_cut)[0]
        if not name or any(c in name for c in "\n<>{}"):
            return False
        self.name = name
        self.out.start_call(name, call_id)
        self.state = self.ARGS_START
        return True

    def close(self) -> None:
        if self.state == self.ARGS_START:
            self.out.end_call()
            return
        if self.state in (self.FENCE_TAIL, self.DONE):
            return
        if self.state == self.RAW:
            self.out.args('"}')  # raw arguments run to the end of the output
            self.out.end_call()
            return
        self.out.incomplete = True


# --------------------------------------------------------------------------------------------------
@lru_cache(maxsize=256)
def _xml_sets(spec: XmlParams, region_close: str | None) -> tuple[MarkerSet, ...]:
    closers = [region_close] if region_close else []
    fclose = [spec.function_close] if spec.function_close else []
    return (
        MarkerSet([m for m in [spec.function_open] if m] + closers),
        MarkerSet(list(spec.name_ends) + [spec.param_open] + closers),
        MarkerSet([spec.param_open] + fclose + closers),
        MarkerSet([marker for marker, _kind in spec.key_ends]),
        MarkerSet([spec.value_open] if spec.value_open else []),
        MarkerSet([spec.param_close] + fclose + closers),
    )


@lru_cache(maxsize=256)
def _name_sets(spec: JsonArgs) -> tuple[MarkerSet, MarkerSet | None]:
    ends = list(spec.name_ends) + list(spec.name_ends_kept)
    if spec.id_marker:
        ends.append(spec.id_marker)
    return MarkerSet(ends), (MarkerSet([spec.id_end]) if spec.id_end else None)


class XmlParamsBody(Body):
    """XML-style parameters, converted to JSON text as each parameter completes (strings stream)."""

    AWAIT, NAME, PARAMS, KEY, VALUE_OPEN, VALUE = range(6)

    def __init__(self, spec: XmlParams, emitter: Emitter, types: ToolTypes, max_depth: int,
                 region_close: str | None) -> None:
        super().__init__(emitter, types, max_depth)
        self.spec = spec
        self.region_close = region_close
        sets = _xml_sets(spec, region_close)
        self.await_scan = MarkerScanner(sets[0])
        self.name_scan = MarkerScanner(sets[1])
        self.params_scan = MarkerScanner(sets[2])
        self.key_types = dict(spec.key_ends)
        self.key_scan = MarkerScanner(sets[3])
        self.vopen_scan = MarkerScanner(sets[4])
        self.value_scan = MarkerScanner(sets[5])
        self.state = self.AWAIT if spec.function_open else self.NAME
        self.text_buf = ""
        self.function = ""
        self.kind = ""
        self.count = 0
        self.value_started = False
        self.held_newline = ""
        self.value_parts: list[str] = []

    def feed(self, text: str) -> Fed:
        spec = self.spec
        while text:
            state = self.state
            if state == self.AWAIT:
                before, marker, text = self.await_scan.scan(text)
                if before.strip() and not self.out.calls:
                    return REJECT
                if marker is None:
                    return None
                if marker == self.region_close:
                    return marker + text
                self.state = self.NAME
                self.text_buf = ""
            elif state == self.NAME:
                before, marker, text = self.name_scan.scan(text)
                self.text_buf += before
                if len(self.text_buf) > _MAX_NAME:
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
                self.state = self.PARAMS
                if marker not in spec.name_ends:
                    text = marker + text
            elif state == self.PARAMS:
                _before, marker, text = self.params_scan.scan(text)
                if marker is None:
                    return None
                if marker == spec.param_open:
                    self.state = self.KEY
                    self.text_buf = ""
                    continue
                self.out.args("}")
                self.out.end_call()
                if marker == self.region_close:
                    return marker + text
                self.state = self.AWAIT if spec.function_open else self.NAME
                self.text_buf = ""
                if not spec.function_open:
                    return text
            elif state == self.KEY:
                before, marker, text = self.key_scan.scan(text)
                self.text_buf += before
                if len(self.text_buf) > _MAX_NAME:
                    self.out.incomplete = True
                    self.state = self.PARAMS
                    continue
                if marker is None:
                    return None
                key = self.text_buf.strip().strip('"')
                declared = self.key_types[marker]
                self.kind = declared or _param_type(self.types, self.function, key)
                if declared == "json" and self.kind != "string":
                    self.kind = "json"
                sep = ", " if self.count else ""
                self.count += 1
                self.out.args(f"{sep}{json_text(key)}: ")
                self.text_buf = ""
                self.value_started = False
                self.held_newline = ""
                self.state = self.VALUE_OPEN if spec.value_open else self.VALUE
            elif state == self.VALUE_OPEN:
                _before, marker, text = self.vopen_scan.scan(text)
                if marker is None:
                    return None
                self.state = self.VALUE
            elif state == self.VALUE:
                before, marker, text = self.value_scan.scan(text)
                self._value_text(before)
                if marker is None:
                    return None
                self._value_end()
                if marker == spec.param_close:
                    self.state = self.PARAMS
                else:
                    text = marker + text
                    self.state = self.PARAMS
        return None

    def fast(self, text: str) -> list[Delta] | None:
        if self.state != self.VALUE or self.value_scan.held or "<" in text:
            return None
        if self.kind != "string":
            self.value_parts.append(text)
            return []
        if (
            self.kind == "string"
            and self.spec.trim == "space"
            and self.value_started
            and not self.value_scan.held
            and "<" not in text
            and _NEEDS_ESCAPE.search(text) is None
        ):
            core = text.rstrip()
            if not core:
                return None
            held, self.held_newline = self.held_newline, text[len(core) :]
            if held:
                core = (json.dumps(held)[1:-1] if _NEEDS_ESCAPE.search(held) else held) + core
            return self.out.args_delta(core)
        return None

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
                self.out.args(json.dumps(text, ensure_ascii=False)[1:-1])
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
        self.out.args(json.dumps(text, ensure_ascii=False)[1:-1])

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
        JsonDepthGauge(max_depth=self.max_depth).feed(raw)
        self.out.args(json_text(typed_value(raw, self.kind)))
        self.value_parts = []

    def close(self) -> None:
        if self.state in (self.AWAIT,) or (self.state == self.NAME and not self.text_buf.strip()):
            if self.state == self.AWAIT and not self.out.in_call:
                return
        if self.state == self.VALUE:
            self.out.incomplete = True
            if self.kind != "string":
                raw = "".join(self.value_parts).strip()
                if raw:
                    JsonDepthGauge(max_depth=self.max_depth).feed(raw)
                    self.out.args(json_text(typed_value(raw, self.kind)))
            return
        if self.out.in_call or self.state in (self.NAME, self.KEY, self.VALUE_OPEN):
            self.out.incomplete = True


# --------------------------------------------------------------------------------------------------
_IDENT = re.compile(r"[A-Za-z_][\w.\-]*")


class PythonicBody(Body):
    """``[f(a=1, b="x"), g()]``: Python literals converted to JSON per argument."""

    START, NAME, ARG, KEY, VALUE, AFTER_ARG, AFTER_CALL, DONE = range(8)

    def __init__(self, spec: Pythonic, emitter: Emitter, types: ToolTypes, max_depth: int) -> None:
        super().__init__(emitter, types, max_depth)
        self.spec = spec
        self.state = self.START if spec.bracketed else self.NAME
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
            if state == self.DONE:  # formats2 fix: an unbracketed call ended; the rest is not ours to swallow
                return text[pos:]
            if state == self.VALUE:
                pos = self._value(text, pos)
                continue
            if state in (self.NAME, self.KEY):
                found = _IDENT.match(text, pos) if not self.buf else re.compile(r"[\w.\-]*").match(text, pos)
                assert found is not None or not self.buf
                if found is not None and found.end() > pos:
                    self.buf += text[pos : found.end()]
                    pos = found.end()
                    if len(self.buf) > _MAX_NAME:
                        return self._fail(text[pos:])
                    continue
                if char in _WS:
                    pos += 1
                    continue
                if state == self.NAME and char == "(" and self.buf:
                    name = self.buf
                    if self.spec.name_suffix and name.endswith(self.spec.name_suffix):
                        name = name[: -len(self.spec.name_suffix)]
                    self.out.start_call(name)
                    self.function = name
                    self.out.args("{")
                    self.count = 0
                    self.buf = ""
                    self.state = self.ARG
                    pos += 1
                    continue
                if state == self.NAME and not self.buf and self.spec.many and self.out.calls:
                    self.state = self.DONE
                    return text[pos:]
                if state == self.KEY and char == "=" and self.buf:
                    sep = ", " if self.count else ""
                    self.count += 1
                    self.out.args(f"{sep}{json_text(self.buf)}: ")
                    self.key = self.buf
                    self.buf = ""
                    self.state = self.VALUE
                    self.depth = 0
                    self.quote = ""
                    pos += 1
                    continue
                return self._fail(text[pos:])
            if char in _WS:
                pos += 1
                continue
            pos += 1
            if state == self.START:
                if char != "[":
                    return REJECT
                self.state = self.NAME
            elif state == self.ARG:
                if char == ")":
                    self._end_call()
                else:
                    self.state = self.KEY
                    self.buf = ""
                    pos -= 1
            elif state == self.AFTER_ARG:
                if char == ",":
                    self.state = self.ARG
                elif char == ")":
                    self._end_call()
                else:
                    return self._fail(text[pos - 1 :])
            elif state == self.AFTER_CALL:
                if char == ",":
                    self.state = self.NAME
                    self.buf = ""
                elif char == "]":
                    self.state = self.DONE
                    return text[pos:]
                else:
                    return self._fail(text[pos - 1 :])
        return None

    def _end_call(self) -> None:
        self.out.args("}")
        self.out.end_call()
        if self.spec.bracketed:
            self.state = self.AFTER_CALL
        elif self.spec.many:
            self.state = self.NAME
            self.buf = ""
        else:
            self.state = self.DONE

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
                self.state = self.AFTER_ARG
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
        if isinstance(value, str) and _param_type(self.types, self.function, self.key) in ("object", "array"):
            value = typed_value(value, "json")
        try:
            self.out.args(json_text(value))
        except (TypeError, ValueError):
            self.out.args(json_text(repr(value)))

    def _fail(self, rest: str) -> str:
        self.out.incomplete = True
        if self.out.in_call:
            self.out.end_call()
        self.state = self.DONE
        return rest

    def close(self) -> None:
        if self.state in (self.DONE, self.START):
            return
        if self.state == self.AFTER_CALL and not self.spec.bracketed:
            return
        if self.state == self.NAME and not self.buf and self.spec.many and not self.out.in_call:
            return
        if self.state == self.VALUE and "".join(self.value_parts).strip():
            self._emit_value()
        self.out.incomplete = True


# --------------------------------------------------------------------------------------------------
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][\w\-]*)\s*:")


class KeyedDictBody(Body):
    """``call:NAME{key:<|"|>text<|"|>,n:1}``: collected until the braces balance, then converted to JSON."""

    def __init__(self, spec: KeyedDict, emitter: Emitter, types: ToolTypes, max_depth: int) -> None:
        super().__init__(emitter, types, max_depth)
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
                return REJECT if len(self.head) > _MAX_NAME else None
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
                out.append(json.dumps(part, ensure_ascii=False))
            else:
                out.append(_BARE_KEY.sub(lambda m: f'{m.group(1)}"{m.group(2)}":', part))
        self.out.args("".join(out))
        self.out.end_call()

    def close(self) -> None:
        if self.name:
            self.out.incomplete = True


_BRACKET = re.compile(r"[{}\[\]]")


def make_body(
    spec: JsonCalls | JsonArgs | XmlParams | Pythonic | KeyedDict,
    emitter: Emitter,
    types: ToolTypes,
    max_depth: int,
    region_close: str | None,
) -> Body:
    """The decoder for one argument encoding."""
    if isinstance(spec, JsonCalls):
        return JsonCallsBody(spec, emitter, types, max_depth)
    if isinstance(spec, JsonArgs):
        return JsonArgsBody(spec, emitter, types, max_depth)
    if isinstance(spec, XmlParams):
        return XmlParamsBody(spec, emitter, types, max_depth, region_close)
    if isinstance(spec, Pythonic):
        return PythonicBody(spec, emitter, types, max_depth)
    return KeyedDictBody(spec, emitter, types, max_depth)
