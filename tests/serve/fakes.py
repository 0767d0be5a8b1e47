"""Fake backends: an OpenAI-compatible ``/v1/completions`` server (a tiny Starlette app) recording what it was
sent, and :class:`PiecesBackend`, a backend streaming given pieces."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from turnkit.serve import BackendChunk, SamplingParams


class PiecesBackend:
    """Streams ``pieces`` as they are, then an empty chunk with ``finish_reason`` "stop"."""

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces

    async def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[BackendChunk]:
        for piece in self.pieces:
            yield BackendChunk(piece)
        yield BackendChunk("", "stop")


class FakeCompletions:
    """``mode``: "ok" streams ``output`` in ``chunk``-sized pieces; "die" stops after two pieces without [DONE]
    (dropping the connection); "slow" sends a piece every ``interval`` seconds, forever; "late" waits
    ``interval`` seconds before its first piece, then goes on as "slow"."""

    def __init__(
        self, output: str = "Hello <think>x</think> world", *, chunk: int = 3, mode: str = "ok", interval: float = 0.05
    ) -> None:
        self.output, self.chunk, self.mode, self.interval = output, chunk, mode, interval
        self.requests: list[dict[str, Any]] = []
        self.closed_at: float | None = None
        self.closed = threading.Event()
        self.app = Starlette(
            routes=[
                Route("/v1/completions", self.completions, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
            ]
        )

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    async def completions(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        if body.get("prompt") == "REJECT":
            return JSONResponse({"error": {"message": "bad"}}, status_code=400)
        return StreamingResponse(self._events(), media_type="text/event-stream")

    def _event(self, text: str, finish: str | None = None) -> bytes:
        payload = {
            "id": "cmpl-1",
            "object": "text_completion",
            "choices": [{"index": 0, "text": text, "finish_reason": finish}],
        }
        return f"data: {json.dumps(payload)}\n\n".encode()

    async def _events(self) -> AsyncIterator[bytes]:
        try:
            if self.mode == "late":
                await asyncio.sleep(self.interval)
            if self.mode in ("slow", "late"):
                while True:
                    yield self._event("tick ")
                    await asyncio.sleep(self.interval)
            pieces = [self.output[i : i + self.chunk] for i in range(0, len(self.output), self.chunk)]
            for n, piece in enumerate(pieces):
                if self.mode == "die" and n == 2:
                    raise RuntimeError("backend died")
                yield self._event(piece)
                await asyncio.sleep(0)
            yield self._event("", "stop")
            usage = {"prompt_tokens": 7, "completion_tokens": len(pieces), "total_tokens": 7 + len(pieces)}
            yield f"data: {json.dumps({'id': 'cmpl-1', 'choices': [], 'usage': usage})}\n\n".encode()
            yield b"data: [DONE]\n\n"
        finally:
            self.closed_at = time.monotonic()
            self.closed.set()
