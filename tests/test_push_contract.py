"""One contract for every push object (ARCHITECTURE.md, "The push-object contract").

``StreamParser``, ``ResponseTemplateStream``, ``JsonStream``, ``StructuredStream`` and ``ReplyStream`` are fed
``str`` chunks and closed once. Misuse is a :class:`turnkit.UsageError`, the same for all five: a second
``close()``, ``feed()`` after ``close()``, and a chunk that is not ``str`` (which also ends the stream: everything
after it is refused).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import turnkit
from turnkit.outputs import MarkdownJsonDictParser, MultiTaggedContentParser, TaggedContent
from turnkit.structured import JsonStream, StructuredStream

# name -> (make a fresh push object, a complete valid input)
PUSH_OBJECTS: dict[str, tuple[Callable[[], Any], str]] = {
    "StreamParser": (lambda: turnkit.load_format("hermes").stream(), 'Hi <tool_call>{"name": "f", "arguments": {}}'),
    "JsonStream": (JsonStream, '{"a": [1, "two"]}'),
    "ResponseTemplateStream": (
        lambda: turnkit.ResponseTemplateFormat(
            {
                "start_anchor": "<|im_start|>assistant\n",
                "fields": {"reasoning_content": {"open": "<think>", "close": "</think>"}, "content": {}},
            }
        ).stream(),
        "<think>hm</think>Hello",
    ),
    "StructuredStream": (lambda: StructuredStream({"type": "object"}), '{"a": [1, "two"]}'),
    "JsonReplyStream": (lambda: MarkdownJsonDictParser().stream(), '```json\n{"a": 1}\n```'),
    "TaggedReplyStream": (
        lambda: MultiTaggedContentParser(TaggedContent("answer", "<answer>", "yes or no", "</answer>")).stream(),
        "<answer>yes</answer>",
    ),
}

WRONG_CHUNKS = [b"{}", None, 42, ["a"], bytearray(b"x")]


@pytest.fixture(params=sorted(PUSH_OBJECTS))
def push(request: pytest.FixtureRequest) -> tuple[Callable[[], Any], str]:
    return PUSH_OBJECTS[request.param]


def _fed(push: tuple[Callable[[], Any], str]) -> Any:
    make, text = push
    stream = make()
    for i in range(0, len(text), 3):
        stream.feed(text[i : i + 3])
    return stream


def test_second_close_is_misuse(push: tuple[Callable[[], Any], str]) -> None:
    stream = _fed(push)
    stream.close()
    with pytest.raises(turnkit.UsageError, match="close"):
        stream.close()


def test_feed_after_close_is_misuse(push: tuple[Callable[[], Any], str]) -> None:
    stream = _fed(push)
    stream.close()
    with pytest.raises(turnkit.UsageError, match="feed"):
        stream.feed("more")


@pytest.mark.parametrize("chunk", WRONG_CHUNKS, ids=lambda c: type(c).__name__)
def test_a_chunk_that_is_not_str_is_misuse_and_ends_the_stream(
    push: tuple[Callable[[], Any], str], chunk: object
) -> None:
    make, text = push
    stream = make()
    stream.feed(text[:2])
    with pytest.raises(turnkit.UsageError, match=type(chunk).__name__) as info:
        stream.feed(chunk)
    assert "str" in str(info.value)
    with pytest.raises(turnkit.UsageError):
        stream.feed(text[2:])
    with pytest.raises(turnkit.UsageError):
        stream.close()


def test_the_contract_holds_before_any_feed(push: tuple[Callable[[], Any], str]) -> None:
    make, _text = push
    stream = make()
    with pytest.raises(turnkit.UsageError):
        stream.feed(b"x")
