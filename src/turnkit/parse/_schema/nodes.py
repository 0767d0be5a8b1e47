"""The x-regex response schema: turn raw model output into a message dict.

Semantics are those of transformers 5.12.1's ``recursive_parse`` (the last release that shipped it):
each schema node takes its input from its parent, applies ``x-regex-substitutions``, ``x-regex``,
``x-regex-iterator``, ``x-regex-key-value`` and ``x-parser`` in that order, then hands the result to
its children by ``type``. A schema is compiled once into a tree of nodes (:class:`ResponseSchema`);
defects of the schema are recorded at compile time and raised as :class:`ResponseSchemaError`
exactly where transformers would fail (when the node is reached with input), or up front with
``strict=True``. Every regex keeps ``re`` semantics and is time-bounded: plain ``re`` when its
worst case on the input provably fits the budget, else the ``regex`` module with a timeout.
"""

from __future__ import annotations

import copy
import json
import marshal
import re
import time
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import jmespath
import regex

from turnkit._json import pointer_join
from turnkit.errors import (
    LimitExceededError,
    ParseError,
    RegexTimeoutError,
    ResponseSchemaError,
    TurnkitError,
    snippet_around,
)
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.parse._schema.regex import Template, TimedPattern, validate_with_re

__all__ = ["ResponseSchema", "parse_response"]

_HAS_REGEX_KEYS = ("x-regex", "x-regex-iterator", "x-regex-key-value", "x-regex-substitutions")
_SCALAR_TYPES = ("string", "integer", "number", "boolean")
_IMMUTABLE = (str, int, float, bool, type(None))
_GEMMA_REPLACE_BUDGET = 200_000_000
_JSON_DECODE = json.JSONDecoder().decode


def _json_loads(text: str) -> Any:
    """``json.loads`` on a ``str`` without its keyword handling (same checks, same decoder settings)."""
    if text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _JSON_DECODE(text)


class _Problem:
    """A schema defect found at compile time, raised when (and only when) the node needs it."""

    __slots__ = ("message", "pointer")

    def __init__(self, message: str, pointer: str) -> None:
        self.message = message
        self.pointer = pointer

    def error(self) -> ResponseSchemaError:
        return ResponseSchemaError(self.message, pointer=self.pointer)



def _preview(content: Any) -> str:
    text = content if isinstance(content, str) else repr(content)
    return snippet_around(text, 0)


class _Run:
    """Per-call state: the time budget shared by every regex of one parse."""

    __slots__ = ("deadline", "regex_timeout")

    def __init__(self, limits: Limits) -> None:
        self.regex_timeout = limits.regex_timeout_s
        self.deadline = time.monotonic() + limits.parse_timeout_s

    def timeout(self, pointer: str) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise RegexTimeoutError("response parse ran past its time budget", pointer=pointer)
        return min(self.regex_timeout, left)


