"""``schema=``: the instruction shows the schema deterministically; values are validated strictly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

import turnkit
from turnkit.outputs import MarkdownJsonDictParser, MarkdownJsonObjectParser, MultiTaggedContentParser, ParseError
from turnkit.outputs import TaggedContent as T
from turnkit.outputs._schema_check import SchemaChecker


class Discussion(BaseModel):
    thought: str
    speak: str
    finish_discussion: bool


class Vote(BaseModel):
    name: Literal["Alice", "Bob"]
    confidence: float = Field(ge=0, le=1)
    reasons: list[str] = []


WEREWOLF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "thought": {"type": "string"},
        "speak": {"type": "string"},
        "finish_discussion": {"type": "boolean"},
    },
    "required": ["thought", "speak", "finish_discussion"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("schema", [Discussion, WEREWOLF_SCHEMA], ids=["pydantic", "json-schema"])
def test_string_false_is_not_a_boolean(schema: Any) -> None:
    """The werewolf bug: ``"false"`` is truthy; strict validation refuses it and says why."""
    parser = MarkdownJsonDictParser(schema=schema, keys_to_metadata=["finish_discussion"])
    with pytest.raises(ParseError) as info:
        parser.parse('```json\n{"thought": "t", "speak": "s", "finish_discussion": "false"}\n```')
    err = info.value
    assert err.code == "schema_mismatch"
    assert err.pointer == "/finish_discussion"
    assert "boolean" in err.feedback and '"false"' in err.feedback
    res = parser.parse('```json\n{"thought": "t", "speak": "s", "finish_discussion": false}\n```')
    assert parser.to_metadata(res.parsed) == {"finish_discussion": False}


@pytest.mark.parametrize(
    "bad",
    [
        '{"thought": "t", "speak": 1, "finish_discussion": true}',
        '{"thought": "t", "speak": "s", "finish_discussion": 0}',
        '{"thought": "t", "finish_discussion": true}',
    ],
)
@pytest.mark.parametrize("schema", [Discussion, WEREWOLF_SCHEMA], ids=["pydantic", "json-schema"])
def test_no_coercion(schema: Any, bad: str) -> None:
    with pytest.raises(ParseError) as info:
        MarkdownJsonDictParser(schema=schema).parse(bad)
    assert info.value.code == ("missing_key" if "speak" not in bad else "schema_mismatch")


def test_pydantic_result_is_dict_and_model() -> None:
    parser = MarkdownJsonDictParser(schema=Vote, keys_to_content="name")
    res = parser.parse('```json\n{"name": "Bob", "confidence": 0.5}\n```')
    assert res.parsed == {"name": "Bob", "confidence": 0.5, "reasons": []}
    assert isinstance(res.validated, Vote) and res.validated.name == "Bob"
    assert parser.to_content(res.parsed) == "Bob"
    with pytest.raises(ParseError) as info:
        parser.parse('{"name": "Carol", "confidence": 2}')
    assert info.value.pointer in {"/name", "/confidence"}


def test_pydantic_model_as_content_hint_like_agentscope() -> None:
    parser = MarkdownJsonDictParser(content_hint=Discussion)
    assert parser.schema is not None
    assert "{a_JSON_dictionary}" in parser.format_instruction


def test_instruction_shows_schema_deterministically() -> None:
    a = MarkdownJsonDictParser(schema=Discussion).format_instruction
    b = MarkdownJsonDictParser(schema=Discussion).format_instruction
    assert a == b
    assert a.startswith(
        "You should respond a json object in a json fenced code block as follows:\n```json\n{a_JSON_dictionary}\n```\n"
        "The generated JSON dictionary MUST follow this schema: \n{\n"
    )
    shown = json.loads(a.split("MUST follow this schema: \n", 1)[1])
    assert shown == Discussion.model_json_schema()
    code = (
        "from turnkit.outputs import MarkdownJsonObjectParser as P;"
        f"print(P(schema={WEREWOLF_SCHEMA!r}).format_instruction)"
    )
    src = str(Path(turnkit.__file__).resolve().parent.parent)
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": src},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outs) == 1
    assert "The generated JSON object MUST follow this schema" in outs.pop()


def test_tagged_with_schema() -> None:
    parser = MultiTaggedContentParser(
        T("speak", "<speak>", "what you say", "</speak>"),
        T("finish", "<finish>", "true/false", "</finish>", parse_json=True),
        schema={"type": "object", "properties": {"finish": {"type": "boolean"}}, "required": ["speak", "finish"]},
    )
    assert "MUST follow this schema" in parser.format_instruction
    assert parser.parse("<speak>hi</speak><finish>false</finish>").parsed == {"speak": "hi", "finish": False}
    with pytest.raises(ParseError) as info:
        parser.parse('<speak>hi</speak><finish>"false"</finish>')
    assert info.value.code == "schema_mismatch"


def test_tagged_schema_type_needs_parse_json() -> None:
    with pytest.raises(turnkit.UsageError, match="parse_json=True"):
        MultiTaggedContentParser(T("finish_discussion", "<f>", "true/false", "</f>"), schema=Discussion)


@pytest.mark.parametrize(
    "schema",
    [{"type": "object", "patternProperties": {}}, {"if": {}}, {"$ref": "https://example.com/s.json"}, {"type": "nope"}],
)
def test_unsupported_schema_refused_up_front(schema: dict[str, Any]) -> None:
    with pytest.raises(turnkit.UsageError):
        MarkdownJsonObjectParser(schema=schema)


# Differential: the checker against the jsonschema reference, on the same schema/value pairs.
SCHEMAS: list[dict[str, Any]] = [
    WEREWOLF_SCHEMA,
    Vote.model_json_schema(),
    {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3, "uniqueItems": True},
    {"type": ["string", "null"], "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"},
    {"type": "number", "minimum": 0, "exclusiveMaximum": 10, "multipleOf": 0.5},
    {"enum": [1, "1", True, None]},
    {"const": {"a": [1, 2]}},
    {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    {"oneOf": [{"type": "integer"}, {"type": "number"}]},
    {"allOf": [{"type": "object"}, {"required": ["x"]}], "not": {"required": ["y"]}},
    {"prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": False},
    {
        "$defs": {
            "node": {"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}}
        },
        "$ref": "#/$defs/node",
    },
    {"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {"type": "integer"}},
]
VALUES: list[Any] = [
    None, True, False, 0, 1, 1.0, 1.5, 2.5, -1, 10, "1", "ab", "abcde", "AB", "true", "false", [], [1], [1, 1],
    [1, 2, 3, 4], ["a", True], ["a", True, 1], {"a": [1, 2]}, {"x": 1}, {"x": 1, "y": 2}, {}, {"a": "x"},
    {"thought": "t", "speak": "s", "finish_discussion": "false"},
    {"thought": "t", "speak": "s", "finish_discussion": True},
    {"name": "Bob", "confidence": 0.3}, {"name": "Bob", "confidence": "0.3"},
    {"next": {"next": None}}, {"next": {"next": 3}},
]  # fmt: skip


@pytest.mark.parametrize("schema", SCHEMAS, ids=[f"schema{i}" for i in range(len(SCHEMAS))])
def test_checker_agrees_with_jsonschema(schema: dict[str, Any]) -> None:
    checker = SchemaChecker(schema)
    reference = jsonschema.Draft202012Validator(schema)
    for value in VALUES:
        assert (not checker.errors(value)) == reference.is_valid(value), (schema, value)
