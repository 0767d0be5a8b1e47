"""Streaming a Hugging Face response template: turnkit's ``ResponseTemplateFormat.stream()`` vs transformers'.

    python bench/response_template_stream.py   # hermes- and qwen3-coder-shaped templates, 4-char chunks

The templates and outputs are ``bench/parse_stream.py``'s (transformers 5.23's ``ResponseParser`` is its peer
there too). Prints CPU µs per chunk (median of runs, process CPU time), how many deltas came before
``close()`` (tool calls given as soon as each is complete), and the time-growth exponent from 20 KB to 2 MB
(log(t2000 / t20) / log(100); 1.0 = linear). transformers runs at 20 KB and 200 KB only.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from parse_stream import HERMES_TEMPLATE, QWEN_TEMPLATE, chunks_of, hermes_output, make_peer, qwen_output, timed  # noqa: E402

from turnkit import ResponseTemplateFormat  # noqa: E402

PREFIX = "<|im_start|>assistant\n"


def make_turnkit(template: dict[str, Any], early: list[int]) -> Callable[[str, list[str]], int]:
    fmt = ResponseTemplateFormat(template)

    def run(_name: str, chunks: list[str]) -> int:
        stream = fmt.stream(prefix=PREFIX)
        given = sum(len(stream.feed(chunk)) for chunk in chunks)
        stream.close()
        early[:] = [given]
        return len(stream.message["tool_calls"])

    return run


def main() -> int:
    print("| template | size | chunks | turnkit µs/chunk | deltas before close | transformers µs/chunk | ratio |")
    print("|---|---|---|---|---|---|---|")
    growth = []
    for name, template, make in (
        ("hermes", HERMES_TEMPLATE, hermes_output),
        ("qwen3_coder", QWEN_TEMPLATE, qwen_output),
    ):
        early: list[int] = []
        ours = make_turnkit(template, early)
        try:
            peer: Callable[[str, list[str]], int] | None = make_peer(template)
        except ImportError:
            peer = None
        times = {}
        for size in (20_000, 200_000, 2_000_000):
            chunks = chunks_of(make(size))
            tk, calls = timed(ours, name, chunks, 9 if size == 20_000 else 3)
            times[size] = tk
            tf_text = ratio = "-"
            if peer is not None and size <= 200_000:
                tf, tf_calls = timed(peer, name, chunks, 3 if size == 20_000 else 1)
                assert tf_calls == calls, (tf_calls, calls)
                tf_text, ratio = f"{tf / len(chunks) * 1e6:.2f}", f"{tf / tk:.1f}x"
            print(
                f"| {name} | {size // 1000} KB | {len(chunks)} | {tk / len(chunks) * 1e6:.2f} | "
                f"{early[0]} ({calls} calls) | {tf_text} | {ratio} |"
            )
        growth.append(f"| {name} | {math.log(times[2_000_000] / times[20_000]) / math.log(100):.2f} |")
    print("\n| template | turnkit time growth exponent 20 KB -> 2 MB |\n|---|---|")
    print("\n".join(growth))
    return 0


if __name__ == "__main__":
    sys.exit(main())
