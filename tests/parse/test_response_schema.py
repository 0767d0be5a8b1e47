"""Each rule of the x-regex response schema, with hand-written expectations (no reference needed)."""

from __future__ import annotations

from typing import Any

import pytest

import turnkit
from turnkit import ParseError, ResponseSchema, ResponseSchemaError, parse_response

# The two schemas of the seed document (response-parsing), verbatim.
SMOLLM = {
    "x-regex": r"(?:<think>\n?(?P<thinking>.+?)\n?</think>)?\s*(?P<content>.+?)?\s*(?:<\|im_end\|>|$)",
    "type": "object",
    "properties": {"role": {"const": "assistant"}, "content": {"type": "string"}, "thinking": {"type": "string"}},
}
GPT_OSS = {
    "type": "object",
    "properties": {
        "role": {"const": "assistant"},
        "content": {"type": "string", "x-regex": r"<\|channel\|>final<\|message\|>(.*?)(?:<\|end\|>|$)"},
        "thinking": {"type": "string", "x-regex": r"<\|channel\|>analysis<\|message\|>(.*?)<\|end\|>"},
        "tool_calls": {
            "x-regex-iterator": r"<\|channel\|>commentary (to=functions\..*?<\|message\|>.*?)(?:<\|call\|>|$)",
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "type": {"const": "function"},
                    "function": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "x-regex": r"^to=functions\.(\w+)"},
                            "arguments": {
                                "type": "object",
                                "x-regex": r"<\|message\|>(.*)",
                                "x-parser": "json",
                                "additionalProperties": {"type": "any"},
                            },
                        },
                    },
                },
            },
        },
    },
}


def test_seed_smollm_example() -> None:
    out = parse_response("<think>\nLet me think.\n</think>\nThe answer is 4.<|im_end|>", SMOLLM)
    assert out == {"role": "assistant", "content": "The answer is 4.", "thinking": "Let me think."}
    assert list(out) == ["role", "content", "thinking"]  # properties order, as transformers
    assert parse_response("Just text", SMOLLM) == {"role": "assistant", "content": "Just text"}


def test_seed_gpt_oss_example() -> None:
    text = (
        "<|channel|>analysis<|message|>The user asks about the weather.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_current_weather <|constrain|>json"
        '<|message|>{"location": "San Francisco, CA"}<|call|>'
    )
    assert parse_response(text, GPT_OSS) == {
        "role": "assistant",
        "thinking": "The user asks about the weather.",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "get_current_weather", "arguments": {"location": "San Francisco, CA"}},
            }
        ],
    }


def test_object_with_unstructured_input_hands_whole_string_to_each_child() -> None:
    schema = {
        "type": "object",
        "properties": {
            "first": {"type": "string", "x-regex": r"^(\w+)"},
            "last": {"type": "string", "x-regex": r"(\w+)$"},
            "all": {"type": "string"},
        },
    }
    assert parse_response("alpha beta gamma", schema) == {"first": "alpha", "last": "gamma", "all": "alpha beta gamma"}


def test_no_match_omits_the_key_and_root_mismatch_is_none() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "x-regex": r"a=(\w+)"}}}
    assert parse_response("nothing here", schema) == {}
    assert parse_response("nothing", {"type": "object", "x-regex": r"(?P<a>x)", "properties": {}}) is None


def test_iterator_and_items() -> None:
    schema = {"type": "array", "x-regex-iterator": r"<(\d+)>", "items": {"type": "integer"}}
    assert parse_response("<1> <22> <x>", schema) == [1, 22]
    assert parse_response("none", schema) is None


