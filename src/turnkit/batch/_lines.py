"""Output rows as JSON lines: the characters ``json.dumps(row, ensure_ascii=False)`` gives, written faster.

A tokenised row is mostly two long lists of small ints (``input_ids``, ``assistant_masks``), which json's
encoder writes one number at a time, and a handful of other values. Here each run of ordinary items goes
through json's C encoder in one call, the ids are joined from a table of the numbers' texts, and a mask (0s and
1s in a few runs) from repeated ``"0, "``/``"1, "`` text: the same characters, a fraction of the time
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


def json_lines(rows: list[dict[str, Any]], ints: Collection[str] = ()) -> str:
    """``json.dumps(row, ensure_ascii=False) + "\\n"`` for each row, joined.

    ``ints`` names columns whose list values hold only non-negative ``int``\\ s (the token ids and masks a
    worker made; never input data): those lists are written from the tables.
    """
    if not ints:
        return "".join([_ENCODE(row) + "\n" for row in rows])
    keys = {name: _ENCODE(name) + ": " for name in ints}
    return "".join([_line(row, keys) for row in rows])


def _line(row: dict[str, Any], keys: dict[str, str]) -> str:
    parts = []
    plain: dict[Any, Any] = {}  # the ordinary items since the last int list: one C encoder call
    for key, value in row.items():
        head = keys.get(key) if type(value) is list else None
        if head is None:
            plain[key] = value
            continue
        if plain:
            parts.append(_ENCODE(plain)[1:-1])  # the items between the braces, ", "-separated
            plain = {}
        parts.append(head + _int_list(value))
    if plain:
        parts.append(_ENCODE(plain)[1:-1])
    return "{" + ", ".join(parts) + "}\n"


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
