"""Streaming previews of a reply: partial values as the text arrives, the exact parse at the end.

``parser.stream()`` returns a push object: ``feed(chunk)`` returns JSON Patch (+``append``)
operations that grow :attr:`ReplyStream.value`, and ``close()`` returns the same
``ModelResponse`` that ``parser.parse(whole_text)`` would (it *is* that parse, so the final
result never depends on how the text was cut). The preview is built on the incremental JSON
parser :class:`turnkit.structured.JsonStream`; it is append-only and best-effort: where a reply
needs repairs the preview may stop early, and ``close()`` still applies the repairs.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from turnkit._held import held_tail
from turnkit._json import pointer_join
from turnkit.errors import LimitExceededError, ParseError, UsageError
from turnkit.outputs._response import ModelResponse
from turnkit.outputs._size import check_size_of

if TYPE_CHECKING:
    from turnkit.outputs._base import ParserBase
    from turnkit.outputs._tagged import TaggedContent
    from turnkit.structured import JsonStream, Op

__all__ = ["JsonReplyStream", "ReplyStream", "TaggedReplyStream"]

# A JSON preview starts after a fence opener, or at a bracket that begins a line.
_JSON_START = re.compile(r"```|\n[ \t]*[\[{]")
_MAX_CARRY = 64
_JSON_LANGUAGES = frozenset({"", "json", "jsonc", "json5", "javascript", "js"})


def _prefixed(ops: list[Op], prefix: str) -> list[Op]:
    return [{**op, "path": prefix + op["path"]} for op in ops]


class _Preview:
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
        self._parser = parser
        self._chunks: list[str] = []
        self._size = 0
        self._closed = False
        limits = getattr(parser, "limits", None)
        self._max_chars = limits.max_input_chars if limits is not None else None

    @property
    def value(self) -> Any:
        """The partial value so far (``None`` before it starts); live and shared, treat as read-only."""
        raise NotImplementedError

    def feed(self, chunk: str) -> list[Op]:
        """Take the next piece of the reply; return the operations that grew :attr:`value`."""
        if self._closed:
            raise UsageError("feed() on a closed reply stream")
        if not isinstance(chunk, str):
            raise UsageError(f"feed() takes str, not {type(chunk).__name__}")
        self._size += len(chunk)
        if self._max_chars is not None and self._size > self._max_chars:
            # Stop previewing and stop keeping text; close() reports the size error like parse() does.
            self._chunks.clear()
            self._stop_preview()
            return []
        self._chunks.append(chunk)
        return self._preview(chunk)

    def close(self) -> ModelResponse:
        """End the reply and parse it whole: same result, repairs and errors as ``parser.parse``."""
        if self._closed:
            raise UsageError("close() on a closed reply stream")
        self._closed = True
        self._stop_preview()
        limits = getattr(self._parser, "limits", None)
        if limits is not None:
            check_size_of(self._size, limits)
        return self._parser.parse("".join(self._chunks))

    @property
    def text(self) -> str:
        """The reply received so far."""
        return "".join(self._chunks)

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

    def _preview(self, chunk: str) -> list[Op]:
        raise NotImplementedError

    def _stop_preview(self) -> None:
        raise NotImplementedError


class JsonReplyStream(ReplyStream):
    """Preview of a JSON reply: the value inside the ```json block (or a bare JSON value) as it grows.

    The preview starts at the first fence whose language is ``json`` (or none), skipping blocks in
    other languages, or at a ``{`` / ``[`` that begins a line when no fence came first.
    """

    _SEEK, _INFO, _SKIP_BLOCK, _JSON = range(4)

    def __init__(self, parser: ParserBase) -> None:
        super().__init__(parser)
        self._json: _Preview | None = None
        self._dead = False
        self._state = self._SEEK
        self._carry = "\n"  # the start of the reply counts as the start of a line

    @property
    def value(self) -> Any:
        return self._json.stream.value if self._json is not None else None

    @property
    def done(self) -> bool:
        """Whether the previewed JSON value is complete."""
        return self._json is not None and self._json.stream.done

    def _stop_preview(self) -> None:
        self._dead = True

    def _preview(self, chunk: str) -> list[Op]:
        if self._dead:
            return []
        if self._state == self._JSON:
            return self._push(chunk)
        text = self._carry + chunk
        self._carry = ""
        while text:
            if self._state == self._SEEK:
                match = _JSON_START.search(text)
                if match is None:
                    # Keep what could still begin a match: trailing backticks, or a newline and indentation.
                    tail = text[-_MAX_CARRY:]
                    newline = tail.rfind("\n")
                    if newline >= 0 and not tail[newline + 1 :].strip(" \t"):
                        self._carry = tail[newline:]
                    else:
                        self._carry = tail[len(tail.rstrip("`")) :][-2:]
                    return []
                if match.group() == "```":
                    self._state = self._INFO
                    text = text[match.end() :]
                else:
                    return self._start(text[match.end() - 1 :])
            elif self._state == self._INFO:
                newline = text.find("\n")
                if newline < 0:
                    if len(text) > _MAX_CARRY:  # an inline block: "```json {...}```"
                        return self._start(text)
                    self._carry = text
                    return []
                info = text[:newline].strip().lower()
                if info in _JSON_LANGUAGES:
                    return self._start(text[newline + 1 :])
                self._state = self._SKIP_BLOCK
                text = text[newline + 1 :]
            else:  # inside a block in another language: wait for its closing fence
                close = text.find("```")
                if close < 0:
                    self._carry = text[len(text.rstrip("`")) :][-2:]
                    return []
                self._state = self._SEEK
                text = text[close + 3 :]
        return []

    def _start(self, text: str) -> list[Op]:
        self._state = self._JSON
        self._json = _Preview(skip_prefix=True)
        return self._push(text)

    def _push(self, text: str) -> list[Op]:
        assert self._json is not None
        return self._json.feed(text)


