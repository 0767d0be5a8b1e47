"""Hostile replies: megabytes of unclosed tags or garbage are rejected quickly and in linear time."""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable

import pytest

from turnkit.outputs import (
    MarkdownCodeBlockParser,
    MarkdownJsonDictParser,
    MarkdownJsonObjectParser,
    MultiTaggedContentParser,
    ParseError,
    ParserBase,
    TaggedContent,
)

MB = 1_000_000


_BLOCK = "".join(random.Random(7).choices("{}[]\"':,\\ abcTrueNone01\n`", k=10_007))


def _garbage(size: int) -> str:
    """Random-looking garbage with the same structure at every size (so timings compare)."""
    return (_BLOCK * (size // len(_BLOCK) + 1))[:size]


HOSTILE: dict[str, Callable[[int], str]] = {
    "open-braces": lambda n: "{" * n,
    "open-brackets": lambda n: "[" * n,
    "double-quotes": lambda n: '"' * n,
    "single-quotes": lambda n: "'" * n,
    "brace-letter": lambda n: "{a" * (n // 2),
    "unclosed-json-fences": lambda n: "```json\n" * (n // 8),
    "unclosed-fences": lambda n: "```" * (n // 3),
    "unclosed-tags": lambda n: "[THOUGHT]" * (n // 9),
    "unclosed-angle-tags": lambda n: "<speak>" * (n // 7),
    "garbage": _garbage,
    "backslashes": lambda n: '{"a": "' + "\\" * n,
    "unterminated-string": lambda n: '{"a": "' + "x" * n,
    "single-quoted-keys": lambda n: "{" + "'k':'v'," * (n // 8),
    # A repair pass over a tail of escaped quotes: a backtracking string pattern would be quadratic here.
    "comma-then-escaped-quotes": lambda n: "[1,]" + '"\\' * (n // 2),
    "quote-then-escaped-squotes": lambda n: "{'a': 1, 'b': " + "'\\" * (n // 2),
    "literal-then-escaped-quotes": lambda n: "[True, " + '"\\' * (n // 2),
    "key-then-escaped-quotes": lambda n: "{a: 1, " + '"\\' * (n // 2),
    "huge-number": lambda n: "[" + "9" * (n - 2) + "]",
}

PARSERS: dict[str, ParserBase] = {
    "json-dict": MarkdownJsonDictParser(),
    "json-object": MarkdownJsonObjectParser(),
    "code": MarkdownCodeBlockParser("python"),
    "tagged": MultiTaggedContentParser(
        TaggedContent("thought", "[THOUGHT]", "t", "[/THOUGHT]"),
        TaggedContent("speak", "<speak>", "s", "</speak>"),
        TaggedContent("finish", "[FINISH]", "true/false", "[/FINISH]", parse_json=True),
    ),
}


@functools.lru_cache(maxsize=64)
def _text(kind: str, size: int) -> str:
    return HOSTILE[kind](size)


def _run(parser: ParserBase, text: str) -> float:
    """CPU seconds of one parse (other processes' load on a shared machine does not count)."""
    start = time.process_time()
    try:
        response = parser.parse(text)
    except ParseError:
        pass
    else:
        # Recovering is allowed only with the repairs listed (or a clean parse of a real block).
        assert response.parsed is not None or response.repairs_applied is not None
    return time.process_time() - start


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("parser_name", sorted(PARSERS))
def test_two_megabytes_rejected_fast(parser_name: str, kind: str) -> None:
    text = _text(kind, 2 * MB)
    assert len(text) >= 1.9 * MB
    assert _run(PARSERS[parser_name], text) < 0.5


@pytest.mark.parametrize(
    "kind", ["garbage", "unclosed-tags", "brace-letter", "unterminated-string", "comma-then-escaped-quotes"]
)
def test_work_grows_linearly(kind: str) -> None:
    """Doubling the input at most roughly doubles the time (a quadratic scan would quadruple it).

    Runs of the two sizes alternate and the fastest of five counts, so a busy machine slows both alike; the
    slack (50 ms) is far below what a quadratic scan of a megabyte costs (seconds).
    """
    for parser in PARSERS.values():
        runs = [(_run(parser, _text(kind, MB // 2)), _run(parser, _text(kind, MB))) for _ in range(5)]
        small, large = min(r[0] for r in runs), min(r[1] for r in runs)
        assert large < 3 * small + 0.05, (parser, kind, small, large)


@pytest.mark.parametrize(
    "kind", ["quote-then-escaped-squotes", "literal-then-escaped-quotes", "key-then-escaped-quotes"]
)
def test_token_rewriting_repairs_are_linear_below_their_size_gate(kind: str) -> None:
    """Under ``Limits.max_repair_chars`` the rewriting passes run; they must stay linear too."""
    parser = PARSERS["json-object"]
    small = min(_run(parser, _text(kind, 50_000)) for _ in range(3))
    large = min(_run(parser, _text(kind, 200_000)) for _ in range(3))
    assert large < 0.5
    assert large < 6 * small + 0.02, (kind, small, large)
