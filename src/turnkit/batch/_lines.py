"""Output rows as JSON lines: the UTF-8 of what ``json.dumps(row, ensure_ascii=False)`` gives, written faster.

A tokenised row is mostly two long lists of small ints (``input_ids``, ``assistant_masks``), which json's
encoder writes one number at a time, and a handful of other values. Here each run of ordinary items goes
through json's C encoder in one call, the ids are joined from a table of the numbers' texts, and a mask (0s and
1s in a few runs) from repeated ``"0, "``/``"1, "`` text: the same bytes, a fraction of the time
(``tests/batch/test_lines.py`` compares them with ``json.dumps`` on hostile rows).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from operator import itemgetter
from typing import Any

__all__ = ["json_lines", "json_text"]

json_text = json.JSONEncoder(ensure_ascii=False).encode
"""``json.dumps(value, ensure_ascii=False)`` without making an encoder each call (~1 us of ~6-10 for a chat row's
messages)."""
_ITEMS: list[str] = []
"""``f"{i}, "`` at index ``i``: grown to the largest token id seen. Items that carry their separator are joined
~20 % faster than the bare numbers by ``", ".join`` (no separator copied between them); the last ``", "`` is cut
off by a view, not a copy."""
_RUNS = (b"0, ", b"1, ")
_INT_LISTS = (list, bytes)
"""What a token column's value is: a list, or a mask as ``bytes`` (a byte a token, as a worker makes it)."""

Chunk = bytes | memoryview
"""A piece of the output: ``b"".join`` copies each once, so a line's parts are never joined into a line first."""


def json_lines(rows: list[dict[str, Any]], ints: Collection[str] = ()) -> bytes:
    """``json.dumps(row, ensure_ascii=False) + "\\n"`` for each row, joined, as UTF-8 (a lone surrogate, which only
    a template's own ``"\\ud800"`` literal can make, as its ``\\u`` escape: the line stays valid UTF-8 JSON).

    ``ints`` names columns whose list values hold only non-negative ``int``\\ s (the token ids and masks a
    worker made; never input data), or are ``bytes`` (a mask, a byte a token): those are written from the tables.
    """
    if not ints:
        return _utf8("".join([json_text(row) + "\n" for row in rows]))
    keys = {name: _utf8(json_text(name) + ": ") for name in ints}
    chunks: list[Chunk] = []
    for row in rows:
        _line(row, keys, chunks)
    return b"".join(chunks)


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", errors="backslashreplace")


def _line(row: dict[str, Any], keys: dict[str, bytes], chunks: list[Chunk]) -> None:
    """Append ``row``'s line to ``chunks``, each part encoded on its own: a non-ASCII character (a CJK word, an
    emoji in a message) then never makes the whole line, long lists of numbers included, a string of 2-4 bytes a
    character, and no part is copied into a line before the batch is joined."""
    separator = b"{"
    plain: dict[Any, Any] = {}  # the ordinary items since the last int list: one C encoder call
    for key, value in row.items():
        head = keys.get(key) if type(value) in _INT_LISTS else None
        if head is None:
            plain[key] = value
            continue
        if plain:
            chunks += (separator, memoryview(_utf8(json_text(plain)))[1:-1])  # the items between the braces
            separator = b", "
            plain = {}
        chunks += (separator, head, *_int_list(value))
        separator = b", "
    if plain:
        chunks += (separator, memoryview(_utf8(json_text(plain)))[1:-1])
        separator = b", "
    chunks.append(b"{}\n" if separator == b"{" else b"}\n")


def _int_list(values: list[int] | bytes) -> tuple[Chunk, ...]:
    if len(values) < 2:
        return (json_text(list(values)).encode("ascii"),)
    if values[0] in (0, 1):  # a mask, or ids that start with token 0 or 1
        try:
            data = bytes(values)
        except ValueError:  # a number above 255: ids
            pass
        else:
            if not data.translate(None, b"\x00\x01"):
                return _bits(data)
    try:
        text = "".join(itemgetter(*values)(_ITEMS))
    except IndexError:
        _ITEMS.extend([f"{number}, " for number in range(len(_ITEMS), max(values) + 1)])
        text = "".join(itemgetter(*values)(_ITEMS))
    return b"[", memoryview(text.encode("ascii"))[:-2], b"]"


def _bits(data: bytes) -> tuple[Chunk, ...]:
    """The JSON list of 0s and 1s ``data`` holds, a run of equal values at a time."""
    parts = []
    at, end, bit = 0, len(data), data[0]
    while at < end:
        stop = data.find(1 - bit, at)
        if stop < 0:
            stop = end
        parts.append(_RUNS[bit] * (stop - at))
        at, bit = stop, 1 - bit
    return b"[", memoryview(b"".join(parts))[:-2], b"]"