class _Regex:
    """A schema regex plus how a match becomes node content (transformers' ``_parse_re_match``)."""

    __slots__ = (
        "pattern",
        "named",
        "group_problem",
        "pointer",
        "untimed_len",
        "budget_s",
        "_re_search",
        "_re_finditer",
    )

    def __init__(self, source: str, pointer: str, limits: Limits) -> None:
        self.pointer = pointer
        self.pattern = TimedPattern(source)
        # Inputs up to this length cannot outlive the budget even in the worst case: no timer needed.
        self.budget_s = limits.regex_timeout_s
        self.untimed_len = self.pattern.untimed_limit(limits.regex_timeout_s)
        self._re_search = self.pattern.checked.search
        self._re_finditer = self.pattern.checked.finditer
        # Named groups in re's definition order (groupdict order), by index.
        self.named = tuple(sorted(self.pattern.groupindex.items(), key=lambda item: item[1]))
        self.group_problem: str | None = None
        if not self.named:
            if self.pattern.groups > 1:
                self.group_problem = "regex has multiple unnamed groups; use exactly one group or named groups"
            elif self.pattern.groups == 0:
                self.group_problem = "regex has no capture group; use exactly one group or named groups"

    def untimed(self, text: str) -> bool:
        """Whether the worst case on ``text`` provably fits the budget, so plain ``re`` may run it."""
        return len(text) <= self.untimed_len or self.pattern.text_fits(text, self.budget_s)

    def content(self, match: Any) -> str | dict[str, str]:
        if self.named:
            out = {}
            for name, index in self.named:
                value = match.group(index)
                if value is not None:
                    out[name] = value
            return out
        if self.group_problem is not None:
            raise ResponseSchemaError(self.group_problem, pointer=self.pointer)
        single: str = match.group(1)
        return single

    def _timeout_error(self, exc: BaseException) -> RegexTimeoutError:
        return RegexTimeoutError(
            f"regex {self.pattern.source[:60]!r} ran past its time budget on the model output",
            pointer=self.pointer,
        )

    def search(self, text: str, run: _Run) -> Any:
        if len(text) <= self.untimed_len or self.pattern.text_fits(text, self.budget_s):
            return self._re_search(text)
        try:
            return self.pattern.search(text, run.timeout(self.pointer))
        except TimeoutError as exc:
            raise self._timeout_error(exc) from exc

    def finditer(self, text: str, run: _Run) -> list[Any]:
        if len(text) <= self.untimed_len or self.pattern.text_fits(text, self.budget_s):
            return list(self._re_finditer(text))
        try:
            return list(self.pattern.finditer(text, run.timeout(self.pointer)))
        except TimeoutError as exc:
            raise self._timeout_error(exc) from exc


def _compile_regex(value: Any, pointer: str, limits: Limits) -> _Regex | _Problem | None:
    if value is None:
        return None
    if not isinstance(value, str):
        return _Problem(f"regex must be a string, got {type(value).__name__}", pointer)
    try:
        return _Regex(value, pointer, limits)
    except (re.error, regex.error, RecursionError, OverflowError, ValueError) as exc:
        return _Problem(f"invalid regex {value[:60]!r}: {exc}", pointer)


class _Substitution:
    __slots__ = ("regex", "template", "replacement")

    def __init__(self, regex_: _Regex, template: Template, replacement: str) -> None:
        self.regex = regex_
        self.template = template
        self.replacement = replacement

    def apply(self, text: str, run: _Run) -> str:
        pattern = self.regex.pattern
        if self.regex.untimed(text):
            return pattern.sub(self.template.expand, text, 0.0, untimed=True, re_repl=self.replacement)
        try:
            return pattern.sub(self.template.expand, text, run.timeout(self.regex.pointer))
        except TimeoutError as exc:
            raise self.regex._timeout_error(exc) from exc


def _compile_substitution(entry: Any, pointer: str, limits: Limits) -> _Substitution | _Problem:
    try:
        source, replacement = entry[0], entry[1]
    except (TypeError, IndexError, KeyError) as exc:
        return _Problem(f"substitution must be a [pattern, replacement] pair: {exc}", pointer)
    if not isinstance(source, str) or not isinstance(replacement, str):
        return _Problem("substitution pattern and replacement must be strings", pointer)
    compiled = _compile_regex(source, pointer, limits)
    if not isinstance(compiled, _Regex):
        assert isinstance(compiled, _Problem)
        return compiled
    try:
        checked = validate_with_re(source, re.DOTALL)
        template = Template(replacement, compiled.pattern, checked)
    except (re.error, IndexError, ValueError) as exc:
        return _Problem(f"invalid replacement {replacement[:60]!r}: {exc}", pointer)
    return _Substitution(compiled, template, replacement)


