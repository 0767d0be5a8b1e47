"""Benchmark: bytes on the wire to keep a client in sync, per chunk: turnkit's forms and the usual alternatives.

    python bench/sync.py            # 1 KB, 10 KB, 100 KB report documents, 4-character chunks
    python bench/sync.py --quick    # 1 KB and 10 KB
    python bench/sync.py --http 5000            # concurrent streams over real HTTP: op delivery latency
    python bench/sync.py --http 5000 --spread   # each stream publishing at its own phase (not all at once)
    python bench/sync.py --http 5000 --http-impl httptools --gc-freeze   # server variants (see --help)

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


# ---------------------------------------------------------------- concurrent streams over HTTP (--http)
#
# Two processes on one machine: the server (uvicorn, one worker, this file with --load-server) owns the runs
# and publishes; the clients (this process, or --client-procs of them) hold one raw SSE connection per stream,
# parsed by a lean asyncio.Protocol (no HTTP library). Every op carries its index and its publish time on
# CLOCK_MONOTONIC (one clock for every process of the machine), so latency = receive time - publish time of
# that op, and the text each client rebuilds shows any op lost or delivered twice.


def _clock() -> float:
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def _load_server(args: argparse.Namespace) -> int:
    """The server half: N runs, a uvicorn on 127.0.0.1, one ``append`` per run every ``interval`` seconds."""
    import asyncio
    import gc
    import os

    import uvicorn

    from turnkit.serve import create_app, embedded_gateway
    from turnkit.serve._sync import SyncRegistry

    streams, ops, interval = args.load_server, args.ops, args.interval
    registry = SyncRegistry(max_runs=streams + 10)
    app = create_app(embedded_gateway(), sync=registry)
    runs = [registry.create(None, run_id=f"r{i}") for i in range(streams)]
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="error", backlog=4096, http=args.http_impl, lifespan="off"
    )
    server = uvicorn.Server(config)

    pauses: list[tuple[int, float]] = []  # (generation, seconds) of every garbage collection while publishing
    started: list[float] = []

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(_clock())
        elif started:
            pauses.append((info["generation"], _clock() - started.pop()))

    async def main() -> None:
        serving = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        print(json.dumps({"port": port}), flush=True)
        deadline = time.monotonic() + 300
        while sum(run.subscribers for run in runs) < streams and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        connected = sum(run.subscribers for run in runs)
        heap = len(gc.get_objects())
        if args.gc_freeze:  # what a deployment can do once its connections are up: full collections skip them
            gc.freeze()
        if os.environ.get("SYNC_BENCH_HEAP"):
            import collections

            kinds = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
            print(kinds.most_common(25), file=sys.stderr)
        cpu0, wall0 = time.process_time(), time.monotonic()
        gc.callbacks.append(on_gc)
        for run in runs:
            run.publish([{"op": "add", "path": "", "value": {"t": ""}}])
        fanout: list[float] = []
        start = _clock()
        for k in range(ops):
            if args.spread:  # each stream at its own phase of the interval
                slots = 50
                for slot in range(slots):
                    await asyncio.sleep(max(0.0, start + interval * (k + 1 + slot / slots) - _clock()))
                    t0 = _clock()
                    for run in runs[slot::slots]:
                        run.publish([{"op": "append", "path": "/t", "value": f"{k}@{_clock()!r};"}])
                    fanout.append(_clock() - t0)
            else:  # every stream at once: the burst a tick of N streams makes
                await asyncio.sleep(max(0.0, start + interval * (k + 1) - _clock()))
                t0 = _clock()
                for run in runs:
                    run.publish([{"op": "append", "path": "/t", "value": f"{k}@{_clock()!r};"}])
                fanout.append(_clock() - t0)
        await asyncio.sleep(interval)
        for run in runs:
            run.close()
        deadline = time.monotonic() + 60
        while sum(run.subscribers for run in runs) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        gc.callbacks.remove(on_gc)
        fanout.sort()
        full = [seconds for generation, seconds in pauses if generation == 2]
        print(
            json.dumps(
                {
                    "connected": connected,
                    "cpu_s": round(cpu, 3),
                    "wall_s": round(wall, 3),
                    "cpu_share": round(cpu / wall, 3),
                    "publish_loop_ms_p50": round(fanout[len(fanout) // 2] * 1000, 2),
                    "publish_loop_ms_max": round(fanout[-1] * 1000, 2),
                    "gc_tracked_objects": heap,
                    "gc_pauses": len(pauses),
                    "gc_pause_ms_max": round(max((p for _, p in pauses), default=0) * 1000, 1),
                    "gc_full_collections": len(full),
                    "pid": os.getpid(),
                }
            ),
            flush=True,
        )
        server.should_exit = True
        await serving

    factory = None
    if args.loop_impl == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main())
    return 0


class _SSEClient:
    """One stream's connection: de-chunks the HTTP body, splits SSE events, records each op's latency."""

    def __init__(self, run_id: str, done: Any, latencies: list[float]) -> None:
        self.request = f"GET /v1/streams/{run_id}/events HTTP/1.1\r\nHost: bench\r\n\r\n".encode()
        self.done = done
        self.latencies = latencies
        self.head = True
        self.raw = b""  # undecoded bytes (headers, chunk framing)
        self.body = b""  # de-chunked SSE text not yet split into events
        self.text: list[str] = []  # the ops' values in arrival order
        self.seqs: list[int] = []
        self.snapshots = 0
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = _clock()
        raw = self.raw + data
        if self.head:
            cut = raw.find(b"\r\n\r\n")
            if cut < 0:
                self.raw = raw
                return
            self.head = False
            raw = raw[cut + 4 :]
        body = self.body
        while raw:  # chunked transfer coding: <hex>\r\n<bytes>\r\n
            line = raw.find(b"\r\n")
            if line < 0:
                break
            size = int(raw[:line], 16)
            if len(raw) < line + 2 + size + 2:
                break
            body += raw[line + 2 : line + 2 + size]
            raw = raw[line + 4 + size :]
        self.raw = raw
        *events, self.body = body.split(b"\n\n")
        for event in events:
            self.event(event, now)

    def event(self, block: bytes, now: float) -> None:
        kind = seq = data = None
        for line in block.split(b"\n"):
            name, _, value = line.partition(b": ")
            if name == b"event":
                kind = value
            elif name == b"id":
                seq = int(value)
            elif name == b"data":
                data = value
        if kind is None:  # a heartbeat comment
            return
        if kind == b"patch":
            assert seq is not None and data is not None
            self.seqs.append(seq)
            for op in json.loads(data):
                value = op.get("value")
                if op["op"] == "append":
                    self.text.append(value)
                    for part in value.split(";")[:-1]:
                        self.latencies.append(now - float(part.partition("@")[2]))
        elif kind == b"snapshot":
            self.snapshots += 1
        elif kind == b"end":
            self.transport.close()
            if not self.done.done():
                self.done.set_result(None)

    def eof_received(self) -> None:
        pass

    def connection_lost(self, exc: BaseException | None) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def pause_writing(self) -> None:
        pass

    def resume_writing(self) -> None:
        pass


def _load_clients(port: int, run_ids: list[str], ops: int, out: Any = None) -> dict[str, Any]:
    """Connect one client per run, wait for every ``end``; the latencies and the lost / duplicated ops."""
    import asyncio

    async def main() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        latencies: list[float] = []
        clients: list[_SSEClient] = []
        gate = asyncio.Semaphore(200)  # (the server's accept backlog is bounded)

        async def connect(run_id: str) -> None:
            client = _SSEClient(run_id, loop.create_future(), latencies)
            clients.append(client)
            async with gate:
                await loop.create_connection(lambda: client, "127.0.0.1", port)  # type: ignore[arg-type, return-value]
            await client.done

        cpu0 = time.process_time()
        await asyncio.wait_for(asyncio.gather(*(connect(run_id) for run_id in run_ids)), 600)
        cpu = time.process_time() - cpu0
        want = [str(k) for k in range(ops)]
        bad = sum(1 for c in clients if [p.partition("@")[0] for p in "".join(c.text).split(";")[:-1]] != want)
        return {
            "latencies": latencies,
            "bad_streams": bad,
            "resyncs": sum(max(0, c.snapshots - 1) for c in clients),
            "events": sum(len(c.seqs) for c in clients),
            "cpu_s": cpu,
        }

    result = asyncio.run(main())
    if out is not None:
        out.put(result)
    return result


_SERVER_DEFAULTS: dict[str, str | bool] = {"loop": "asyncio", "http": "httptools", "spread": False, "gc_freeze": False}


def http_load(
    streams: int, ops: int, interval: float, *, client_procs: int = 1, **server: str | bool
) -> dict[str, Any]:
    """Start the server process, run the clients (this process, or ``client_procs`` of them), gather the figures."""
    import multiprocessing
    import os
    import subprocess

    command = [sys.executable, __file__, "--load-server", str(streams), "--ops", str(ops), "--interval", str(interval)]
    command += ["--loop-impl", str(server.get("loop", "asyncio")), "--http-impl", str(server.get("http", "httptools"))]
    command += ["--spread"] if server.get("spread") else []
    command += ["--gc-freeze"] if server.get("gc_freeze") else []
    load_before = os.getloadavg()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = json.loads(proc.stdout.readline())["port"]
    run_ids = [f"r{i}" for i in range(streams)]
    if client_procs == 1:
        results = [_load_clients(port, run_ids, ops)]
    else:
        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue()
        workers = [
            ctx.Process(target=_load_clients, args=(port, run_ids[i::client_procs], ops, queue))
            for i in range(client_procs)
        ]
        for worker in workers:
            worker.start()
        results = [queue.get() for _ in workers]
        for worker in workers:
            worker.join()
    server_stats = json.loads(proc.stdout.readline())
    proc.wait(60)
    load_after = os.getloadavg()
    latencies = sorted(x for r in results for x in r["latencies"])

    def pick(q: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(len(latencies) * q))] * 1000, 1)

    return {
        "streams": streams,
        "ops_per_stream": ops,
        "interval_s": interval,
        "server": {name: server.get(name, default) for name, default in _SERVER_DEFAULTS.items()},
        "ops_delivered": len(latencies),
        "ops_expected": streams * ops,
        "streams_with_lost_or_duplicated_ops": sum(r["bad_streams"] for r in results),
        "resyncs": sum(r["resyncs"] for r in results),
        "p50_ms": pick(0.5) if latencies else None,
        "p99_ms": pick(0.99) if latencies else None,
        "max_ms": round(latencies[-1] * 1000, 1) if latencies else None,
        "server_stats": server_stats,
        "client_cpu_s": round(sum(r["cpu_s"] for r in results), 2),
        "loadavg_before": load_before,
        "loadavg_after": load_after,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--http", type=int, metavar="STREAMS", help="only the HTTP load test, with STREAMS streams")
    parser.add_argument("--ops", type=int, default=20, help="--http: ops published per stream")
    parser.add_argument("--interval", type=float, default=0.5, help="--http: seconds between ops")
    parser.add_argument("--client-procs", type=int, default=1, help="--http: client processes")
    parser.add_argument("--loop-impl", choices=["asyncio", "uvloop"], default="asyncio", help="--http: server loop")
    parser.add_argument(
        "--http-impl",
        choices=["h11", "httptools"],
        default="httptools",
        help="--http: uvicorn's parser (httptools: what turnkit serve runs with the serve extra)",
    )
    parser.add_argument("--spread", action="store_true", help="--http: each stream publishes at its own phase")
    parser.add_argument("--gc-freeze", action="store_true", help="--http: gc.freeze() once every client is connected")
    parser.add_argument("--load-server", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="1 KB and 10 KB only")
    parser.add_argument("--chunk", type=int, default=4, help="characters per chunk")
    parser.add_argument("--repeat", type=int, default=5, help="samples per timing (median)")
    args = parser.parse_args(argv)
    if args.load_server:
        return _load_server(args)
    if args.http:
        result = http_load(
            args.http,
            args.ops,
            args.interval,
            client_procs=args.client_procs,
            loop=args.loop_impl,
            http=args.http_impl,
            spread=args.spread,
            gc_freeze=args.gc_freeze,
        )
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
