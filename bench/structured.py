"""Benchmark: streaming a JSON document in ~4-character chunks, reading the value after every chunk.

    python bench/structured.py            # 1 KB, 10 KB, 100 KB, 1 MB; every peer
    python bench/structured.py --quick    # 1 KB, 10 KB, 100 KB only
    python bench/structured.py --wire-only  # the wire-path ratio and the long-string reads only

The report documents draw their texts from a few repeating sentences; "100 KB fresh" is the same
kind of document written with text that never repeats (see FreshText), so that nothing that
remembers recurring pieces is flattered.

turnkit's JsonStream is compared in the same run with peers that re-parse the whole buffer after
every chunk: jiter ``from_json(partial_mode="trailing-strings")``, pydantic
``TypeAdapter.validate_json(experimental_allow_partial="trailing-strings")`` and
partial-json-parser ``loads``; ``json.loads`` of the whole document once is the floor. Peers whose
projected time for a size exceeds ``--budget`` seconds (they are quadratic) are skipped and marked.
Times are medians of ``--repeat`` samples (one run at 1 MB); a sample of a run shorter than 50 ms
loops it until it takes 50 ms and divides, the same for every runner.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from turnkit.structured import JsonStream, OpEncoder, coalesce_ops  # noqa: E402
from turnkit.structured._json_stream import _escape_memo  # noqa: E402

_PROSE = [
    "The model streams its answer token by token, and the client shows each field as soon as it arrives. ",
    'She said "stream it" and the reviewer wrote \\"noted\\" next to C:\\temp\\report.json. ',
    "Line one of a list:\n\t- first point\n\t- second point\n",
    "Partial values must never contradict the final document, not even for one update. ",
]
_KOREAN = [
    "음식이 맛있어요. 인테리어가 멋져요! 재료가 신선하고 직원들이 친절해요. ",
    "다시 방문하고 싶은 곳입니다. 주차는 조금 불편하지만 위치가 좋아요. ",
    "구조화된 출력을 스트리밍하면 사용자는 기다리지 않고 결과를 볼 수 있습니다. ",
]
_EMOJI = ["🍽️ 🏠 🥗 ", "😀👍🏽 ", "🇰🇷✨ ", "𝄞 🎵 "]


def _paragraph(rng: random.Random, length: int) -> str:
    out: list[str] = []
    total = 0
    while total < length:
        pool = rng.choice([_PROSE, _PROSE, _KOREAN, _KOREAN, _EMOJI])
        piece = rng.choice(pool)
        out.append(piece)
        total += len(piece)
    return "".join(out)[:length]


class FreshText:
    """Text that does not repeat, in the proportions of the sentence pools above (for ``text="fresh"``).

    The pools repeat eleven sentences, which flatters anything that remembers what it saw (turnkit's
    escaped-piece memo among them). Here every sentence is new: words are drawn by Zipf rank from
    4,000 made-up words, Hangul syllables by Zipf rank from all 11,172 (a flatter tail than real
    Korean), emoji from 30 sequences; each prose sentence takes the shape of one of the four pooled
    ones (plain, quoted with a Windows path, a list with newlines and tabs).
    """

    _ONSETS = ["", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "st", "tr", "pl",
               "gr", "sh", "ch", "th"]  # fmt: skip
    _VOWELS = ["a", "e", "i", "o", "u", "ea", "ou", "ai", "io"]
    _CODAS = ["", "", "n", "r", "s", "t", "l", "m", "nd", "ng", "ck", "st"]
    _EMOJI = ["🍽️", "🏠", "🥗", "😀", "👍🏽", "🇰🇷", "✨", "𝄞", "🎵", "🔥", "👩‍💻", "👨‍👩‍👧", "🏳️‍🌈", "❤️", "🚀", "🤖",
              "📈", "🧪", "🇯🇵", "🫠", "🙏🏻", "☕", "🌧️", "🎉", "🧭", "🐍", "📦", "🇫🇷", "🥟", "🌊"]  # fmt: skip

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed ^ 0xF4E5)
        words: set[str] = set()
        while len(words) < 4000:
            syllables = rng.choice([1, 1, 2, 2, 3])
            words.add("".join(rng.choice(self._ONSETS) + rng.choice(self._VOWELS) + rng.choice(self._CODAS)
                              for _ in range(syllables)))  # fmt: skip
        self.words = sorted(words)
        rng.shuffle(self.words)
        self.hangul = [chr(0xAC00 + i) for i in range(11172)]
        rng.shuffle(self.hangul)
        self.word_weights = list(itertools.accumulate(1 / rank for rank in range(1, len(self.words) + 1)))
        self.hangul_weights = list(itertools.accumulate(1 / rank for rank in range(1, len(self.hangul) + 1)))

    def _words(self, rng: random.Random, n: int) -> str:
        return " ".join(rng.choices(self.words, cum_weights=self.word_weights, k=n))

    def _prose(self, rng: random.Random) -> str:
        shape = rng.randrange(4)
        if shape == 1:
            a, b, c, d = (self._words(rng, 1) for _ in range(4))
            return (f'{a.capitalize()} said "{self._words(rng, 2)}" and the {b} wrote \\"{c}\\" next to '
                    f"C:\\{d}\\{self._words(rng, 1)}.json. ")  # fmt: skip
        if shape == 2:
            return f"{self._words(rng, 3).capitalize()}:\n\t- {self._words(rng, 2)}\n\t- {self._words(rng, 2)}\n"
        return self._words(rng, rng.randint(10, 14)).capitalize() + ". "

    def _korean(self, rng: random.Random) -> str:
        words = ["".join(rng.choices(self.hangul, cum_weights=self.hangul_weights, k=rng.randint(2, 4)))
                 for _ in range(rng.randint(10, 13))]  # fmt: skip
        return " ".join(words) + rng.choice([". ", "! ", "? "])

    def paragraph(self, rng: random.Random, length: int) -> str:
        out: list[str] = []
        total = 0
        while total < length:
            kind = rng.choice("ppkke")
            if kind == "p":
                piece = self._prose(rng)
            elif kind == "k":
                piece = self._korean(rng)
            else:
                piece = " ".join(rng.choice(self._EMOJI) for _ in range(rng.randint(2, 4))) + " "
            out.append(piece)
            total += len(piece)
        return "".join(out)[:length]


def make_document(size: int, *, seed: int = 0, kind: str = "report", text: str = "repeated") -> str:
    """A structured-output document of about ``size`` characters (deterministic for a seed).

    ``report`` (the default): sections with a heading, one to three paragraphs of 150-900
    characters (English prose with quotes, backslashes, tabs and newlines; Korean; emoji incl.
    astral and ZWJ/flag sequences), three tags, a float score, a nested 2x3 integer matrix, a
    boolean and a null; every sixth section is written with ``ensure_ascii=True`` (``\\uXXXX``
    escapes and surrogate pairs). ``records``: the same fields with short texts (12-60 characters),
    a structure-heavy worst case. ``text="fresh"`` writes the texts with :class:`FreshText` instead
    of drawing them from the repeating sentence pools.
    """
    rng = random.Random(seed)
    paragraph = FreshText(seed).paragraph if text == "fresh" else _paragraph
    head = '{"title": "Streaming report", "summary": "' + "A short summary. " * 3 + '", "sections": ['
    parts: list[str] = []
    total = len(head) + 2
    i = 0
    while total < size:
        left = size - total
        if kind == "records":
            paragraphs = [paragraph(rng, rng.randint(12, 60))]
        else:
            paragraphs = [paragraph(rng, rng.randint(150, 900)) for _ in range(rng.randint(1, 3))]
            budget = max(40, left - 260)
            while sum(map(len, paragraphs)) > budget and len(paragraphs) > 1:
                paragraphs.pop()
            paragraphs[0] = paragraphs[0][:budget]
        section = {
            "id": i,
            "heading": f"Section {i}: {rng.choice(['요약', 'Summary', 'Détails', '🔥 Hot'])}",
            "paragraphs": paragraphs,
            "tags": rng.sample(["python", "llm", "json", "스트리밍", "emoji😀", "a/b~c"], 3),
            "score": round(rng.random() * 100, 3),
            "matrix": [[rng.randint(-999, 999) for _ in range(3)] for _ in range(2)],
            "ok": rng.random() < 0.5,
            "note": None,
        }
        encoded = json.dumps(section, ensure_ascii=(i % 6 == 5))
        parts.append(encoded)
        total += len(encoded) + 2
        i += 1
    return head + ", ".join(parts) + "]}"


def chunks_of(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


# ---------------------------------------------------------------------------------------- runners


def run_turnkit(chunks: list[str]) -> Any:
    _escape_memo.clear()  # every run streams its document as if new (runs repeat the same document)
    s = JsonStream()
    feed = s.feed
    for chunk in chunks:
        feed(chunk)
        s.value  # noqa: B018 - reading the value after every chunk is the point
    s.close()
    return s.value


def run_turnkit_wire(chunks: list[str]) -> Any:
    """run_turnkit plus the wire form of every chunk's operations (what a server sends per chunk; a chunk
    that changed nothing, such as part of a key, sends nothing)."""
    _escape_memo.clear()
    s = JsonStream()
    feed = s.feed
    encode = OpEncoder().encode
    for chunk in chunks:
        ops = feed(chunk)
        if ops:
            encode(ops)
        s.value  # noqa: B018
    encode(s.close())
    return s.value


def run_turnkit_encoded(chunks: list[str]) -> Any:
    """run_turnkit_wire with the parser writing the wire form itself (``feed_encoded``: the same text)."""
    _escape_memo.clear()
    s = JsonStream()
    feed = s.feed_encoded
    for chunk in chunks:
        feed(chunk)
        s.value  # noqa: B018
    s.close_encoded()
    return s.value


def run_long_string(size: int, chunk: int = 4) -> None:
    """One string of ``size`` characters streamed in ``chunk``-character pieces, the value read after each."""
    s = JsonStream()
    s.feed('{"story": "')
    piece = "abc " * (chunk // 4) + "abcd"[: chunk % 4]
    feed = s.feed
    for _ in range(size // chunk):
        feed(piece)
        s.value  # noqa: B018
    s.feed('"}')


def wire_ratio(chunks: list[str], repeat: int) -> tuple[float, float, float]:
    """(parse, parse + OpEncoder.encode, feed_encoded) CPU seconds: medians of interleaved samples (same load)."""
    parse: list[float] = []
    wire: list[float] = []
    encoded: list[float] = []
    for _ in range(repeat):
        parse.append(timed(lambda: run_turnkit(chunks), 1))
        wire.append(timed(lambda: run_turnkit_wire(chunks), 1))
        encoded.append(timed(lambda: run_turnkit_encoded(chunks), 1))
    return statistics.median(parse), statistics.median(wire), statistics.median(encoded)


def run_turnkit_latencies(chunks: list[str]) -> list[int]:
    _escape_memo.clear()
    s = JsonStream()
    feed = s.feed
    clock = time.perf_counter_ns
    out = []
    for chunk in chunks:
        t0 = clock()
        feed(chunk)
        s.value  # noqa: B018
        out.append(clock() - t0)
    s.close()
    return out


def run_jiter(chunks: list[str]) -> Any:
    import jiter

    buf = b""
    value = None
    for chunk in chunks:
        buf += chunk.encode()
        value = jiter.from_json(buf, partial_mode="trailing-strings")
    return value


def run_pydantic(chunks: list[str]) -> Any:
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(Any)
    buf = b""
    value = None
    for chunk in chunks:
        buf += chunk.encode()
        value = adapter.validate_json(buf, experimental_allow_partial="trailing-strings")
    return value


def run_partial_json_parser(chunks: list[str]) -> Any:
    from partial_json_parser import loads

    buf = ""
    value = None
    for chunk in chunks:
        buf += chunk
        if buf.strip():
            value = loads(buf)
    return value


def run_json_floor(text: str) -> Any:
    return json.loads(text)


PEERS: dict[str, Callable[[list[str]], Any]] = {
    "jiter (re-parse)": run_jiter,
    "pydantic partial": run_pydantic,
    "partial-json-parser": run_partial_json_parser,
}


def timed(fn: Callable[[], Any], repeat: int, *, min_sample: float = 0.05) -> float:
    """Median CPU seconds per call over ``repeat`` samples (CPU time: the machine may be shared).

    A sample loops ``fn`` until it has taken at least ``min_sample`` seconds (calibrated on the
    first call, like timeit's autorange), so that sub-millisecond runs are not one noisy reading.
    """
    t0 = time.process_time()
    fn()
    first = time.process_time() - t0
    loops = max(1, math.ceil(min_sample / first)) if first > 0 else 100
    times = [first] if loops == 1 else []
    while len(times) < repeat:
        t0 = time.process_time()
        for _ in range(loops):
            fn()
        times.append((time.process_time() - t0) / loops)
    return statistics.median(times)


def op_bytes(chunks: list[str], batch: int) -> int:
    """UTF-8 bytes of the wire form when ops are sent every ``batch`` chunks (coalesced when batch > 1)."""
    s = JsonStream()
    encoder = OpEncoder()
    total = 0
    pending: list[Any] = []
    for i, chunk in enumerate(chunks, 1):
        pending.extend(s.feed(chunk))
        if i % batch == 0:
            ops = coalesce_ops(pending) if batch > 1 else pending
            total += len(encoder.encode(ops).encode())
            pending = []
    pending.extend(s.close())
    if pending:
        total += len(encoder.encode(coalesce_ops(pending)).encode())
    return total


def make_patch_bytes(chunks: list[str]) -> int | None:
    try:
        import jsonpatch
    except ImportError:
        return None
    s = JsonStream()
    previous: Any = None
    total = 0
    for chunk in chunks:
        s.feed(chunk)
        current = json.loads(json.dumps(s.value))
        if previous is None:
            patch = [{"op": "add", "path": "", "value": current}] if current is not None else []
            total += len(json.dumps(patch, ensure_ascii=False).encode())
        else:
            total += len(jsonpatch.make_patch(previous, current).to_string().encode())
        previous = current
    return total


ROWS = [  # label, characters, kind, text (see make_document)
    ("1 KB", 1_000, "report", "repeated"),
    ("10 KB", 10_000, "report", "repeated"),
    ("100 KB", 100_000, "report", "repeated"),
    ("100 KB fresh", 100_000, "report", "fresh"),
    ("1 MB", 1_000_000, "report", "repeated"),
    ("100 KB records", 100_000, "records", "repeated"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip the 1 MB document")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement below 1 MB (median)")
    parser.add_argument("--budget", type=float, default=30.0, help="skip a peer whose projected time exceeds this")
    parser.add_argument("--chunk", type=int, default=4, help="characters per chunk")
    parser.add_argument("--wire-only", action="store_true", help="only the wire-path ratio and long-string reads")
    args = parser.parse_args(argv)

    rows = [r for r in ROWS if not (args.quick and r[1] >= 1_000_000)]
    print(f"Python {sys.version.split()[0]}, {args.chunk}-character chunks, value read after every chunk; CPU seconds")
    if not args.wire_only:
        print()
        header = (
            f"{'document':>15} {'chars':>8} {'bytes':>8} {'chunks':>7} | {'runner':<20} {'time (s)':>9} "
            f"{'MB/s':>7} {'x turnkit':>10}"
        )
        print(header)
        print("-" * len(header))
        results: dict[str, dict[str, float]] = {}
        nbytes_of: dict[str, int] = {}
        latencies: list[int] = []
        last_time: dict[str, tuple[float, int]] = {}  # peer -> (seconds, size) of its last run, to project
        for label, size, kind, text in rows:
            doc = make_document(size, kind=kind, text=text)
            chunks = chunks_of(doc, args.chunk)
            nbytes = nbytes_of[label] = len(doc.encode())
            expected = json.loads(doc)
            repeat = 1 if size >= 1_000_000 else args.repeat
            row: dict[str, float] = {}
            assert run_turnkit(chunks) == expected
            row["turnkit"] = timed(lambda c=chunks: run_turnkit(c), repeat)  # type: ignore[misc]
            row["json.loads (floor)"] = timed(lambda d=doc: run_json_floor(d), max(repeat, 5))  # type: ignore[misc]
            for name, runner in PEERS.items():
                seen = last_time.get(name)
                if seen is not None and seen[0] * (size / seen[1]) ** 2 > args.budget:
                    row[name] = math.nan
                    continue
                try:
                    runner(chunks[: max(1, len(chunks) // 50)])  # warm-up and import
                except ImportError:
                    row[name] = math.nan
                    continue
                row[name] = timed(lambda c=chunks, r=runner: r(c), 1 if size >= 100_000 else args.repeat)  # type: ignore[misc]
                if kind == "report":
                    last_time[name] = (row[name], size)
            results[label] = row
            for name, seconds in row.items():
                lead = f"{label:>15} {len(doc):>8} {nbytes:>8} {len(chunks):>7} | {name:<20}"
                if math.isnan(seconds):
                    print(f"{lead} {'skipped':>9}  (quadratic: projected > {args.budget:.0f} s, or not installed)")
                    continue
                print(f"{lead} {seconds:>9.4f} {nbytes / seconds / 1e6:>7.2f} {seconds / row['turnkit']:>9.1f}x")
            if size >= 1_000_000 or (args.quick and label == "100 KB"):
                latencies = run_turnkit_latencies(chunks)
            print()

        print("Summary (report documents)")
        t10, t100 = results["10 KB"]["turnkit"], results["100 KB"]["turnkit"]
        exponent = math.log(t100 / t10) / math.log(nbytes_of["100 KB"] / nbytes_of["10 KB"])
        print(f"  turnkit total-time growth exponent 10 KB -> 100 KB: {exponent:.3f} (target <= 1.1)")
        for label in ("100 KB", "100 KB fresh"):
            jiter = results[label].get("jiter (re-parse)", math.nan)
            print(f"  speedup vs jiter at {label}: {jiter / results[label]['turnkit']:.0f}x (target >= 200x)")
        for label in results:
            rate = nbytes_of[label] / results[label]["turnkit"] / 1e6
            print(f"  turnkit throughput, {label}: {rate:.2f} MB/s (target >= 4)")
        if latencies:
            latencies.sort()
            p50 = latencies[len(latencies) // 2] / 1000
            p99 = latencies[int(len(latencies) * 0.99)] / 1000
            biggest = "1 MB" if not args.quick else "100 KB"
            print(
                f"  per-update wall time at {biggest} (feed + value): p50 {p50:.2f} us, "
                f"p99 {p99:.2f} us (target p99 <= 20)"
            )

    print("\nWire path: feed + value + the wire form of every chunk's operations, against feed + value")
    print("(feed_encoded: the parser writes it; encode: OpEncoder.encode of feed's operations)")
    for label, size, kind, text in rows:
        if size > 100_000:
            continue
        chunks = chunks_of(make_document(size, kind=kind, text=text), args.chunk)
        parse, wire, encoded = wire_ratio(chunks, args.repeat)
        print(
            f"  {label:>15}: parse {parse:.4f} s, feed_encoded {encoded:.4f} s: {encoded / parse:.2f}x (target <= 1.5);"
            f" encode {wire:.4f} s: {wire / parse:.2f}x"
        )

    print("\nOne long string, value read after every chunk (linear: time per MB stays flat)")
    for size in (262_144, 2_097_152) if not args.quick else (131_072, 524_288):
        seconds = timed(lambda n=size: run_long_string(n, args.chunk), 1)  # type: ignore[misc]
        print(f"  {size:>9,} characters: {seconds:.3f} s, {seconds / size * 1e6:.3f} s per million characters")

    if args.wire_only:
        return 0
    print("\nEncoded operations (wire form, UTF-8 bytes) / document bytes")
    for label, size, kind, text in rows:
        doc = make_document(size, kind=kind, text=text)
        chunks = chunks_of(doc, args.chunk)
        nbytes = len(doc.encode())
        line = f"  {label:>15}: sent every chunk {op_bytes(chunks, 1) / nbytes:.2f}x (target <= 3.1)"
        for batch in (4, 16):
            line += f", coalesced per {batch} chunks {op_bytes(chunks, batch) / nbytes:.2f}x"
        line += f", whole stream coalesced {op_bytes(chunks, len(chunks) + 1) / nbytes:.2f}x"
        if size <= 10_000:
            mp = make_patch_bytes(chunks)
            if mp is not None:
                line += f", jsonpatch.make_patch between snapshots {mp / nbytes:.1f}x"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
