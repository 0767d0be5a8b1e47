"""Differential test: turnkit.get_json_schema against transformers 5.23 on the same functions.

Every case in schema_cases.py runs through both for real; the schemas must serialise to the same
JSON text (key order included, since templates print them with ``tojson``), or both must fail.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turnkit
from tests.tools.schema_cases import CASES
from turnkit.tools._docstring import parse_google_docstring

transformers_utils = pytest.importorskip("transformers.utils")
chat_template_utils = pytest.importorskip("transformers.utils.chat_template_utils")

pytestmark = pytest.mark.reference


def _reference(func: Any) -> tuple[str, Any]:
    try:
        return "ok", transformers_utils.get_json_schema(func)
    except Exception as exc:  # any failure counts: transformers raises several unrelated types
        return "error", exc


def test_enough_cases() -> None:
    failing = [name for name in CASES if name.startswith("fail_")]
    assert len(CASES) >= 40 and len(failing) >= 15


@pytest.mark.parametrize("case_id", list(CASES))
def test_same_schema_or_same_failure(case_id: str) -> None:
    func = CASES[case_id]
    outcome, expected = _reference(func)
    # The ids say which side we expect, so a silent change of transformers' behaviour shows up too.
    assert (outcome == "error") == case_id.startswith("fail_"), f"transformers gave {outcome}: {expected!r}"
    if outcome == "ok":
        got = turnkit.get_json_schema(func)
        assert json.dumps(got, ensure_ascii=False) == json.dumps(expected, ensure_ascii=False)
        assert got == expected
    else:
        with pytest.raises(turnkit.ToolSchemaError) as info:
            turnkit.get_json_schema(func)
        message = str(info.value)
        what = repr(func.__name__) if hasattr(func, "__name__") else type(func).__name__
        assert what in message, message


def _has_signature(func: Any) -> bool:
    try:
        inspect.signature(func)
    except (TypeError, ValueError):
        return False
    return True


@pytest.mark.parametrize("case_id", [c for c in CASES if c.startswith("fail_") and _has_signature(CASES[c])])
def test_failure_names_the_argument(case_id: str) -> None:
    """Where a single argument is at fault, the error names it."""
    func = CASES[case_id]
    params = list(inspect.signature(func).parameters)
    with pytest.raises(turnkit.ToolSchemaError) as info:
        turnkit.get_json_schema(func)
    message = str(info.value)
    if "no docstring" in message or "cannot be read" in message:
        return  # whole-function problems
    assert any(repr(param) in message for param in params), message


# Pieces of docstrings, weighted towards the tokens the grammar cares about.
_DOC_PIECES = [
    "Args:", "Returns:", "Raises:", "Args:\n", "Returns:\n", "\n", "\n", "\n", " ", "  ", "    ", "\t",
    "x", "y", "z_1", ":", " : ", "x:", "y:", "*args:", '(choices: ["a"])', "(CHOICES: [1, 2])", "word",
    "\u00a0", "\r", "\n    x: ", "\n  y: ", "\n        more", "é", "東京:",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_DOC_PIECES), max_size=30))
def test_docstring_grammar_matches_transformers(pieces: list[str]) -> None:
    doc = "".join(pieces).strip()
    description, args, returns = chat_template_utils.parse_google_format_docstring(doc)
    parsed = parse_google_docstring(doc)
    assert (parsed.description, parsed.args, parsed.returns) == (description, args, returns)


_TRANSFORMERS_KINDS = ("TypeHintParsingException", "DocstringParsingException")


@pytest.mark.parametrize("case_id", [c for c in CASES if c.startswith("fail_")])
def test_same_exception_kind_as_transformers(case_id: str) -> None:
    """Code written for transformers catches TypeHintParsingException / DocstringParsingException: so does ours.

    Where transformers raises one of them, turnkit raises its subclass of ToolSchemaError with that name;
    elsewhere (a non-function, an unresolvable forward reference, bad ``(choices: ...)``) neither.
    """
    func = CASES[case_id]
    _, expected = _reference(func)
    with pytest.raises(turnkit.ToolSchemaError) as info:
        turnkit.get_json_schema(func)
    kind = type(expected).__name__
    for name in _TRANSFORMERS_KINDS:
        assert isinstance(info.value, getattr(turnkit, name)) == (kind == name), (kind, info.value)


def test_exception_names_match_transformers() -> None:
    for name in _TRANSFORMERS_KINDS:
        ours = getattr(turnkit, name)
        assert issubclass(ours, turnkit.ToolSchemaError) and ours.__name__ == name
        assert hasattr(chat_template_utils, name)
