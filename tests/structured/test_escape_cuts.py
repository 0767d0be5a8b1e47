"""Escapes cut at every place: the string fast path decides where an unfinished escape starts.

Each string body below is fed inside a document cut at every pair of places (every 3-piece
chunking). Valid bodies must give ``json.loads``'s value with every interim string a prefix of the
final one (never half an escape or half a surrogate pair) and ops that rebuild the value; invalid
bodies must fail with the same error and position as when fed whole, and as early: on the very
feed after which the text so far is already invalid.
"""

from __future__ import annotations

import itertools
import json

import pytest

from turnkit.errors import IncompleteInputError, ParseError
from turnkit.structured import JsonStream, apply_patch, loads_partial
from turnkit.structured._json_stream import _ESCAPE_MEMO_KEY, _ESCAPE_MEMO_SIZE, _escape_memo

VALID = [
    r"\uc74c\uc2dd\uc774 ok",  # ensure_ascii Hangul
    r"\ud83d\ude00\ud83d\udc4d",  # surrogate pairs back to back
    r"a\ud83dx\ud83d",  # lone high surrogates (one at the end)
    r"\udc00\ud800\u0041",  # lone low, lone high followed by a non-surrogate escape
    r"\ud83d\ud83d\ude00",  # a lone high surrogate, then a pair
    r"C:\\users\\u1234\\",  # escaped backslashes followed by letters that look like escapes
    r"\\\\\\\"\\",
    r"\\ud83d\ude00",  # escaped backslash, literal 'ud83d', then a lone low surrogate
    r"\ud83d\\ude00",  # lone high surrogate, escaped backslash, literal text
    r"tab\there\nnew\/\b\f\r",
    "한국어 🍽️ \\u00e9\\u00E9",
]
INVALID = [
    r"\uZZ00",
    r"\u12G4",
    r"\ud83d\uZZZZ",
    r"\ud8zz\ude00",
    r"\x41",
    "ab\\\tcd",
    "tab\tinside",
    r"\\\x",
]


def _cuts(text: str) -> list[list[str]]:
    n = len(text)
    out = [[text]]
    for i, j in itertools.combinations(range(1, n), 2):
        out.append([text[:i], text[i:j], text[j:]])
    return out


@pytest.mark.parametrize("memo", ["cold", "warm"])
@pytest.mark.parametrize("body", VALID)
def test_valid_escapes_every_cut(body: str, memo: str) -> None:
    """Cold: every escaped piece is split afresh; warm: a second pass takes the same pieces from the memo."""
    doc = '{"k": "' + body + '", "l": ["' + body + '"]}'
    final = json.loads(doc)
    for _ in range(1 if memo == "cold" else 2):
        for pieces in _cuts(doc):
            if memo == "cold":
                _escape_memo.clear()
            s = JsonStream()
            mirror = None
            for piece in pieces:
                mirror = apply_patch(mirror, s.feed(piece))
                value = s.value
                assert mirror == value, pieces
                if isinstance(value, dict) and "k" in value:
                    assert final["k"].startswith(value["k"]), pieces
                    if "l" in value and value["l"]:
                        assert final["l"][0].startswith(value["l"][0]), pieces
            mirror = apply_patch(mirror, s.close())
            assert s.value == final and mirror == final, pieces


def _failure(pieces: list[str]) -> tuple[type[Exception], int | None, int]:
    """The error, its position, and the index of the feed that raised it (``len(pieces)`` for close)."""
    s = JsonStream()
    with pytest.raises((ParseError, IncompleteInputError)) as info:
        for i, piece in enumerate(pieces):  # noqa: B007 - i is read after the loop
            s.feed(piece)
        i = len(pieces)
        s.close()
    return type(info.value), info.value.position, i


def _invalid_from(pieces: list[str]) -> int:
    """The first feed after which the text so far cannot be the start of a JSON document."""
    for i in range(len(pieces)):
        try:
            loads_partial("".join(pieces[: i + 1]))
        except ParseError:
            return i
    return len(pieces)


@pytest.mark.parametrize("body", INVALID)
def test_invalid_escapes_fail_alike_at_every_cut(body: str) -> None:
    doc = '["' + body + '"]'
    with pytest.raises(ValueError):
        json.loads(doc)
    kind, position, _ = _failure([doc])
    assert kind is ParseError
    for end in range(len(doc) + 1):
        for pieces in _cuts(doc[:end]):
            failure = _failure(pieces)
            if failure[0] is ParseError:
                assert failure == (kind, position, _invalid_from(pieces)), pieces
            else:  # the prefix ends before the bad character shows
                assert failure[0] is IncompleteInputError and _invalid_from(pieces) == len(pieces), pieces


def test_escape_memo_stays_bounded_and_right() -> None:
    """More distinct escaped pieces than the memo holds: it never grows past its size, and values
    stay right after it is emptied; pieces longer than its key limit are not remembered."""
    _escape_memo.clear()
    codes = range(0x3400, 0x3400 + 3 * _ESCAPE_MEMO_SIZE)
    body = "".join(f"\\u{code:04x}" for code in codes)
    s = JsonStream()
    s.feed('["')
    for i in range(0, len(body), 6):
        s.feed(body[i : i + 6])
        assert len(_escape_memo) <= _ESCAPE_MEMO_SIZE
    s.feed('"]')
    s.close()
    assert s.value == ["".join(map(chr, codes))]
    for piece in ("x" * (_ESCAPE_MEMO_KEY - 2) + "\\n", "x" * (_ESCAPE_MEMO_KEY - 1) + "\\n"):
        s = JsonStream()
        s.feed('"')
        s.feed(piece)
        assert s.value == piece[:-2] + "\n"
        assert (piece in _escape_memo) is (len(piece) <= _ESCAPE_MEMO_KEY)
