"""Streaming previews of a reply: partial values as the text arrives, the exact parse at the end.

``parser.stream()`` returns a push object: ``feed(chunk)`` returns JSON Patch (+``append``)
operations that grow :attr:`ReplyStream.value`, and ``close()`` returns the same
``ModelResponse`` that ``parser.parse(whole_text)`` would (it *is* that parse, so the final
result never depends on how the text was cut). The preview is built on the incremental JSON
parser :class:`turnkit.structured.JsonStream`; it is append-only and best-effort: where a reply
needs repairs the preview may stop early, and ``close()`` still applies the repairs.

This module holds what every reply stream shares; each parser's stream lives beside that parser
(``JsonReplyStream`` in ``_json_parsers``, ``TaggedReplyStream`` in ``_tagged``) and imports this
module, never the other way round.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from turnkit._args import expect
from turnkit._astream import astream
from turnkit.errors import LimitExceededError, ParseError, UsageError
from turnkit.outputs._response import ModelResponse
from turnkit.outputs._size import check_size_of

if TYPE_CHECKING:
    from turnkit.outputs._base import ParserBase
    from turnkit.structured import JsonStream, Op

__all__ = ["JsonPreview", "ReplyStream", "TextSoFar"]


class TextSoFar:
    """A string that grows by appends and is read often: a read joins only the pieces added since the last read."""

    __slots__ = ("_parts",)

    def __init__(self, text: str = "") -> None:
        self._parts = [text]  # the text joined at the last read, then the pieces added since

    def append(self, piece: str) -> None:
        """Add ``piece`` at the end."""
        self._parts.append(piece)

    def clear(self) -> None:
        """Drop everything."""
        self._parts = [""]

    @property
    def value(self) -> str:
        """The whole text so far."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0]


class JsonPreview:
    """A ``JsonStream`` whose reported ops always add up to its value, even on the chunk that kills it.

    When the JSON turns invalid mid-chunk, the stream is replayed (once) up to the error so the
    ops for the valid part of that chunk are still reported; after that the preview is frozen.
    """

    def __init__(self, *, skip_prefix: bool) -> None:
        from turnkit.structured import JsonStream  # imported when a stream is first used

        self._skip_prefix = skip_prefix
        self.stream: JsonStream = JsonStream(skip_prefix=skip_prefix)
        self._fed: list[str] = []
        self._size = 0
        self.dead = False

    def feed(self, text: str) -> list[Op]:
        if self.dead or self.stream.done or not text:
            return []
        try:
            ops = self.stream.feed(text)
        except (ParseError, LimitExceededError) as exc:
            self.dead = True
            where = exc.position
            if where is None or not self._size <= where <= self._size + len(text):
                return []
            replay = type(self.stream)(skip_prefix=self._skip_prefix)
            try:
                replay.feed("".join(self._fed))
                ops = replay.feed(text[: where - self._size])
            except (ParseError, LimitExceededError):
                return []
            self.stream = replay
            return ops
        self._fed.append(text)
        self._size += len(text)
        return ops


class ReplyStream:
    """Feed a reply in pieces; watch :attr:`value` grow; ``close()`` for the exact parse."""

    def __init__(self, parser: ParserBase) -> None:
        from turnkit.outputs._base import ParserBase

        expect(parser, ParserBase, name="parser", func=type(self).__name__)
        self._parser = parser
        self._received = TextSoFar()
        self._size = 0
        self._closed: str = ""  # "", or why the stream takes no more input: "closed" or "failed"
        limits = getattr(parser, "limits", None)
        self._max_chars = limits.max_input_chars if limits is not None else None

    @property
    def value(self) -> Any:
        """The partial value so far (``None`` before it starts); live and shared, treat as read-only."""
        raise NotImplementedError

    def feed(self, chunk: str) -> list[Op]:
        """Take the next piece of the reply; return the operations that grew :attr:`value`."""
        if self._closed:
            raise UsageError(f"feed() on a {self._closed} reply stream")
        if not isinstance(chunk, str):
            self._closed = "failed"
            raise UsageError(f"feed() takes str, not {type(chunk).__name__}")
        self._size += len(chunk)
        if self._max_chars is not None and self._size > self._max_chars:
            # Stop previewing and stop keeping text; close() reports the size error like parse() does.
            self._received.clear()
            self._stop_preview()
            return []
        self._received.append(chunk)
        return self._preview(chunk)

    def close(self) -> ModelResponse:
        """End the reply and parse it whole: same result, repairs and errors as ``parser.parse``."""
        if self._closed:
            raise UsageError(f"close() on a {self._closed} reply stream")
        self._closed = "closed"
        self._stop_preview()
        limits = getattr(self._parser, "limits", None)
        if limits is not None:
            check_size_of(self._size, limits)
        return self._parser.parse(self._received.value)

    @property
    def text(self) -> str:
        """The reply received so far (each read joins only the chunks fed since the last read)."""
        return self._received.value

    def partials(self, chunks: Iterable[str]) -> Iterator[Any]:
        """Feed ``chunks``, yielding :attr:`value` each time it grew; call ``close()`` afterwards."""
        for chunk in chunks:
            if self.feed(chunk):
                yield self.value

    async def apartials(self, chunks: AsyncIterable[str]) -> AsyncIterator[Any]:
        """:meth:`partials` for an async source of chunks (e.g. a model's token stream)."""
        async for chunk in chunks:
            if self.feed(chunk):
                yield self.value

    def astream(self, chunks: AsyncIterable[str]) -> AsyncIterator[Op]:
        """Feed every chunk of an async source, yielding exactly the ops ``feed`` returns; ``close()`` afterwards
        gives the ``ModelResponse`` (as after :meth:`partials`)."""
        return astream(self, chunks, func=f"{type(self).__name__}.astream", close=False)

    def _preview(self, chunk: str) -> list[Op]:
        raise NotImplementedError

    def _stop_preview(self) -> None:
        raise NotImplementedError
