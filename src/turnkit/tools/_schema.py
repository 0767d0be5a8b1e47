"""Tool JSON schemas from Python functions: type hints plus a Google docstring.

The output matches transformers 5.23 ``get_json_schema`` key for key and in the same key order
(templates print schemas with ``tojson``, so order is part of the prompt). Deviations, each a
transformers bug, are listed in ``docs/tools.md``:

* ``*args`` / ``**kwargs`` are never ``required`` (nobody can be forced to pass them), and their
  docstring entries may be written ``*args:`` / ``**kwargs:``.
* ``(choices: ...)`` must be a JSON list (transformers turns ``"abc"`` into ``["a", "b", "c"]``).
* Defaults are compared by identity, so a default with an odd ``__eq__`` (a numpy array) works.
* ``typing.NewType`` hints use their base type; ``collections.abc`` ``Sequence`` / ``Mapping``
  hints read like ``list`` / ``dict``.

Schemas are cached per function object; every call returns a fresh copy.
"""

from __future__ import annotations

import collections.abc
import inspect
import json
import pickle
import re
import sys
import types
import typing
import weakref
from collections.abc import Callable
from enum import Enum
from typing import Any, Literal, Union, get_args, get_origin

from turnkit.errors import DocstringParsingException, ToolSchemaError, TypeHintParsingException
from turnkit.tools._docstring import parse_google_docstring

__all__ = ["get_json_schema"]

# Python types whose values can be written as JSON scalars (and so appear in an "enum").
_SCALAR_TYPE_NAMES: dict[type, str] = {
    int: "integer",
    float: "number",
    str: "string",
    bool: "boolean",
    type(None): "null",
}
# Bare hints with a fixed schema (``None`` means "any value": the empty schema).
_BARE_TYPE_NAMES: dict[Any, str | None] = {
    int: "integer",
    float: "number",
    str: "string",
    bool: "boolean",
    type(None): "null",
    list: "array",
    tuple: "array",
    dict: "object",
    Any: None,
    # Deviation: bare abstract containers read like list / dict (transformers refuses them).
    collections.abc.Sequence: "array",
    collections.abc.MutableSequence: "array",
    collections.abc.Mapping: "object",
    collections.abc.MutableMapping: "object",
}
# Classes transformers maps when their library is installed: (module, attribute, JSON type). Looked up in
# sys.modules, so PIL and torch are never imported here (a hint that is one of them means it is loaded).
_MEDIA_TYPES = (("PIL.Image", "Image", "image"), ("torch", "Tensor", "audio"))
_SEQUENCE_ORIGINS = (collections.abc.Sequence, collections.abc.MutableSequence)
_MAPPING_ORIGINS = (collections.abc.Mapping, collections.abc.MutableMapping)
_IMPLICIT_RECEIVERS = frozenset({"self", "cls"})
_CHOICES = re.compile(r"\(choices:\s*(.*)\)\s*\Z", re.IGNORECASE)
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)

Schema = dict[str, Any]


class _HintError(Exception):
    """A type hint has no JSON schema; the caller adds which function and argument."""


def _enum_schema(values: list[Any]) -> Schema:
    """``{"type": ..., "enum": values}`` with each JSON type listed once, in order of appearance."""
    names = list(dict.fromkeys(_SCALAR_TYPE_NAMES[type(value)] for value in values))
    return {"type": names[0] if len(names) == 1 else names, "enum": values}


