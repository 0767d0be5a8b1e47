"""Fixtures for the server tests: the serve extra (required under CI), a real uvicorn on a free port."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

_MISSING = []
for _name in ("starlette", "uvicorn", "httpx", "httpx_sse", "openai"):
    try:
        __import__(_name)
    except ImportError:
        _MISSING.append(_name)
if _MISSING:
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"CI=true and the serve test dependencies are missing: {', '.join(_MISSING)}")
    pytest.skip(
        f"serve test dependencies not installed: {', '.join(_MISSING)} (pip install -e '.[test]')",
        allow_module_level=True,
    )

import uvicorn  # noqa: E402


class LiveServer:
    """An ASGI app under a real uvicorn on 127.0.0.1 (free port), in a thread."""

    def __init__(self, app: Any) -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", timeout_graceful_shutdown=3
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    @property
    def port(self) -> int:
        return int(self.server.servers[0].sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop uvicorn runs in its thread (to run code on the server's side)."""
        loop = self.server.servers[0].get_loop()
        assert isinstance(loop, asyncio.AbstractEventLoop)
        return loop

    def unread_subscriber(self, run: Any) -> socket.socket:
        """A raw connection to ``run``'s events with a 4 KB receive window that nothing reads (yet); returned
        once the run counts it as a subscriber."""
        sock = socket.create_connection(("127.0.0.1", self.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(f"GET /v1/streams/{run.id}/events HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        deadline = time.monotonic() + 10
        while run.subscribers == 0:
            assert time.monotonic() < deadline, "the server did not take the subscriber"
            time.sleep(0.01)
        return sock

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def live() -> Iterator[type[LiveServer]]:
    yield LiveServer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
