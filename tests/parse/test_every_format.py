"""Cases run over every built-in format: control characters in the output, and the JSON depth limit."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chunking import chunkings, with_control_characters
from tests.parse.calls import NAME, TOOLS, json_argument_formats, sample_calls
from tests.parse.deltas import accumulate, without_flags
from turnkit import LimitExceededError, Limits
from turnkit.parse import OutputFormat, list_formats, load_format

JSON_FORMATS = json_argument_formats()


def _streamed(fmt: OutputFormat, pieces: list[str], **options: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    parser = fmt.stream(tools=TOOLS, **options)
    deltas = []
    for piece in pieces:
        deltas.extend(parser.feed(piece))
    deltas.extend(parser.close())
    return deltas, dict(parser.message)


def test_nul_text_after_a_call_is_content_whole_and_streamed() -> None:
    fmt = load_format("hermes")
    text = '<tool_call>{"name": "f", "arguments": {}}\x00reject'
    for cut, pieces in chunkings(text):
        _deltas, message = _streamed(fmt, pieces)
        assert message["content"] == "\x00reject", cut
        assert [c["function"] for c in message["tool_calls"]] == [{"name": "f", "arguments": {}}], cut


@pytest.mark.parametrize("name", list_formats())
def test_control_characters_whole_equals_streamed(name: str) -> None:
    fmt = load_format(name)
    for base in ["plain text", *sample_calls(fmt.spec, '{"a": {"b": [1, "\\u0000"]}}')]:
        for text in with_control_characters(base):
            whole = dict(fmt.parse(text, tools=TOOLS))
            for cut, pieces in chunkings(text, random_cuts=1):
                deltas, message = _streamed(fmt, pieces)
                assert accumulate(deltas) == without_flags(whole), (cut, text)
                assert message == whole, (cut, text)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # An envelope value that is not a call is an ordinary value (was: the rest of the chunk dropped).
        ("generic", '{"tool_call": 5, "response": "hi"}'),
        ("generic", '{"tool_call": [1], "tool_calls": [{"name": "f", "arguments": {}}]}'),
        # A region that turns out not to be a call after more than 4096 characters is content, all of it
        # (was: only its opening marker when streamed).
        ("xlam", "[" + '{"a": 1}, ' * 600 + '{"a": 1}] tail'),
    ],
)
def test_whole_equals_streamed_when_a_body_is_no_call(name: str, text: str) -> None:
    fmt = load_format(name)
    whole = dict(fmt.parse(text))
    for cut, pieces in chunkings(text, random_cuts=1):
        deltas, message = _streamed(fmt, pieces)
        assert accumulate(deltas) == without_flags(whole), cut
        assert message == whole, cut
    if name == "xlam":
        assert whole["content"] == text


def _nested(depth: int) -> str:
    """Arguments ``{"a": {"b": [[...]]}}`` whose deepest array is ``depth`` levels down."""
    return '{"a": {"b": ' + "[" * (depth - 2) + "1" + "]" * (depth - 2) + "}}"


def test_every_json_argument_format_has_a_sample() -> None:
    assert "hermes" in JSON_FORMATS and "gpt_oss" in JSON_FORMATS and "kimi_k2" in JSON_FORMATS
    for name in JSON_FORMATS:
        assert sample_calls(load_format(name).spec, _nested(3)), name


OTHER_CALL_FORMATS = [
    name for name in list_formats() if name not in JSON_FORMATS and sample_calls(load_format(name).spec, _nested(3))
]


@pytest.mark.parametrize("name", JSON_FORMATS)
def test_json_depth_limit_in_arguments(name: str) -> None:
    """``Limits.max_json_depth`` holds for tool-call arguments, whole and streamed, as one typed error."""
    _check_depth_limit(name)


@pytest.mark.parametrize("name", OTHER_CALL_FORMATS)
def test_json_depth_limit_in_typed_arguments(name: str) -> None:
    """The same limit for values converted to JSON (XML parameters, Python literals, Gemma's keyed dicts)."""
    _check_depth_limit(name)


def _check_depth_limit(name: str) -> None:
    fmt = load_format(name)
    limits = Limits(max_json_depth=5)
    for text in sample_calls(fmt.spec, _nested(5)):
        # At the limit: the call is read as usual.
        for cut, pieces in chunkings(text, random_cuts=1):
            _deltas, message = _streamed(fmt, pieces, limits=limits)
            calls = [c["function"] for c in message["tool_calls"]]
            assert calls == [{"name": NAME, "arguments": {"a": {"b": [[[1]]]}}}], (cut, text, message)
    for text in sample_calls(fmt.spec, _nested(50)):
        for cut, pieces in chunkings(text, random_cuts=1):
            with pytest.raises(LimitExceededError, match="max_json_depth=5"):
                _streamed(fmt, pieces, limits=limits)
            assert cut