class _Member:
    """``key in node`` then ``node[key]`` exactly as transformers evaluates them on any schema value."""

    __slots__ = ("present", "value", "problem", "immutable")

    def __init__(self, raw: Any, key: str, pointer: str) -> None:
        self.present = False
        self.value: Any = None
        self.problem: _Problem | None = None
        self.immutable = True
        if isinstance(raw, dict):
            if key in raw:
                self.present = True
                self.value = raw[key]
                self.immutable = isinstance(self.value, _IMMUTABLE)
        elif isinstance(raw, str | list | tuple):
            if key in raw:
                self.present = True
                self.problem = _Problem(f"schema node must be an object, got {type(raw).__name__}", pointer)
        else:
            self.present = True
            self.problem = _Problem(f"schema node must be an object, got {type(raw).__name__}", pointer)

    def get(self) -> Any:
        if self.problem is not None:
            raise self.problem.error()
        return self.value if self.immutable else copy.deepcopy(self.value)


class _Property:
    __slots__ = ("key", "node", "const", "default", "const_present", "default_present")

    def __init__(self, key: Any, node: _Node) -> None:
        self.key = key
        self.node = node
        self.const = node.const
        self.default = _Member(node.raw, "default", node.pointer)
        self.const_present = self.const.present
        self.default_present = self.default.present


@cache
def _gemma_patterns() -> tuple[TimedPattern, TimedPattern, TimedPattern]:
    return (
        TimedPattern(r'<\|"\|>(.*?)<\|"\|>'),
        TimedPattern(r"(?<=[{,])(\w+):", 0),
        TimedPattern("\x00([0-9]+)\x00"),
    )


def _gemma4_json_to_json(text: str, run: _Run, pointer: str) -> str:
    """Gemma 4 tool-call syntax (bare keys, ``<|"|>`` quotes) to JSON, as transformers does it."""
    quoted, bare_key, placeholder = _gemma_patterns()
    strings: list[str] = []

    def capture(match: Any) -> str:
        strings.append(match.group(1))
        return f"\x00{len(strings) - 1}\x00"

    had_nul = "\x00" in text

    def sub(pattern: TimedPattern, repl: Callable[[Any], str], text: str) -> str:
        untimed = pattern.untimed_ok(text, run.regex_timeout)
        return pattern.sub(repl, text, 0.0 if untimed else run.timeout(pointer), untimed=untimed)

    try:
        text = sub(quoted, capture, text)
        text = sub(bare_key, lambda m: f'"{m.group(1)}":', text)
        if not had_nul:
            # Every "\0<i>\0" in the text is one of ours: one pass gives what the sequential loop gives.
            return sub(placeholder, lambda m: json.dumps(strings[int(m.group(1))]), text)
    except TimeoutError as exc:
        raise RegexTimeoutError("gemma4 tool-call conversion ran past its time budget", pointer=pointer) from exc
    if len(strings) * len(text) > _GEMMA_REPLACE_BUDGET:
        raise LimitExceededError("gemma4 tool-call text with NUL characters is too large to convert", pointer=pointer)
    for i, s in enumerate(strings):
        text = text.replace(f"\x00{i}\x00", json.dumps(s))
    return text