def _hint_schema(hint: Any) -> Schema:
    """The JSON schema for one (already evaluated) type hint."""
    origin = get_origin(hint)
    args = get_args(hint)

    if origin is None:
        if isinstance(hint, type) and issubclass(hint, Enum):
            values = [member.value for member in hint]
            if not values:
                raise _HintError(f"the Enum {hint.__name__} has no members, so no value could match it")
            if any(type(value) not in _SCALAR_TYPE_NAMES for value in values):
                raise _HintError(
                    f"the Enum {hint.__name__} has member values that are not JSON scalars "
                    "(int, float, str, bool or None)"
                )
            return _enum_schema(values)
        supertype = getattr(hint, "__supertype__", None)
        if supertype is not None and callable(hint):  # typing.NewType
            return _hint_schema(supertype)
        if hint in _BARE_TYPE_NAMES:  # unhashable hints raise TypeError, as in transformers
            name = _BARE_TYPE_NAMES[hint]
            return {} if name is None else {"type": name}
        for module_name, attribute, type_name in _MEDIA_TYPES:
            module = sys.modules.get(module_name)
            if module is not None and getattr(module, attribute, None) is hint:
                return {"type": type_name}
        raise _HintError(
            f"the type hint {hint!r} has no JSON schema (a custom class?); supported are int, float, str, "
            "bool, None, Any, Enum classes, Literal, and list, tuple, dict and unions of those. "
            "Write the tool's JSON schema by hand for anything else"
        )

    if origin is Union or origin is types.UnionType:
        subtypes = [_hint_schema(arg) for arg in args if arg is not type(None)]
        if len(subtypes) == 1:
            schema = subtypes[0]
        elif all(sub.keys() == {"type"} and isinstance(sub["type"], str) for sub in subtypes):
            names = sorted({sub["type"] for sub in subtypes})
            schema = {"type": names[0] if len(names) == 1 else names}
        else:
            schema = {"anyOf": subtypes}
        if type(None) in args:
            schema["nullable"] = True
        return schema

    if origin is Literal and args:
        if any(type(arg) not in _SCALAR_TYPE_NAMES for arg in args):
            raise _HintError("typing.Literal values must be int, float, str, bool or None")
        return _enum_schema(list(args))

    if origin is list or origin in _SEQUENCE_ORIGINS:
        return {"type": "array", "items": _hint_schema(args[0])} if args else {"type": "array"}

    if origin is tuple:
        if not args:
            return {"type": "array"}
        if len(args) == 1:
            raise _HintError(
                f"{hint!r} is a one-element tuple; use the element type itself, or list[...] for many elements"
            )
        if ... in args:
            raise _HintError(f"{hint!r} uses '...'; use list[...] for variable-length inputs")
        return {"type": "array", "prefixItems": [_hint_schema(arg) for arg in args]}

    if origin is dict or origin in _MAPPING_ORIGINS:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = _hint_schema(args[1])
        return schema

    raise _HintError(f"the type hint {hint!r} has no JSON schema (a custom class or unsupported generic?)")


def _build(func: Callable[..., Any]) -> Schema:
    """Compute the schema (uncached); every failure is a :class:`ToolSchemaError`."""
    name: str = getattr(func, "__name__", "operation")
    if not callable(func):
        raise ToolSchemaError(f"cannot build a tool schema for {func!r:.60}: a {type(func).__name__} is not a function")
    label = f"function {name!r}"

    doc = inspect.getdoc(func)
    if not doc:
        raise DocstringParsingException(f"cannot build a tool schema for {label}: it has no docstring")

    try:
        hints = typing.get_type_hints(func)
        signature = inspect.signature(func)
    except Exception as exc:
        raise ToolSchemaError(f"cannot build a tool schema for {label}: its type hints cannot be read ({exc})") from exc

    params = signature.parameters
    first = next(iter(params), None)
    implicit = first if first in _IMPLICIT_RECEIVERS and params[first].annotation is inspect.Parameter.empty else None
    required: list[str] = []
    has_variadic = False
    for param_name, param in params.items():
        if param_name == implicit:
            continue
        if param.annotation is inspect.Parameter.empty:
            raise TypeHintParsingException(
                f"cannot build a tool schema for {label}: argument {param_name!r} has no type hint"
            )
        if param.kind in _VARIADIC:
            has_variadic = True
        elif param.default is inspect.Parameter.empty:
            required.append(param_name)

    properties: dict[str, Schema] = {}
    for hint_name, hint in hints.items():
        if hint_name == implicit:
            continue
        try:
            properties[hint_name] = _hint_schema(hint)
        except _HintError as exc:
            if hint_name != "return":  # the model never writes the return value: an odd one is left out
                message = f"cannot build a tool schema for {label}, argument {hint_name!r}: {exc}"
                raise TypeHintParsingException(message) from None
        except Exception as exc:  # e.g. an unhashable annotation object: fails in transformers too
            raise TypeHintParsingException(
                f"cannot build a tool schema for {label}, argument {hint_name!r}: unusable type hint ({exc!r})"
            ) from exc

    parsed = parse_google_docstring(doc, starred_args=has_variadic)
    returns = properties.pop("return", None)
    if returns is not None and parsed.returns is not None:
        returns["description"] = parsed.returns
    for arg, schema in properties.items():
        if arg not in parsed.args:
            raise DocstringParsingException(
                f"cannot build a tool schema for {label}: the docstring has no description for argument {arg!r} "
                "(expected a Google-style 'Args:' block)"
            )
        description = parsed.args[arg]
        choices = _CHOICES.search(description)
        if choices:
            schema["enum"] = _parse_choices(choices.group(1), label, arg)
            description = description[: choices.start()].strip()
        schema["description"] = description

    parameters: Schema = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    function: Schema = {"name": name, "description": parsed.description, "parameters": parameters}
    if returns is not None:
        function["return"] = returns
    return {"type": "function", "function": function}


