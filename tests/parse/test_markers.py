"""The marker scanner against a brute-force reading: what a scan releases, finds and holds back.

The scanner finds the held tail from the positions of the markers' first characters only; the reference tries
every suffix of the text.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.parse import _markers
from turnkit.parse._markers import MarkerScanner, MarkerSet

MARKER_SETS = [
    ["<tool_call>", "<think>", "</think>"],
    ["<a>", "<ab>", "<<"],
    ["[TOOL_CALLS]", "{", "```json"],
    ["</parameter>", "</function>", "</tool_call>"],
]

PIECES = ["<", "a", "b", "<a", "<t", "</", "`", "x ", "{", "<think>", "</tool_call>", "```json", "[TOOL_", "CALLS]"]


def _reference(markers: list[str], text: str) -> tuple[str, str | None, str, str]:
    """(released, marker, rest, held) of one scan of ``text`` by a fresh scanner, found by trying every position
    and every suffix."""
    prefixes = {m[:k] for m in markers for k in range(1, len(m))}
    for at in range(len(text)):
        found = [m for m in markers if text.startswith(m, at)]
        if found:
            marker = max(found, key=len)
            if marker in prefixes and text[at:] in prefixes:
                return text[:at], None, "", text[at:]  # a longer marker may still complete
            return text[:at], marker, text[at + len(marker) :], ""
    for at in range(len(text)):
        if text[at:] in prefixes:
            return text[:at], None, "", text[at:]
    return text, None, "", ""


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(MARKER_SETS), st.lists(st.sampled_from(PIECES)))
def test_scan_matches_the_brute_force_reading(markers: list[str], pieces: list[str]) -> None:
    text = "".join(pieces)
    scanner = MarkerScanner(MarkerSet(markers))
    released, marker, rest = scanner.scan(text)
    assert (released, marker, rest, scanner.held) == _reference(markers, text)


SHARED = {tuple(markers): MarkerSet(markers) for markers in MARKER_SETS}
"""One set per list for the whole session, as a format's sets are: the scans it remembers are checked too."""


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(MARKER_SETS), st.lists(st.lists(st.sampled_from(PIECES), max_size=4), max_size=6))
def test_remembered_scans_match_the_brute_force_reading(markers: list[str], chunks: list[list[str]]) -> None:
    """A set remembers the scans of short texts (``MarkerSet.scanned``): chunk after chunk, twice over, each scan
    reads the held tail and the chunk as the brute force does."""
    for _ in range(2):
        scanner = MarkerScanner(SHARED[tuple(markers)])
        for pieces in chunks:
            text = "".join(pieces)
            buffer = scanner.held + text
            released, marker, rest = scanner.scan(text)
            assert (released, marker, rest, scanner.held) == _reference(markers, buffer)


def test_remembered_scans_stay_bounded() -> None:
    markers = MarkerSet(["<tool_call>", "</tool_call>"])
    scanner = MarkerScanner(markers)
    long = "x" * (_markers._REMEMBERED_TEXT + 1)
    assert scanner.scan(long) == (long, None, "")
    assert markers.scanned == {}
    for n in range(_markers._REMEMBERED + 100):
        assert scanner.scan(f"{n} <tool_call>") == (f"{n} ", "<tool_call>", "")
    assert len(markers.scanned) == _markers._REMEMBERED


def test_held_tail_skips_first_characters_that_begin_no_marker() -> None:
    scanner = MarkerScanner(MarkerSet(["<tool_call>"]))
    assert scanner.scan("a<b<tool") == ("a<b", None, "")
    assert scanner.held == "<tool"
    assert scanner.scan("_call>x") == ("", "<tool_call>", "x")
