"""Benchmark: what ``turnkit serve`` adds over the raw backend stream, on loopback uvicorn.

    python bench/serve.py            # all rows
    python bench/serve.py --quick    # fewer chunks, repeats and streams
    python bench/serve.py --pin      # server and client on different CPUs (less scheduling noise)

The server runs under uvicorn on 127.0.0.1 in a child process (so the client never competes with it for the
GIL); both sides are read by the same httpx client:
- *raw*: the replay backend's chunks framed directly as vLLM-style ``/v1/completions`` SSE (what a vLLM stream
  costs to read, with no template, parser or mapping);
- *turnkit*: ``POST /v1/chat/completions`` (stream) over the same replay backend: render, parse (hermes),
  tool policy, OpenAI chunk mapping, SSE.

Rows, each the median of interleaved runs (raw, turnkit, raw, ...); the difference is turnkit's overhead:
- time to first token (request sent → the line carrying the first model text; ``--ttft-repeat`` short replies),
  like for like: the replay output starts with content, so both streams carry their first text in backend
  chunk 0;
- the same for an output that starts with reasoning (``<think>plan</think>...``): the raw stream is timed to the
  chunk that carries the first reasoning character (``p``), which is the one that releases turnkit's first
  ``reasoning_content`` delta, not to its first chunk (``<thin``, markup only);
- per request, server CPU (the server process's CPU time per request of a one-chunk reply): what turnkit adds
  to the first token on an idle machine, free of the scheduling noise of a shared one;
- per chunk, wall clock (a 2000-chunk reply, reasoning first: whole stream / chunks; ``--repeat`` runs);
- per chunk, server CPU (the server process's CPU time over that stream / chunks): turnkit's own cost, free of
  the client's and of the other processes sharing the machine.
Then concurrent streams held open at once (slow replay) and whether every one received all its chunks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import httpx  # noqa: E402

CONTENT_FIRST = "Say hi."
REASONING_FIRST = "Think, then say hi."
LONG = "Tell me a story."
ONE = "Just wave."


def _app(chunks: int, delay: float) -> object:
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from turnkit.serve import (
        Gateway,
        ReplayBackend,
        ReplayRecord,
        SamplingParams,
        create_app,
        embedded_template,
        sse_response,
    )

    backend = ReplayBackend(
        [
            ReplayRecord("word " * 16, match=CONTENT_FIRST, chunk=5),
            ReplayRecord("<think>plan</think>" + "word " * 16, match=REASONING_FIRST, chunk=5),
            ReplayRecord("<think>plan</think>" + "word " * chunks, match=LONG, chunk=5),
            ReplayRecord("Hi!", match=ONE, chunk=5),
        ],
        delay=delay,
    )
    gateway = Gateway(embedded_template(), "hermes", backend, served_model_name="bench")
    app = create_app(gateway)

    async def raw(request: Request) -> Response:
        prompt = (await request.json())["prompt"]

        async def events() -> AsyncIterator[bytes]:
            created = int(time.time())
            async for chunk in backend.stream(prompt, SamplingParams()):
                payload = {
                    "id": "cmpl-0123456789abcdef0123456789abcdef",
                    "object": "text_completion",
                    "created": created,
                    "model": "bench",
                    "choices": [
                        {"index": 0, "text": chunk.text, "logprobs": None, "finish_reason": chunk.finish_reason}
                    ],
                }
                yield b"data: " + json.dumps(payload).encode() + b"\n\n"
            yield b"data: [DONE]\n\n"

        return sse_response(events())

    async def cpu(request: Request) -> Response:
        return JSONResponse({"cpu": time.process_time()})

    app.router.routes.append(Route("/raw", raw, methods=["POST"]))  # type: ignore[attr-defined]
    app.router.routes.append(Route("/cpu", cpu, methods=["GET"]))  # type: ignore[attr-defined]
    return app


def _serve(chunks: int, delay: float) -> None:
    """The child process: uvicorn on a free port, printed on stdout once listening."""
    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(
            _app(chunks, delay),
            host="127.0.0.1",
            port=0,
            log_level="error",
            lifespan="off",
            limit_concurrency=None,
            backlog=4096,
        )
    )

    async def run() -> None:
        task = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        print(server.servers[0].sockets[0].getsockname()[1], flush=True)
        await task

    asyncio.run(run())


class Server:
    def __init__(self, chunks: int, delay: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(chunks), str(delay)], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.process.stdout.readline())}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def _first_text(line: str, raw: bool, seen: list[str]) -> bool:
    """Whether this ``data:`` line carries the first model text (raw: the first text besides think markup)."""
    if line == "data: [DONE]":
        return False
    choices = json.loads(line[6:]).get("choices") or [{}]
    if raw:
        seen.append(choices[0].get("text") or "")
        return bool("".join(seen).replace("<think>", "").replace("</think>", "").strip())
    delta = choices[0].get("delta") or {}
    return bool(delta.get("content") or delta.get("reasoning_content"))


async def _one(client: httpx.AsyncClient, url: str, body: dict[str, object], raw: bool) -> tuple[float, float, int]:
    started = time.perf_counter()
    first = None
    events = 0
    seen: list[str] = []
    async with client.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events += 1
                if first is None and _first_text(line, raw, seen):
                    first = time.perf_counter()
    end = time.perf_counter()
    return (first or end) - started, end - started, events


def _bodies(prompt: str) -> tuple[dict[str, object], dict[str, object]]:
    return {"prompt": prompt}, {"messages": [{"role": "user", "content": prompt}], "stream": True}


async def _timings(url: str, repeat: int, ttft_repeat: int, chunks: int) -> dict[str, list[float]]:
    keys = ("ttft", "ttft_reasoning", "request_cpu", "chunk", "cpu")
    out: dict[str, list[float]] = {f"{side}_{key}": [] for side in ("raw", "tk") for key in keys}
    paths = {"raw": "/raw", "tk": "/v1/chat/completions"}
    sides = ("raw", "tk")
    async with httpx.AsyncClient(timeout=60) as client:

        async def cpu() -> float:
            value: float = (await client.get(url + "/cpu")).json()["cpu"]
            return value

        async def one(side: str, prompt: str) -> tuple[float, float, int]:
            return await _one(client, url + paths[side], _bodies(prompt)[side == "tk"], side == "raw")

        for _ in range(3):  # warm up both paths
            for prompt in (CONTENT_FIRST, REASONING_FIRST, LONG, ONE):
                for side in sides:
                    await one(side, prompt)
        for _ in range(ttft_repeat):
            for key, prompt in (("ttft", CONTENT_FIRST), ("ttft_reasoning", REASONING_FIRST)):
                for side in sides:
                    out[f"{side}_{key}"].append((await one(side, prompt))[0])
        for _ in range(max(3, ttft_repeat // 20)):
            for side in sides:
                before = await cpu()
                for _ in range(20):
                    await one(side, ONE)
                out[f"{side}_request_cpu"].append((await cpu() - before) / 20)
        for _ in range(repeat):
            for side in sides:
                before = await cpu()
                _, total, _ = await one(side, LONG)
                after = await cpu()
                out[f"{side}_chunk"].append(total / chunks)
                out[f"{side}_cpu"].append((after - before) / chunks)
    return out


async def _concurrent(url: str, streams: int) -> tuple[int, float]:
    limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        started = time.perf_counter()
        body = _bodies(LONG)[1]
        results = await asyncio.gather(
            *[_one(client, url + "/v1/chat/completions", body, False) for _ in range(streams)], return_exceptions=True
        )
        elapsed = time.perf_counter() - started
    complete = sum(1 for r in results if isinstance(r, tuple) and r[2] > 3)
    return complete, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=None, help="runs of the 2000-chunk stream (default 15)")
    parser.add_argument("--ttft-repeat", type=int, default=None, help="runs of each first-token row (default 100)")
    parser.add_argument("--no-concurrency", action="store_true", help="skip the concurrent-streams row")
    parser.add_argument("--pin", action="store_true", help="pin the server to the last CPU, the client to the others")
    parser.add_argument("--serve", nargs=2, metavar=("CHUNKS", "DELAY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(int(args.serve[0]), float(args.serve[1]))
        return
    chunks = 500 if args.quick else 2000
    repeat = args.repeat or (5 if args.quick else 15)
    ttft_repeat = args.ttft_repeat or (30 if args.quick else 100)
    streams = 200 if args.quick else 1000

    server = Server(chunks, 0.0)
    if args.pin:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) > 1:
            os.sched_setaffinity(server.process.pid, {cpus[-1]})
            os.sched_setaffinity(0, set(cpus[:-1]))
    try:
        t = asyncio.run(_timings(server.url, repeat, ttft_repeat, chunks + 4))
    finally:
        server.stop()
    med = {k: statistics.median(v) for k, v in t.items()}
    print(f"{'row':<40}{'raw backend':>14}{'turnkit':>14}{'added':>14}")
    for key, label, scale, unit in (
        ("ttft", "time to first token", 1e3, "ms"),
        ("ttft_reasoning", "time to first token, reasoning first", 1e3, "ms"),
        ("request_cpu", "per request, server CPU", 1e3, "ms"),
        ("chunk", f"per chunk, wall ({chunks} chunks)", 1e6, "µs"),
        ("cpu", "per chunk, server CPU", 1e6, "µs"),
    ):
        raw, tk = med[f"raw_{key}"] * scale, med[f"tk_{key}"] * scale
        print(f"{label:<40}{raw:>11.3f} {unit}{tk:>11.3f} {unit}{tk - raw:>11.3f} {unit}")
    if os.environ.get("BENCH_SERVE_JSON"):
        print(json.dumps(t))
    if args.no_concurrency:
        return

    server = Server(8, 0.5)  # 12 chunks, one every 0.5 s: every stream is held open ~6 s
    try:
        complete, elapsed = asyncio.run(_concurrent(server.url, streams))
    finally:
        server.stop()
    print(
        f"concurrent streams held: {complete}/{streams} complete, all in {elapsed:.1f} s "
        f"(each 12 chunks, one per 0.5 s)"
    )


if __name__ == "__main__":
    main()
