"""Compiling a response schema: raw schema dict to a tree of :class:`~turnkit.parse._schema.nodes.Node`.

Compiling never fails on a defective schema (only on one nested past ``max_schema_depth``): each
defect becomes a :class:`~turnkit.parse._schema.nodes.Problem`, recorded in ``problems`` in schema
order and stored on the node, where the interpreter raises it when (and only when) parsing needs it.
"""

from __future__ import annotations

import re
from typing import Any

import jmespath
import regex

from turnkit._json import pointer_join
from turnkit.errors import ResponseSchemaError
from turnkit.limits import Limits
from turnkit.parse._schema.nodes import (
    Member,
    Node,
    Problem,
    Property,
    SchemaRegex,
    Substitution,
    by_type,
    parse_array,
    parse_object,
    parse_string,
)
from turnkit.parse._schema.regex import Template, validate_with_re

__all__ = ["compile_node"]

_HAS_REGEX_KEYS = ("x-regex", "x-regex-iterator", "x-regex-key-value", "x-regex-substitutions")
_SCALAR_TYPES = ("string", "integer", "number", "boolean")


def _compile_regex(value: Any, pointer: str, limits: Limits) -> SchemaRegex | Problem | None:
    if value is None:
        return None
    if not isinstance(value, str):
        return Problem(f"regex must be a string, got {type(value).__name__}", pointer)
    try:
        return SchemaRegex(value, pointer, limits)
    except (re.error, regex.error, RecursionError, OverflowError, ValueError) as exc:
        return Problem(f"invalid regex {value[:60]!r}: {exc}", pointer)


def _compile_substitution(entry: Any, pointer: str, limits: Limits) -> Substitution | Problem:
    try:
        source, replacement = entry[0], entry[1]
    except (TypeError, IndexError, KeyError) as exc:
        return Problem(f"substitution must be a [pattern, replacement] pair: {exc}", pointer)
    if not isinstance(source, str) or not isinstance(replacement, str):
        return Problem("substitution pattern and replacement must be strings", pointer)
    compiled = _compile_regex(source, pointer, limits)
    if not isinstance(compiled, SchemaRegex):
        assert isinstance(compiled, Problem)
        return compiled
    try:
        checked = validate_with_re(source, re.DOTALL)
        template = Template(replacement, compiled.pattern, checked)
    except (re.error, IndexError, ValueError) as exc:
        return Problem(f"invalid replacement {replacement[:60]!r}: {exc}", pointer)
    return Substitution(compiled, template, replacement)


def _problem(problems: list[Problem], message: str, pointer: str) -> Problem:
    found = Problem(message, pointer)
    problems.append(found)
    return found


def _sub_regex(
    raw: dict[Any, Any], key: str, pointer: str, limits: Limits, problems: list[Problem]
) -> SchemaRegex | Problem | None:
    compiled = _compile_regex(raw.get(key), pointer_join(pointer, key), limits)
    if isinstance(compiled, Problem):
        problems.append(compiled)
    return compiled


def compile_node(raw: Any, pointer: str, depth: int, limits: Limits, problems: list[Problem]) -> Node:
    """The node for schema value ``raw`` at JSON pointer ``pointer``, its children compiled with it."""
    if depth > limits.max_schema_depth:
        raise ResponseSchemaError(f"schema is nested deeper than {limits.max_schema_depth} levels", pointer=pointer)
    const = Member(raw, "const", pointer)
    node = Node(raw, pointer, const, const.present, by_type)
    if not isinstance(raw, dict):
        node.not_object = _problem(problems, f"schema node must be an object, got {type(raw).__name__}", pointer)
        return node
    node.type = raw.get("type")
    node.has_regex = any(key in raw for key in _HAS_REGEX_KEYS)
    _compile_regex_steps(node, raw, limits, problems)
    _compile_parser(node, raw, problems)
    _compile_object_children(node, raw, depth, limits, problems)
    _compile_array_children(node, raw, depth, limits, problems)
    _choose_type_step(node, problems)
    return node


def _compile_regex_steps(node: Node, raw: dict[Any, Any], limits: Limits, problems: list[Problem]) -> None:
    """x-regex-substitutions, x-regex, x-regex-iterator, x-regex-key-value."""
    here = node.pointer
    subs_raw = raw.get("x-regex-substitutions", [])
    try:
        entries = list(subs_raw)
    except TypeError:
        entries = []
        node.subs_problem = _problem(
            problems, "x-regex-substitutions must be a list", pointer_join(here, "x-regex-substitutions")
        )
    for index, entry in enumerate(entries):
        compiled_sub = _compile_substitution(entry, pointer_join(here, "x-regex-substitutions", index), limits)
        if isinstance(compiled_sub, Problem):
            problems.append(compiled_sub)
        node.subs.append(compiled_sub)

    node.regex = _sub_regex(raw, "x-regex", here, limits, problems)
    node.iterator = _sub_regex(raw, "x-regex-iterator", here, limits, problems)
    if node.iterator is not None and node.type != "array":
        node.iterator = _problem(
            problems,
            f"x-regex-iterator needs type 'array', not {node.type!r}",
            pointer_join(here, "x-regex-iterator"),
        )
    node.key_value = _sub_regex(raw, "x-regex-key-value", here, limits, problems)
    if node.key_value is not None and node.type != "object":
        node.key_value = _problem(
            problems,
            f"x-regex-key-value needs type 'object', not {node.type!r}",
            pointer_join(here, "x-regex-key-value"),
        )
    if isinstance(node.key_value, SchemaRegex):
        names = {name for name, _ in node.key_value.named}
        if not {"key", "value"} <= names:
            node.kv_problem = "x-regex-key-value regex must have named groups 'key' and 'value'"
            problems.append(Problem(node.kv_problem, node.key_value.pointer))
    node.structured_by_regex = isinstance(node.regex, SchemaRegex) and bool(node.regex.named)


