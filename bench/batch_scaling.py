"""Scaling of ``turnkit batch`` from 1 to 2 local workers, JSON lines or parquet, file to file.

    python bench/batch_scaling.py                 # 4000 chat rows, small tokenizer, JSON lines, 3 rounds
    python bench/batch_scaling.py --rows 6000 --format parquet
    python bench/batch_scaling.py --rows 1000 --rounds 5 --dataset agent
    python bench/batch_scaling.py --rows 2000 --format parquet --ballast 1000   # a process as big as bench/batch.py's
    python bench/batch_scaling.py --rows 200 --start-method spawn   # workers spawned, not forked
    python bench/batch_scaling.py --rows 6000 --format parquet --fresh   # each run a new `turnkit batch render`

By default the process is lean (only turnkit loaded), as the CLI runs. ``--ballast MB`` first imports transformers
and datasets and holds MB of small Python objects, so the forked workers start from a process as big as
bench/batch.py's (~1.2 GB). Rounds
alternate 1 and 2 workers, each with a fresh renderer (an empty memo of pieces); the figures are conversations
per wall second, with the CPU seconds of the main process and of the workers and the workers' minor page faults
(copy-on-write of the pages they inherited, among others). ``--format parquet`` reads and writes parquet
(``messages`` as ``list<struct>``, as bench/batch.py writes it). ``--fresh`` runs each round's runs as the command
in a new process (``python -m turnkit.cli batch render ... --masks --workers N``), as a user runs it: imports, the
template and the tokenizer are then paid in every run, and the CPU seconds are the command's and its workers' in
all. On a shared machine, quote the load average (printed). Each run also prints the cores that other processes
kept busy meanwhile (``/proc/stat``'s busy time less this run's own CPU, Linux), and the summary gives the
rounds in which they used less than ``--quiet`` cores in both runs on their own: wall-clock ratios mean something
only there.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from batch import _DATASETS, _agent_rows, _model, _template_source  # noqa: E402
from turnkit import batch as tbatch  # noqa: E402


def _write_input(path: Path, rows: list[dict[str, object]], kind: str) -> Path:
    target = path.with_suffix(f".{kind}")
    if kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), target)  # messages as list<struct>
    else:
        target.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    return target


_BALLAST: list[object] = []


def _ballast(megabytes: int) -> None:
    """Import what bench/batch.py's process holds (transformers, datasets) and keep ``megabytes`` of small Python
    objects alive (its rows, tokenizers and results), so forked workers inherit a process of that size."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import datasets  # noqa: F401
        import transformers  # noqa: F401
    # ~1 KB a row: a dict of a few strings and a list of ints, as rows and their results are
    _BALLAST.extend(
        {"text": f"row {i} " * 8, "ids": list(range(i % 97, i % 97 + 64))} for i in range(megabytes * 1024 // 3)
    )


def _busy_seconds() -> float | None:
    """CPU seconds all processes have used since boot (``/proc/stat``), or ``None`` off Linux."""
    try:
        with open("/proc/stat") as handle:
            fields = [int(value) for value in handle.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _command(folder: Path, data: Path, out: Path, workers: int, batch_size: int, method: str | None) -> None:
    """``turnkit batch render`` in a new process, importing the same turnkit as this one."""
    root = str(Path(tbatch.__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "turnkit.cli", "batch", "render", "--model", str(folder), "--input", str(data)]
    command += ["--output", str(out), "--masks", "--workers", str(workers), "--batch-size", str(batch_size)]
    command += ["--start-method", method] if method else []
    subprocess.run(command, env=env, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokenizer", default="small", choices=["small", "wide"])
    parser.add_argument("--dataset", default="chat", choices=["chat", "chat-intl", "agent"])
    parser.add_argument("--format", default="jsonl", choices=["jsonl", "parquet"], help="input and output kind")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument(
        "--ballast", type=int, default=0, metavar="MB", help="import transformers and datasets, and hold MB of objects"
    )
    parser.add_argument("--start-method", choices=["fork", "forkserver", "spawn"], help="default: turnkit's")
    parser.add_argument("--fresh", action="store_true", help="each run is the command in a new process")
    parser.add_argument(
        "--quiet", type=float, default=0.2, metavar="CORES", help="rounds counted as quiet: others used less"
    )
    args = parser.parse_args()
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    if args.ballast:
        _ballast(args.ballast)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        folder.mkdir()
        _model(folder, _template_source(), args.tokenizer)
        rows = (
            _agent_rows(args.rows)
            if args.dataset == "agent"
            else [{"messages": c} for c in _DATASETS[args.dataset](args.rows)]
        )
        data = _write_input(Path(tmp) / "in", rows, args.format)
        out = Path(tmp) / f"out.{args.format}"
        rates: dict[int, list[float]] = {1: [], 2: []}
        cpus: dict[int, list[float]] = {1: [], 2: []}
        others: dict[int, list[float]] = {1: [], 2: []}
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{args.rows} {args.dataset} rows, {args.format}, {args.tokenizer} tokenizer, batches of "
            f"{args.batch_size}, start method {args.start_method or 'default'}, process {rss:.0f} MB; "
            f"load average {' '.join(f'{value:.1f}' for value in os.getloadavg())}"
        )
        for _ in range(args.rounds):
            for workers in (1, 2):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                busy = _busy_seconds()
                cpu, start = time.process_time(), time.perf_counter()
                if args.fresh:
                    _command(folder, data, out, workers, args.batch_size, args.start_method)
                else:
                    worker = tbatch.Renderer(model=folder, masks=True)
                    tbatch.run(
                        worker, data, out, workers=workers, batch_size=args.batch_size, start_method=args.start_method
                    )
                wall = time.perf_counter() - start
                main_cpu = time.process_time() - cpu
                busy_after = _busy_seconds()
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                children = max(0.0, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                faults = after.ru_minflt - before.ru_minflt
                rates[workers].append(args.rows / wall)
                cpus[workers].append(main_cpu + children)
                elsewhere = (busy_after - busy - main_cpu - children) / wall if busy and busy_after else 0.0
                others[workers].append(max(0.0, elsewhere))
                where = "the command and its workers" if args.fresh else f"main process {main_cpu:.2f} CPU-s, workers"
                print(
                    f"  {workers} worker{'s' if workers > 1 else ' '}: {args.rows / wall:7.0f} conv/s, {where} "
                    f"{children:.2f} CPU-s ({faults} minor faults), load {os.getloadavg()[0]:.1f}, "
                    f"others {others[workers][-1]:.2f} cores"
                )
        pairs = [two / one for one, two in zip(rates[1], rates[2], strict=True)]
        rounds = ", ".join(f"{pair:.2f}" for pair in pairs)
        print(f"2 workers / 1 worker: median {statistics.median(pairs):.2f}x (rounds: {rounds})")
        quiet = [pair for pair, one, two in zip(pairs, others[1], others[2], strict=True) if max(one, two) < args.quiet]
        if quiet:
            rounds = ", ".join(f"{pair:.2f}" for pair in quiet)
            print(f"  rounds with others under {args.quiet} cores: median {statistics.median(quiet):.2f}x ({rounds})")
        else:
            print(f"  no round with others under {args.quiet} cores")
        # on 2 cores kept busy, 2 workers can be at most 2 x (1-worker CPU) / (2-worker CPU) as fast: less noisy
        # than wall time on a shared machine
        caps = [2 * one / two for one, two in zip(cpus[1], cpus[2], strict=True)]
        rounds = ", ".join(f"{cap:.2f}" for cap in caps)
        print(
            f"CPU cap on 2 cores, 2 x (1-worker CPU) / (2-worker CPU): median {statistics.median(caps):.2f}x ({rounds})"
        )


if __name__ == "__main__":
    main()