def test_json_parser_transform_and_allow_non_json() -> None:
    schema = {
        "type": "array",
        "x-parser": "json",
        "x-parser-args": {"transform": "[*].{type: 'function', function: {name: tool_name, arguments: parameters}}"},
        "items": {"type": "object", "properties": {"type": {"const": "function"}, "function": {"type": "object"}}},
    }
    out = parse_response('[{"tool_name": "f", "parameters": {"x": 1}}]', schema)
    assert out == [{"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]
    lenient = {"x-parser": "json", "x-parser-args": {"allow_non_json": True}}
    assert parse_response("[1]", lenient) == [1]
    assert parse_response("plain words", lenient) == "plain words"
    with pytest.raises(ParseError) as info:
        parse_response("plain words", {"x-parser": "json"})
    assert info.value.pointer == "/x-parser" and info.value.position == 0


def test_key_value_with_per_value_json() -> None:
    schema = {
        "type": "object",
        "x-regex-key-value": r"<parameter=(?P<key>\w+)>\n(?P<value>.*?)\n</parameter>",
        "additionalProperties": {"x-parser": "json", "x-parser-args": {"allow_non_json": True}},
    }
    text = "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>"
    assert parse_response(text, schema) == {"city": "Paris", "days": 3}


def test_substitutions_run_before_the_regex() -> None:
    schema = {
        "type": "string",
        "x-regex-substitutions": [[r"\s+", " "], [r"(\w+)@(\w+)", r"\2:\1"]],
        "x-regex": r"^ ?(.*?) ?$",
    }
    assert parse_response("  me@host \n\t done ", schema) == "host:me done"


def test_const_default_required_and_additional_properties() -> None:
    schema = {
        "type": "object",
        "x-parser": "json",
        "required": ["name"],
        "additionalProperties": False,
        "properties": {
            "role": {"const": "assistant"},
            "name": {"type": "string"},
            "n": {"type": "integer", "default": 3},
        },
    }
    assert parse_response('{"name": "x", "extra": 1, "role": "user"}', schema) == {
        "role": "assistant",
        "name": "x",
        "n": 3,
    }
    with pytest.raises(ParseError, match="required") as info:
        parse_response('{"n": 1}', schema)
    assert info.value.pointer == ""


def test_const_values_are_not_shared_between_results() -> None:
    schema = {"type": "object", "properties": {"tags": {"const": ["a"]}}}
    first = parse_response("x", schema)
    first["tags"].append("mutated")
    assert parse_response("x", schema) == {"tags": ["a"]}


@pytest.mark.parametrize(
    ("node", "text", "expected"),
    [
        ({"type": "integer"}, " 42 ", 42),
        ({"type": "number"}, "1e3", 1000.0),
        ({"type": "boolean"}, "TRUE", True),
        ({"type": "boolean"}, "0", False),
        ({"type": "string"}, "s", "s"),
        ({"type": "any"}, "s", "s"),
    ],
)
def test_type_coercion(node: dict[str, Any], text: str, expected: Any) -> None:
    result = parse_response(text, node)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(("node", "text"), [({"type": "integer"}, "4.5"), ({"type": "boolean"}, "yes")])
def test_coercion_failure_is_parse_error(node: dict[str, Any], text: str) -> None:
    with pytest.raises(ParseError):
        parse_response(text, node)


def test_array_with_unstructured_input_is_an_error_naming_the_node() -> None:
    schema = {"type": "object", "properties": {"calls": {"type": "array", "x-regex": r"calls=(.*)", "items": {}}}}
    with pytest.raises(ParseError, match="unstructured") as info:
        parse_response("calls=abc", schema)
    assert info.value.pointer == "/properties/calls"
    assert parse_response("calls=", schema) == {"calls": []}


def test_schema_errors_name_the_schema_path() -> None:
    bad = {"type": "object", "properties": {"tool_calls": {"type": "array", "x-regex-iterator": "(a", "items": {}}}}
    with pytest.raises(ResponseSchemaError) as info:
        parse_response("a", bad)
    assert info.value.pointer == "/properties/tool_calls/x-regex-iterator"
    assert "/properties/tool_calls/x-regex-iterator" in str(info.value)


def test_schema_defects_raise_only_where_reached_unless_strict() -> None:
    bad = {"type": "string", "x-regex": "(?P<x>", "x-parser": "yaml"}
    schema = {
        "type": "object",
        "properties": {"outer": {"type": "object", "x-regex": "outer=(.*)", "properties": {"a/b": bad}}},
    }
    compiled = ResponseSchema(schema)
    pointers = [p.pointer for p in compiled.problems]
    assert pointers == ["/properties/outer/properties/a~1b/x-regex", "/properties/outer/properties/a~1b/x-parser"]
    assert compiled.parse("no match") == {}  # the defective node is never reached: transformers succeeds too
    with pytest.raises(ResponseSchemaError) as info:
        compiled.parse("outer=x")
    assert info.value.pointer == "/properties/outer/properties/a~1b/x-regex"
    with pytest.raises(ResponseSchemaError):
        ResponseSchema(schema, strict=True)


def test_response_schema_object_and_cache_follow_the_schema_content() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string", "x-regex": r"a=(\w+)"}}}
    compiled = ResponseSchema(schema)
    assert compiled.parse("a=1") == parse_response("a=1", compiled) == parse_response("a=1", schema) == {"a": "1"}
    schema["properties"]["a"]["x-regex"] = r"a=(\d)\d"  # mutated in place: the cache must not serve the old one
    assert parse_response("a=12", schema) == {"a": "1"}


def test_text_must_be_a_string() -> None:
    with pytest.raises(TypeError):
        parse_response(b"bytes", SMOLLM)  # type: ignore[arg-type]


def test_public_names() -> None:
    assert turnkit.parse_response is parse_response
    assert turnkit.parse.ResponseSchema is ResponseSchema


def test_cache_evicts_and_still_parses_each_schema_correctly() -> None:
    schemas = [{"type": "string", "x-regex": f"k{i}=(\\w+)"} for i in range(80)]
    for round_ in range(2):
        for i, schema in enumerate(schemas):
            assert parse_response(f"k{i}=v{i}r{round_}", schema) == f"v{i}r{round_}"


def test_same_dict_again_notices_nested_in_place_edits() -> None:
    """The identity fast path re-checks the dict's content on every call."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "string", "x-regex": r"b=(\w)"}}}},
    }
    assert parse_response("b=xy", schema) == {"a": {"b": "x"}}
    assert parse_response("b=xy", schema) == {"a": {"b": "x"}}  # served by the fast path
    schema["properties"]["a"]["properties"]["b"]["x-regex"] = r"b=(\w+)"
    assert parse_response("b=xy", schema) == {"a": {"b": "xy"}}
    schema["properties"]["a"]["properties"]["c"] = {"const": 1}
    assert parse_response("b=xy", schema) == {"a": {"b": "xy", "c": 1}}
    del schema["properties"]["a"]["properties"]["c"]
    assert parse_response("b=xy", schema) == {"a": {"b": "xy"}}


def test_cached_schema_is_a_private_copy() -> None:
    """Editing one dict after use never changes what an equal, separate dict parses to."""
    first: dict[str, Any] = {"type": "object", "properties": {"k": {"const": ["x"]}}}
    second: dict[str, Any] = {"type": "object", "properties": {"k": {"const": ["x"]}}}
    assert parse_response("", first) == {"k": ["x"]}
    first["properties"]["k"]["const"].append("y")
    assert parse_response("", first) == {"k": ["x", "y"]}
    assert parse_response("", second) == {"k": ["x"]}


@pytest.mark.parametrize(
    "text",
    [
        "1",
        "\ufeff1",
        "[1, 2]",
        '{"a": NaN}',
        "plain",
        "1e400",
        '"\\ud800"',
        "",
        " \n",
        ' {"a": [1]}\n ',
        "1 2",
        "[1,",
        "{} x",
    ],
)
def test_json_step_decodes_exactly_like_json_loads(text: str) -> None:
    """``turnkit._json.json_loads`` (the schema's JSON step and the streaming parse use it) is ``json.loads``."""
    import json

    from turnkit._json import json_loads as _json_loads

    def outcome(loads: Any) -> object:
        try:
            return repr(loads(text))
        except json.JSONDecodeError as exc:
            return (exc.msg, exc.pos)

    assert outcome(_json_loads) == outcome(json.loads)


def test_turnkit_without_a_response_schema_leaves_the_interpreter_and_its_dependencies_unloaded() -> None:
    """``regex``, ``jmespath`` and the x-regex compiler load with the first compiled schema, not before."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    heavy = sorted(
        ["regex", "jmespath"] + [f"turnkit.parse._schema.{name}" for name in ("compiler", "nodes", "regex", "cost")]
    )
    code = (
        f"import sys, turnkit; heavy = set({heavy!r})\n"
        "turnkit.ChatTemplate('{% for m in messages %}{{ m.content | trim }}{% endfor %}').render("
        "[{'role': 'user', 'content': ' hi '}])\n"
        "assert turnkit.load_format('hermes').parse('hi')['content'] == 'hi'\n"
        "print(sorted(heavy & set(sys.modules)))\n"
        "turnkit.parse_response('hi', {'type': 'string', 'x-regex': '(h)'})\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    # The subprocess imports the turnkit under test (this checkout's src/), not whichever one is installed.
    src = str(Path(turnkit.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    before, after = out.stdout.splitlines()
    assert before == "[]"
    assert after == str(heavy)
