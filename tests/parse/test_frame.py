"""The message frame (issue #16, class 10): ``stream(frame=True)`` gives ``{"role": "assistant"}`` first and
``{"finish_reason": ...}`` last, for every chunking; the deltas between are the unframed stream's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chunking import chunkings
from tests.parse.deltas import accumulate, without_flags
from turnkit import UsageError
from turnkit.parse import load_format

CASES = [
    ("hermes", "Just text.", "stop"),
    ("hermes", "", "stop"),
    ("hermes", '<think>hm</think>Hi <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>', "tool_calls"),
    ("hermes", '<tool_call>{"name": "f", "arguments": {"a": ', "tool_calls"),
    ("functionary_v3_2", 'get\n{"a": 1}', "tool_calls"),
    ("gpt_oss", "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>ok", "stop"),
    ("pythonic", "[f(a=1)]", "tool_calls"),
    (
        "qwen3_coder_xml",
        "<tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>",
        "tool_calls",
    ),
]


def _framed(fmt: str, pieces: list[str], prefix: str | None = None, **close: Any) -> list[dict[str, Any]]:
    parser = load_format(fmt).stream(frame=True, prefix=prefix)
    return [d for piece in pieces for d in parser.feed(piece)] + parser.close(**close)


@pytest.mark.parametrize(("fmt", "text", "reason"), CASES)
def test_frame_first_role_last_finish_reason(fmt: str, text: str, reason: str) -> None:
    prefix = ">>>" if fmt == "functionary_v3_2" else None
    message = load_format(fmt).parse(text, prefix=prefix)
    for name, pieces in chunkings(text):
        deltas = _framed(fmt, pieces, prefix)
        assert deltas[0] == {"role": "assistant"}, name
        assert deltas[-1] == {"finish_reason": reason}, name
        inner = deltas[1:-1]
        assert all("role" not in d and "finish_reason" not in d for d in inner), name
        assert accumulate(inner) == without_flags(message), name  # whole = streamed still holds
        plain = load_format(fmt).stream(prefix=prefix)
        assert inner == [d for piece in pieces for d in plain.feed(piece)] + plain.close(), name


def test_role_comes_with_the_first_feed_even_when_nothing_settled() -> None:
    parser = load_format("hermes").stream(frame=True)
    assert parser.feed("<tool_") == [{"role": "assistant"}]
    assert parser.feed("x") == [{"content": "<tool_x"}]
    assert parser.close() == [{"finish_reason": "stop"}]


@pytest.mark.parametrize("reason", ["length", "content_filter", "stop", "tool_calls"])
def test_caller_given_finish_reason_wins(reason: str) -> None:
    for name, pieces in chunkings('Hi <tool_call>{"name": "f", "arguments": {"a": 1'):
        deltas = _framed("hermes", pieces, finish_reason=reason)
        assert deltas[-1] == {"finish_reason": reason}, name


def test_unframed_stream_is_unchanged_and_refuses_finish_reason() -> None:
    parser = load_format("hermes").stream()
    assert parser.feed("Hi") == [{"content": "Hi"}] and parser.close() == []
    with pytest.raises(UsageError):
        load_format("hermes").stream().close(finish_reason="length")
    with pytest.raises(UsageError):
        load_format("hermes").stream(frame=True).close(finish_reason="eos")
