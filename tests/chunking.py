"""The shared chunking fixture: every streaming parser is fed whole, per character and in random pieces.

Expected results are defined once per case; ``chunkings`` yields the ways to cut the input so a test
can require the same result from each.
"""

from __future__ import annotations

import random
from collections.abc import Iterator


def random_chunks(text: str, rng: random.Random, *, max_size: int = 8) -> list[str]:
    """Cut ``text`` at random points into pieces of 1..max_size characters."""
    pieces = []
    i = 0
    while i < len(text):
        step = rng.randint(1, max_size)
        pieces.append(text[i : i + step])
        i += step
    return pieces


def chunkings(text: str, *, seed: int = 0, random_cuts: int = 3) -> Iterator[tuple[str, list[str]]]:
    """``(name, pieces)`` for: the whole text, one character at a time, and ``random_cuts`` random cuttings."""
    yield "whole", [text] if text else []
    yield "per-char", list(text)
    rng = random.Random(seed)
    for n in range(random_cuts):
        yield f"random-{n}", random_chunks(text, rng, max_size=rng.choice([2, 5, 17]))


CONTROL_PIECES = ("\x00", "\x00reject", "\x01\x02\x1b[0m\x7f", "\t\x0b\x0c\r\x85", "\u2028\u2029")
"""Model output holding NUL and other control characters: text like any other, never a signal to a parser
(``"\\x00reject"`` is the spelling an old rejection sentinel had)."""


def with_control_characters(text: str) -> list[str]:
    """``text`` with each of :data:`CONTROL_PIECES` after it and before it, and with a NUL in its middle."""
    middle = len(text) // 2
    out = [text[:middle] + "\x00" + text[middle:]]
    for piece in CONTROL_PIECES:
        out += [text + piece, piece + text]
    return out
