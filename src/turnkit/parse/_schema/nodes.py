"""The compiled x-regex schema tree and its interpreter (transformers 5.12.1's ``recursive_parse``).

A :class:`Node` is plain data, built once by :func:`turnkit.parse._schema.compiler.compile_node`;
:func:`parse_node` walks it with one model output. Each node takes its input from its parent, applies
``x-regex-substitutions``, ``x-regex``, ``x-regex-iterator``, ``x-regex-key-value`` and ``x-parser``
in that order, then hands the result to its children by ``type``. Schema defects recorded at compile
time (:class:`Problem`) are raised here, exactly where transformers would fail: when the node is
reached with input.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from turnkit._json import json_loads, pointer_join
from turnkit.errors import (
    LimitExceededError,
    ParseError,
    RegexTimeoutError,
    ResponseSchemaError,
    TurnkitError,
    snippet_around,
)
from turnkit.limits import Limits
from turnkit.parse._schema.regex import Template, TimedPattern

__all__ = [
    "Member",
    "Node",
    "Problem",
    "Property",
    "Run",
    "SchemaRegex",
    "Substitution",
    "by_type",
    "parse_array",
    "parse_node",
    "parse_object",
    "parse_root",
    "parse_string",
]

_IMMUTABLE = (str, int, float, bool, type(None))
_GEMMA_REPLACE_BUDGET = 200_000_000


class Problem:
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


class Run:
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


class SchemaRegex:
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

    def search(self, text: str, run: Run) -> Any:
        if len(text) <= self.untimed_len or self.pattern.text_fits(text, self.budget_s):
            return self._re_search(text)
        try:
            return self.pattern.search(text, run.timeout(self.pointer))
        except TimeoutError as exc:
            raise self._timeout_error(exc) from exc

    def finditer(self, text: str, run: Run) -> list[Any]:
        if len(text) <= self.untimed_len or self.pattern.text_fits(text, self.budget_s):
            return list(self._re_finditer(text))
        try:
            return list(self.pattern.finditer(text, run.timeout(self.pointer)))
        except TimeoutError as exc:
            raise self._timeout_error(exc) from exc


class Substitution:
    __slots__ = ("regex", "template", "replacement")

    def __init__(self, regex_: SchemaRegex, template: Template, replacement: str) -> None:
        self.regex = regex_
        self.template = template
        self.replacement = replacement

    def apply(self, text: str, run: Run) -> str:
        pattern = self.regex.pattern
        if self.regex.untimed(text):
            return pattern.sub(self.template.expand, text, 0.0, untimed=True, re_repl=self.replacement)
        try:
            return pattern.sub(self.template.expand, text, run.timeout(self.regex.pointer))
        except TimeoutError as exc:
            raise self.regex._timeout_error(exc) from exc


class Member:
    """``key in node`` then ``node[key]`` exactly as transformers evaluates them on any schema value."""

    __slots__ = ("present", "value", "problem", "immutable")

    def __init__(self, raw: Any, key: str, pointer: str) -> None:
        self.present = False
        self.value: Any = None
        self.problem: Problem | None = None
        self.immutable = True
        if isinstance(raw, dict):
            if key in raw:
                self.present = True
                self.value = raw[key]
                self.immutable = isinstance(self.value, _IMMUTABLE)
        elif isinstance(raw, str | list | tuple):
            if key in raw:
                self.present = True
                self.problem = Problem(f"schema node must be an object, got {type(raw).__name__}", pointer)
        else:
            self.present = True
            self.problem = Problem(f"schema node must be an object, got {type(raw).__name__}", pointer)

    def get(self) -> Any:
        if self.problem is not None:
            raise self.problem.error()
        return self.value if self.immutable else copy.deepcopy(self.value)


class Property:
    __slots__ = ("key", "node", "const", "default", "const_present", "default_present")

    def __init__(self, key: Any, node: Node) -> None:
        self.key = key
        self.node = node
        self.const = node.const
        self.default = Member(node.raw, "default", node.pointer)
        self.const_present = self.const.present
        self.default_present = self.default.present


@cache
def _gemma_patterns() -> tuple[TimedPattern, TimedPattern, TimedPattern]:
    return (
        TimedPattern(r'<\|"\|>(.*?)<\|"\|>'),
        TimedPattern(r"(?<=[{,])(\w+):", 0),
        TimedPattern("\x00([0-9]+)\x00"),
    )


def _gemma4_json_to_json(text: str, run: Run, pointer: str) -> str:
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


@dataclass(slots=True, eq=False)
class Node:
    """One compiled schema node: what :func:`parse_node` needs, decided once at compile time.

    A node whose ``raw`` is not an object keeps only the first fields (and ``not_object``): the
    interpreter raises before it reads the rest.
    """

    raw: Any
    pointer: str
    const: Member
    const_present: bool
    # The type's step: by_type, or the object/array/string step chosen once for that type.
    typed: Callable[[Node, Any, Run], Any]
    # A node with no per-node step (regex, substitution, parser) goes straight to its type's step.
    plain: bool = False
    # Only an x-regex (the common leaf): search, then the type's step.
    regex_only: bool = False
    not_object: Problem | None = None
    type: Any = None
    has_regex: bool = False
    subs: list[Substitution | Problem] = field(default_factory=list)
    subs_problem: Problem | None = None
    regex: SchemaRegex | Problem | None = None
    iterator: SchemaRegex | Problem | None = None
    key_value: SchemaRegex | Problem | None = None
    kv_problem: str | None = None
    # The node's own regex already produced structure, so it cannot feed a string-only step.
    structured_by_regex: bool = False
    has_parser: bool = False
    parser_pointer: str = ""
    parser: str | Problem | None = None
    transform: Any = None
    allow_non_json: Any = False
    has_properties: bool = False
    properties: list[Property] = field(default_factory=list)
    properties_problem: Problem | None = None
    property_keys: Any = field(default_factory=dict)
    additional: Node | None = None
    required: tuple[Any, ...] | Problem = ()
    has_items: bool = False
    items: Node | None = None
    has_prefix: bool = False
    prefix: list[Node] | Problem = field(default_factory=list)
    type_problem: Problem | None = None


# -- errors ---------------------------------------------------------------------------------------


def _not_a_string(node: Node, step: str, content: Any) -> TurnkitError:
    if isinstance(content, dict) and node.structured_by_regex:
        return ResponseSchemaError(
            f"{step} got the named groups of x-regex; x-regex must have one group here",
            pointer=pointer_join(node.pointer, step),
        )
    return ParseError(
        f"{step} needs a string, got {type(content).__name__} (an optional x-regex group did not match?)",
        pointer=pointer_join(node.pointer, step),
        snippet=_preview(content),
    )


def _bad_output(node: Node, message: str, content: Any) -> ParseError:
    return ParseError(message, pointer=node.pointer, snippet=_preview(content))


# -- the recursion --------------------------------------------------------------------------------


def parse_node(node: Node, content: Any, run: Run) -> Any:
    """transformers' ``recursive_parse`` of ``content`` with the schema ``node``."""
    if node.const_present:
        return node.const.get()
    if content is None:
        return None
    if node.plain:
        return node.typed(node, content, run)
    if node.regex_only:
        if not isinstance(content, str):
            raise _bad_output(node, f"expected a string for this node's regex, got {type(content).__name__}", content)
        regex_ = node.regex
        assert isinstance(regex_, SchemaRegex)
        match = regex_.search(content, run)
        if match is None:
            return None
        return node.typed(node, regex_.content(match), run)
    if node.not_object is not None:
        raise node.not_object.error()
    if node.has_regex and not isinstance(content, str):
        raise _bad_output(node, f"expected a string for this node's regex, got {type(content).__name__}", content)
    if node.subs_problem is not None:
        raise node.subs_problem.error()
    for sub in node.subs:
        if isinstance(sub, Problem):
            raise sub.error()
        content = sub.apply(content, run)
    if node.regex is not None:
        if isinstance(node.regex, Problem):
            raise node.regex.error()
        match = node.regex.search(content, run)
        if match is None:
            return None
        content = node.regex.content(match)
    if node.iterator is not None:
        if isinstance(node.iterator, Problem):
            raise node.iterator.error()
        if not isinstance(content, str):
            raise _not_a_string(node, "x-regex-iterator", content)
        iterator = node.iterator
        content = [iterator.content(m) for m in iterator.finditer(content, run)]
        if not content:
            return None
    if node.key_value is not None:
        content = _key_value(node, content, run)
        if not content:
            return None
    if node.has_parser:
        content = _apply_parser(node, content, run)
    return node.typed(node, content, run)


