"""The held-back tail of streamed text: the part that may still grow into a marker.

A leaf module: the output-format engine (``parse``) and the reply streams (``outputs``) both hold back a
text's end that could be the start of a closing tag, and must agree on how long that end is.
"""

from __future__ import annotations

__all__ = ["held_tail"]


def held_tail(text: str, marker: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``marker`` (0 when none)."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:size]):
            return size
    return 0
