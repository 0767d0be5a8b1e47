"""The streaming response-template parser: transformers 5.23 ``chat_parsing/response_parser.py``, ported.

The algorithm is the reference's, step for step (regions, the watch list, partial-match holding, the
close/reset rules, tool-argument coercion), so a whole output fed at once and finalized gives exactly
transformers' ``parse_response`` dict. Regexes run with the ``regex`` module (as transformers does) under a
time budget. Two changes keep a long stream linear without changing a result: the open region's text is kept
as a list of pieces, and the consumed text is dropped from the buffer when no pattern looks before where its
search starts (``ResponseTemplate.reads_behind``). One makes the result independent of the chunking where
transformers' is not: a marker the text ends partway through is waited for even when ``regex`` reports a
complete match further on (:meth:`ResponseParser._hidden_partial`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from turnkit.errors import ParseError, UsageError
from turnkit.parse._response_template._content import STREAMABLE_PARSERS, Clock, process_field
from turnkit.parse._response_template._template import ResponseTemplate, ResponseTemplateField

__all__ = ["ResponseParser"]


def _schema_types(schema: Any) -> tuple[str, ...]:
    if not isinstance(schema, dict):
        return ()
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else []
    if isinstance(declared, list):
        types.extend(t for t in declared if isinstance(t, str))
    for union_name in ("anyOf", "oneOf"):
        for choice in schema.get(union_name) or []:
            types.extend(_schema_types(choice))
    if schema.get("nullable") and "null" not in types:
        types.append("null")
    return tuple(types)


def _coerce(raw: str, types: tuple[str, ...]) -> Any:
    for type_name in types:
        try:
            if type_name == "integer":
                try:
                    return int(raw)
                except ValueError:
                    number = float(raw)
                    if not number.is_integer():
                        continue
                    return int(number)
            if type_name == "number":
                number = float(raw)
                if number != number or number in (float("inf"), float("-inf")):
                    continue
                return int(number) if number.is_integer() and "." not in raw else number
            if type_name == "boolean" and raw.strip().lower() in ("true", "1", "false", "0"):
                return raw.strip().lower() in ("true", "1")
            if type_name == "null" and raw.strip() in ("null", "None"):
                return None
            if type_name in ("object", "array"):
                decoded = json.loads(raw)
                if isinstance(decoded, dict if type_name == "object" else list):
                    return decoded
        except (ValueError, OverflowError):
            continue
    return raw


def tool_params(tools: list[Any] | None) -> dict[str, dict[str, Any]]:
    """Tool name -> its parameters' ``properties`` (tools as ``apply_chat_template`` takes them)."""
    out: dict[str, dict[str, Any]] = {}
    for tool in tools or []:
        if callable(tool) and not isinstance(tool, dict):
            from turnkit.tools import get_json_schema

            tool = get_json_schema(tool)
        fn = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            parameters = fn.get("parameters")
            properties = parameters.get("properties") if isinstance(parameters, dict) else None
            out[fn["name"]] = properties if isinstance(properties, dict) else {}
    return out


