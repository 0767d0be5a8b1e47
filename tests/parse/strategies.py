"""Hypothesis strategies shared by the parser tests: model outputs made of a format's own markers and snippets."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st

from turnkit.parse import FormatSpec

_SKIP_FIELDS = {"name", "description", "notes", "ids", "aliases"}


def markers_of(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, str):
        if value:
            found.add(value)
    elif isinstance(value, tuple):
        for item in value:
            found |= markers_of(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            if field.name not in _SKIP_FIELDS:
                found |= markers_of(getattr(value, field.name))
    return found


_SNIPPETS = [
    '{"name": "f", "arguments": {"a": 1}}',
    '{"x": "y"}',
    '[{"name": "g", "arguments": {}}]',
    "f(a=1)",
    '"',
    "{",
    "}",
    "[",
    "]",
    "\n",
    " ",
    "name",
    "=",
    ">",
    "<",
    "call:f{k:1}",
    "functions.f:0",
    "1",
    "\x00",
    "\x00reject",
    "\x01\x1f\x7f",
    "é\u2028",
]


def format_outputs(spec: FormatSpec) -> st.SearchStrategy[str]:
    pieces = sorted(markers_of(spec)) + _SNIPPETS
    fragment = st.one_of(st.sampled_from(pieces), st.text(alphabet='ab <>{}"[]:,=\n\\\x00\x1b', max_size=6))
    return st.lists(fragment, max_size=14).map("".join)