def _compile_parser(node: Node, raw: dict[Any, Any], problems: list[Problem]) -> None:
    """x-parser and x-parser-args (allow_non_json, a JMESPath transform)."""
    here = node.pointer
    node.has_parser = "x-parser" in raw
    node.parser_pointer = pointer_join(here, "x-parser")
    if not node.has_parser:
        return
    parser = raw["x-parser"]
    if parser not in ("json", "gemma4-tool-call"):
        node.parser = _problem(
            problems, f"unknown x-parser {parser!r} (known: 'json', 'gemma4-tool-call')", node.parser_pointer
        )
        return
    node.parser = parser
    args = raw.get("x-parser-args", {})
    args_pointer = pointer_join(here, "x-parser-args")
    if not isinstance(args, dict):
        node.parser = _problem(problems, "x-parser-args must be an object", args_pointer)
        return
    node.allow_non_json = args.get("allow_non_json", False)
    expression = args.get("transform")
    if expression is not None:
        try:
            node.transform = jmespath.compile(expression)
        except Exception as exc:  # jmespath raises several unrelated classes
            node.transform = _problem(
                problems,
                f"invalid JMESPath transform {expression!r}: {exc}",
                pointer_join(args_pointer, "transform"),
            )


def _compile_object_children(
    node: Node, raw: dict[Any, Any], depth: int, limits: Limits, problems: list[Problem]
) -> None:
    """properties, additionalProperties, required."""
    here = node.pointer
    node.has_properties = "properties" in raw
    props = raw.get("properties", {})
    if isinstance(props, dict):
        node.property_keys = props
        node.properties = [
            Property(key, compile_node(child, pointer_join(here, "properties", key), depth + 1, limits, problems))
            for key, child in props.items()
        ]
    elif node.type == "object":
        node.properties_problem = _problem(problems, "properties must be an object", pointer_join(here, "properties"))
    additional = raw.get("additionalProperties", True)
    if additional is not False and node.type == "object":
        node.additional = compile_node(
            additional if isinstance(additional, dict) else {},
            pointer_join(here, "additionalProperties"),
            depth + 1,
            limits,
            problems,
        )
    required = raw.get("required", [])
    try:
        node.required = tuple(required)
        for key in node.required:
            hash(key)
    except TypeError:
        message = "required must be a list of property names"
        at = pointer_join(here, "required")
        # Only object nodes read "required"; elsewhere it is inert (as in transformers).
        node.required = _problem(problems, message, at) if node.type == "object" else Problem(message, at)


def _compile_array_children(
    node: Node, raw: dict[Any, Any], depth: int, limits: Limits, problems: list[Problem]
) -> None:
    """items, prefixItems."""
    here = node.pointer
    node.has_items = "items" in raw
    if node.has_items:
        node.items = compile_node(raw["items"], pointer_join(here, "items"), depth + 1, limits, problems)
    node.has_prefix = "prefixItems" in raw
    if node.has_prefix:
        prefix = raw["prefixItems"]
        if isinstance(prefix, list):
            node.prefix = [
                compile_node(child, pointer_join(here, "prefixItems", index), depth + 1, limits, problems)
                for index, child in enumerate(prefix)
            ]
        elif node.type == "array":
            node.prefix = _problem(problems, "prefixItems must be a list", pointer_join(here, "prefixItems"))


def _choose_type_step(node: Node, problems: list[Problem]) -> None:
    """The type's step (and its defects), and the two fast paths of the interpreter."""
    here = node.pointer
    if not (node.type in ("object", "array", "any", None) or node.type in _SCALAR_TYPES):
        node.type_problem = _problem(problems, f"unsupported schema type {node.type!r}", pointer_join(here, "type"))
    if node.type == "array" and not node.has_items and not node.has_prefix:
        node.type_problem = _problem(problems, "array node has no items or prefixItems schema", here)
    if node.type == "object":
        node.typed = parse_object
    elif node.type == "array":
        node.typed = parse_array
    elif node.type == "string":
        node.typed = parse_string
    node.plain = not node.has_regex and not node.has_parser and not node.subs and node.subs_problem is None
    node.regex_only = (
        isinstance(node.regex, SchemaRegex)
        and node.iterator is None
        and node.key_value is None
        and not node.has_parser
        and not node.subs
        and node.subs_problem is None
    )