def _parse_choices(text: str, label: str, arg: str) -> list[Any]:
    """The JSON list in ``(choices: [...])``, strings stripped."""
    try:
        values = json.loads(text)
    except ValueError as exc:
        raise ToolSchemaError(
            f"cannot build a tool schema for {label}, argument {arg!r}: '(choices: ...)' is not valid JSON ({exc})"
        ) from exc
    if not isinstance(values, list):
        raise ToolSchemaError(
            f"cannot build a tool schema for {label}, argument {arg!r}: '(choices: ...)' must be a JSON list, "
            f"got {type(values).__name__}"
        )
    return [value.strip() if isinstance(value, str) else value for value in values]


# function -> (snapshot of what the schema depends on, schema, pickled schema); bound methods are keyed by
# their function in a second table, since binding drops the first parameter. The pickled form is there
# because ``pickle.loads`` of our own bytes is the cheapest deep copy of plain JSON data in CPython (about
# twice as fast as a recursive copy), and every public caller must get a copy it can change freely.
_Entry = tuple[tuple[Any, ...], Schema, bytes]
_FUNCTIONS: weakref.WeakKeyDictionary[Any, _Entry] = weakref.WeakKeyDictionary()
_BOUND: weakref.WeakKeyDictionary[Any, _Entry] = weakref.WeakKeyDictionary()


def _snapshot(function: types.FunctionType) -> tuple[Any, ...]:
    """The attributes a schema is computed from; a cached schema is reused only while they are the same objects."""
    return (
        function.__code__,
        function.__doc__,
        function.__annotations__,
        function.__defaults__,
        function.__kwdefaults__,
        function.__name__,
        function.__dict__.get("__wrapped__"),
        function.__dict__.get("__signature__"),
    )


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Element-wise identity (never ``==``: a default's ``__eq__`` may misbehave)."""
    return (
        a[0] is b[0]
        and a[1] is b[1]
        and a[2] is b[2]
        and a[3] is b[3]
        and a[4] is b[4]
        and a[5] is b[5]
        and a[6] is b[6]
        and a[7] is b[7]
    )


def _entry(func: Callable[..., Any]) -> _Entry | None:
    """The cache entry for ``func`` (built on a miss), or None for callables that are not cached."""
    if isinstance(func, types.FunctionType):
        table, function = _FUNCTIONS, func
    elif isinstance(func, types.MethodType) and isinstance(func.__func__, types.FunctionType):
        table, function = _BOUND, func.__func__
    else:
        return None
    if function.__doc__ is None:  # the docstring may be inherited from a class: look it up every time
        return None
    snapshot = _snapshot(function)
    entry = table.get(function)
    if entry is None or not _same(entry[0], snapshot):
        schema = _build(func)
        entry = (snapshot, schema, pickle.dumps(schema, protocol=pickle.HIGHEST_PROTOCOL))
        table[function] = entry
    return entry


def _cached(func: Callable[..., Any]) -> Schema:
    """The shared cached schema object for ``func``: the same object while the function is unchanged.

    For turnkit's renderer, which never mutates it (templates run in an immutable sandbox) and keys its own
    per-schema work on the object's identity. Everyone else gets copies from :func:`get_json_schema`.
    """
    entry = _entry(func)
    return _build(func) if entry is None else entry[1]


def get_json_schema(func: Callable[..., Any]) -> dict[str, Any]:
    """The OpenAI-style tool schema of a Python function, as transformers 5.23 builds it.

    The function needs a Google-style docstring describing every argument and a type hint on
    every argument; ``(choices: [...])`` at the end of an argument's description becomes an
    ``enum``. Raises :class:`~turnkit.ToolSchemaError` naming the function and argument otherwise.

    >>> def multiply(a: float, b: float) -> float:
    ...     '''Multiply two numbers.
    ...
    ...     Args:
    ...         a: The first number
    ...         b: The second number
    ...     '''
    ...     return a * b
    >>> get_json_schema(multiply)["function"]["parameters"]["required"]
    ['a', 'b']
    """
    entry = _entry(func)
    return _build(func) if entry is None else pickle.loads(entry[2])