class ResponseParser:
    """Feed model output piece by piece; ``finalize()`` returns the message and the last events.

    Events are transformers' (``region_open``, ``region_chunk``, ``region_close``).
    """

    def __init__(
        self,
        spec: ResponseTemplate,
        prefix: str,
        *,
        tools: list[dict[str, Any] | Callable[..., Any]] | None,
        clock: Clock,
    ) -> None:
        self._spec = spec
        self._clock = clock
        self._tool_params = tool_params(tools)
        self._buffer = ""
        self._pos = 0
        self._output: dict[str, Any] = copy.deepcopy(spec.defaults)
        self._implicit_name = spec.implicit
        self._current: str | None = self._implicit_name
        self._captures: dict[str, str] = {}
        self._body: list[str] = []  # the open region's text, joined when it closes
        self._opened = False
        self._finalized = False
        self.initial_events: list[dict[str, Any]] = []
        if prefix:
            self._consume_prefix(prefix)

    @property
    def output(self) -> dict[str, Any]:
        return self._output

    def _consume_prefix(self, prefix: str) -> None:
        last_end: int | None = None
        for m in self._clock.run("start_anchor", self._spec.start_anchor_re.finditer, prefix):
            last_end = m.end()
        truncated = prefix if last_end is None else prefix[last_end:]
        if not truncated:
            return
        self._buffer = truncated
        self._process(self.initial_events, eos=False)

    def feed(self, text: str) -> list[dict[str, Any]]:
        if self._finalized:
            raise UsageError("response template parser already finalized")
        if text:
            if self._pos and not self._spec.reads_behind:  # no pattern looks before pos: drop what is consumed
                self._buffer, self._pos = self._buffer[self._pos :], 0
            self._buffer += text
        events: list[dict[str, Any]] = []
        self._process(events, eos=False)
        return events

    def finalize(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        def _is_empty(v: Any) -> bool:
            return v is None or (isinstance(v, list | dict | str) and not v)

        if self._finalized:
            raise UsageError("response template parser already finalized")
        events: list[dict[str, Any]] = []
        self._process(events, eos=True)
        missing = [n for n, f in self._spec.fields.items() if not f.optional and n not in self._output]
        if missing:
            raise ParseError(f"Required response_template fields missing from parsed output: {missing}")
        defaults = self._spec.defaults
        self._output = {k: v for k, v in self._output.items() if k in defaults or not _is_empty(v)}
        self._finalized = True
        return self._output, events

    def _process(self, events: list[dict[str, Any]], eos: bool) -> None:
        while True:
            watch = self._watchlist()
            best, hold_start = self._scan(watch, eos)
            if best is not None:
                kind, field, m = best
                if m.start() > self._pos:
                    self._accumulate(events, self._buffer[self._pos : m.start()])
                self._pos = m.end()
                if kind == "open":
                    self._close_current(events)
                    self._open_explicit(events, field, m)
                else:
                    had_content = self._opened
                    self._close_current(events)
                    if not had_content and m.start() == m.end():
                        break
                continue
            if eos:
                if self._pos < len(self._buffer):
                    self._accumulate(events, self._buffer[self._pos :])
                    self._pos = len(self._buffer)
                self._close_current(events)
                break
            if hold_start > self._pos:
                self._accumulate(events, self._buffer[self._pos : hold_start])
                self._pos = hold_start
            break

    def _watchlist(self) -> list[tuple[str, ResponseTemplateField]]:
        if self._current is not None and self._current != self._implicit_name:
            field = self._spec.fields[self._current]
            return [("close", field)] if field.close_re is not None else []
        watch: list[tuple[str, ResponseTemplateField]] = []
        for field in self._spec.fields.values():
            if field.open_re is not None:
                watch.append(("open", field))
        if self._implicit_name is not None:
            impl = self._spec.fields[self._implicit_name]
            if impl.close_re is not None:
                watch.append(("close", impl))
        return watch

    def _scan(
        self, watch: list[tuple[str, ResponseTemplateField]], eos: bool
    ) -> tuple[tuple[str, ResponseTemplateField, Any] | None, int]:
        best_key: tuple[Any, ...] | None = None
        best: tuple[str, ResponseTemplateField, Any] | None = None
        hold_start = len(self._buffer)
        for kind, field in watch:
            pattern = field.open_re if kind == "open" else field.close_re
            what = f"fields.{field.name}.{kind}"
            if eos:
                m = self._clock.run(what, pattern.search, self._buffer, self._pos)
            else:
                m = self._clock.run(what, pattern.search, self._buffer, self._pos, partial=True)
            if m is None:
                continue
            if not eos and not m.partial and m.start() > self._pos:
                hidden = self._hidden_partial(pattern, what, m.start())
                if hidden is not None:
                    hold_start = min(hold_start, hidden)
                    continue
            if not eos and (m.partial or self._can_grow(kind, field, m)):
                hold_start = min(hold_start, m.start())
                continue
            key = (m.start(), -(m.end() - m.start()), 0 if kind == "open" else 1, field.name)
            if best_key is None or key < best_key:
                best_key, best = key, (kind, field, m)
        if best is not None and best[2].start() >= hold_start:
            best = None
        return best, hold_start

    def _hidden_partial(self, pattern: Any, what: str, end: int) -> int | None:
        """Where a match the text ends partway through starts, before ``end`` (a complete match's start).

        ``regex`` reports a complete match found later in the text rather than such a partial one
        (``abcd|c`` on ``xabc`` gives ``c``), so the partial one is looked for in the text before the complete
        match, and confirmed on the whole text (turnkit's addition: transformers takes the later match, and its
        result then depends on where the chunks end).
        """
        start = self._pos
        while start < end:
            m = self._clock.run(what, pattern.search, self._buffer, start, end, partial=True)
            if m is None or not m.partial:
                return None
            whole = self._clock.run(what, pattern.match, self._buffer, m.start(), partial=True)
            if whole is not None and whole.partial:
                return int(m.start())
            start = m.start() + 1
        return None

    def _can_grow(self, kind: str, field: ResponseTemplateField, m: Any) -> bool:
        if m.end() != len(self._buffer):
            return False
        if m.start() == m.end():
            return True
        literals, can_extend = (
            (field.open_literals, field.open_literal_can_extend)
            if kind == "open"
            else (field.close_literals, field.close_literal_can_extend)
        )
        return literals is None or can_extend

    def _accumulate(self, events: list[dict[str, Any]], text: str) -> None:
        if not text or self._current is None:
            return
        field = self._spec.fields[self._current]
        if not self._opened:
            events.append({"type": "region_open", "field": self._current})
            self._opened = True
        self._body.append(text)
        dirty = field.content not in STREAMABLE_PARSERS
        events.append({"type": "region_chunk", "field": self._current, "text": text, "dirty": dirty})

    def _open_explicit(self, events: list[dict[str, Any]], field: ResponseTemplateField, m: Any) -> None:
        self._current = field.name
        self._captures = {k: v for k, v in m.groupdict().items() if v is not None}
        self._body = []
        self._opened = True
        events.append({"type": "region_open", "field": field.name})

    def _close_current(self, events: list[dict[str, Any]]) -> None:
        if self._current is None or not self._opened:
            self._reset_to_implicit()
            return
        field = self._spec.fields[self._current]
        value = process_field("".join(self._body), field, self._captures, self._clock)
        if self._tool_params:
            value = self._coerce_tool_calls(value)
        if field.join is not None:
            if not isinstance(value, str):
                raise ParseError(
                    f"Field '{field.name}': 'join' requires each match to parse to a string, "
                    f"got {type(value).__name__}."
                )
            previous = self._output.get(self._current)
            self._output[self._current] = value if previous is None else previous + field.join + value
        elif field.repeats:
            self._output.setdefault(self._current, []).append(value)
        else:
            self._output[self._current] = value
        events.append({"type": "region_close", "field": self._current, "value": value})
        self._reset_to_implicit()

    def _coerce_tool_calls(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._coerce_tool_calls(item) for item in value]
        fn = value.get("function") if isinstance(value, dict) else None
        if not isinstance(fn, dict):
            return value
        name, arguments = fn.get("name"), fn.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return value
        if properties := self._tool_params.get(name):
            for key, argument in arguments.items():
                if key not in properties or not (types := _schema_types(properties[key])):
                    continue
                if isinstance(argument, str):
                    arguments[key] = _coerce(argument, types)
                elif isinstance(argument, list) and "array" not in types:
                    arguments[key] = [_coerce(item, types) if isinstance(item, str) else item for item in argument]
        return value

    def _reset_to_implicit(self) -> None:
        self._current = self._implicit_name
        self._captures = {}
        self._body = []
        self._opened = False
