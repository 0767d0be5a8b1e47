"""Invalid JSON is rejected at the earliest impossible character, whole and streamed (issue #16, class 5).

The reference is :func:`viable_length`, a deliberately plain character-at-a-time recognizer of JSON
*prefixes*: it returns the length of the longest start of the text that some continuation can still
make valid JSON (RFC 8259). It is checked on its own: for every viable prefix it builds a
completion and ``json.loads`` must accept the prefix plus that completion.

The requirement: for every prefix ``p`` of an invalid input (JSONTestSuite ``n_`` files, hand-made
cases, generated text), ``loads_partial(p)`` raises ``ParseError`` exactly when ``p`` is longer than
its viable start, and then with ``position`` equal to that length; ``JsonStream`` fed whole, one
character at a time or in random pieces reports the same position.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.chunking import chunkings
from tests.corpora import CORPORA, corpus_path
from tests.structured.json_prefix import completion_of, viable_length
from turnkit.errors import LimitExceededError, ParseError
from turnkit.structured import JsonStream, loads_partial

SUITE = "json-test-suite/test_parsing"


def _stream_error(pieces: list[str]) -> int | None:
    stream = JsonStream()
    try:
        for piece in pieces:
            stream.feed(piece)
    except ParseError as err:
        assert err.position is not None
        return err.position
    return None


def _check(text: str, *, every_prefix: bool = True) -> None:
    viable = viable_length(text)
    prefix = text[:viable]
    whole = prefix + completion_of(prefix)
    json.loads(whole)  # the reference is right about the viable part
    ends = range(len(text) + 1) if every_prefix else (viable, len(text))
    for end in ends:
        p = text[:end]
        if end <= viable:
            loads_partial(p)  # no error: it can still become JSON
        else:
            with pytest.raises(ParseError) as info:
                loads_partial(p)
            assert info.value.position == viable, (text, p, str(info.value))
    for cut, pieces in chunkings(text, seed=len(text)):
        expected = viable if viable < len(text) else None
        assert _stream_error(pieces) == expected, (text, cut)


HAND_MADE = [
    "--",
    "-a",
    "[1.2.3",
    "[01",
    "[-01]",
    "1.e3",
    "1.]",
    "[1e+]",
    "[1e5.",
    "[1E-x",
    "00",
    "-.5",
    ".5",
    "+1",
    "[0x1]",
    "1ee",
    "[1,]",
    "[,1]",
    "{,}",
    '{"a" 1}',
    '{"a":}',
    '{"a":1,}',
    '{"a",',
    "{1:2}",
    "tru ",
    "[trx",
    "nul1",
    "fals",
    "[nULL]",
    '"\\x"',
    '"\\u12G4"',
    '"\\u00"x',
    '"\\ud800\\uZ"',
    '"a\tb"',
    '"\n"',
    '{"k\x01":1}',
    '{"k\\q":1}',
    "[1 2]",
    "[1]]",
    "{}}",
    "1 2",
    '"a" "b"',
    "[true false]",
    '["a":1]',
    '{"a":1 "b":2}',
    "\ufeff[]",
    "[\u00a0]",
    "[1,\n2,\n3.\n]",
    "[-]",
    "[-1e]",
    "nan",
    "[Infinity]",
    "'a'",
    "[1;2]",
]


@pytest.mark.parametrize("text", HAND_MADE)
def test_hand_made(text: str) -> None:
    assert viable_length(text) < len(text) or text in ("fals",), text
    _check(text)


def _suite_names() -> list[str]:
    folder = CORPORA / SUITE
    if not folder.is_dir():
        return ["missing"]
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("n_"))


@pytest.mark.corpus
@pytest.mark.parametrize("name", _suite_names())
def test_json_test_suite_n(name: str) -> None:
    raw = (corpus_path(SUITE) / name).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return  # rejected before the parser, which takes text
    if viable_length(text) == len(text) and text.count("[") > 500:
        with pytest.raises(LimitExceededError):  # 100 000 '[': the depth budget, not syntax
            loads_partial(text)
        return
    _check(text, every_prefix=len(text) <= 400)


_ALPHABET = st.sampled_from(list('[]{}",:-+.0123456789eE \\/ubntrfalsxyz\tAF\n') + ["\x01"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=24).map("".join))
def test_generated(text: str) -> None:
    _check(text)


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=4),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        max_leaves=8,
    ),
    st.integers(0, 40),
    _ALPHABET,
)
def test_valid_json_with_one_wrong_character(value: object, at: int, c: str) -> None:
    text = json.dumps(value)
    at = min(at, len(text))
    _check(text[:at] + c + text[at:])
