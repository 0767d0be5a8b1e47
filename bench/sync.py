"""Benchmark: bytes on the wire to keep a client in sync, per chunk: turnkit's forms and the usual alternatives.

    python bench/sync.py            # 1 KB, 10 KB, 100 KB report documents, 4-character chunks
    python bench/sync.py --quick    # 1 KB and 10 KB
    python bench/sync.py --http 5000 --ops 20   # concurrent streams over real HTTP: op delivery latency

For every chunk of model output the server sends the client what changed. Compared (UTF-8 bytes of
the event data, summed over the stream, divided by the document's bytes):

* turnkit ops: the ``patch`` event data (a JSON array of JSON Patch + ``append`` operations);
* + $partial: the same with the marker operations (PartialMarkers), so the client holds annotated();
* compact: OpEncoder's wire form of the same operations;
* RFC 6902 downgrade: ``append`` as ``replace`` of the whole string (``?protocol=json-patch``, AG-UI STATE_DELTA);
* full snapshot: the whole value as JSON after every chunk (what useObject-style re-sending costs);
* jsonpatch.make_patch: a diff between consecutive snapshots (LangChain's ``diff=True``), 1 KB and 10 KB only
  (it re-walks the whole document per chunk).

Also: a SyncRun's publish cost per chunk against the bare feed (CPU time, medians of interleaved samples), and
what a slow subscriber reading every 16 chunks receives (coalesced patches).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from structured import chunks_of, make_document  # noqa: E402
from turnkit.serve._sync import SyncRun  # noqa: E402
from turnkit.structured import JsonStream, OpEncoder, PartialMarkers, Rfc6902Downgrader  # noqa: E402
from turnkit.structured._wire import _value_json  # noqa: E402


def _size(text: str) -> int:
    return len(text.encode())


def wire_bytes(chunks: list[str], *, snapshots: bool, make_patch: bool) -> dict[str, int]:
    plain = JsonStream()
    marked = PartialMarkers(JsonStream())
    encoder = OpEncoder()
    downgrader = Rfc6902Downgrader()
    totals = dict.fromkeys(["ops", "partial", "compact", "rfc6902", "snapshot", "make_patch"], 0)
    previous: Any = None
    jsonpatch: Any = None
    if make_patch:
        try:
            import jsonpatch
        except ImportError:
            make_patch = False
    for chunk in [*chunks, None]:
        ops = plain.feed(chunk) if chunk is not None else plain.close()
        marked_ops = marked.feed(chunk) if chunk is not None else marked.close()
        if ops:
            totals["ops"] += _size(_value_json(ops))
            totals["compact"] += _size(encoder.encode(ops))
            totals["rfc6902"] += _size(_value_json(downgrader.downgrade(ops)))
        if marked_ops:
            totals["partial"] += _size(_value_json(marked_ops))
        if snapshots and ops:
            current = json.dumps(plain.value, ensure_ascii=False, separators=(",", ":"))
            totals["snapshot"] += _size(current)
            if make_patch:
                value = json.loads(current)
                if previous is None:
                    totals["make_patch"] += _size(json.dumps([{"op": "add", "path": "", "value": value}]))
                else:
                    totals["make_patch"] += _size(jsonpatch.make_patch(previous, value).to_string())
                previous = value
    return totals


def publish_cost(chunks: list[str], repeat: int) -> tuple[float, float]:
    """(feed + value, SyncRun.feed with one subscriber reading every chunk): CPU seconds, medians."""

    def bare() -> None:
        s = JsonStream()
        for chunk in chunks:
            s.feed(chunk)
            s.value  # noqa: B018

    def published() -> None:
        run = SyncRun(source=JsonStream())
        sub = run.subscribe()
        for chunk in chunks:
            run.feed(chunk)
            for event in sub.ready():
                event.data  # noqa: B018 - what the HTTP layer sends

    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for fn, out in ((bare, samples[0]), (published, samples[1])):
            t0 = time.process_time()
            fn()
            out.append(time.process_time() - t0)
    return statistics.median(samples[0]), statistics.median(samples[1])


def slow_subscriber(chunks: list[str], every: int) -> tuple[int, int, int]:
    """(events received, bytes received, events published) for a subscriber that reads every ``every`` chunks."""
    run = SyncRun(source=JsonStream(), subscriber_events=4)
    sub = run.subscribe()
    events = received = 0
    for i, chunk in enumerate(chunks, 1):
        run.feed(chunk)
        if i % every == 0:
            for event in sub.ready():
                events += 1
                received += _size(event.data)
    run.close()
    for event in sub.ready():
        events += 1
        received += _size(event.data)
    return events, received, run.seq


async def _http_load(streams: int, ops: int, interval: float) -> dict[str, Any]:
    """``streams`` SyncRuns on a real uvicorn (this process, its own thread and loop), one raw-socket SSE client
    each (asyncio streams, lighter than httpx, so the client costs less of the shared CPU); every ``interval``
    seconds each run publishes one ``append`` op. Latency = client receive time - publish time (same clock)."""
    import asyncio
    import threading

    import uvicorn

    from turnkit.serve import create_app, embedded_gateway
    from turnkit.serve._sync import SyncRegistry

    registry = SyncRegistry(max_runs=streams + 10)
    app = create_app(embedded_gateway(), sync=registry)
    holder: dict[str, Any] = {}

    async def grab(request: Any) -> Any:
        from starlette.responses import PlainTextResponse

        holder["loop"] = asyncio.get_running_loop()
        return PlainTextResponse("ok")

    app.add_route("/_loop", grab, methods=["GET"])
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", backlog=streams + 100)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /_loop HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    await reader.read()
    writer.close()
    loop = holder["loop"]
    runs = [registry.create(None, run_id=f"r{i}") for i in range(streams)]
    published: dict[int, float] = {}
    latencies: list[float] = []
    problems: list[str] = []

    async def client(run_id: str) -> None:
        r, w = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        w.write(f"GET /v1/streams/{run_id}/events HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        seqs: list[int] = []
        while True:
            line = await r.readline()
            if not line:
                break
            if line.startswith(b"id: "):
                seq = int(line[4:])
                now = time.perf_counter()
                if seq in published:
                    latencies.append(now - published[seq])
                seqs.append(seq)
            elif line.startswith(b"event: end"):
                break
        w.close()
        expected = list(range(seqs[0], seqs[0] + len(seqs))) if seqs else []
        if seqs != expected or seqs[-1] != ops + 1:
            problems.append(f"{run_id}: seqs {seqs[:5]}...{seqs[-3:]}")

    tasks = [asyncio.ensure_future(client(run.id)) for run in runs]
    deadline = time.monotonic() + 120
    while sum(run.subscribers for run in runs) < streams and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    connected = sum(run.subscribers for run in runs)

    def start_doc() -> None:
        for run in runs:
            run.publish([{"op": "add", "path": "", "value": {"t": ""}}])

    loop.call_soon_threadsafe(start_doc)
    for _i in range(ops):
        await asyncio.sleep(interval)

        def tick() -> None:
            t = time.perf_counter()
            for run in runs:
                seq = run.publish([{"op": "append", "path": "/t", "value": "word "}])
            published[seq] = t  # every run has the same seq at the same step

        loop.call_soon_threadsafe(tick)
    await asyncio.sleep(interval)
    loop.call_soon_threadsafe(lambda: [run.close() for run in runs])
    await asyncio.wait_for(asyncio.gather(*tasks), 300)
    server.should_exit = True
    thread.join(10)
    latencies.sort()
    pick = (lambda q: latencies[min(len(latencies) - 1, int(len(latencies) * q))] * 1000) if latencies else None
    return {
        "streams": streams,
        "connected": connected,
        "ops": len(latencies),
        "expected_ops": streams * ops,
        "p50_ms": pick(0.5) if pick else None,
        "p99_ms": pick(0.99) if pick else None,
        "max_ms": latencies[-1] * 1000 if latencies else None,
        "problems": problems[:5],
        "lost_or_duplicated": len(problems),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--http", type=int, metavar="STREAMS", help="only the HTTP load test, with STREAMS streams")
    parser.add_argument("--ops", type=int, default=20, help="--http: ops published per stream")
    parser.add_argument("--interval", type=float, default=0.5, help="--http: seconds between ops")
    parser.add_argument("--quick", action="store_true", help="1 KB and 10 KB only")
    parser.add_argument("--chunk", type=int, default=4, help="characters per chunk")
    parser.add_argument("--repeat", type=int, default=5, help="samples per timing (median)")
    args = parser.parse_args(argv)
    if args.http:
        import asyncio

        result = asyncio.run(_http_load(args.http, args.ops, args.interval))
        print(json.dumps(result, indent=2))
        return 0
    sizes = [("1 KB", 1_000), ("10 KB", 10_000)] + ([] if args.quick else [("100 KB", 100_000)])
    print(f"Python {sys.version.split()[0]}, {args.chunk}-character chunks; bytes sent / document bytes\n")
    header = (
        f"{'document':>8} {'bytes':>8} {'chunks':>7} | {'turnkit ops':>11} {'+ $partial':>10} {'compact':>8} "
        f"{'RFC 6902':>9} {'snapshots':>10} {'make_patch':>10}"
    )
    print(header)
    print("-" * len(header))
    for label, size in sizes:
        doc = make_document(size)
        chunks = chunks_of(doc, args.chunk)
        nbytes = _size(doc)
        totals = wire_bytes(chunks, snapshots=True, make_patch=size <= 10_000)
        mp = f"{totals['make_patch'] / nbytes:>9.1f}x" if totals["make_patch"] else f"{'skipped':>10}"
        r = {name: total / nbytes for name, total in totals.items()}
        print(
            f"{label:>8} {nbytes:>8} {len(chunks):>7} | {r['ops']:>10.2f}x {r['partial']:>9.2f}x "
            f"{r['compact']:>7.2f}x {r['rfc6902']:>8.1f}x {r['snapshot']:>9.1f}x {mp}"
        )
    print("\nSyncRun: publish + one subscriber per chunk, against feed + value (CPU seconds, medians)")
    for label, size in sizes:
        chunks = chunks_of(make_document(size), args.chunk)
        bare, published = publish_cost(chunks, args.repeat)
        print(f"  {label:>6}: feed {bare:.4f} s, published {published:.4f} s ({published / bare:.1f}x)")
    print("\nA slow subscriber (reads every 16 chunks; buffer of 4 events, then coalesced)")
    for label, size in sizes:
        doc = make_document(size)
        chunks = chunks_of(doc, args.chunk)
        events, received, published_events = slow_subscriber(chunks, 16)
        print(
            f"  {label:>6}: {events} events received for {published_events} published, "
            f"{received / _size(doc):.2f}x the document's bytes"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