class _Node:
    """One compiled schema node; :meth:`parse` is transformers' ``recursive_parse`` for it."""

    def __init__(self, raw: Any, pointer: str, depth: int, limits: Limits, problems: list[_Problem]) -> None:
        if depth > limits.max_schema_depth:
            raise ResponseSchemaError(f"schema is nested deeper than {limits.max_schema_depth} levels", pointer=pointer)
        self.raw = raw
        self.pointer = pointer
        self.const = _Member(raw, "const", pointer)
        self.const_present = self.const.present
        self.is_dict = isinstance(raw, dict)
        # A node with no per-node step (regex, substitution, parser) goes straight to its type's step.
        self.plain = False
        self.regex_only = False
        self.typed: Callable[[Any, _Run], Any] = self._by_type
        self.not_object: _Problem | None = None
        if not self.is_dict:
            self.not_object = _Problem(f"schema node must be an object, got {type(raw).__name__}", pointer)
            problems.append(self.not_object)
            return
        here = pointer

        def problem(message: str, at: str = here) -> _Problem:
            found = _Problem(message, at)
            problems.append(found)
            return found

        def sub_regex(key: str) -> _Regex | _Problem | None:
            compiled = _compile_regex(raw.get(key), pointer_join(here, key), limits)
            if isinstance(compiled, _Problem):
                problems.append(compiled)
            return compiled

        self.type = raw.get("type")
        self.has_regex = any(key in raw for key in _HAS_REGEX_KEYS)

        # x-regex-substitutions
        self.subs: list[_Substitution | _Problem] = []
        self.subs_problem: _Problem | None = None
        subs_raw = raw.get("x-regex-substitutions", [])
        try:
            entries = list(subs_raw)
        except TypeError:
            entries = []
            self.subs_problem = problem(
                "x-regex-substitutions must be a list", pointer_join(here, "x-regex-substitutions")
            )
        for index, entry in enumerate(entries):
            compiled_sub = _compile_substitution(entry, pointer_join(here, "x-regex-substitutions", index), limits)
            if isinstance(compiled_sub, _Problem):
                problems.append(compiled_sub)
            self.subs.append(compiled_sub)

        self.regex = sub_regex("x-regex")
        self.iterator = sub_regex("x-regex-iterator")
        if self.iterator is not None and self.type != "array":
            self.iterator = problem(
                f"x-regex-iterator needs type 'array', not {self.type!r}", pointer_join(here, "x-regex-iterator")
            )
        self.key_value = sub_regex("x-regex-key-value")
        if self.key_value is not None and self.type != "object":
            self.key_value = problem(
                f"x-regex-key-value needs type 'object', not {self.type!r}", pointer_join(here, "x-regex-key-value")
            )
        self.kv_problem: str | None = None
        if isinstance(self.key_value, _Regex):
            names = {name for name, _ in self.key_value.named}
            if not {"key", "value"} <= names:
                self.kv_problem = "x-regex-key-value regex must have named groups 'key' and 'value'"
                problems.append(_Problem(self.kv_problem, self.key_value.pointer))
        # A node whose own regex already produced structure cannot feed a string-only step.
        self.structured_by_regex = isinstance(self.regex, _Regex) and bool(self.regex.named)

        # x-parser
        self.has_parser = "x-parser" in raw
        self.parser_pointer = pointer_join(here, "x-parser")
        self.parser: str | _Problem | None = None
        self.transform: Any = None
        self.allow_non_json: Any = False
        if self.has_parser:
            parser = raw["x-parser"]
            parser_pointer = pointer_join(here, "x-parser")
            if parser not in ("json", "gemma4-tool-call"):
                self.parser = problem(
                    f"unknown x-parser {parser!r} (known: 'json', 'gemma4-tool-call')", parser_pointer
                )
            else:
                self.parser = parser
                args = raw.get("x-parser-args", {})
                args_pointer = pointer_join(here, "x-parser-args")
                if not isinstance(args, dict):
                    self.parser = problem("x-parser-args must be an object", args_pointer)
                else:
                    self.allow_non_json = args.get("allow_non_json", False)
                    expression = args.get("transform")
                    if expression is not None:
                        try:
                            self.transform = jmespath.compile(expression)
                        except Exception as exc:  # jmespath raises several unrelated classes
                            self.transform = problem(
                                f"invalid JMESPath transform {expression!r}: {exc}",
                                pointer_join(args_pointer, "transform"),
                            )

        # children by type
        self.properties: list[_Property] = []
        self.properties_problem: _Problem | None = None
        self.property_keys: Any = {}
        self.has_properties = "properties" in raw
        props = raw.get("properties", {})
        if isinstance(props, dict):
            self.property_keys = props
            self.properties = [
                _Property(key, _Node(child, pointer_join(here, "properties", key), depth + 1, limits, problems))
                for key, child in props.items()
            ]
        elif self.type == "object":
            self.properties_problem = problem("properties must be an object", pointer_join(here, "properties"))
        additional = raw.get("additionalProperties", True)
        self.additional: _Node | None = None
        if additional is not False and self.type == "object":
            self.additional = _Node(
                additional if isinstance(additional, dict) else {},
                pointer_join(here, "additionalProperties"),
                depth + 1,
                limits,
                problems,
            )
        self.required: tuple[Any, ...] | _Problem = ()
        required = raw.get("required", [])
        try:
            self.required = tuple(required)
            for key in self.required:
                hash(key)
        except TypeError:
            message = "required must be a list of property names"
            at = pointer_join(here, "required")
            # Only object nodes read "required"; elsewhere it is inert (as in transformers).
            self.required = problem(message, at) if self.type == "object" else _Problem(message, at)
        self.has_items = "items" in raw
        self.items: _Node | None = None
        if self.has_items:
            self.items = _Node(raw["items"], pointer_join(here, "items"), depth + 1, limits, problems)
        self.has_prefix = "prefixItems" in raw
        self.prefix: list[_Node] | _Problem = []
        if self.has_prefix:
            prefix = raw["prefixItems"]
            if isinstance(prefix, list):
                self.prefix = [
                    _Node(child, pointer_join(here, "prefixItems", index), depth + 1, limits, problems)
                    for index, child in enumerate(prefix)
                ]
            elif self.type == "array":
                self.prefix = problem("prefixItems must be a list", pointer_join(here, "prefixItems"))
        self.type_problem: _Problem | None = None
        if not (self.type in ("object", "array", "any", None) or self.type in _SCALAR_TYPES):
            self.type_problem = problem(f"unsupported schema type {self.type!r}", pointer_join(here, "type"))
        if self.type == "array" and not self.has_items and not self.has_prefix:
            self.type_problem = problem("array node has no items or prefixItems schema")
        if self.type == "object":
            self.typed = self._object
        elif self.type == "array":
            self.typed = self._array
        elif self.type == "string":
            self.typed = self._string
        self.plain = not self.has_regex and not self.has_parser and not self.subs and self.subs_problem is None
        # Only an x-regex (the common leaf): search, then the type's step.
        self.regex_only = (
            isinstance(self.regex, _Regex)
            and self.iterator is None
            and self.key_value is None
            and not self.has_parser
            and not self.subs
            and self.subs_problem is None
        )

    # -- errors -----------------------------------------------------------------------------------

    def _not_a_string(self, step: str, content: Any) -> TurnkitError:
        if isinstance(content, dict) and self.structured_by_regex:
            return ResponseSchemaError(
                f"{step} got the named groups of x-regex; x-regex must have one group here",
                pointer=pointer_join(self.pointer, step),
            )
        return ParseError(
            f"{step} needs a string, got {type(content).__name__} (an optional x-regex group did not match?)",
            pointer=pointer_join(self.pointer, step),
            snippet=_preview(content),
        )

    def _bad_output(self, message: str, content: Any) -> ParseError:
        return ParseError(message, pointer=self.pointer, snippet=_preview(content))

    # -- the recursion ----------------------------------------------------------------------------

    def parse(self, content: Any, run: _Run) -> Any:
        if self.const_present:
            return self.const.get()
        if content is None:
            return None
        if self.plain:
            return self.typed(content, run)
        if self.regex_only:
            if not isinstance(content, str):
                raise self._bad_output(
                    f"expected a string for this node's regex, got {type(content).__name__}", content
                )
            regex_ = self.regex
            assert isinstance(regex_, _Regex)
            match = regex_.search(content, run)
            if match is None:
                return None
            return self.typed(regex_.content(match), run)
        if self.not_object is not None:
            raise self.not_object.error()
        if self.has_regex and not isinstance(content, str):
            raise self._bad_output(f"expected a string for this node's regex, got {type(content).__name__}", content)
        if self.subs_problem is not None:
            raise self.subs_problem.error()
        for sub in self.subs:
            if isinstance(sub, _Problem):
                raise sub.error()
            content = sub.apply(content, run)
        if self.regex is not None:
            if isinstance(self.regex, _Problem):
                raise self.regex.error()
            match = self.regex.search(content, run)
            if match is None:
                return None
            content = self.regex.content(match)
        if self.iterator is not None:
            if isinstance(self.iterator, _Problem):
                raise self.iterator.error()
            if not isinstance(content, str):
                raise self._not_a_string("x-regex-iterator", content)
            iterator = self.iterator
            content = [iterator.content(m) for m in iterator.finditer(content, run)]
            if not content:
                return None
        if self.key_value is not None:
            content = self._key_value(content, run)
            if not content:
                return None
        if self.has_parser:
            content = self._apply_parser(content, run)
        return self.typed(content, run)

    def _key_value(self, content: Any, run: _Run) -> dict[str, str]:
        kv = self.key_value
        if isinstance(kv, _Problem):
            raise kv.error()
        assert kv is not None
        if not isinstance(content, str):
            raise self._not_a_string("x-regex-key-value", content)
        out: dict[str, str] = {}
        for match in kv.finditer(content, run):
            groups = kv.content(match)
            if self.kv_problem is not None:
                raise ResponseSchemaError(self.kv_problem, pointer=kv.pointer)
            assert isinstance(groups, dict)
            if "key" not in groups or "value" not in groups:
                raise ParseError(
                    "x-regex-key-value matched without a 'key' or 'value' group",
                    pointer=kv.pointer,
                    snippet=_preview(match.group(0)),
                )
            out[groups["key"]] = groups["value"]
        return out

    def _apply_parser(self, content: Any, run: _Run) -> Any:
        parser = self.parser
        if isinstance(parser, _Problem):
            raise parser.error()
        pointer = self.parser_pointer
        if not isinstance(content, str):
            if self.structured_by_regex or self.iterator is not None or self.key_value is not None:
                raise ResponseSchemaError(
                    "x-parser needs a string, but this node's regex already produced structure", pointer=pointer
                )
            raise self._bad_output(f"x-parser {parser!r} needs a string, got {type(content).__name__}", content)
        if parser == "gemma4-tool-call":
            content = _gemma4_json_to_json(content, run, pointer)
        try:
            parsed: Any = _json_loads(content)
        except json.JSONDecodeError as exc:
            if not self.allow_non_json:
                raise ParseError(
                    f"x-parser json could not parse the content as JSON ({exc.msg}); "
                    "set x-parser-args.allow_non_json for content that may be plain text",
                    pointer=pointer,
                    position=exc.pos,
                    snippet=snippet_around(content, exc.pos),
                ) from exc
            parsed = content
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"x-parser json failed: {exc}", pointer=pointer, snippet=_preview(content)) from exc
        transform = self.transform
        if transform is not None:
            if isinstance(transform, _Problem):
                raise transform.error()
            try:
                parsed = transform.search(parsed)
            except RecursionError as exc:
                raise ParseError("JMESPath transform nested too deeply", pointer=pointer) from exc
            except Exception as exc:  # jmespath's runtime errors (type errors of functions, ...)
                raise ParseError(f"JMESPath transform failed: {exc}", pointer=pointer) from exc
        return parsed

    def _by_type(self, content: Any, run: _Run) -> Any:
        node_type = self.type
        if node_type == "object":
            return self._object(content, run)
        if node_type == "array":
            return self._array(content, run)
        if node_type == "string":
            return self._string(content, run)
        if node_type == "integer":
            if isinstance(content, int):
                return content
            if not isinstance(content, str):
                raise self._bad_output(f"expected a string or integer, got {type(content).__name__}", content)
            try:
                return int(content)
            except ValueError as exc:
                raise self._bad_output("content is not a valid integer", content) from exc
        if node_type == "number":
            try:
                if isinstance(content, int | float):
                    return float(content)
                if not isinstance(content, str):
                    raise self._bad_output(f"expected a string or number, got {type(content).__name__}", content)
                return float(content)
            except (ValueError, OverflowError) as exc:
                raise self._bad_output("content is not a valid number", content) from exc
        if node_type == "boolean":
            if isinstance(content, bool):
                return content
            if not isinstance(content, str):
                raise self._bad_output(f"expected a string or boolean, got {type(content).__name__}", content)
            lowered = content.lower()
            if lowered in ("true", "1"):
                return True
            if lowered in ("false", "0"):
                return False
            raise self._bad_output("content is not a valid boolean", content)
        if node_type is None or node_type == "any":
            return content
        assert self.type_problem is not None
        raise self.type_problem.error()

    def _string(self, content: Any, run: _Run) -> str:
        if not isinstance(content, str):
            raise self._bad_output(f"expected a string, got {type(content).__name__}", content)
        return content

    def _object(self, content: Any, run: _Run) -> dict[Any, Any]:
        parsed: dict[Any, Any] = {}
        properties = self.properties
        if isinstance(content, str):
            if not self.has_properties:
                raise self._bad_output("object node got a string but has no properties, regex or parser", content)
            if self.properties_problem is not None:
                raise self.properties_problem.error()
            for prop in properties:
                value = prop.node.parse(content, run)
                if value is not None:
                    parsed[prop.key] = value
        elif isinstance(content, dict):
            if self.properties_problem is not None:
                raise self.properties_problem.error()
            for prop in properties:
                if prop.const_present:
                    parsed[prop.key] = prop.const.get()
                elif prop.key in content:
                    parsed[prop.key] = prop.node.parse(content[prop.key], run)
                elif prop.default_present:
                    parsed[prop.key] = prop.default.get()
            additional = self.additional
            if additional is not None:
                keys = self.property_keys
                for key, value in content.items():
                    if key not in keys:
                        parsed[key] = additional.parse(value, run)
        else:
            raise self._bad_output(f"expected a string or object, got {type(content).__name__}", content)
        required = self.required
        if not required:
            return parsed
        if isinstance(required, _Problem):
            raise required.error()
        missing = [key for key in required if key not in parsed]
        if missing:
            raise self._bad_output(f"required properties {missing} are missing from the parsed output", content)
        return parsed

    def _array(self, content: Any, run: _Run) -> list[Any]:
        if not content:
            return []
        if self.has_items:
            if not isinstance(content, list):
                raise self._bad_output(
                    f"array node got unstructured input ({type(content).__name__}); "
                    "use x-regex-iterator or x-parser to produce a list",
                    content,
                )
            items = self.items
            assert items is not None
            return [items.parse(item, run) for item in content]
        if self.has_prefix:
            prefix = self.prefix
            if isinstance(prefix, _Problem):
                raise prefix.error()
            if not isinstance(content, list):
                if len(prefix) != 1:
                    raise self._bad_output(f"array node got unstructured input ({type(content).__name__})", content)
                content = [content]
            if len(content) != len(prefix):
                raise self._bad_output(
                    f"array has {len(content)} items but the schema has {len(prefix)} prefixItems", content
                )
            return [node.parse(item, run) for item, node in zip(content, prefix, strict=True)]
        assert self.type_problem is not None
        raise self.type_problem.error()