class TaggedReplyStream(ReplyStream):
    """Preview of a tagged reply: ``{name: content so far}``, JSON fields as partial JSON values."""

    def __init__(self, parser: ParserBase, tagged_contents: list[TaggedContent]) -> None:
        super().__init__(parser)
        self._fields = tagged_contents
        self._seen: set[str] = set()
        self._open: TaggedContent | None = None
        self._buf = ""
        self._value: dict[str, Any] = {}
        self._parts: dict[str, list[str]] = {}
        self._dirty: set[str] = set()
        self._json: dict[str, _Preview] = {}
        self._stopped = False
        self._announced = False
        self._longest_begin = max(len(t.tag_begin) for t in tagged_contents)

    @property
    def value(self) -> dict[str, Any]:
        for name in self._dirty:
            joined = "".join(self._parts[name])
            self._parts[name] = [joined]
            self._value[name] = joined
        self._dirty.clear()
        for name, preview in self._json.items():
            if preview.stream.started:
                self._value[name] = preview.stream.value
        return self._value

    def _stop_preview(self) -> None:
        self._stopped = True

    def _preview(self, chunk: str) -> list[Op]:
        if self._stopped:
            return []
        self._buf += chunk
        ops: list[Op] = []
        if not self._announced:
            self._announced = True
            ops.append({"op": "add", "path": "", "value": {}})
        while True:
            if self._open is None:
                if not self._find_open():
                    break
            elif not self._read_open(ops):
                break
        return ops

    def _find_open(self) -> bool:
        best: tuple[int, TaggedContent] | None = None
        for tagged in self._fields:
            if tagged.name in self._seen:
                continue
            index = self._buf.find(tagged.tag_begin)
            if index >= 0 and (best is None or index < best[0]):
                best = (index, tagged)
        if best is None:
            self._buf = self._buf[-(self._longest_begin - 1) :] if self._longest_begin > 1 else ""
            return False
        index, tagged = best
        self._buf = self._buf[index + len(tagged.tag_begin) :]
        self._seen.add(tagged.name)
        self._open = tagged
        if tagged.parse_json:
            self._json[tagged.name] = _Preview(skip_prefix=False)
        return True

    def _read_open(self, ops: list[Op]) -> bool:
        tagged = self._open
        assert tagged is not None
        end = self._buf.find(tagged.tag_end)
        if end >= 0:
            self._emit(tagged, self._buf[:end], ops)
            self._buf = self._buf[end + len(tagged.tag_end) :]
            self._open = None
            return True
        safe = len(self._buf) - held_tail(self._buf, tagged.tag_end)
        if safe > 0:
            self._emit(tagged, self._buf[:safe], ops)
            self._buf = self._buf[safe:]
        return False

    def _emit(self, tagged: TaggedContent, text: str, ops: list[Op]) -> None:
        name = tagged.name
        path = pointer_join("", name)
        preview = self._json.get(name)
        if preview is not None:
            ops.extend(_prefixed(preview.feed(text), path))
            return
        if name not in self._parts:
            self._parts[name] = [text]
            self._value[name] = text
            ops.append({"op": "add", "path": path, "value": text})
        elif text:
            self._parts[name].append(text)
            self._dirty.add(name)
            ops.append({"op": "append", "path": path, "value": text})
