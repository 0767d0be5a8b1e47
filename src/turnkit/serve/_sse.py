"""The one SSE framing every endpoint uses: LF separators only, one ``data:`` line per line of data.

Clients such as AG-UI's ``parseSSEStream`` split on ``\\n\\n`` only, so CRLF framing is never written.

Two ways to write a stream: :class:`SSEResponse` runs an async iterator of framed events (a task per
connection: one stream per model request), and :class:`PushedSSEResponse` writes a source that signals
when it has events (the sync streams: thousands of connections each getting a little every few
hundred milliseconds). The latter has no task waking per event: every source that got events in a loop
tick is written by one callback at the end of that tick.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import types
import weakref
from collections.abc import AsyncIterator, Callable, Generator, Mapping
from contextlib import suppress
from typing import Any, Protocol

from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from turnkit._args import expect, expect_int, expect_mapping

_log = logging.getLogger("turnkit.serve")

__all__ = [
    "SSE_HEADERS",
    "PushedSSEResponse",
    "SSEResponse",
    "SSESource",
    "sse_comment",
    "sse_event",
    "sse_response",
]

SSE_HEADERS: dict[str, str] = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
}

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _field(name: str, value: str) -> str:
    if "\n" in value or "\r" in value:
        raise ValueError(f"SSE {name} must not contain a line break: {value!r}")
    return f"{name}: {value}\n"


def sse_event(data: str, *, event: str | None = None, id: str | None = None, retry: int | None = None) -> bytes:
    """One SSE event: optional ``event:``/``id:``/``retry:`` fields, then ``data:`` lines, then a blank line."""
    expect(data, str, name="data", func="sse_event")
    expect(event, str, name="event", func="sse_event", none=True)
    expect(id, str, name="id", func="sse_event", none=True)
    expect_int(retry, name="retry", func="sse_event", minimum=0, none=True)
    return _frame(data, event, id, retry)


def _frame(data: str, event: str | None, id: str | None, retry: int | None) -> bytes:
    """:func:`sse_event` without the argument checks (callers that pass what they built)."""
    head = ""
    if event is not None:
        head += _field("event", event)
    if id is not None:
        head += _field("id", id)
    if retry is not None:
        head += f"retry: {int(retry)}\n"
    if "\n" in data or "\r" in data:
        body = "".join(f"data: {line}\n" for line in _LINE_BREAK.split(data))
    else:
        body = f"data: {data}\n"
    return (head + body + "\n").encode("utf-8")


def sse_comment(text: str = "") -> bytes:
    """A comment line (``: text``): a heartbeat that every SSE client ignores."""
    expect(text, str, name="text", func="sse_comment")
    return "".join(f": {line}\n" if line else ":\n" for line in _LINE_BREAK.split(text)).encode("utf-8") + b"\n"


class SSEResponse(StreamingResponse):
    """Streams pre-framed SSE bytes; sends a heartbeat comment when idle; stops the iterator on disconnect.

    Unlike Starlette's ``StreamingResponse`` it always listens for ``http.disconnect``, so a client that goes
    away cancels the iterator (and with it the backend request) at once, even while no event is being sent.
    """

    def __init__(
        self,
        events: AsyncIterator[bytes],
        *,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        heartbeat: float = 15.0,
    ) -> None:
        merged = dict(SSE_HEADERS)
        merged.update(headers or {})
        media_type = merged.pop("content-type")
        super().__init__(events, status_code=status_code, headers=merged, media_type=media_type)
        self.events = events
        self.heartbeat = heartbeat

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        lock = asyncio.Lock()
        last_send = time.monotonic()

        async def emit(chunk: bytes) -> None:
            nonlocal last_send
            async with lock:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                last_send = time.monotonic()

        async def stream() -> None:
            events = self.events
            try:
                async for chunk in events:
                    await emit(chunk)
            except OSError:  # the client went away while we were sending
                pass
            except Exception:
                _log.exception("SSE event stream failed")
            finally:
                aclose = getattr(events, "aclose", None)
                if aclose is not None:
                    with suppress(Exception):
                        await aclose()

        async def heartbeat() -> None:
            while True:
                wait = self.heartbeat - (time.monotonic() - last_send)
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                await emit(sse_comment())

        async def listen() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return

        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        tasks = [asyncio.ensure_future(stream()), asyncio.ensure_future(listen())]
        if self.heartbeat > 0:
            tasks.append(asyncio.ensure_future(heartbeat()))
        disconnected = False
        try:
            finished, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            disconnected = tasks[0] not in finished
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with suppress(BaseException):
                    await task
        if not disconnected:
            with suppress(OSError):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        if self.background is not None:
            await self.background()


def sse_response(
    events: AsyncIterator[bytes], *, headers: Mapping[str, str] | None = None, heartbeat: float = 15.0
) -> SSEResponse:
    """The streaming response every SSE endpoint returns: ``events`` are already framed (``sse_event``)."""
    expect(events, AsyncIterator, name="events", func="sse_response", accepts="an async iterator of bytes")
    expect_mapping(headers, name="headers", func="sse_response", values=str, none=True)
    expect(heartbeat, (int, float), name="heartbeat", func="sse_response", accepts="a number of seconds")
    return SSEResponse(events, headers=headers, heartbeat=heartbeat)


class SSESource(Protocol):
    """What a :class:`PushedSSEResponse` writes."""

    def on_ready(self, listener: Callable[[], None] | None) -> None:
        """Call ``listener()`` (it only schedules a write) whenever :meth:`pull` has something new."""

    def pull(self) -> tuple[bytes, bool]:
        """The framed events deliverable now, and whether they end the stream."""

    def close(self) -> None:
        """The connection is gone (or the stream ended): release the source."""


class _Flusher:
    """The write pass of one event loop: every connection marked during a tick is written once, in one
    callback scheduled for the end of that tick (a publish fanning out to N connections costs N writes,
    not N task wake-ups)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.dirty: dict[_PushedStream, None] = {}
        self.scheduled = False

    def mark(self, stream: _PushedStream) -> None:
        self.dirty[stream] = None
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        self.scheduled = False
        dirty, self.dirty = self.dirty, {}
        for stream in dirty:
            stream.write()


_FLUSHERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Flusher] = weakref.WeakKeyDictionary()


def _flusher() -> _Flusher:
    loop = asyncio.get_running_loop()
    flusher = _FLUSHERS.get(loop)
    if flusher is None:
        flusher = _FLUSHERS[loop] = _Flusher(loop)
    return flusher


@types.coroutine
def _resume(coro: Generator[Any, Any, Any], blocked_on: Any) -> Generator[Any, Any, None]:
    """Finish an awaitable's iterator (``x.__await__()``) that was started by hand and suspended on
    ``blocked_on`` (what it yielded): hand that to the running task, as ``await`` would have, and pass the
    task's answers back in."""
    yielded = blocked_on
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # (the task was cancelled while waiting)
            try:
                yielded = coro.throw(exc)
            except StopIteration:
                return
        else:
            try:
                yielded = coro.send(sent)
            except StopIteration:
                return


class _PushedStream:
    """One connection of a :class:`PushedSSEResponse`: writes what the source has, when the flusher says."""

    def __init__(self, source: SSESource, send: Send, heartbeat: float) -> None:
        self.source = source
        self.send = send
        self.heartbeat = heartbeat
        self.flusher = _flusher()
        self.busy = False  # a write is waiting for the transport to drain
        self.closed = False
        self.last_write = time.monotonic()
        self.timer = self.flusher.loop.call_later(heartbeat, self.beat) if heartbeat > 0 else None
        source.on_ready(self.mark)
        self.mark()

    def mark(self) -> None:
        if not self.closed:
            self.flusher.mark(self)

    def write(self) -> None:
        if self.busy or self.closed:
            return
        try:
            body, last = self.source.pull()
        except Exception:
            _log.exception("SSE source failed")
            body, last = b"", True  # end the response
        if body or last:
            self.emit(body, last)

    def beat(self) -> None:
        idle = time.monotonic() - self.last_write
        if idle >= self.heartbeat and not self.busy and not self.closed:
            self.emit(sse_comment(), False)
            idle = 0.0
        if not self.closed:
            self.timer = self.flusher.loop.call_later(self.heartbeat - idle, self.beat)

    def emit(self, body: bytes, last: bool) -> None:
        """Send ``body`` now: the ASGI ``send`` runs to its end right here unless the transport is paused
        (its buffer is full); then a task finishes it and the next write waits for that."""
        self.last_write = time.monotonic()
        coro = self.send({"type": "http.response.body", "body": body, "more_body": not last}).__await__()
        try:
            blocked_on = coro.send(None)
        except StopIteration:
            if last:
                self.finish()
            return
        except Exception:  # (the server answers a gone client's send by returning; anything else is a bug)
            _log.exception("SSE write failed")
            self.finish()
            return
        self.busy = True
        task = asyncio.ensure_future(_resume(coro, blocked_on))
        task.add_done_callback(lambda t: self.written(t, last))

    def written(self, task: asyncio.Future[None], last: bool) -> None:
        self.busy = False
        if task.cancelled() or task.exception() is not None or last:
            self.finish()
        else:
            self.mark()  # what arrived while the transport was paused

    def finish(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.timer is not None:
            self.timer.cancel()
        self.source.on_ready(None)
        self.source.close()


class PushedSSEResponse(Response):
    """An SSE response written from a :class:`SSESource` by the loop's write pass (no task per event).

    The handler only waits for the client's disconnect (or the end: after the last body ``receive``
    answers ``http.disconnect``); heartbeat comments are a timer per connection. A write that finds the
    transport paused (a slow client) is finished by a task and the source keeps buffering meanwhile (it
    bounds its own buffer)."""

    def __init__(self, source: SSESource, *, headers: Mapping[str, str] | None = None, heartbeat: float = 15.0) -> None:
        merged = dict(SSE_HEADERS)
        merged.update(headers or {})
        self.status_code = 200
        self.media_type = merged.pop("content-type")
        self.background = None
        self.init_headers(merged)  # (no body attribute: no content-length)
        self.source = source
        self.heartbeat = heartbeat

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        stream = _PushedStream(self.source, send, self.heartbeat)
        try:  # (after the last body, receive() answers http.disconnect: the ASGI spec's guarantee)
            while (await receive())["type"] != "http.disconnect":
                pass
        finally:
            stream.finish()
