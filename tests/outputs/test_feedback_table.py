"""Every feedback a parser sends back to the model is actionable (issue #16, class 6).

A table over the error codes x the parsers that can raise them: the feedback names the field (where
one is at fault), says what was expected and what was found, and stays within MAX_FEEDBACK_BYTES; hints
fit the problem (the JSON-boolean hint only where a boolean is involved); ``str(err)`` prints the
snippet once, not re-escaped.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel

from turnkit import Limits
from turnkit.outputs import (
    MAX_FEEDBACK_BYTES,
    MarkdownCodeBlockParser,
    MarkdownJsonDictParser,
    MarkdownJsonObjectParser,
    MultiTaggedContentParser,
    OutputParseError,
    TaggedContent,
)


class Vote(BaseModel):
    name: str
    sure: bool
    mood: Literal["happy", "sad"] = "happy"


SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "sure": {"type": "boolean"}, "mood": {"enum": ["happy", "sad"]}},
    "required": ["name", "sure"],
}
SMALL = Limits(max_input_chars=100)
DEEP = "[" * 5000 + "]" * 5000


def _tagged(**kwargs: Any) -> MultiTaggedContentParser:
    return MultiTaggedContentParser(
        TaggedContent("name", "<name>", "who", "</name>"),
        TaggedContent("sure", "<sure>", "true/false", "</sure>", parse_json=True),
        **kwargs,
    )


# (id, parser factory, reply, code, field at fault or None, words the feedback must contain)
CASES: list[tuple[str, Any, str, str, str | None, list[str]]] = [
    ("dict-no_json", MarkdownJsonDictParser, "no json here", "no_json", None, ["JSON"]),
    ("object-no_json", MarkdownJsonObjectParser, "nothing", "no_json", None, ["JSON"]),
    (
        "dict-invalid_json",
        MarkdownJsonDictParser,
        '```json\n{"a": 1 "b": 2}\n```',
        "invalid_json",
        None,
        ["Near character"],
    ),
    ("dict-truncated", MarkdownJsonDictParser, '```json\n{"a": "x', "truncated", None, ["JSON"]),
    ("object-too_deep", MarkdownJsonObjectParser, DEEP, "too_deep", None, ["deep"]),
    ("dict-wrong_type", MarkdownJsonDictParser, "```json\n[1, 2]\n```", "wrong_type", None, ["array", "object"]),
    (
        "dict-missing_key",
        lambda: MarkdownJsonDictParser(required_keys=["speak"]),
        '{"say": 1}',
        "missing_key",
        "speak",
        ["say"],
    ),
    (
        "pydantic-missing_key",
        lambda: MarkdownJsonDictParser(schema=Vote),
        '{"name": "a"}',
        "missing_key",
        "sure",
        ["name"],
    ),
    (
        "schema-missing_key",
        lambda: MarkdownJsonDictParser(schema=SCHEMA),
        '{"name": "a"}',
        "missing_key",
        "sure",
        ["name"],
    ),
    (
        "pydantic-bool",
        lambda: MarkdownJsonDictParser(schema=Vote),
        '{"name": "a", "sure": "false"}',
        "schema_mismatch",
        "sure",
        ["boolean", '"false"'],
    ),
    (
        "schema-bool",
        lambda: MarkdownJsonDictParser(schema=SCHEMA),
        '{"name": "a", "sure": "false"}',
        "schema_mismatch",
        "sure",
        ["boolean", '"false"'],
    ),
    (
        "pydantic-enum",
        lambda: MarkdownJsonDictParser(schema=Vote),
        '{"name": "a", "sure": true, "mood": "meh"}',
        "schema_mismatch",
        "mood",
        ["happy", "sad", "meh"],
    ),
    (
        "schema-enum",
        lambda: MarkdownJsonDictParser(schema=SCHEMA),
        '{"name": "a", "sure": true, "mood": "meh"}',
        "schema_mismatch",
        "mood",
        ["happy", "sad", "meh"],
    ),
    (
        "object-schema",
        lambda: MarkdownJsonObjectParser(schema={"type": "array"}),
        '{"a": 1}',
        "schema_mismatch",
        None,
        ["array"],
    ),
    ("tagged-missing_tag", _tagged, "<name>x</name>", "missing_tag", "sure", ["<sure>"]),
    ("tagged-no_json", _tagged, "<name>x</name><sure>yes</sure>", "no_json", "sure", ["JSON", "yes"]),
    ("tagged-invalid_json", _tagged, "<name>x</name><sure>[1 2]</sure>", "invalid_json", "sure", ["JSON"]),
    (
        "tagged-schema",
        lambda: _tagged(schema=SCHEMA),
        '<name>x</name><sure>"no"</sure>',
        "schema_mismatch",
        "sure",
        ["boolean", '"no"'],
    ),
    ("code-missing", lambda: MarkdownCodeBlockParser("python"), "print(1)", "missing_code_block", None, ["python"]),
    ("dict-too_large", lambda: MarkdownJsonDictParser(limits=SMALL), "x" * 200, "input_too_large", None, ["100"]),
    ("tagged-too_large", lambda: _tagged(limits=SMALL), "x" * 200, "input_too_large", None, ["100"]),
    (
        "code-too_large",
        lambda: MarkdownCodeBlockParser("py", limits=SMALL),
        "x" * 200,
        "input_too_large",
        None,
        ["100"],
    ),
]
CODES = {
    "no_json",
    "invalid_json",
    "truncated",
    "too_deep",
    "wrong_type",
    "missing_key",
    "schema_mismatch",
    "missing_tag",
    "missing_code_block",
    "input_too_large",
}  # regex_timeout: tests/outputs/test_hostile.py (needs a pathological pattern and a slow machine budget)


def test_every_code_is_in_the_table() -> None:
    assert {case[3] for case in CASES} == CODES


@pytest.mark.parametrize(("make", "reply", "code", "field", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_feedback_is_actionable(make: Any, reply: str, code: str, field: str | None, words: list[str]) -> None:
    with pytest.raises(OutputParseError) as info:
        make().parse(reply)
    err = info.value
    assert err.code == code
    feedback = err.feedback
    assert len(feedback.encode("utf-8")) <= MAX_FEEDBACK_BYTES
    lines = feedback.splitlines()
    assert len(lines) >= 2, feedback  # the problem, then where / what to do
    if field is not None:
        assert err.pointer == "/" + field
        assert field in feedback
    for word in words:
        assert word in feedback, (word, feedback)
    if "JSON booleans" in feedback:
        assert "bool" in err.message
    assert "at at" not in str(err)


def test_str_prints_the_snippet_once() -> None:
    from turnkit.structured import loads

    with pytest.raises(ValueError) as info:
        loads('["a\nb"]')
    text = str(info.value)
    assert "\\\\n" not in text and "\\n" in text
