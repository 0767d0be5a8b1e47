"""Streaming model-output parsing: turnkit vs transformers' streaming ResponseParser, same input, same chunks.

    python bench/parse_stream.py            # 20 KB and 200 KB, hermes and qwen3_coder_xml, 4-char chunks

Prints CPU µs per chunk (median of runs; process CPU time, so other load on a shared machine does not
count) and the time-growth exponent from 20 KB to 200 KB
(log(t200 / t20) / log(10); 1.0 = linear). transformers 5.23's ``ResponseParser`` expresses both formats with
a response template (regions with literal / regex anchors; ``json`` and ``xml-inline`` content parsers).
"""

from __future__ import annotations

import gc
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from turnkit.parse import load_format  # noqa: E402

CHUNK = 4
PEER_BUDGET_S = 120.0

HERMES_TEMPLATE = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "content": "json",
            "repeats": True,
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {},
    },
}

QWEN_TEMPLATE = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open_pattern": r"<tool_call>\s*<function=(?P<name>[^>\n]+)>",
            "close_pattern": r"</function>\s*</tool_call>",
            "content": "xml-inline",
            "content_args": {"tag_pattern": r"<parameter=(?P<key>[^>\n]+)>\n?(?P<value>.*?)\n?</parameter>"},
            "repeats": True,
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {},
    },
}


def hermes_output(size: int) -> str:
    parts = ["Let me look that up for you.\n"]
    i = 0
    while sum(map(len, parts)) < size:
        args = {"city": f"City number {i}", "days": i % 7, "notes": "sunny " * 20, "tags": ["a", "b", str(i)]}
        parts.append(f"<tool_call>\n{json.dumps({'name': 'get_weather', 'arguments': args})}\n</tool_call>\n")
        i += 1
    return "".join(parts)


def qwen_output(size: int) -> str:
    parts = ["Let me look that up for you.\n"]
    i = 0
    while sum(map(len, parts)) < size:
        parts.append(
            "<tool_call>\n<function=get_weather>\n"
            f"<parameter=city>\nCity number {i}\n</parameter>\n"
            f"<parameter=days>\n{i % 7}\n</parameter>\n"
            f"<parameter=notes>\n{'sunny ' * 20}\n</parameter>\n"
            "</function>\n</tool_call>\n"
        )
        i += 1
    return "".join(parts)


def chunks_of(text: str) -> list[str]:
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]


def run_turnkit(name: str, chunks: list[str]) -> int:
    parser = load_format(name).stream(prefix="<|im_start|>assistant\n")
    for chunk in chunks:
        parser.feed(chunk)
    parser.close()
    return len(parser.message["tool_calls"])


def make_peer(template: dict[str, Any]) -> Callable[[str, list[str]], int]:
    from transformers.utils.chat_parsing import ResponseParser

    def run(_name: str, chunks: list[str]) -> int:
        parser = ResponseParser(template, prefix="<|im_start|>assistant\n")
        for chunk in chunks:
            parser.feed(chunk)
        message, _events = parser.finalize()
        return len(message.get("tool_calls", []))

    return run


def timed(fn: Callable[[str, list[str]], int], name: str, chunks: list[str], runs: int) -> tuple[float, int]:
    times = []
    calls = fn(name, chunks)  # warm-up run (caches, compiled patterns), not timed
    for _ in range(runs):
        gc.collect()
        gc.disable()  # as timeit does: a collection landing in one run is not the parser's cost
        try:
            started = time.process_time()
            calls = fn(name, chunks)
            times.append(time.process_time() - started)
        finally:
            gc.enable()
        if sum(times) > PEER_BUDGET_S:
            break
    return statistics.median(times), calls


def main() -> int:
    try:
        peers: dict[str, Callable[[str, list[str]], int]] | None = {
            "hermes": make_peer(HERMES_TEMPLATE),
            "qwen3_coder_xml": make_peer(QWEN_TEMPLATE),
        }
    except ImportError:
        peers = None
        print("transformers not installed: peer column skipped (pip install 'turnkit[bench]')")
    print("| format | size | chunks | turnkit µs/chunk | transformers µs/chunk | ratio | calls (tk / tf) |")
    print("|---|---|---|---|---|---|---|")
    exponents: dict[tuple[str, str], list[float]] = {}
    for name, make in (("hermes", hermes_output), ("qwen3_coder_xml", qwen_output)):
        for size in (20_000, 200_000):
            chunks = chunks_of(make(size))
            runs = 15 if size == 20_000 else 5
            tk, tk_calls = timed(run_turnkit, name, chunks, runs)
            exponents.setdefault(("turnkit", name), []).append(tk)
            tf_text, ratio, tf_calls = "-", "-", "-"
            if peers is not None:
                tf, calls = timed(peers[name], name, chunks, 3 if size == 20_000 else 1)
                exponents.setdefault(("transformers", name), []).append(tf)
                tf_text = f"{tf / len(chunks) * 1e6:.2f}"
                ratio = f"{tf / tk:.1f}x"
                tf_calls = str(calls)
            print(
                f"| {name} | {size // 1000} KB | {len(chunks)} | {tk / len(chunks) * 1e6:.2f} | {tf_text} | "
                f"{ratio} | {tk_calls} / {tf_calls} |"
            )
    print("\n| parser | format | time growth exponent 20 KB -> 200 KB |\n|---|---|---|")
    for (who, name), (t20, t200) in exponents.items():
        print(f"| {who} | {name} | {math.log(t200 / t20) / math.log(10):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
