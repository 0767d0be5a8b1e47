"""The x-regex response schema: turn raw model output into a message dict.

Semantics are those of transformers 5.12.1's ``recursive_parse`` (the last release that shipped it).
A schema is compiled once into a tree of nodes (:class:`ResponseSchema`, by
:mod:`turnkit.parse._schema.compiler`) that :mod:`turnkit.parse._schema.nodes` interprets; defects of
the schema are recorded at compile time and raised as :class:`ResponseSchemaError` exactly where
transformers would fail (when the node is reached with input), or up front with ``strict=True``.
Every regex keeps ``re`` semantics and is time-bounded: plain ``re`` when its worst case on the input
provably fits the budget, else the ``regex`` module with a timeout (:mod:`turnkit.parse._schema.regex`).

This module is what ``import turnkit`` loads: the compiler and the interpreter (and with them
``regex`` and ``jmespath``) are imported when the first schema is compiled.
"""

from __future__ import annotations

import copy
import marshal
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from turnkit._args import expect, expect_mapping
from turnkit.errors import LimitExceededError, ParseError, ResponseSchemaError
from turnkit.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    from turnkit.parse._schema.nodes import Node

__all__ = ["ResponseSchema", "parse_response"]


class ResponseSchema:
    """A response schema compiled once; :meth:`parse` turns model output into a message dict.

    >>> schema = ResponseSchema({"type": "object", "properties": {
    ...     "role": {"const": "assistant"},
    ...     "content": {"type": "string", "x-regex": r"<answer>(.*?)</answer>"}}})
    >>> schema.parse("<answer>42</answer>")
    {'role': 'assistant', 'content': '42'}
    """

    __slots__ = ("schema", "limits", "problems", "_root", "_parse_root")

    def __init__(self, schema: Mapping[str, Any], *, limits: Limits = DEFAULT_LIMITS, strict: bool = False) -> None:
        expect_mapping(schema, name="schema", func="ResponseSchema", accepts="a mapping (an x-regex response schema)")
        expect(limits, Limits, name="limits", func="ResponseSchema")
        expect(strict, bool, name="strict", func="ResponseSchema")
        # Here, not at module level: `import turnkit` does not pay for regex and jmespath.
        from turnkit.parse._schema.compiler import compile_node
        from turnkit.parse._schema.nodes import Problem, parse_root

        problems: list[Problem] = []
        try:
            self._root: Node = compile_node(schema, "", 0, limits, problems)
        except RecursionError as exc:
            raise ResponseSchemaError("schema is nested too deeply", pointer="") from exc
        self._parse_root: Callable[[Node, str, Limits], Any] = parse_root
        self.schema = schema
        self.limits = limits
        self.problems: tuple[ResponseSchemaError, ...] = tuple(p.error() for p in problems)
        """Defects found at compile time; each is raised only when parsing reaches its node."""
        if strict and self.problems:
            raise self.problems[0]

    def parse(self, text: str) -> Any:
        """Parse one model output; returns a dict for object schemas, ``None`` when nothing matched."""
        expect(text, str, name="text", func="ResponseSchema.parse", accepts="str (the decoded output text)")
        if len(text) > self.limits.max_input_chars:
            raise LimitExceededError(
                f"model output of {len(text)} characters exceeds max_input_chars={self.limits.max_input_chars}"
            )
        try:
            return self._parse_root(self._root, text, self.limits)
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