def _key_value(node: Node, content: Any, run: Run) -> dict[str, str]:
    kv = node.key_value
    if isinstance(kv, Problem):
        raise kv.error()
    assert kv is not None
    if not isinstance(content, str):
        raise _not_a_string(node, "x-regex-key-value", content)
    out: dict[str, str] = {}
    for match in kv.finditer(content, run):
        groups = kv.content(match)
        if node.kv_problem is not None:
            raise ResponseSchemaError(node.kv_problem, pointer=kv.pointer)
        assert isinstance(groups, dict)
        if "key" not in groups or "value" not in groups:
            raise ParseError(
                "x-regex-key-value matched without a 'key' or 'value' group",
                pointer=kv.pointer,
                snippet=_preview(match.group(0)),
            )
        out[groups["key"]] = groups["value"]
    return out


def _apply_parser(node: Node, content: Any, run: Run) -> Any:
    parser = node.parser
    if isinstance(parser, Problem):
        raise parser.error()
    pointer = node.parser_pointer
    if not isinstance(content, str):
        if node.structured_by_regex or node.iterator is not None or node.key_value is not None:
            raise ResponseSchemaError(
                "x-parser needs a string, but this node's regex already produced structure", pointer=pointer
            )
        raise _bad_output(node, f"x-parser {parser!r} needs a string, got {type(content).__name__}", content)
    if parser == "gemma4-tool-call":
        content = _gemma4_json_to_json(content, run, pointer)
    try:
        parsed: Any = json_loads(content)
    except json.JSONDecodeError as exc:
        if not node.allow_non_json:
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
    transform = node.transform
    if transform is not None:
        if isinstance(transform, Problem):
            raise transform.error()
        try:
            parsed = transform.search(parsed)
        except RecursionError as exc:
            raise ParseError("JMESPath transform nested too deeply", pointer=pointer) from exc
        except Exception as exc:  # jmespath's runtime errors (type errors of functions, ...)
            raise ParseError(f"JMESPath transform failed: {exc}", pointer=pointer) from exc
    return parsed


