"""Benchmark: the cost of policies, validation and transforms on top of the incremental parser.

    python bench/structured_policies.py           # 1 KB, 10 KB, 100 KB
    python bench/structured_policies.py --quick   # 1 KB, 10 KB

A review-shaped document (``summaryV2`` items with emoji and text, tags, a long body) is fed in
~4-character chunks and the client-visible value is read after every chunk. Rows, in the same run:

- ``JsonStream``: the parser alone (the floor for this layer);
- ``StructuredStream``: policies + each field validated once when it closes;
- ``StructuredStream(validate=False)``: policies only;
- ``+ Transform``: the seed's live v1 view (``/summaryV2/*/text`` -> ``/summary/*``);
- ``pydantic partial per chunk``: what re-validating libraries do — ``validate_json(buffer,
  experimental_allow_partial="trailing-strings")`` after every chunk (quadratic; skipped past ``--budget``).

Times are medians of ``--repeat`` runs; the ratio is against ``JsonStream`` in the same run.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from pydantic import BaseModel, TypeAdapter  # noqa: E402

from turnkit.structured import (  # noqa: E402
    ItemsWhenComplete,
    JsonStream,
    PathMap,
    StructuredStream,
    Transform,
    WhenComplete,
    WithState,
)


class Item(BaseModel):
    emoji: Annotated[str, WhenComplete()]
    text: str


class Review(BaseModel):
    title: str
    mood: Literal["good", "bad"]
    summaryV2: list[Item]
    tags: Annotated[list[str], ItemsWhenComplete()]
    body: Annotated[str, WithState()]


_TEXT = ["음식이 맛있어요. ", 'Great food, "fresh" ingredients. ', "인테리어가 멋져요! ", "Line\n\tbreak. ", "🍽️🥗 "]


def make_document(size: int, rng: random.Random) -> str:
    items: list[dict[str, str]] = []
    doc: dict[str, Any] = {"title": "A review", "mood": "good", "summaryV2": items, "tags": [], "body": ""}
    while len(json.dumps(doc, ensure_ascii=False)) < size * 0.6:
        items.append({"emoji": rng.choice(["🍽️", "🏠", "🥗"]), "text": "".join(rng.choices(_TEXT, k=3))})
        doc["tags"].append(rng.choice(["food", "interior", "service"]))
    while len(json.dumps(doc, ensure_ascii=False)) < size:
        doc["body"] += rng.choice(_TEXT)
    return json.dumps(doc, ensure_ascii=False)


def run_stream(make: Callable[[], Any], chunks: list[str]) -> float:
    start = time.perf_counter()
    stream = make()
    for chunk in chunks:
        stream.feed(chunk)
        _ = stream.value
    stream.close()
    return time.perf_counter() - start


_ADAPTER = TypeAdapter(Review)


def run_pydantic_partial(chunks: list[str]) -> float:
    start = time.perf_counter()
    buffer = ""
    for chunk in chunks:
        buffer += chunk
        try:
            _ADAPTER.validate_json(buffer, experimental_allow_partial="trailing-strings")
        except ValueError:
            pass  # a prefix that does not validate yet (e.g. half a literal)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 KB and 10 KB only")
    parser.add_argument("--repeat", type=int, default=5, help="runs per cell (median)")
    parser.add_argument("--budget", type=float, default=20.0, help="skip a quadratic peer projected past this (s)")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    v1 = Transform(PathMap("/summaryV2/*/text", "/summary/*"))
    rows: list[tuple[str, Callable[[list[str]], float]]] = [
        ("JsonStream", lambda c: run_stream(JsonStream, c)),
        ("StructuredStream", lambda c: run_stream(lambda: StructuredStream(Review), c)),
        ("StructuredStream(validate=False)", lambda c: run_stream(lambda: StructuredStream(Review, validate=False), c)),
        ("StructuredStream + Transform(v1)", lambda c: run_stream(lambda: StructuredStream(Review, transform=v1), c)),
        ("pydantic partial per chunk", run_pydantic_partial),
    ]
    rng = random.Random(7)
    warm = make_document(500, random.Random(0))
    warm_chunks = [warm[i : i + 4] for i in range(0, len(warm), 4)]
    print(f"{'document':>9} | {'implementation':34} | {'median ms':>10} | {'MB/s':>7} | {'vs JsonStream':>13}")
    print("-" * 87)
    last: dict[str, tuple[int, float]] = {}
    for size in sizes:
        text = make_document(size, rng)
        chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
        nbytes = len(text.encode())
        floor = 0.0
        for name, run in rows:
            previous = last.get(name)
            if previous is not None and previous[1] * (size / previous[0]) ** 2 > args.budget:
                print(f"{nbytes / 1000:>7.0f}KB | {name:34} | {'skipped (projected > budget)':>36}")
                continue
            run(warm_chunks)  # warm up (pydantic builds its validators on first use)
            times = [run(chunks) for _ in range(args.repeat)]
            median = statistics.median(times)
            last[name] = (size, median)
            floor = floor or median
            print(
                f"{nbytes / 1000:>7.0f}KB | {name:34} | {median * 1000:>10.1f} | {nbytes / median / 1e6:>7.2f} | "
                f"{median / floor:>12.1f}x"
            )
        print("-" * 87)


if __name__ == "__main__":
    main()
