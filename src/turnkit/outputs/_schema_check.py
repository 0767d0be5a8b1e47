"""A small, strict JSON Schema checker for model replies (the keywords real response schemas use).

turnkit does not depend on ``jsonschema``; response schemas use a small core of the vocabulary
(types, properties, required, items, enum, const, bounds, combinators, local ``$ref``). Keywords
that would constrain a value but are not implemented are refused when the parser is built, so a
schema is never silently half-enforced. Types are strict: the string ``"false"`` is not a
boolean and ``1`` is not a string; ``1.0`` is an integer, as JSON Schema says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from turnkit._json import pointer_join, unescape_token
from turnkit.errors import RegexTimeoutError, UsageError
from turnkit.limits import DEFAULT_LIMITS, Limits

__all__ = ["SUPPORTED_KEYWORDS", "SchemaChecker"]

SUPPORTED_KEYWORDS = frozenset(
    {
        "type", "enum", "const", "properties", "required", "additionalProperties", "items", "prefixItems",
        "minItems", "maxItems", "uniqueItems", "minLength", "maxLength", "pattern", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minProperties", "maxProperties", "anyOf",
        "oneOf", "allOf", "not", "$ref", "$defs", "definitions",
    }
)  # fmt: skip
_ANNOTATIONS = frozenset(
    {
        "$schema", "$id", "$comment", "title", "description", "default", "examples", "format", "readOnly",
        "writeOnly", "deprecated", "discriminator", "contentMediaType", "contentEncoding",
    }
)  # fmt: skip
_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_MAX_ERRORS = 5
_MAX_STEPS = 1_000_000


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_type(value: Any, name: str) -> bool:
    actual = _type_of(value)
    if name == "number":
        return actual in {"integer", "number"}
    if name == "integer":
        return actual == "integer" or (actual == "number" and math.isfinite(value) and float(value).is_integer())
    return actual == name


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _short(value: Any) -> str:
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class SchemaChecker:
    """Validates JSON values against one JSON Schema; built once per parser."""

    def __init__(self, schema: Mapping[str, Any] | bool, *, limits: Limits | None = None) -> None:
        self.schema = schema
        self.limits = limits or DEFAULT_LIMITS
        self._audit(schema, "#", 0)

    # -- construction-time audit -------------------------------------------------------------

    def _audit(self, schema: Any, where: str, depth: int) -> None:
        if depth > 64:
            raise UsageError(f"JSON schema nests too deeply at {where}", code="schema")
        if isinstance(schema, bool):
            return
        if not isinstance(schema, Mapping):
            raise UsageError(f"a JSON schema must be an object or a boolean, got {type(schema).__name__} at {where}")
        unknown = sorted(k for k in schema if k not in SUPPORTED_KEYWORDS and k not in _ANNOTATIONS)
        if unknown:
            raise UsageError(
                f"unsupported JSON schema keyword(s) {', '.join(unknown)} at {where}; supported: "
                + ", ".join(sorted(SUPPORTED_KEYWORDS)),
                code="schema",
            )
        types = schema.get("type")
        for name in [types] if isinstance(types, str) else types or []:
            if name not in _TYPES:
                raise UsageError(f"unknown JSON schema type {name!r} at {where}", code="schema")
        ref = schema.get("$ref")
        if ref is not None:
            self._resolve(ref, where)
        if "pattern" in schema:
            import regex  # only schemas with patterns pay for the import

            try:
                regex.compile(schema["pattern"])
            except regex.error as exc:
                raise UsageError(f"invalid pattern at {where}: {exc}", code="schema") from exc
        for key in ("properties", "$defs", "definitions"):
            for name, sub in (schema.get(key) or {}).items():
                self._audit(sub, f"{where}/{key}/{name}", depth + 1)
        for key in ("additionalProperties", "items", "not"):
            if key in schema:
                self._audit(schema[key], f"{where}/{key}", depth + 1)
        for key in ("prefixItems", "anyOf", "oneOf", "allOf"):
            for i, sub in enumerate(schema.get(key) or []):
                self._audit(sub, f"{where}/{key}/{i}", depth + 1)

    def _resolve(self, ref: str, where: str) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise UsageError(f"only local $ref ('#/...') is supported, got {ref!r} at {where}", code="schema")
        node: Any = self.schema
        for raw in ref[1:].split("/")[1:] if ref != "#" else []:
            part = unescape_token(raw)
            if not isinstance(node, Mapping) or part not in node:
                raise UsageError(f"$ref {ref!r} at {where} does not resolve", code="schema")
            node = node[part]
        return node

    # -- validation ----------------------------------------------------------------------------

    def errors(self, value: Any) -> list[tuple[str, str]]:
        """``(json_pointer, message)`` for each violation found (at most a handful)."""
        found: list[tuple[str, str]] = []
        try:
            _Run(self)._check(value, self.schema, "", found, 0)
        except RecursionError:
            found.append(("", "the value nests too deeply to check"))
        return found[:_MAX_ERRORS]

    def property_types(self, name: str) -> set[str] | None:
        """Declared ``type`` names of a top-level property (None when unconstrained or indirect)."""
        schema = self.schema
        if not isinstance(schema, Mapping):
            return None
        sub = (schema.get("properties") or {}).get(name)
        if isinstance(sub, Mapping) and "$ref" in sub:
            sub = self._resolve(sub["$ref"], name)
        if not isinstance(sub, Mapping) or "type" not in sub:
            return None
        types = sub["type"]
        return {types} if isinstance(types, str) else set(types)


class _Run:
    """One validation: its own step counter, so a checker can be shared across threads."""

    __slots__ = ("checker", "_steps")

    def __init__(self, checker: SchemaChecker) -> None:
        self.checker = checker
        self._steps = 0

    def _check(self, value: Any, schema: Any, at: str, out: list[tuple[str, str]], depth: int) -> None:
        self._steps += 1
        if self._steps > _MAX_STEPS or depth > self.checker.limits.max_json_depth:
            if not out:
                out.append((at, "the value is too large or deep to check"))
            return
        if len(out) >= _MAX_ERRORS:
            return
        if schema is True:
            return
        if schema is False:
            out.append((at, "no value is allowed here"))
            return
        if "$ref" in schema:
            self._check(value, self.checker._resolve(schema["$ref"], at), at, out, depth + 1)
        types = schema.get("type")
        if types is not None:
            names = [types] if isinstance(types, str) else list(types)
            if not any(_is_type(value, n) for n in names):
                want = " or ".join(names)
                out.append((at, f"expected {want}, got {_type_of(value)} {_short(value)}"))
                return
        if "const" in schema and not _equal(value, schema["const"]):
            out.append((at, f"expected exactly {_short(schema['const'])}, got {_short(value)}"))
        if "enum" in schema and not any(_equal(value, e) for e in schema["enum"]):
            options = ", ".join(_short(e) for e in schema["enum"][:10])
            out.append((at, f"expected one of {options}, got {_short(value)}"))
        if isinstance(value, str):
            self._check_string(value, schema, at, out)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            self._check_number(value, schema, at, out)
        elif isinstance(value, list):
            self._check_array(value, schema, at, out, depth)
        elif isinstance(value, dict):
            self._check_object(value, schema, at, out, depth)
        for sub in schema.get("allOf", []):
            self._check(value, sub, at, out, depth + 1)
        if "anyOf" in schema and not any(self._passes(value, s, at, depth) for s in schema["anyOf"]):
            out.append((at, f"{_short(value)} does not match any of the allowed shapes (anyOf)"))
        if "oneOf" in schema:
            matches = sum(self._passes(value, s, at, depth) for s in schema["oneOf"])
            if matches != 1:
                out.append((at, f"{_short(value)} must match exactly one allowed shape (oneOf), matched {matches}"))
        if "not" in schema and self._passes(value, schema["not"], at, depth):
            out.append((at, f"{_short(value)} matches a shape that is not allowed (not)"))

    def _passes(self, value: Any, schema: Any, at: str, depth: int) -> bool:
        trial: list[tuple[str, str]] = []
        self._check(value, schema, at, trial, depth + 1)
        return not trial

    def _check_string(self, value: str, schema: Mapping[str, Any], at: str, out: list[tuple[str, str]]) -> None:
        if "minLength" in schema and len(value) < schema["minLength"]:
            out.append((at, f"string shorter than {schema['minLength']} characters"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            out.append((at, f"string longer than {schema['maxLength']} characters"))
        if "pattern" in schema:
            import regex

            try:
                matched = regex.search(schema["pattern"], value, timeout=self.checker.limits.regex_timeout_s)
            except TimeoutError as exc:
                raise RegexTimeoutError(f"pattern at {at or '/'} timed out", pointer=at) from exc
            if matched is None:
                out.append((at, f"string {_short(value)} does not match pattern {schema['pattern']!r}"))

    def _check_number(self, value: float, schema: Mapping[str, Any], at: str, out: list[tuple[str, str]]) -> None:
        if "minimum" in schema and value < schema["minimum"]:
            out.append((at, f"{value} is less than the minimum {schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            out.append((at, f"{value} is greater than the maximum {schema['maximum']}"))
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            out.append((at, f"{value} must be greater than {schema['exclusiveMinimum']}"))
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            out.append((at, f"{value} must be less than {schema['exclusiveMaximum']}"))
        step = schema.get("multipleOf")
        if step and not float(value / step).is_integer():
            out.append((at, f"{value} is not a multiple of {step}"))

    def _check_array(
        self, value: list[Any], schema: Mapping[str, Any], at: str, out: list[tuple[str, str]], depth: int
    ) -> None:
        if "minItems" in schema and len(value) < schema["minItems"]:
            out.append((at, f"array has fewer than {schema['minItems']} items"))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            out.append((at, f"array has more than {schema['maxItems']} items"))
        if schema.get("uniqueItems"):
            for i in range(len(value)):
                if any(_equal(value[i], value[j]) for j in range(i)):
                    out.append((pointer_join(at, i), "duplicate item in an array whose items must be unique"))
                    break
        prefix = schema.get("prefixItems", [])
        for i, item in enumerate(value):
            if i < len(prefix):
                self._check(item, prefix[i], pointer_join(at, i), out, depth + 1)
            elif "items" in schema:
                self._check(item, schema["items"], pointer_join(at, i), out, depth + 1)
            if len(out) >= _MAX_ERRORS:
                return

    def _check_object(
        self, value: dict[str, Any], schema: Mapping[str, Any], at: str, out: list[tuple[str, str]], depth: int
    ) -> None:
        for name in schema.get("required", []):
            if name not in value:
                out.append((pointer_join(at, name), f"missing required key {_short(name)}"))
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            out.append((at, f"object has fewer than {schema['minProperties']} keys"))
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            out.append((at, f"object has more than {schema['maxProperties']} keys"))
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                self._check(item, properties[key], pointer_join(at, key), out, depth + 1)
            elif extra is False:
                out.append((pointer_join(at, key), f"unexpected key {_short(key)}"))
            elif extra is not True:
                self._check(item, extra, pointer_join(at, key), out, depth + 1)
            if len(out) >= _MAX_ERRORS:
                return
