"""Machine instructions of each chunk of turnkit's streaming parse, counted by valgrind: where the cost per chunk goes.

    python bench/parse_stream_chunks.py                                  # hermes, chunks 1000-1069 of 20 KB
    python bench/parse_stream_chunks.py --format qwen3_coder_xml --first 1000 --count 80
    python bench/parse_stream_chunks.py --src /tmp/old/src               # another copy of turnkit's src/

The workload of ``bench/parse_stream.py`` (its 20 KB output, 4-character chunks) is fed up to ``--first``, then each
chunk of the window is fed after a call of ``math.trunc``, before which ``valgrind --tool=callgrind
--dump-before=math_trunc`` dumps the counters: each dump holds one chunk's ``feed``. A loop of the same shape
around a function that does nothing is subtracted, so a figure is what ``feed`` costs beyond a call. Prints one
line per chunk and the window's mean. Needs valgrind (Debian package ``valgrind``).
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CALIBRATION = 5
"""Loops around the do-nothing function; the least of them is subtracted."""


def _worker(src: str, name: str, first: int, count: int) -> None:
    sys.path.insert(0, src)
    from turnkit.parse import load_format  # (first: parse_stream would import the copy beside it)

    sys.path.insert(1, str(Path(__file__).resolve().parent))
    from parse_stream import chunks_of, hermes_output, qwen_output, run_turnkit

    make = {"hermes": hermes_output, "qwen3_coder_xml": qwen_output}[name]
    chunks = chunks_of(make(20_000))
    run_turnkit(name, chunks_of(make(5_000)))  # warm the specialising interpreter
    parser = load_format(name).stream(prefix="<|im_start|>assistant\n")
    for chunk in chunks[:first]:
        parser.feed(chunk)
    mark, feed = math.trunc, parser.feed

    def nothing(_text: str) -> None:
        return None

    window = chunks[first : first + count]
    for step, chunk in [(nothing, chunks[first])] * CALIBRATION + [(feed, chunk) for chunk in window]:
        mark(0)
        step(chunk)
    mark(0)
    for chunk in window:
        print(repr(chunk))


def _summary(dump: Path) -> int:
    """The instructions one callgrind dump counted."""
    found = re.search(r"^summary: (\d+)", dump.read_text(), re.M)
    if found is None:
        raise SystemExit(f"no summary line in {dump}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--format", choices=("hermes", "qwen3_coder_xml"), default="hermes")
    parser.add_argument("--first", type=int, default=1000, help="index of the window's first chunk")
    parser.add_argument("--count", type=int, default=70, help="chunks in the window")
    parser.add_argument("--src", default=str(Path(__file__).resolve().parent.parent / "src"), help="turnkit's src/")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.src, args.format, args.first, args.count)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    worker = [sys.executable, __file__, "--worker", "--format", args.format, "--src", args.src]
    worker += ["--first", str(args.first), "--count", str(args.count)]
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--dump-before=math_trunc", f"--callgrind-out-file={out}/cg", *worker],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"},
        )
        dumps = sorted(Path(out).glob("cg.*"), key=lambda path: int(path.suffix[1:]))
        costs = [_summary(path) for path in dumps]
    # the first dump holds the start-up, each next one a loop step (a mark and a call), the last is written at exit
    steps = costs[1 : 1 + CALIBRATION + args.count]
    floor = min(steps[:CALIBRATION])
    chunks = done.stdout.splitlines()
    for chunk, cost in zip(chunks, steps[CALIBRATION:], strict=True):
        print(f"{cost - floor:8,} {chunk}")
    print(f"mean {sum(steps[CALIBRATION:]) / args.count - floor:,.0f} instructions per chunk beyond a call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
