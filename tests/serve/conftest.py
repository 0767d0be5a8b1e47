"""Fixtures for the server tests: the serve extra (required under CI), a real uvicorn on a free port."""

from __future__ import annotations

import os
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

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def live() -> Iterator[type[LiveServer]]:
    yield LiveServer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
