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

__all__ = ["json_lines"]

_ENCODE = json.JSONEncoder(ensure_ascii=False).encode
_NUMBERS: list[str] = []
"""``str(i)`` at index ``i``: grown to the largest token id seen."""
_RUNS = ("0, ", "1, ")


def json_lines(rows: list[dict[str, Any]], ints: Collection[str] = ()) -> bytes:
    """``json.dumps(row, ensure_ascii=False) + "\\n"`` for each row, joined, as UTF-8 (a lone surrogate, which only
    a template's own ``"\\ud800"`` literal can make, as its ``\\u`` escape: the line stays valid UTF-8 JSON).

    ``ints`` names columns whose list values hold only non-negative ``int``\\ s (the token ids and masks a
    worker made; never input data): those lists are written from the tables.
    """
    if not ints:
        return _utf8("".join([_ENCODE(row) + "\n" for row in rows]))
    keys = {name: _ENCODE(name) + ": " for name in ints}
    return b"".join([_line(row, keys) for row in rows])


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", errors="backslashreplace")


def _line(row: dict[str, Any], keys: dict[str, str]) -> bytes:
    parts = []
    plain: dict[Any, Any] = {}  # the ordinary items since the last int list: one C encoder call
    narrow = True  # every part ASCII
    for key, value in row.items():
        head = keys.get(key) if type(value) is list else None
        if head is None:
            plain[key] = value
            continue
        if plain:
            text = _ENCODE(plain)[1:-1]  # the items between the braces, ", "-separated
            narrow = narrow and text.isascii()
            parts.append(text)
            plain = {}
        parts.append(head + _int_list(value))
    if plain:
        text = _ENCODE(plain)[1:-1]
        narrow = narrow and text.isascii()
        parts.append(text)
    if narrow:
        return ("{" + ", ".join(parts) + "}\n").encode("ascii")
    # joined as text, one non-ASCII character (a CJK word, an emoji) would make the whole line, long lists of
    # numbers included, a string of 2-4 bytes a character, copied and encoded again: join the parts' UTF-8
    return b"{" + b", ".join([_utf8(part) for part in parts]) + b"}\n"


def _int_list(values: list[int]) -> str:
    if len(values) < 2:
        return _ENCODE(values)
    if values[0] in (0, 1):  # a mask, or ids that start with token 0 or 1
        try:
            data = bytes(values)
        except ValueError:  # a number above 255: ids
            pass
        else:
            if not data.translate(None, b"\x00\x01"):
                return _bits(data)
    try:
        return "[" + ", ".join(itemgetter(*values)(_NUMBERS)) + "]"
    except IndexError:
        _NUMBERS.extend(map(str, range(len(_NUMBERS), max(values) + 1)))
        return "[" + ", ".join(itemgetter(*values)(_NUMBERS)) + "]"


def _bits(data: bytes) -> str:
    """The JSON list of 0s and 1s ``data`` holds, a run of equal values at a time."""
    parts = []
    at, end, bit = 0, len(data), data[0]
    while at < end:
        stop = data.find(1 - bit, at)
        if stop < 0:
            stop = end
        parts.append(_RUNS[bit] * (stop - at))
        at, bit = stop, 1 - bit
    return "[" + "".join(parts)[:-2] + "]"
