"""PushedSSEResponse (the sync streams' writer): one write pass per loop tick, heartbeats, the end, a client
that stops reading and catches up, a client that goes away; and the hand-started ``send`` finished by a task."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from turnkit.serve import create_app, embedded_gateway, sse_event
from turnkit.serve._sse import PushedSSEResponse, _Flusher, _resume
from turnkit.serve._sync import SyncRegistry
from turnkit.structured import apply_patch

pytestmark = pytest.mark.timeout(60)


class ListSource:
    """A source fed by hand: ``add(frame, end=False)``."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.listener: Any = None
        self.ended = False
        self.closed = False

    def on_ready(self, listener: Any) -> None:
        self.listener = listener

    def add(self, frame: bytes, end: bool = False) -> None:
        self.frames.append(frame)
        self.ended = end
        if self.listener is not None:
            self.listener()

    def pull(self) -> tuple[bytes, bool]:
        out = b"".join(self.frames)
        self.frames.clear()
        return out, self.ended

    def close(self) -> None:
        self.closed = True


def test_heartbeat_events_and_end(live: Any) -> None:
    sources: list[ListSource] = []

    async def handler(request: Any) -> PushedSSEResponse:
        source = ListSource()
        sources.append(source)
        loop = asyncio.get_running_loop()
        loop.call_later(0.3, source.add, sse_event("hi", id="1"))
        loop.call_later(0.4, source.add, sse_event("bye", id="2"), True)
        return PushedSSEResponse(source, heartbeat=0.05)

    with live(Starlette(routes=[Route("/s", handler)])) as server:
        with httpx.stream("GET", server.url + "/s", timeout=10) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            assert "content-length" not in response.headers
            text = response.read().decode()
    blocks = text.split("\n\n")
    assert blocks.count(":") >= 3  # heartbeats while idle (every 50 ms for 300 ms)
    assert "id: 1\ndata: hi" in blocks and "id: 2\ndata: bye" in blocks and blocks[-1] == ""
    assert text.index("data: hi") < text.index("data: bye") and text.endswith("data: bye\n\n")
    assert sources[0].closed and sources[0].listener is None


def test_one_write_pass_per_tick() -> None:
    """Marks during a tick are written by one callback at its end, each connection once."""

    class Stream:
        def __init__(self) -> None:
            self.writes = 0

        def write(self) -> None:
            self.writes += 1

    async def main() -> tuple[int, list[int]]:
        loop = asyncio.get_running_loop()
        flusher = _Flusher(loop)
        scheduled = 0
        original = loop.call_soon

        def counting(*args: Any, **kwargs: Any) -> Any:
            nonlocal scheduled
            if args[0] == flusher.flush:
                scheduled += 1
            return original(*args, **kwargs)

        loop.call_soon = counting  # type: ignore[method-assign]
        streams = [Stream() for _ in range(50)]
        for _ in range(3):
            for stream in streams:
                flusher.mark(stream)  # type: ignore[arg-type]
        assert all(s.writes == 0 for s in streams)  # nothing written before the tick ends
        await asyncio.sleep(0)
        loop.call_soon = original  # type: ignore[method-assign]
        return scheduled, [s.writes for s in streams]

    scheduled, writes = asyncio.run(main())
    assert scheduled == 1 and writes == [1] * 50


def test_resume_finishes_a_started_coroutine() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        gates = [loop.create_future(), loop.create_future()]
        log: list[Any] = []

        async def send() -> None:
            log.append(await gates[0])
            await asyncio.sleep(0)
            log.append(await gates[1])

        coro = send().__await__()
        blocked_on = coro.send(None)  # as the writer does: run it until it blocks
        assert blocked_on is gates[0] and log == []
        task = asyncio.ensure_future(_resume(coro, blocked_on))
        gates[0].set_result("a")
        await asyncio.sleep(0.01)
        assert log == ["a"] and not task.done()
        gates[1].set_result("b")
        await task
        assert log == ["a", "b"]

        # a cancelled writer task cancels the coroutine it was finishing
        stuck = loop.create_future()

        async def never() -> None:
            await stuck

        coro2 = never().__await__()
        task2 = asyncio.ensure_future(_resume(coro2, coro2.send(None)))
        await asyncio.sleep(0)
        task2.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task2
        with pytest.raises(RuntimeError, match="already awaited"):  # finished by the CancelledError thrown in
            coro2.send(None)

    asyncio.run(main())


def _read_sse(sock: socket.socket) -> tuple[list[tuple[str, int, str]], bytes]:
    """Read a chunked SSE response to its end: (event, id, data) of each event, and the raw bytes."""
    raw = bytearray()
    while not raw.endswith(b"\r\n0\r\n\r\n"):
        piece = sock.recv(1 << 16)
        if not piece:
            break
        raw += piece
    cut = raw.index(b"\r\n\r\n")
    head, at = bytes(raw[:cut]), cut + 4
    text = bytearray()
    while at < len(raw):
        end = raw.index(b"\r\n", at)
        size = int(raw[at:end], 16)
        text += raw[end + 2 : end + 2 + size]
        at = end + 2 + size + 2
    events = []
    for block in text.decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
        if "event" in fields:
            events.append((fields["event"], int(fields["id"]), fields["data"]))
    return events, head


def test_client_that_pauses_then_catches_up(live: Any) -> None:
    """A client that stops reading fills the transport (the write is then finished by a task, later ones
    wait for it); when it reads again it gets everything, in order, and ends with the run's value."""
    registry = SyncRegistry(subscriber_bytes=32_000_000)
    app = create_app(embedded_gateway(), sync=registry)
    with live(app) as server:
        run = registry.create(None, run_id="slow")
        sock = server.unread_subscriber(run)
        loop = server.loop

        async def publish() -> int:
            run.publish([{"op": "add", "path": "", "value": {"t": ""}}])
            for i in range(4000):
                run.publish([{"op": "append", "path": "/t", "value": f"{i:04d}" * 500}])
                await asyncio.sleep(0)
            sub = next(iter(run._subscriptions))
            return sub.pending_events

        pending = asyncio.run_coroutine_threadsafe(publish(), loop).result(30)
        assert pending > 0  # the writer is waiting for the transport: events pile up (coalesced) meanwhile
        loop.call_soon_threadsafe(run.close)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 21)  # (a 4 KB window reads at ~30 KB/s)
        sock.settimeout(20)
        events, head = _read_sse(sock)
        sock.close()
    assert head.startswith(b"HTTP/1.1 200")
    value: Any = None
    seqs = []
    for kind, seq, data in events:
        seqs.append(seq)
        if kind == "snapshot":
            value = json.loads(data)
        elif kind == "patch":
            value = apply_patch(value, json.loads(data))
        else:
            assert json.loads(data) == {"value": value}
    assert seqs == sorted(set(seqs)) and events[-1][0] == "end"
    assert value == {"t": "".join(f"{i:04d}" * 500 for i in range(4000))}


def test_client_that_goes_away(live: Any) -> None:
    registry = SyncRegistry()
    app = create_app(embedded_gateway(), sync=registry)
    with live(app) as server:
        run = registry.create(None, run_id="gone")
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.sendall(b"GET /v1/streams/gone/events HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(10)
        received = b""
        while b"event: snapshot" not in received:
            received += sock.recv(4096)
        sock.close()
        deadline = time.monotonic() + 10
        while run.subscribers:  # the disconnect closes the subscription; the run goes on
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not run.done
