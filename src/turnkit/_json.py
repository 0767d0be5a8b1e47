"""JSON helpers shared by several packages: JSON Pointer (RFC 6901) tokens, a deep copy, ``loads`` fast and safe.

A leaf module: it imports nothing from turnkit but the errors, so every package may use it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, cast

from turnkit.errors import JsonPatchError

__all__ = [
    "escape_token",
    "json_copy",
    "json_loads",
    "loads_or_none",
    "pointer_join",
    "split_pointer",
    "unescape_token",
]

_DECODER: Any = json.JSONDecoder()
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once
"""What ``json.loads`` scans with (the C scanner of a default decoder: it clears its memo after each value)."""
_SPACE = cast("Callable[[str, int], re.Match[str]]", re.compile(r"[ \t\n\r]*").match)  # (always matches)
"""``json.decoder.WHITESPACE``: the whitespace ``json.loads`` skips around the value."""


def escape_token(key: str) -> str:
    """One reference token: ``~`` becomes ``~0`` and ``/`` becomes ``~1``."""
    if "~" in key:
        key = key.replace("~", "~0")
    if "/" in key:
        key = key.replace("/", "~1")
    return key


def unescape_token(token: str) -> str:
    """The key a reference token names (the inverse of :func:`escape_token`)."""
    if "~" in token:
        token = token.replace("~1", "/").replace("~0", "~")
    return token


def pointer_join(pointer: str, *parts: object) -> str:
    """``pointer`` extended by one reference token per part (ints and other values as their ``str``)."""
    for part in parts:
        pointer += "/" + escape_token(str(part))
    return pointer


def split_pointer(pointer: object) -> list[str]:
    """The unescaped reference tokens of ``pointer``; ``""`` (the whole document) has none."""
    if not isinstance(pointer, str):
        raise JsonPatchError(f"a JSON Pointer must be a string, not {type(pointer).__name__}")
    if pointer == "":
        return []
    if pointer[0] != "/":
        raise JsonPatchError("a JSON Pointer must be empty or start with '/'", pointer=pointer)
    tokens = pointer[1:].split("/")
    if "~" in pointer:
        for i, token in enumerate(tokens):
            if "~" in token:
                bad = token.replace("~0", "").replace("~1", "")
                if "~" in bad:
                    raise JsonPatchError("'~' in a JSON Pointer must be followed by 0 or 1", pointer=pointer)
                tokens[i] = unescape_token(token)
    return tokens


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON value (dicts and lists copied, scalars shared), without recursion.

    Iterative so that any depth the parser accepts can be copied under Python's recursion limit.
    """
    t = type(value)
    if t is not dict and t is not list:
        return value
    root: Any = {} if t is dict else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if type(source) is dict else enumerate(source)
        is_dict = type(target) is dict
        for key, item in items:
            kind = type(item)
            if kind is dict or kind is list:
                copy: Any = {} if kind is dict else []
                stack.append((item, copy))
                item = copy
            if is_dict:
                target[key] = item
            else:
                target.append(item)
    return root


def json_loads(text: str) -> Any:
    """``json.loads(text)`` for a ``str``: the same decoder settings, value and errors, without the three Python
    frames (``loads``, ``decode``, ``raw_decode``) it goes through to reach the scanner (hot in streaming parses)."""
    if text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        value, end = _SCAN(text, _SPACE(text, 0).end())
    except StopIteration as err:
        raise json.JSONDecodeError("Expecting value", text, err.value) from None
    end = _SPACE(text, end).end()
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def loads_or_none(text: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``text`` is valid JSON, else ``(False, None)``; never raises."""
    try:
        return True, json_loads(text)
    except (ValueError, RecursionError):
        return False, None
