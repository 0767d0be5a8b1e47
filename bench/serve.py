"""Benchmark: what ``turnkit serve`` adds over the raw backend stream, on loopback uvicorn.

    python bench/serve.py            # all rows
    python bench/serve.py --quick    # fewer chunks, repeats and streams

Both sides run under the same uvicorn on 127.0.0.1 and are read by the same httpx client:
- *raw*: the replay backend's chunks framed directly as ``/v1/completions`` SSE (what a vLLM stream costs
  to read, with no template, parser or mapping);
- *turnkit*: ``POST /v1/chat/completions`` (stream) over the same replay backend: render, parse (hermes),
  tool policy, OpenAI chunk mapping, SSE.

Rows: time to first token (request sent → first content byte), per-chunk time (whole stream / chunks), each
the median of ``--repeat`` runs; the difference is turnkit's overhead. Then concurrent streams held open at
once (slow replay) and whether every one received all its chunks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import Response  # noqa: E402
from starlette.routing import Route  # noqa: E402

from turnkit.serve import (  # noqa: E402
    Gateway,
    ReplayBackend,
    ReplayRecord,
    SamplingParams,
    create_app,
    embedded_template,
    sse_response,
)

PROMPT_MESSAGES = [{"role": "user", "content": "Tell me a story."}]


def _app(chunks: int, delay: float) -> tuple[object, ReplayBackend]:
    output = "<think>plan</think>" + "word " * chunks
    backend = ReplayBackend([ReplayRecord(output, chunk=5)], delay=delay)
    gateway = Gateway(embedded_template(), "hermes", backend, served_model_name="bench")
    app = create_app(gateway)

    async def raw(request: Request) -> Response:
        async def events() -> AsyncIterator[bytes]:
            async for chunk in backend.stream("x", SamplingParams()):
                payload = {
                    "id": "c",
                    "object": "text_completion",
                    "choices": [{"index": 0, "text": chunk.text, "finish_reason": chunk.finish_reason}],
                }
                yield b"data: " + json.dumps(payload).encode() + b"\n\n"
            yield b"data: [DONE]\n\n"

        return sse_response(events())

    app.router.routes.append(Route("/raw", raw, methods=["POST"]))  # type: ignore[attr-defined]
    return app, backend


class Server:
    def __init__(self, app: object) -> None:
        self.server = uvicorn.Server(
            uvicorn.Config(
                app, host="127.0.0.1", port=0, log_level="error", lifespan="off", limit_concurrency=None, backlog=4096
            )
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{self.server.servers[0].sockets[0].getsockname()[1]}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def _has_text(line: str) -> bool:
    """A chunk carrying model text: raw ``"text": "..."`` or turnkit's ``"content":"..."`` / reasoning."""
    for key in ('"text": "', '"content":"', '"reasoning_content":"'):
        at = line.find(key)
        if at >= 0 and line[at + len(key) : at + len(key) + 1] != '"':
            return True
    return False


async def _one(client: httpx.AsyncClient, url: str, body: dict[str, object]) -> tuple[float, float, int]:
    started = time.perf_counter()
    first = None
    events = 0
    async with client.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events += 1
                if first is None and _has_text(line):
                    first = time.perf_counter()
    end = time.perf_counter()
    return (first or end) - started, end - started, events


async def _timings(url: str, repeat: int, chunks: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"raw_ttft": [], "tk_ttft": [], "raw_chunk": [], "tk_chunk": []}
    chat = {"messages": PROMPT_MESSAGES, "stream": True}
    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(3):  # warm up both paths
            await _one(client, url + "/raw", {})
            await _one(client, url + "/v1/chat/completions", chat)
        for _ in range(repeat):
            ttft, total, _ = await _one(client, url + "/raw", {})
            out["raw_ttft"].append(ttft)
            out["raw_chunk"].append(total / chunks)
            ttft, total, _ = await _one(client, url + "/v1/chat/completions", chat)
            out["tk_ttft"].append(ttft)
            out["tk_chunk"].append(total / chunks)
    return out


async def _concurrent(url: str, streams: int) -> tuple[int, float]:
    limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        started = time.perf_counter()
        body = {"messages": PROMPT_MESSAGES, "stream": True}
        results = await asyncio.gather(
            *[_one(client, url + "/v1/chat/completions", body) for _ in range(streams)], return_exceptions=True
        )
        elapsed = time.perf_counter() - started
    complete = sum(1 for r in results if isinstance(r, tuple) and r[2] > 3)
    return complete, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=None)
    args = parser.parse_args()
    chunks = 500 if args.quick else 2000
    repeat = args.repeat or (5 if args.quick else 15)
    streams = 200 if args.quick else 1000

    app, _ = _app(chunks, 0.0)
    server = Server(app)
    try:
        t = asyncio.run(_timings(server.url, repeat, chunks + 4))
    finally:
        server.stop()
    med = {k: statistics.median(v) for k, v in t.items()}
    print(f"{'row':<36}{'raw backend':>14}{'turnkit':>14}{'added':>14}")
    print(
        f"{'time to first token':<36}{med['raw_ttft'] * 1e3:>11.3f} ms{med['tk_ttft'] * 1e3:>11.3f} ms"
        f"{(med['tk_ttft'] - med['raw_ttft']) * 1e3:>11.3f} ms"
    )
    print(
        f"{f'per chunk ({chunks} chunks)':<36}{med['raw_chunk'] * 1e6:>11.1f} µs{med['tk_chunk'] * 1e6:>11.1f} µs"
        f"{(med['tk_chunk'] - med['raw_chunk']) * 1e6:>11.1f} µs"
    )

    app, _ = _app(8, 0.5)  # 13 chunks, one every 0.5 s: every stream is held open ~6 s
    server = Server(app)
    try:
        complete, elapsed = asyncio.run(_concurrent(server.url, streams))
    finally:
        server.stop()
    print(
        f"concurrent streams held: {complete}/{streams} complete, all in {elapsed:.1f} s "
        f"(each ~6 s long, one chunk per 0.5 s)"
    )


if __name__ == "__main__":
    main()
