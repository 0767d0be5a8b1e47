"""Machine instructions per chunk of turnkit's streaming parse, counted by valgrind (repeatable on a loaded machine).

    python bench/parse_stream_instructions.py                      # hermes and qwen3_coder_xml, 20 KB
    python bench/parse_stream_instructions.py --size 200000        # the large output of bench/parse_stream.py

The workload of ``bench/parse_stream.py`` (its outputs, 4-character chunks, ``close()`` and the message) is run
under ``valgrind --tool=callgrind`` once with zero and once with one stream of the output; the difference
divided by the chunks is the cost per chunk, with start-up and output generation cancelled out. Hash
randomisation is fixed (``PYTHONHASHSEED=0``) so two runs of the same code agree. Instructions are not time;
confirm a change with ``bench/parse_stream.py``. Needs valgrind (Debian package ``valgrind``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _callgrind import count  # noqa: E402
from parse_stream import chunks_of, hermes_output, qwen_output, run_turnkit  # noqa: E402

OUTPUTS = {"hermes": hermes_output, "qwen3_coder_xml": qwen_output}


def _worker(name: str, size: int, runs: int) -> None:
    make = OUTPUTS[name]
    chunks = chunks_of(make(size))
    run_turnkit(name, chunks_of(make(5_000)))  # warm the specialising interpreter either way
    for _ in range(runs):
        run_turnkit(name, chunks)
    print(len(chunks))


def _instructions(name: str, size: int, runs: int) -> tuple[int, int]:
    """(instructions, chunks per run) of one worker process under callgrind."""
    worker = ["--worker", "--format", name, "--size", str(size), "--runs", str(runs)]
    return count([sys.executable, __file__, *worker], env={"PYTHONHASHSEED": "0"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--format", choices=sorted(OUTPUTS), action="append", help="one format (default: both)")
    parser.add_argument("--size", type=int, default=20_000, help="output size in characters")
    parser.add_argument("--runs", type=int, default=1, help="streams counted (the difference against zero)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    names = args.format or sorted(OUTPUTS)
    if args.worker:
        _worker(names[0], args.size, args.runs)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    for name in names:
        base, chunks = _instructions(name, args.size, 0)
        total, _ = _instructions(name, args.size, args.runs)
        per_chunk = (total - base) / args.runs / chunks
        print(f"{name}, {args.size:,} characters, {chunks:,} chunks: {per_chunk:,.0f} instructions per chunk")
    return 0


if __name__ == "__main__":
    sys.exit(main())