class ResponseSchema:
    """A response schema compiled once; :meth:`parse` turns model output into a message dict.

    >>> schema = ResponseSchema({"type": "object", "properties": {
    ...     "role": {"const": "assistant"},
    ...     "content": {"type": "string", "x-regex": r"<answer>(.*?)</answer>"}}})
    >>> schema.parse("<answer>42</answer>")
    {'role': 'assistant', 'content': '42'}
    """

    __slots__ = ("schema", "limits", "problems", "_root")

    def __init__(self, schema: Mapping[str, Any], *, limits: Limits = DEFAULT_LIMITS, strict: bool = False) -> None:
        problems: list[_Problem] = []
        try:
            self._root = _Node(schema, "", 0, limits, problems)
        except RecursionError as exc:
            raise ResponseSchemaError("schema is nested too deeply", pointer="") from exc
        self.schema = schema
        self.limits = limits
        self.problems: tuple[ResponseSchemaError, ...] = tuple(p.error() for p in problems)
        """Defects found at compile time; each is raised only when parsing reaches its node."""
        if strict and self.problems:
            raise self.problems[0]

    def parse(self, text: str) -> Any:
        """Parse one model output; returns a dict for object schemas, ``None`` when nothing matched."""
        if not isinstance(text, str):
            raise TypeError(f"parse_response needs the decoded output text (str), got {type(text).__name__}")
        if len(text) > self.limits.max_input_chars:
            raise LimitExceededError(
                f"model output of {len(text)} characters exceeds max_input_chars={self.limits.max_input_chars}"
            )
        run = _Run(self.limits)
        try:
            return self._root.parse(text, run)
        except RecursionError as exc:
            raise ParseError("parsed content nested too deeply") from exc


