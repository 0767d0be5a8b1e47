"""Hugging Face response templates: loading (errors at load time), model folders, streaming, time budgets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import turnkit
from tests.parse.deltas import join_response_deltas
from turnkit.limits import Limits

QWEN = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open_pattern": r"\s*<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"\s*(?:<\|im_end\|>|<\|endoftext\|>)"},
    },
}
OUTPUT = '<think>plan</think>Hi<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call><|im_end|>'
EXPECTED = {
    "role": "assistant",
    "reasoning_content": "plan",
    "content": "Hi",
    "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}],
}


def test_parse_and_prefix() -> None:
    assert turnkit.parse_response(OUTPUT, QWEN) == EXPECTED
    assert turnkit.parse_response_template(OUTPUT, QWEN) == EXPECTED
    prefix = "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n"
    message = turnkit.ResponseTemplateFormat(QWEN).parse("still thinking</think>Done<|im_end|>", prefix=prefix)
    assert message == {"role": "assistant", "reasoning_content": "still thinking", "content": "Done"}


def test_x_regex_schemas_keep_their_behaviour() -> None:
    schema = {"type": "object", "properties": {"content": {"type": "string"}}, "x-regex": r"(?P<content>.*)"}
    assert turnkit.parse_response("hello", schema) == {"content": "hello"}
    with pytest.raises(turnkit.UsageError):
        turnkit.parse_response("hello", schema, prefix="x")


def test_stream_deltas_join_to_the_parse() -> None:
    fmt = turnkit.ResponseTemplateFormat(QWEN)
    stream = fmt.stream()
    assert stream.incremental
    deltas: list[dict[str, Any]] = []
    for i in range(0, len(OUTPUT), 5):
        deltas += stream.feed(OUTPUT[i : i + 5])
    # The defaults first, the tool call as soon as it is complete; reasoning and content could still be
    # replaced by a later region, so they come at close.
    assert deltas == [{"role": "assistant"}, {"tool_calls": EXPECTED["tool_calls"]}]
    deltas += stream.close()
    assert deltas[-1] == {"reasoning_content": "plan", "content": "Hi"}
    assert join_response_deltas(deltas) == EXPECTED and stream.message == EXPECTED
    assert {"type": "region_close", "field": "reasoning_content", "value": "plan"} in stream.events
    with pytest.raises(turnkit.UsageError):
        stream.feed("x")


@pytest.mark.parametrize(
    ("template", "key", "why"),
    [
        ({"fields": {"content": {}}}, "start_anchor", "must define"),
        ({**QWEN, "extra": 1}, "(root)", "unknown keys"),
        ({**QWEN, "version": 2}, "version", "unsupported"),
        ({**QWEN, "fields": {}}, "fields", "non-empty"),
        (
            {**QWEN, "fields": {"content": {"open_pattern": "(unclosed"}}},
            "fields.content.open_pattern",
            "invalid regex",
        ),
        ({**QWEN, "fields": {"content": {"content": "yaml"}}}, "fields.content.content", "unknown content parser"),
        ({**QWEN, "fields": {"c": {"open": "<a>", "join": ","}}}, "fields.c.join", "repeats"),
        ({**QWEN, "fields": {"c": {"open_pattern": "<(?P<n>a)>"}}}, "fields.c", "named group"),
        ({**QWEN, "fields": {"c": {"open": "<a>", "transform": "x{content}"}}}, "fields.c.transform", "mixes"),
        ({**QWEN, "fields": {"a": {"close": "x"}, "b": {"close": "y"}}}, "fields", "at most one"),
        (
            {**QWEN, "fields": {"c": {"open": "<a>", "content": "xml-inline", "content_args": {"tag_pattern": "x"}}}},
            "fields.c.content_args.tag_pattern",
            "named group 'key'",
        ),
        ({**QWEN, "start_anchor": ""}, "(root).start_anchor", "empty"),
    ],
)
def test_malformed_templates_fail_at_load_naming_the_key(template: dict[str, Any], key: str, why: str) -> None:
    with pytest.raises(turnkit.ResponseTemplateError, match=why) as info:
        turnkit.ResponseTemplateFormat(template)
    assert info.value.key == key and key in str(info.value)


def test_regex_time_budget() -> None:
    slow = {**QWEN, "fields": {"content": {"open_pattern": r"(a|aa)+c"}}}
    fmt = turnkit.ResponseTemplateFormat(slow, limits=Limits(regex_timeout_s=0.05, parse_timeout_s=0.2))
    with pytest.raises(turnkit.RegexTimeoutError):
        fmt.parse("a" * 40 + "!")


def test_model_folder_round_trip_and_precedence(tmp_path: Path) -> None:
    template = "{% for m in messages %}{{ m.content }}<tool_call>{{ m.tool_calls | tojson }}</tool_call>{% endfor %}"
    folder = tmp_path / "model"
    turnkit.write_model_folder(folder, chat_template=template, response_template=QWEN)
    read = turnkit.read_model_folder(folder)
    assert read.response_template == QWEN
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["response_template"] == QWEN
    chosen = turnkit.model_format(folder)
    assert chosen.source == "response_template" and "response_template" in chosen.reason
    assert chosen.detection is not None and chosen.detection.format == "hermes"
    assert chosen.format.parse(OUTPUT) == EXPECTED

    plain = tmp_path / "plain"
    turnkit.write_model_folder(plain, chat_template=template)
    chosen = turnkit.model_format(plain)
    assert chosen.source == "detected" and chosen.format.name == "hermes"
    assert turnkit.read_model_folder(plain).response_template is None


def test_malformed_folder_template_fails_when_the_format_is_built(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    turnkit.write_model_folder(folder, chat_template="{{ x }}", response_template={"fields": {"c": {}}})
    with pytest.raises(turnkit.ResponseTemplateError, match="start_anchor"):
        turnkit.model_format(folder)
    (folder / "tokenizer_config.json").write_text('{"response_template": 3}', encoding="utf-8")
    with pytest.raises(turnkit.TemplateError, match="response_template must be a JSON object"):
        turnkit.read_model_folder(folder)
