"""Reading the value after every chunk of one long string costs the new text, not the string's length.

Checked by a generous size ratio of CPU times (4x the input must cost well under the 16x a
quadratic read would), never by an absolute time.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable

import pytest

from turnkit.structured import JsonStream, OpEncoder

pytestmark = pytest.mark.skipif(
    platform.python_implementation() != "CPython", reason="the in-place extension is CPython's"
)


def _cpu(fn: Callable[[], object], runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def _stream(opening: str, piece: str, n: int, *, encode: bool = False) -> Callable[[], object]:
    def run() -> object:
        s = JsonStream()
        encoder = OpEncoder()
        s.feed(opening)
        feed = s.feed
        for _ in range(n):
            ops = feed(piece)
            if encode:
                encoder.encode(ops)
            s.value  # noqa: B018 - the read after every chunk is the point
        return s.value

    return run


@pytest.mark.parametrize(
    ("opening", "piece"),
    [
        ('{"story": "', "abcd"),  # in an object
        ('[1, {"a": ["', "맛있어요"),  # deeper, non-ASCII
        ('"', "abcd"),  # the root string (no container)
        ('{"t": "', "ab\\n"),  # escapes: the decoded piece
    ],
)
def test_value_read_after_every_chunk_is_linear(opening: str, piece: str) -> None:
    small, large = 20_000, 80_000  # pieces: 4x more input
    t_small = _cpu(_stream(opening, piece, small))
    t_large = _cpu(_stream(opening, piece, large))
    # linear is ~4x; a join of the whole string per read is ~16x (measured 12-16x before the fix)
    assert t_large < 8 * max(t_small, 1e-3), (t_small, t_large)


def test_value_is_exact_after_every_read() -> None:
    s = JsonStream()
    s.feed('{"t": "')
    expected = []
    for i in range(3000):  # past the eager limit, and across a widening (ASCII -> Hangul -> emoji)
        piece = "ab" if i < 1500 else ("가" if i < 2500 else "😀")
        s.feed(piece)
        expected.append(piece)
        if i % 7 == 0 or i > 2990:
            assert s.value == {"t": "".join(expected)}
    held = s.value["t"]  # a caller holding the string: it is copied, never changed under it
    s.feed("z")
    assert held == "".join(expected)
    assert s.value["t"] == held + "z"
    s.feed('"}')
    s.close()
    assert s.value == {"t": "".join(expected) + "z"}


def test_wire_path_is_linear() -> None:
    small, large = 20_000, 80_000
    t_small = _cpu(_stream('{"story": "', "abcd", small, encode=True))
    t_large = _cpu(_stream('{"story": "', "abcd", large, encode=True))
    assert t_large < 8 * max(t_small, 1e-3), (t_small, t_large)
