"""Scaling of ``turnkit batch`` from 1 to 2 local workers, in a lean process (no transformers loaded).

    python bench/batch_scaling.py                 # 4000 chat rows, small tokenizer, 3 rounds
    python bench/batch_scaling.py --rows 1000 --rounds 5 --dataset agent
    python bench/batch_scaling.py --rows 200 --start-method spawn   # workers spawned, not forked

bench/batch.py times the same runs inside a process that also holds transformers and datasets, which the forked
workers inherit; this is what the CLI does. Rounds alternate 1 and 2 workers, each with a fresh renderer (an
empty memo of pieces); the figures are conversations per wall second, with the CPU seconds of the main process
and of the workers. On a shared machine, quote the load average (printed) or raise the session's scheduler
weight (docs/training.md says how).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from batch import _agent_rows, _conversations, _model, _template_source  # noqa: E402
from turnkit import batch as tbatch  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokenizer", default="small", choices=["small", "wide"])
    parser.add_argument("--dataset", default="chat", choices=["chat", "agent"])
    parser.add_argument("--start-method", choices=["fork", "forkserver", "spawn"], help="default: turnkit's")
    args = parser.parse_args()
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        folder.mkdir()
        _model(folder, _template_source(), args.tokenizer)
        data = Path(tmp) / "in.jsonl"
        rows = (
            [{"messages": c} for c in _conversations(args.rows)] if args.dataset == "chat" else _agent_rows(args.rows)
        )
        data.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
        rates: dict[int, list[float]] = {1: [], 2: []}
        print(
            f"{args.rows} {args.dataset} rows, {args.tokenizer} tokenizer, start method "
            f"{args.start_method or 'default'}; load average {os.getloadavg()[0]:.1f}"
        )
        for _ in range(args.rounds):
            for workers in (1, 2):
                worker = tbatch.Renderer(model=folder, masks=True)
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu, start = time.process_time(), time.perf_counter()
                tbatch.run(worker, data, Path(tmp) / "out.jsonl", workers=workers, start_method=args.start_method)
                wall = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                children = max(0.0, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                rates[workers].append(args.rows / wall)
                main_cpu = time.process_time() - cpu
                print(
                    f"  {workers} worker{'s' if workers > 1 else ' '}: {args.rows / wall:7.0f} conv/s, main process "
                    f"{main_cpu:.2f} CPU-s, workers {children:.2f} CPU-s, load {os.getloadavg()[0]:.1f}"
                )
        pairs = [two / one for one, two in zip(rates[1], rates[2], strict=True)]
        rounds = ", ".join(f"{pair:.2f}" for pair in pairs)
        print(f"2 workers / 1 worker: median {statistics.median(pairs):.2f}x (rounds: {rounds})")


if __name__ == "__main__":
    main()
