"""The message model: normalisation and the two outside forms."""

from __future__ import annotations

import json

import pytest

from turnkit import ParseError
from turnkit.messages import assistant_message, normalize_message, to_openai, to_template, tool_call


def test_wire_form_has_json_string_arguments_and_round_trips() -> None:
    message = assistant_message("hi", reasoning_content="why", tool_calls=[tool_call("f", {"a": [1, "é"]}, id="c1")])
    wire = to_openai(message)
    assert wire["tool_calls"][0]["function"]["arguments"] == '{"a": [1, "é"]}'
    assert normalize_message(wire) == message


def test_template_form_has_thinking_and_dict_arguments() -> None:
    message = assistant_message(None, reasoning_content="why", tool_calls=[tool_call("f", {"a": 1}, id="c1")])
    form = to_template(message)
    assert form["thinking"] == "why" and form["content"] == ""
    assert form["tool_calls"][0]["function"]["arguments"] == {"a": 1}
    assert normalize_message(form) == message


def test_flat_calls_and_empty_strings_normalise() -> None:
    message = normalize_message({"content": "", "tool_calls": [{"name": "f", "arguments": '{"x": 2}'}]})
    assert message["content"] is None
    assert message["tool_calls"] == [
        {"id": "call_0", "type": "function", "function": {"name": "f", "arguments": {"x": 2}}}
    ]


def test_no_tool_calls_key_on_the_wire_when_there_are_none() -> None:
    assert "tool_calls" not in to_openai({"role": "assistant", "content": "x"})


def test_invalid_argument_json_is_a_parse_error_with_a_pointer() -> None:
    with pytest.raises(ParseError) as info:
        normalize_message({"tool_calls": [{"function": {"name": "f", "arguments": "{nope"}}]})
    assert info.value.pointer == "/tool_calls/0/function/arguments"


def test_parsed_message_converts_to_wire() -> None:
    from turnkit.parse import load_format

    message = load_format("hermes").parse('<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>')
    assert json.loads(to_openai(message)["tool_calls"][0]["function"]["arguments"]) == {"a": 1}