_CACHE: dict[Any, ResponseSchema] = {}
_DEFAULT_CACHE: dict[Any, ResponseSchema] = {}
# The same dict object again (the usual hot loop): id -> (that object, its compiled schema). Reused while
# the object still equals the private copy the schema was compiled from (a C-level deep ``==``, about a
# third of the cost of re-serializing it), so in-place edits are noticed.
_BY_ID: dict[int, tuple[Any, ResponseSchema]] = {}
_CACHE_SIZE = 64


def _cache_key(schema: Any) -> bytes | None:
    """The schema's exact content (order, types) as bytes; ``None`` when it holds non-JSON-like values."""
    try:
        return marshal.dumps(schema)
    except (ValueError, RecursionError):
        return None


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    if len(cache) >= _CACHE_SIZE:
        try:
            cache.pop(next(iter(cache)))
        except (KeyError, RuntimeError, StopIteration):
            pass  # another thread evicted first
    cache[key] = value


def _same_schema(compiled: ResponseSchema, schema: Any) -> bool:
    try:
        return bool(compiled.schema == schema)
    except (RecursionError, TypeError, ValueError):
        return False


def parse_response(text: str, schema: Mapping[str, Any] | ResponseSchema, *, limits: Limits | None = None) -> Any:
    """Parse raw model output with an x-regex response schema (transformers 5.12 semantics).

    ``schema`` is a schema dict (compiled once and cached by its content) or a
    :class:`ResponseSchema`. Returns the parsed message (``None`` if the root regex did not match).
    Raises :class:`ParseError` for output the schema cannot parse, :class:`ResponseSchemaError` for
    a defective schema and :class:`RegexTimeoutError` when a regex exceeds its time budget; each
    names the schema node as a JSON pointer.
    """
    default = limits is None or limits is DEFAULT_LIMITS
    if default:
        known = _BY_ID.get(id(schema))
        if known is not None and known[0] is schema and _same_schema(known[1], schema):
            return known[1].parse(text)
    if isinstance(schema, ResponseSchema):
        if limits is not None and limits != schema.limits:
            schema = ResponseSchema(schema.schema, limits=limits)
        return schema.parse(text)
    limits = DEFAULT_LIMITS if limits is None else limits
    key = _cache_key(schema)
    if key is None:
        return ResponseSchema(schema, limits=limits).parse(text)
    # The default limits get their own table: hashing a Limits on every call costs more than the lookup.
    cache: dict[Any, ResponseSchema] = _DEFAULT_CACHE if default else _CACHE
    cache_key: Any = key if default else (key, limits)
    compiled = cache.get(cache_key)
    if compiled is None:
        # Compiled from a private copy, so later edits of the caller's dict cannot reach a cached schema.
        compiled = ResponseSchema(copy.deepcopy(schema), limits=limits)
        _remember(cache, cache_key, compiled)
    if default:
        _remember(_BY_ID, id(schema), (schema, compiled))
    return compiled.parse(text)
