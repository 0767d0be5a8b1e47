"""Machine instructions per chunk of JsonStream, counted by valgrind (repeatable on a loaded machine).

    python bench/structured_instructions.py                 # the 100 KB report document
    python bench/structured_instructions.py --kind records  # the structure-heavy one
    python bench/structured_instructions.py --text fresh    # text that never repeats
    python bench/structured_instructions.py --wire          # also the wire path: feed_encoded, and feed + encode

Wall-clock medians on a shared machine swing by more than the changes worth measuring; an instruction
count does not depend on the load. The same workload (bench/structured.py's document, 4-character
chunks, the value read after every chunk) is run under ``valgrind --tool=callgrind`` once with zero
and once with ``--runs`` streams; the difference divided by the chunks streamed is the cost per chunk,
with start-up and document generation cancelled out. Needs valgrind (Debian package ``valgrind``).
Instructions are not time (a memcpy is cheap per instruction), so confirm a win with bench/structured.py.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _callgrind import count  # noqa: E402

from structured import chunks_of, make_document, run_turnkit, run_turnkit_encoded, run_turnkit_wire  # noqa: E402

RUNNERS = {"parse": run_turnkit, "encode": run_turnkit_wire, "feed_encoded": run_turnkit_encoded}


def _worker(kind: str, text: str, size: int, runs: int, wire: str = "parse") -> None:
    run = RUNNERS[wire]
    chunks = chunks_of(make_document(size, kind=kind, text=text))
    run(chunks_of(make_document(5_000, kind=kind, text=text)))  # warm the specialising interpreter either way
    for _ in range(runs):
        run(chunks)
    print(len(chunks))


def _instructions(kind: str, text: str, size: int, runs: int, wire: str = "parse") -> tuple[int, int]:
    """(instructions, chunks per run) of one worker process under callgrind."""
    worker = ["--worker", "--kind", kind, "--text", text, "--size", str(size), "--runs", str(runs)]
    return count([sys.executable, __file__, *worker, "--runner", wire])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", choices=["report", "records"], default="report", help="the document's kind")
    parser.add_argument("--text", choices=["repeated", "fresh"], default="repeated", help="the texts' kind")
    parser.add_argument("--size", type=int, default=100_000, help="document size in characters")
    parser.add_argument("--runs", type=int, default=2, help="streams counted (the difference against zero)")
    parser.add_argument("--wire", action="store_true", help="also count the wire path (feed_encoded; feed + encode)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--runner", choices=list(RUNNERS), default="parse", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.kind, args.text, args.size, args.runs, args.runner)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    base, chunks = _instructions(args.kind, args.text, args.size, 0)
    total, _ = _instructions(args.kind, args.text, args.size, args.runs)
    per_chunk = (total - base) / args.runs / chunks
    what = f"{args.kind} ({args.text} text) {args.size:,} characters, {chunks:,} chunks"
    print(f"{what}: {per_chunk:,.0f} instructions per chunk")
    if args.wire:
        for runner, how in (("feed_encoded", "with feed_encoded"), ("encode", "with OpEncoder.encode of every batch")):
            wire_base, _ = _instructions(args.kind, args.text, args.size, 0, runner)
            wire_total, _ = _instructions(args.kind, args.text, args.size, args.runs, runner)
            wire = (wire_total - wire_base) / args.runs / chunks
            print(f"{what}: {wire:,.0f} {how} ({wire / per_chunk:.2f}x the parse)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