def by_type(node: Node, content: Any, run: Run) -> Any:
    """The type step of any node (``Node.typed`` unless a specialised step was chosen)."""
    node_type = node.type
    if node_type == "object":
        return parse_object(node, content, run)
    if node_type == "array":
        return parse_array(node, content, run)
    if node_type == "string":
        return parse_string(node, content, run)
    if node_type == "integer":
        if isinstance(content, int):
            return content
        if not isinstance(content, str):
            raise _bad_output(node, f"expected a string or integer, got {type(content).__name__}", content)
        try:
            return int(content)
        except ValueError as exc:
            raise _bad_output(node, "content is not a valid integer", content) from exc
    if node_type == "number":
        try:
            if isinstance(content, int | float):
                return float(content)
            if not isinstance(content, str):
                raise _bad_output(node, f"expected a string or number, got {type(content).__name__}", content)
            return float(content)
        except (ValueError, OverflowError) as exc:
            raise _bad_output(node, "content is not a valid number", content) from exc
    if node_type == "boolean":
        if isinstance(content, bool):
            return content
        if not isinstance(content, str):
            raise _bad_output(node, f"expected a string or boolean, got {type(content).__name__}", content)
        lowered = content.lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise _bad_output(node, "content is not a valid boolean", content)
    if node_type is None or node_type == "any":
        return content
    assert node.type_problem is not None
    raise node.type_problem.error()


def parse_string(node: Node, content: Any, run: Run) -> str:
    """The type step of a ``string`` node."""
    if not isinstance(content, str):
        raise _bad_output(node, f"expected a string, got {type(content).__name__}", content)
    return content


def parse_object(node: Node, content: Any, run: Run) -> dict[Any, Any]:
    """The type step of an ``object`` node: its properties, additionalProperties, required."""
    parsed: dict[Any, Any] = {}
    properties = node.properties
    if isinstance(content, str):
        if not node.has_properties:
            raise _bad_output(node, "object node got a string but has no properties, regex or parser", content)
        if node.properties_problem is not None:
            raise node.properties_problem.error()
        for prop in properties:
            value = parse_node(prop.node, content, run)
            if value is not None:
                parsed[prop.key] = value
    elif isinstance(content, dict):
        if node.properties_problem is not None:
            raise node.properties_problem.error()
        for prop in properties:
            if prop.const_present:
                parsed[prop.key] = prop.const.get()
            elif prop.key in content:
                parsed[prop.key] = parse_node(prop.node, content[prop.key], run)
            elif prop.default_present:
                parsed[prop.key] = prop.default.get()
        additional = node.additional
        if additional is not None:
            keys = node.property_keys
            for key, value in content.items():
                if key not in keys:
                    parsed[key] = parse_node(additional, value, run)
    else:
        raise _bad_output(node, f"expected a string or object, got {type(content).__name__}", content)
    required = node.required
    if not required:
        return parsed
    if isinstance(required, Problem):
        raise required.error()
    missing = [key for key in required if key not in parsed]
    if missing:
        raise _bad_output(node, f"required properties {missing} are missing from the parsed output", content)
    return parsed


def parse_array(node: Node, content: Any, run: Run) -> list[Any]:
    """The type step of an ``array`` node: items or prefixItems."""
    if not content:
        return []
    if node.has_items:
        if not isinstance(content, list):
            raise _bad_output(
                node,
                f"array node got unstructured input ({type(content).__name__}); "
                "use x-regex-iterator or x-parser to produce a list",
                content,
            )
        items = node.items
        assert items is not None
        return [parse_node(items, item, run) for item in content]
    if node.has_prefix:
        prefix = node.prefix
        if isinstance(prefix, Problem):
            raise prefix.error()
        if not isinstance(content, list):
            if len(prefix) != 1:
                raise _bad_output(node, f"array node got unstructured input ({type(content).__name__})", content)
            content = [content]
        if len(content) != len(prefix):
            raise _bad_output(
                node, f"array has {len(content)} items but the schema has {len(prefix)} prefixItems", content
            )
        return [parse_node(child, item, run) for item, child in zip(content, prefix, strict=True)]
    assert node.type_problem is not None
    raise node.type_problem.error()


def parse_root(root: Node, text: str, limits: Limits) -> Any:
    """One complete parse of ``text`` from the schema's root, under one time budget."""
    return parse_node(root, text, Run(limits))
