"""Cases run over every built-in format: control characters in the output."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chunking import chunkings, with_control_characters
from tests.parse.calls import TOOLS, sample_calls
from tests.parse.deltas import accumulate, without_flags
from turnkit.parse import OutputFormat, list_formats, load_format


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
