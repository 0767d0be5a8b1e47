"""Same deltas, feed by feed, as a reference copy of turnkit: the exactness check for changes to the streaming parse.

    python bench/parse_stream_compare.py                          # against /work/main/src
    python bench/parse_stream_compare.py --reference /tmp/old/src # any other copy of turnkit's src/

Each copy runs in its own process over the same streams: every model-output corpus record under its own format
(prefix and tools as ``tests/parse/test_corpus.py`` gives them) at chunk sizes 1, 2, 3, 4, 5, 7, 16, whole and
two random 1-9 cuttings; every corpus output under each built-in format at sizes 1 and 3; the outputs of
``bench/parse_stream.py`` at sizes 1, 4 and 7; over-long parameter keys cut in every way. A stream's record is
the deltas of each ``feed`` and of ``close``, the message, or the error raised (type and text). Prints the number
of streams and the ones that differ.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SIZES = (1, 2, 3, 4, 5, 7, 16)


def _cut(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _random_cut(text: str, seed: str) -> list[str]:
    rng = random.Random(seed)
    pieces, at = [], 0
    while at < len(text):
        step = rng.randint(1, 9)
        pieces.append(text[at : at + step])
        at += step
    return pieces


def _streams() -> Iterator[tuple[str, Any, dict[str, Any], list[str]]]:
    """(stream id, format, stream options, pieces) of every compared stream."""
    from parse_stream import hermes_output, qwen_output
    from tests.parse.corpus_cases import cases, resolve_prefix

    from turnkit.parse import list_formats, load_format

    outputs = []
    for case in cases():
        text = case.record.get("output")
        if not isinstance(text, str):
            continue
        outputs.append(text)
        fmt = load_format(case.format)
        if case.whole_calls:
            fmt = load_format(dataclasses.replace(fmt.spec, whole_calls=True))
        if case.no_calls:
            fmt = load_format(dataclasses.replace(fmt.spec, tools=(), sections=()))
        options = {"prefix": resolve_prefix(case), "tools": case.tools}
        for size in SIZES:
            yield f"{case.key}/{size}", fmt, options, _cut(text, size)
        yield f"{case.key}/whole", fmt, options, [text] if text else []
        for n in range(2):
            yield f"{case.key}/random{n}", fmt, options, _random_cut(text, f"{case.key}/{n}")
    for name in list_formats():
        fmt = load_format(name)
        for i, text in enumerate(outputs):
            for size in (1, 3):
                yield f"{name}:{i}/{size}", fmt, {}, _cut(text, size)
    # A parameter key over MAX_NAME cut inside its end marker: the held beginning carries over to the next key.
    key = "k" * 520
    for i, text in enumerate(
        (
            f"<tool_call>f\n<arg_key>{key}</arg_key><arg_value>1</arg_value><arg_key>b</arg_key>"
            "<arg_value>2</arg_value></tool_call>",
            f"<tool_call>f\n<arg_key>{key}</ar</arg_key><arg_value>1</arg_value><arg_key>b</arg_key>x</tool_call> y",
        )
    ):
        for size in range(1, 12):
            for skip in range(8):
                pieces = [text[:skip], *_cut(text[skip:], size)] if skip else _cut(text, size)
                yield f"long-key:{i}/{size}/{skip}", load_format("glm45"), {}, pieces
    for name, make in (("hermes", hermes_output), ("qwen3_coder_xml", qwen_output)):
        text = make(3000)
        for size in (1, 4, 7):
            yield f"bench:{name}/{size}", load_format(name), {"prefix": "<|im_start|>assistant\n"}, _cut(text, size)


def _record(fmt: Any, options: dict[str, Any], pieces: list[str]) -> str:
    out: list[Any] = []
    try:
        parser = fmt.stream(**options)
        for piece in pieces:
            out.append(parser.feed(piece))
        out.append(parser.close())
        out.append(dict(parser.message))
    except Exception as error:  # noqa: BLE001 - the error is part of the record
        out.append(f"{type(error).__name__}: {error}")
    return hashlib.sha1(repr(out).encode()).hexdigest()


def _worker(src: Path, out: Path) -> None:
    sys.path[:0] = [str(src), str(ROOT / "bench"), str(ROOT)]
    import turnkit  # before parse_stream, which puts this tree's src/ first on the path

    if not Path(turnkit.__file__).resolve().is_relative_to(src.resolve()):
        raise SystemExit(f"turnkit imported from {turnkit.__file__}, not from {src}")
    records = {key: _record(fmt, options, pieces) for key, fmt, options, pieces in _streams()}
    out.write_text(json.dumps(records))


def _run(src: Path, out: Path) -> dict[str, str]:
    worker = [sys.executable, __file__, "--worker", str(out), "--reference", str(src)]
    subprocess.run(worker, check=True, env={"PYTHONHASHSEED": "0"})
    records: dict[str, str] = json.loads(out.read_text())
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, default=Path("/work/main/src"), help="the reference src/ folder")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        _worker(args.reference, args.worker)
        return 0
    tmp = Path("/tmp") / f"parse_stream_compare_{hashlib.sha1(str(ROOT).encode()).hexdigest()[:8]}"
    tmp.mkdir(exist_ok=True)
    old = _run(args.reference.resolve(), tmp / "reference.json")
    new = _run(ROOT / "src", tmp / "new.json")
    differ = sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))
    print(f"{len(new):,} streams, {len(differ)} differ from {args.reference}")
    for key in differ[:40]:
        print("  ", key)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
