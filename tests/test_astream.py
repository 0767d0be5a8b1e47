"""The async wrappers are thin (ARCHITECTURE.md habit 6): ``astream`` yields exactly what ``feed``/``close`` return.

For every push object, over random chunkings (hypothesis), the items ``astream`` yields equal the items the
synchronous ``feed`` calls and ``close`` return on the same chunks, and so the joined result is the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turnkit
from turnkit.outputs import MarkdownJsonDictParser, MultiTaggedContentParser, TaggedContent
from turnkit.structured import JsonStream, StructuredStream, apply_patch

HERMES = 'Let me <think>check</think> that. <tool_call>{"name": "f", "arguments": {"city": "Paris", "n": [1, 2]}}'
TEMPLATE = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {"reasoning_content": {"open": "<think>", "close": "</think>"}, "content": {}},
}
JSON = '{"title": "Hello, world!", "tags": ["python", "llm"], "n": 12.5, "ok": true}'

# name -> (a fresh sync push object, the same object's astream(chunks) as a function, the text)
CASES: dict[str, tuple[Callable[[], Any], Callable[[Any], AsyncIterator[Any]], str]] = {
    "OutputFormat": (
        lambda: turnkit.load_format("hermes").stream(),
        lambda chunks: turnkit.load_format("hermes").astream(chunks),
        HERMES,
    ),
    "ResponseTemplateFormat": (
        lambda: turnkit.ResponseTemplateFormat(TEMPLATE).stream(),
        lambda chunks: turnkit.ResponseTemplateFormat(TEMPLATE).astream(chunks),
        "<think>hm</think>Hello there",
    ),
    "JsonStream": (JsonStream, lambda chunks: JsonStream().astream(chunks), JSON),
    "StructuredStream": (
        lambda: StructuredStream({"type": "object"}),
        lambda chunks: StructuredStream({"type": "object"}).astream(chunks),
        JSON,
    ),
}

REPLIES: dict[str, tuple[Callable[[], Any], str]] = {
    "JsonReplyStream": (lambda: MarkdownJsonDictParser().stream(), "Sure:\n```json\n" + JSON + "\n```"),
    "TaggedReplyStream": (
        lambda: MultiTaggedContentParser(TaggedContent("answer", "<answer>", "yes or no", "</answer>")).stream(),
        "<answer>yes, of course</answer>",
    ),
}


def _cut(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False)]


async def _source(chunks: list[str]) -> AsyncIterator[str]:
    for chunk in chunks:
        await asyncio.sleep(0)
        yield chunk


async def _collect(items: AsyncIterator[Any]) -> list[Any]:
    return [item async for item in items]


def _sync(make: Callable[[], Any], chunks: list[str]) -> list[Any]:
    stream = make()
    items = [item for chunk in chunks for item in stream.feed(chunk)]
    return items + stream.close()


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=30, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=12))
def test_astream_yields_what_feed_and_close_return(name: str, cuts: list[int]) -> None:
    make, make_async, text = CASES[name]
    chunks = _cut(text, cuts)
    assert asyncio.run(_collect(make_async(_source(chunks)))) == _sync(make, chunks)


@pytest.mark.parametrize("name", sorted(REPLIES))
@settings(max_examples=30, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=12))
def test_reply_astream_yields_what_feed_returns(name: str, cuts: list[int]) -> None:
    make, text = REPLIES[name]
    chunks = _cut(text, cuts)
    stream = make()
    ops = asyncio.run(_collect(stream.astream(_source(chunks))))
    sync = make()
    assert ops == [op for chunk in chunks for op in sync.feed(chunk)]
    assert stream.close().parsed == sync.close().parsed
    assert apply_patch(None, ops) == sync.value


def test_joined_deltas_equal_the_complete_parse() -> None:
    fmt = turnkit.load_format("hermes")
    deltas = asyncio.run(_collect(fmt.astream(_source(list(HERMES)))))
    content = "".join(d.get("content", "") for d in deltas)
    assert content == fmt.parse(HERMES)["content"]
    value = None
    for op in asyncio.run(_collect(JsonStream().astream(_source(list(JSON))))):
        value = apply_patch(value, [op])
    assert value == turnkit.structured.loads(JSON)


def test_astream_checks_its_source_at_the_call() -> None:
    with pytest.raises(turnkit.ArgumentTypeError, match=r"OutputFormat.astream\(\) argument 'chunks'.*list"):
        turnkit.load_format("hermes").astream(["not", "async"])  # type: ignore[arg-type]


def test_a_wrong_chunk_is_the_same_misuse_as_in_feed() -> None:
    async def bad() -> AsyncIterator[Any]:
        yield "{"
        yield b"x"

    with pytest.raises(turnkit.UsageError, match="bytes"):
        asyncio.run(_collect(JsonStream().astream(bad())))


def test_index_page_examples() -> None:
    import doctest
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "index.md"
    result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 2
