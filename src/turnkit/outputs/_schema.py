"""The expected shape of a reply: a Pydantic v2 model class or a JSON schema, shown and enforced.

Shown: the format instruction embeds the JSON schema as indented JSON in the schema's own key
order, so the same schema always gives the same prompt. Enforced: values are validated strictly
(no string-to-boolean or string-to-number coercion), so ``"false"`` never passes as ``False``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from turnkit._args import expect
from turnkit._json import pointer_join, unescape_token
from turnkit.errors import OutputParseError, RegexTimeoutError, UsageError
from turnkit.limits import Limits
from turnkit.outputs._feedback import reply_error
from turnkit.outputs._schema_check import SchemaChecker

__all__ = ["ReplySchema", "SchemaSpec", "is_pydantic_model"]

SchemaSpec = type | Mapping[str, Any]
"""What ``schema=`` accepts: a ``pydantic.BaseModel`` subclass or a JSON schema mapping."""


def is_pydantic_model(obj: object) -> bool:
    """Whether ``obj`` is a Pydantic v2 model class (checked without importing pydantic)."""
    return isinstance(obj, type) and callable(getattr(obj, "model_json_schema", None))


class ReplySchema:
    """One expected shape: its JSON schema, its prompt text, and strict validation of values."""

    def __init__(self, spec: SchemaSpec, *, limits: Limits | None = None) -> None:
        self.model: Any = None
        if is_pydantic_model(spec):
            self.model = spec
            json_schema: Any = self.model.model_json_schema()
        elif isinstance(spec, Mapping):
            json_schema = dict(spec)
        else:
            raise UsageError(
                f"schema= takes a Pydantic model class or a JSON schema dict, not {type(spec).__name__}",
                code="schema",
            )
        self.json_schema: dict[str, Any] = json_schema
        # Pydantic models are validated by Pydantic; the checker still audits their schema text.
        self.checker = SchemaChecker(json_schema, limits=limits) if self.model is None else None
        self.text = json.dumps(json_schema, indent=2, ensure_ascii=False)

    def property_types(self, name: str) -> set[str] | None:
        """Declared JSON types of a top-level property, if plainly declared."""
        checker = self.checker or SchemaChecker(self.json_schema)
        try:
            return checker.property_types(name)
        except UsageError:
            return None

    def validate(self, value: Any, reply: str) -> tuple[Any, Any]:
        """``(parsed, model_instance_or_None)`` or an ``OutputParseError`` coded ``schema_mismatch``."""
        if self.model is not None:
            return self._validate_pydantic(value, reply)
        assert self.checker is not None
        try:
            problems = self.checker.errors(value)
        except RegexTimeoutError as exc:
            raise reply_error(
                "regex_timeout",
                f"a schema pattern took too long on the value at {exc.pointer or '/'}",
                reply,
                retryable=False,
            ) from exc
        if problems:
            raise _mismatch(problems, reply, value)
        return value, None

    def _validate_pydantic(self, value: Any, reply: str) -> tuple[Any, Any]:
        from pydantic import ValidationError

        try:
            instance = self.model.model_validate_json(json.dumps(value), strict=True)
        except ValidationError as exc:
            problems = []
            for error in exc.errors(include_url=False)[:5]:
                pointer = pointer_join("", *error["loc"])
                if error["type"] == "missing":
                    problems.append((pointer, f"missing required key {json.dumps(str(error['loc'][-1]))}"))
                    continue
                shown = json.dumps(error.get("input"), ensure_ascii=False, default=str)
                if len(shown) > 60:
                    shown = shown[:57] + "..."
                problems.append((pointer, f"{error['msg']} (found {shown})"))
            raise _mismatch(problems, reply, value) from None
        return instance.model_dump(), instance


def _mismatch(problems: list[tuple[str, str]], reply: str, value: Any) -> OutputParseError:
    """``missing_key`` when the first problem is a missing required key, else ``schema_mismatch``."""
    details = "; ".join(f"{pointer or '/'}: {message}" for pointer, message in problems)
    pointer, first = problems[0]
    if first.startswith("missing required key"):
        missing = [m.removeprefix("missing required key ") for _, m in problems if m.startswith("missing required key")]
        return reply_error(
            "missing_key",
            f"the JSON lacks required key{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
            f" (found {_keys(value, pointer)})",
            reply,
            pointer=pointer,
            hint=f"Include every required key ({', '.join(missing)}) with a value of the type the schema asks for.",
        )
    hint = "Use exactly the types and values the schema asks for."
    if any("bool" in message for _, message in problems):
        hint += " true/false are JSON booleans, not strings."
    return reply_error(
        "schema_mismatch",
        f"the JSON does not match the required schema: {details}",
        reply,
        position=_locate(pointer, reply),
        pointer=pointer,
        hint=hint,
    )


def _keys(value: Any, pointer: str) -> str:
    """The keys present in the object that lacks a key (the parent of ``pointer``), for feedback."""
    for part in [p for p in pointer.split("/") if p][:-1]:
        key: Any = unescape_token(part)
        if isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        else:
            return "another value"
    if not isinstance(value, dict):
        return "a value that is not an object"
    keys = ", ".join(json.dumps(k, ensure_ascii=False) for k in list(value)[:20])
    return f"keys {keys}" if keys else "an empty object"


def _locate(pointer: str, reply: str) -> int | None:
    """Best-effort position of the last key of ``pointer`` in the reply, for the quoted window."""
    parts = [p for p in pointer.split("/") if p]
    for part in reversed(parts):
        if part.isdigit():
            continue
        key = unescape_token(part)
        where = reply.find(json.dumps(key, ensure_ascii=False))
        if where < 0:
            where = reply.find(key)
        return where if where >= 0 else None
    return None


def expect_schema_spec(schema: Any, *, func: str) -> None:
    """``schema=`` of a parser: a pydantic model class, a JSON schema mapping, or ``None``."""
    if schema is not None and not isinstance(schema, Mapping) and not is_pydantic_model(schema):
        expect(schema, Mapping, name="schema", func=func, accepts="a pydantic model class or a JSON schema mapping")
