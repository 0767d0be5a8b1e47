"""The one async wrapper over a push object (ARCHITECTURE.md habit 6: async iterators are thin wrappers).

Every push object has ``feed(chunk) -> list`` and ``close()``. :func:`astream` feeds it the chunks of an
async iterable (a model's token stream) and yields, one by one, exactly the items ``feed`` and ``close``
return, so joining what it yields gives the same result as the synchronous calls on the same chunks.
``OutputFormat.astream``, ``ResponseTemplateFormat.astream``, ``JsonStream.astream``,
``StructuredStream.astream`` and ``ReplyStream.astream`` are this function.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, Protocol, TypeVar

from turnkit._args import expect

__all__ = ["Push", "astream"]

T = TypeVar("T")


class Push(Protocol[T]):
    """What :func:`astream` drives: a push object whose ``feed`` returns a list."""

    def feed(self, text: str, /) -> list[T]: ...

    def close(self) -> Any: ...


def astream(stream: Push[T], chunks: AsyncIterable[str], *, func: str, close: bool = True) -> AsyncIterator[T]:
    """Feed ``stream`` each chunk of ``chunks``, yielding every item ``feed`` returns, then (when ``close``) every
    item ``close`` returns. ``chunks`` is checked now (``func`` names the public method in the error); the
    stream is driven as the result is iterated."""
    expect(chunks, AsyncIterable, name="chunks", func=func, accepts="an async iterable of str")
    return _drive(stream, chunks, close)


async def _drive(stream: Push[T], chunks: AsyncIterable[str], close: bool) -> AsyncIterator[T]:
    async for chunk in chunks:
        for item in stream.feed(chunk):
            yield item
    if close:
        for item in stream.close():
            yield item
