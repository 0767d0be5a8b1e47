"""Checking the arguments of public functions at the door (a leaf: imports only ``turnkit.errors``).

Every public function and constructor checks what it was given before using it, so a wrong argument is an
:class:`~turnkit.errors.ArgumentTypeError` (or :class:`~turnkit.errors.ArgumentValueError`) that names the
function, the parameter, what it got and what it accepts, never a bare ``TypeError`` from deep inside::

    expect(chat_template, (str, Mapping), name="chat_template", func="apply_chat_template",
           accepts="str or a mapping of names to str")
    # ArgumentTypeError: apply_chat_template() argument 'chat_template' must be str or a mapping of
    # names to str, not NoneType
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from turnkit.errors import ArgumentTypeError, ArgumentValueError

__all__ = [
    "check_fields",
    "expect",
    "expect_callable",
    "expect_choice",
    "expect_int",
    "expect_items",
    "expect_mapping",
    "expect_path",
    "fail_value",
]

T = TypeVar("T")

Types = type | tuple[type, ...]


def _names(types_: Types) -> str:
    listed = types_ if isinstance(types_, tuple) else (types_,)
    names = ["None" if t is type(None) else t.__name__ for t in listed]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _where(func: str, name: str) -> str:
    return f"{func}() argument {name!r}"


def _got(value: object) -> str:
    return type(value).__name__


def _fail(value: object, *, name: str, func: str, accepts: str) -> ArgumentTypeError:
    return ArgumentTypeError(f"{_where(func, name)} must be {accepts}, not {_got(value)}")


def fail_value(why: str, *, name: str, func: str) -> ArgumentValueError:
    """An :class:`ArgumentValueError` for a value of the right type that cannot be used (``why`` says how)."""
    return ArgumentValueError(f"{_where(func, name)} {why}")


def expect(value: T, types_: Types, *, name: str, func: str, accepts: str | None = None, none: bool = False) -> T:
    """``value`` if it is an instance of ``types_`` (or ``None`` when ``none``), else an ``ArgumentTypeError``.

    ``bool`` is never taken for ``int`` or ``float``; ``accepts`` words the accepted types for the message.
    """
    if value is None and none:
        return value
    listed = types_ if isinstance(types_, tuple) else (types_,)
    if isinstance(value, listed) and not (isinstance(value, bool) and bool not in listed and object not in listed):
        return value
    words = accepts or _names(types_)
    raise _fail(value, name=name, func=func, accepts=f"{words} or None" if none and accepts is None else words)


def expect_int(
    value: int | None, *, name: str, func: str, minimum: int | None = None, none: bool = False
) -> int | None:
    """An ``int`` (not ``bool``), at least ``minimum`` when given."""
    expect(value, int, name=name, func=func, none=none)
    if minimum is not None and value is not None and value < minimum:
        raise fail_value(f"must be at least {minimum}, not {value}", name=name, func=func)
    return value


def expect_choice(value: T, choices: Collection[Any], *, name: str, func: str) -> T:
    """One of ``choices`` (compared with ``==``); a wrong type or value names them all."""
    try:
        ok = value in choices
    except TypeError:  # unhashable value against a set of choices
        ok = False
    if not ok:
        listed = ", ".join(repr(c) for c in choices)
        if isinstance(value, (str, bool, int, float, type(None))):
            raise fail_value(f"must be one of {listed}, not {value!r}", name=name, func=func)
        raise _fail(value, name=name, func=func, accepts=f"one of {listed}")
    return value


def expect_items(
    value: Iterable[T] | None,
    item_types: Types,
    *,
    name: str,
    func: str,
    accepts: str | None = None,
    none: bool = False,
) -> Iterable[T] | None:
    """A list or tuple (any non-text ``Sequence``) whose every item is an instance of ``item_types``.

    A ``str`` is refused even where its characters would pass: ``tools="f"`` is a mistake, not one tool per letter.
    """
    words = accepts or f"a list of {_names(item_types)}"
    if value is None and none:
        return value
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes, bytearray)):
        raise _fail(value, name=name, func=func, accepts=f"{words} or None" if none and accepts is None else words)
    for index, item in enumerate(value):
        if not isinstance(item, item_types) or (isinstance(item, bool) and bool not in _tuple(item_types)):
            raise ArgumentTypeError(f"{_where(func, name)} must be {words}, but item {index} is {_got(item)}")
    return value


def _tuple(types_: Types) -> tuple[type, ...]:
    return types_ if isinstance(types_, tuple) else (types_,)


def expect_mapping(
    value: Mapping[Any, Any] | None,
    *,
    name: str,
    func: str,
    keys: Types = str,
    values: Types | None = None,
    accepts: str | None = None,
    none: bool = False,
) -> Mapping[Any, Any] | None:
    """A mapping with ``keys`` (default ``str``) and, when given, ``values`` of those types."""
    words = accepts or (f"a mapping of {_names(keys)} to {_names(values)}" if values else "a mapping")
    if value is None and none:
        return value
    if not isinstance(value, Mapping):
        raise _fail(value, name=name, func=func, accepts=f"{words} or None" if none and accepts is None else words)
    for key, item in value.items():
        if not isinstance(key, keys):
            raise ArgumentTypeError(f"{_where(func, name)} must be {words}, but has a {_got(key)} key {key!r:.40}")
        if values is not None and not isinstance(item, values):
            raise ArgumentTypeError(f"{_where(func, name)} must be {words}, but {key!r:.40} maps to {_got(item)}")
    return value


def expect_path(value: Any, *, name: str, func: str, none: bool = False) -> Any:
    """A filesystem path: ``str`` or ``os.PathLike``."""
    return expect(value, (str, os.PathLike), name=name, func=func, accepts="str or os.PathLike", none=none)


def expect_callable(value: T, *, name: str, func: str, none: bool = False) -> T:
    """Something callable (a function, a class, an object with ``__call__``)."""
    if (value is None and none) or callable(value):
        return value
    raise _fail(value, name=name, func=func, accepts="callable or None" if none else "callable")


# -- dataclass records: each field checked against its annotation -----------------------------------------------

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # an annotation that cannot be resolved at runtime: check the fields that can
            hints = {}
            module = __import__(cls.__module__, fromlist=["*"])
            for field in dataclasses.fields(cls):
                try:
                    hints[field.name] = eval(field.type, vars(module)) if isinstance(field.type, str) else field.type  # noqa: S307
                except Exception:
                    hints[field.name] = Any
        _HINTS[cls] = hints
    return hints


def _conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` fits ``hint`` for the simple shapes records use; anything else is taken on trust."""
    if hint is Any or isinstance(hint, TypeVar):
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, arg) for arg in typing.get_args(hint))
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if hint is type(None) or hint is None:
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(item, args[0]) for item in value)
        return len(args) == len(value) and all(_conforms(v, a) for v, a in zip(value, args, strict=True))
    if origin in (list, Sequence):
        return isinstance(value, list if origin is list else Sequence) and not isinstance(value, str)
    if origin in (dict, Mapping):
        return isinstance(value, dict if origin is dict else Mapping)
    if origin is not None:
        return isinstance(value, origin) if isinstance(origin, type) else True
    if isinstance(hint, type):
        try:
            return isinstance(value, hint)
        except TypeError:  # a non-runtime protocol or a generic alias
            return True
    return True


