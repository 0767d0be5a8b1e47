"""Finding markers in a stream without ever emitting a marker's first half.

A :class:`MarkerScanner` watches a fixed set of literal markers. Text that cannot be the start of a
marker is released at once; a tail that might still become one (``"<tool_"``) is held back until the
next chunk decides. The search runs over the held tail plus the new text only, so the work per chunk
is proportional to the chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

__all__ = ["MarkerScanner", "MarkerSet"]


class MarkerSet:
    """A compiled, immutable set of markers (share one per declaration, build scanners from it)."""

    __slots__ = (
        "markers",
        "search",
        "prefixes",
        "longest",
        "prefixes_of_longer",
        "holds",
        "loud",
        "scanned",
    )

    def __init__(self, markers: Iterable[str]) -> None:
        unique = sorted({m for m in markers if m}, key=lambda m: (-len(m), m))
        self.markers: tuple[str, ...] = tuple(unique)
        self.search: Callable[[str], re.Match[str] | None] = re.compile(
            "|".join(re.escape(m) for m in unique) if unique else "(?!)"
        ).search
        """The first (earliest, then longest) marker in a text."""
        self.prefixes = frozenset(m[:k] for m in unique for k in range(1, len(m)))
        first = "".join(sorted({m[0] for m in unique}))
        self.longest = max((len(m) for m in unique), default=1)
        self.prefixes_of_longer = frozenset(m for m in unique if m in self.prefixes)
        self.loud: Callable[..., re.Match[str] | None] = re.compile(
            f"[{re.escape(first)}]" if unique else "(?!)"
        ).search
        """Where a marker can start in a text (from an optional position; a match, else ``None``): ``None`` means
        no marker and no marker's beginning is in the text, so a scanner holding nothing would release all of it.
        One C call, for the hot paths."""
        # No marker occurs inside another marker's beginning past its first character (true of "<tag>"-style
        # markers): then a held prefix extended into a longer prefix is held as a whole, nothing released.
        plain_prefixes = not any(m in p[1:] for p in self.prefixes for m in unique)
        self.holds = self.prefixes if plain_prefixes else frozenset()
        """The texts a scanner holds as a whole, found by one set lookup (no search): a marker's beginning, when no
        marker occurs inside one past its first character; else none."""
        self.scanned: dict[str, tuple[tuple[str, str | None, str], str]] = {}
        """What :meth:`MarkerScanner.scan` found in a short text (its result and the tail it held), remembered: the
        chunks of a stream are the model's tokens, and the same ones come again and again."""


_REMEMBERED = 1024
_REMEMBERED_TEXT = 16
"""A marker set remembers the scans of at most this many texts, each at most this long (other texts are scanned
anew each time)."""


class MarkerScanner:
    """Incremental search for the markers of one :class:`MarkerSet`.

    :meth:`scan` returns ``(text, marker, rest)``: the text released before the first marker found,
    that marker (or ``None``) and the unscanned remainder after it (``""`` when no marker was found;
    then a possible marker prefix is held back inside the scanner).
    """

    __slots__ = ("markers", "held")

    def __init__(self, markers: MarkerSet) -> None:
        self.markers = markers
        self.held = ""

    def hold_more(self, text: str) -> bool:
        """The hot path inside a marker: if the held tail plus ``text`` still only begins a marker, hold it all
        and return True (what :meth:`scan` does with it: nothing released, no marker found)."""
        held = self.held
        if held and (buffer := held + text) in self.markers.holds:
            self.held = buffer
            return True
        return False

    def scan(self, text: str, final: bool = False) -> tuple[str, str | None, str]:
        """Scan ``text``; with ``final`` (end of input) nothing is held back."""
        buffer = self.held + text if self.held else text
        markers = self.markers
        remember = not final and len(buffer) <= _REMEMBERED_TEXT
        if remember:
            known = markers.scanned.get(buffer)
            if known is not None:
                self.held = known[1]
                return known[0]
        held = ""
        found = markers.search(buffer)
        if found is not None:
            at = found.start()
            marker = found.group()
            if not final and marker in markers.prefixes_of_longer and buffer[at:] in markers.prefixes:
                # A longer marker may still complete here: decide on the next chunk.
                held = buffer[at:]
                result: tuple[str, str | None, str] = (buffer[:at], None, "")
            else:
                result = (buffer[:at], marker, buffer[at + len(marker) :])
        else:
            result = (buffer, None, "")
            if not final:
                # The earliest position in the last ``longest - 1`` characters where the rest is a marker's
                # beginning: only where a marker's first character is (a lookup each, no pattern of every prefix).
                loud = markers.loud
                at = len(buffer) - markers.longest + 1
                found = loud(buffer, at if at > 0 else 0)
                while found is not None:
                    at = found.start()
                    if buffer[at:] in markers.prefixes:
                        held = buffer[at:]
                        result = (buffer[:at], None, "")
                        break
                    found = loud(buffer, at + 1)
        self.held = held
        if remember and len(markers.scanned) < _REMEMBERED:
            markers.scanned[buffer] = (result, held)
        return result

    def flush(self) -> str:
        """Hand back the held tail and hold nothing. At the end of input the caller scans it again with
        ``final=True``, which finds a complete marker held only because it starts a longer one."""
        held, self.held = self.held, ""
        return held
