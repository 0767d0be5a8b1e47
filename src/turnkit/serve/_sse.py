"""The one SSE framing every endpoint uses: LF separators only, one ``data:`` line per line of data.

Clients such as AG-UI's ``parseSSEStream`` split on ``\\n\\n`` only, so CRLF framing is never written.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import suppress

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from turnkit._args import expect, expect_int, expect_mapping

_log = logging.getLogger("turnkit.serve")

__all__ = ["SSE_HEADERS", "SSEResponse", "sse_comment", "sse_event", "sse_response"]

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
