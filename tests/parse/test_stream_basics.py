"""The streaming contract on hand-written cases: every chunking adds up to parse(), markers never leak."""

from __future__ import annotations

import json

import pytest

from tests.chunking import chunkings
from tests.parse.deltas import accumulate, without_flags
from turnkit import FormatNotFoundError
from turnkit.parse import load_format

CASES = [
    (
        "hermes",
        None,
        'Hi <tool_call>\n{"name": "f", "arguments": {"a": [1, {"b": "</tool_call>"}]}}\n</tool_call>',
        {"content": "Hi", "reasoning_content": None, "calls": [("f", {"a": [1, {"b": "</tool_call>"}]})]},
    ),
    (
        "hermes",
        "<|im_start|>assistant\n<think>\n",
        "plan\n</think>\n\nanswer",
        {"content": "answer", "reasoning_content": "plan", "calls": []},
    ),
    (
        "hermes",
        None,
        '<tool_call>{"arguments": {"x": 1}, "name": "late"}</tool_call><tool_call>{"name": "g", '
        '"arguments": "{\\"y\\": 2}"}</tool_call>',
        {"content": None, "reasoning_content": None, "calls": [("late", {"x": 1}), ("g", {"y": 2})]},
    ),
    ("think", None, "<think>a < b</think>c <thin", {"content": "c <thin", "reasoning_content": "a < b", "calls": []}),
    (
        "qwen3_coder_xml",
        None,
        "<tool_call>\n<function=f>\n<parameter=n>\n1\n</parameter>\n<parameter=s>\nx </parameter> y\n</parameter>\n"
        "</function>\n</tool_call>",
        # A close marker not followed by another parameter or the function's close is value text (#16).
        {"content": None, "reasoning_content": None, "calls": [("f", {"n": 1, "s": "x </parameter> y"})]},
    ),
]


def _stream(fmt_name: str, prefix: str | None, pieces: list[str]) -> list[dict[str, object]]:
    parser = load_format(fmt_name).stream(prefix=prefix)
    deltas = []
    for piece in pieces:
        deltas.extend(parser.feed(piece))
    deltas.extend(parser.close())
    return deltas


@pytest.mark.parametrize(("fmt", "prefix", "text", "want"), CASES)
def test_chunkings_add_up_to_parse(fmt: str, prefix: str | None, text: str, want: dict[str, object]) -> None:
    message = load_format(fmt).parse(text, prefix=prefix)
    assert message["content"] == want["content"]
    assert message["reasoning_content"] == want["reasoning_content"]
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]] == want["calls"]
    for name, pieces in chunkings(text):
        assert accumulate(_stream(fmt, prefix, pieces)) == without_flags(dict(message)), name


def test_marker_prefix_is_held_not_emitted() -> None:
    parser = load_format("hermes").stream()
    assert parser.feed("Hello <tool_") == [{"content": "Hello"}]
    assert parser.feed("cal") == []
    out = parser.feed('l>{"name": "f", "arguments": {"a": 1')
    assert out[0]["tool_calls"][0]["function"]["name"] == "f"
    assert "".join(d["tool_calls"][0]["function"]["arguments"] for d in out) == '{"a": 1'


def test_truncated_output_is_flagged_not_raised() -> None:
    message = load_format("hermes").parse('<tool_call>{"name": "f", "arguments": {"a": ')
    assert message["incomplete"] is True
    assert message["tool_calls"][0]["function"]["arguments"] == '{"a": '


def test_argument_fragments_concatenate_to_final_json() -> None:
    text = '<tool_call>{"name": "f", "arguments": {"k": "v", "n": [1, 2]}}</tool_call>'
    deltas = _stream("hermes", None, list(text))
    fragments = [d["tool_calls"][0]["function"]["arguments"] for d in deltas if "tool_calls" in d]
    assert json.loads("".join(fragments)) == {"k": "v", "n": [1, 2]}


def test_unknown_format_names_close_matches() -> None:
    with pytest.raises(FormatNotFoundError, match="hermes"):
        load_format("hermse")


def test_feed_after_close_is_misuse() -> None:
    from turnkit import UsageError

    parser = load_format("think").stream()
    parser.close()
    with pytest.raises(UsageError):
        parser.feed("x")