_PLANS: dict[type, list[tuple[str, Any, tuple[type, ...] | None, bool]]] = {}


def _simple(hint: Any) -> tuple[tuple[type, ...], bool] | None:
    """``(types, refuse_bool)`` when ``hint`` is a class or a union of classes and ``None``, else ``None``."""
    origin = typing.get_origin(hint)
    members = typing.get_args(hint) if origin in (typing.Union, types.UnionType) else (hint,)
    listed: list[type] = []
    for member in members:
        if member is None or member is type(None):
            listed.append(type(None))
        elif member is float:
            listed.extend((int, float))
        elif (
            isinstance(member, type)
            and typing.get_origin(member) is None
            and not getattr(member, "_is_protocol", False)
        ):
            listed.append(member)
        else:
            return None
    return tuple(listed), bool not in listed and (int in listed)


def _plan(cls: type) -> list[tuple[str, Any, tuple[type, ...] | None, bool]]:
    plan = _PLANS.get(cls)
    if plan is None:
        hints = _hints(cls)
        plan = []
        for field in dataclasses.fields(cls):
            hint = hints.get(field.name, Any)
            if not field.init or hint is Any:
                continue
            simple = _simple(hint)
            plan.append((field.name, hint, simple[0] if simple else None, simple[1] if simple else False))
        _PLANS[cls] = plan
    return plan


def check_fields(record: Any) -> None:
    """Check every field of a dataclass instance against its annotation (call it from ``__post_init__``).

    Annotations are read once per class; a field whose annotation is a class or a union of classes costs
    one ``isinstance``.
    """
    for name, hint, types_, refuse_bool in _plan(type(record)):
        value = getattr(record, name)
        if types_ is not None:
            if isinstance(value, types_) and not (refuse_bool and value.__class__ is bool):
                continue
        elif _conforms(value, hint):
            continue
        raise _fail(value, name=name, func=type(record).__name__, accepts=_describe(hint))


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in typing.get_args(hint))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(hint))
    if hint is type(None) or hint is None:
        return "None"
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a tuple of {_describe(args[0])}"
        return "a tuple (" + ", ".join(_describe(a) for a in args) + ")"
    if origin is not None:
        return getattr(origin, "__name__", str(origin))
    return getattr(hint, "__name__", str(hint))
