"""JsonStream behaviour: partial values, ops, markers, incomplete paths, errors, limits, skip_prefix."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.chunking import chunkings
from turnkit.errors import IncompleteInputError, LimitExceededError, ParseError, UsageError
from turnkit.limits import Limits
from turnkit.structured import JsonStream, Op, apply_patch, loads, loads_partial
from turnkit.structured._json_stream import _EAGER_LIMIT

SEED = '{"title": "Hello, world!", "tags": ["python", "llm"]}'


def _stream(pieces: list[str], **kwargs: Any) -> tuple[JsonStream, list[list[Op]]]:
    s = JsonStream(**kwargs)
    return s, [s.feed(p) for p in pieces]


def test_seed_example_annotated() -> None:
    s = JsonStream()
    s.feed('{"title": "Hello, world!", "tags": ["python", "ll')
    assert s.value == {"title": "Hello, world!", "tags": ["python", "ll"]}
    assert s.annotated() == {"title": "Hello, world!", "tags": ["python", "ll"], "$partial": {"tags": True}}
    assert list(s.annotated()) == ["title", "tags", "$partial"]
    assert s.incomplete == ["", "/tags", "/tags/1"]
    s.feed('m"')
    assert s.incomplete == ["", "/tags"]
    s.feed("]")
    assert s.annotated(marker="_p") == {"title": "Hello, world!", "tags": ["python", "llm"], "_p": {}}
    s.feed("}")
    assert s.done and s.incomplete == [] and s.annotated() == json.loads(SEED)
    assert s.close() == []


def test_nested_markers() -> None:
    s = JsonStream()
    s.feed('{"a": [{"b": {"c": "x')
    assert s.annotated() == {
        "a": [{"b": {"c": "x", "$partial": {"c": True}}, "$partial": {"b": True}}],
        "$partial": {"a": True},
    }
    assert s.incomplete == ["", "/a", "/a/0", "/a/0/b", "/a/0/b/c"]
    # the live value is untouched by annotated()
    assert s.value == {"a": [{"b": {"c": "x"}}]}


def test_seed_ops() -> None:
    s = JsonStream()
    assert s.feed('{"title": "Hel') == [
        {"op": "add", "path": "", "value": {}},
        {"op": "add", "path": "/title", "value": "Hel"},
    ]
    assert s.feed("lo") == [{"op": "append", "path": "/title", "value": "lo"}]
    assert s.feed('", "n": 1') == []
    assert s.feed("2,") == [{"op": "add", "path": "/n", "value": 12}]


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ('{"a": 0.8', {}),  # a number is shown only once complete
        ('{"a": 0.875 ', {"a": 0.875}),
        ('{"a": tru', {}),
        ('{"a": true', {"a": True}),
        ('{"a": nul', {}),
        ('{"a', {}),  # a key never appears before its value starts
        ('{"a":', {}),
        ('{"a": "', {"a": ""}),
        ('{"a": "x\\', {"a": "x"}),  # an escape appears only once complete
        ('{"a": "x\\u00', {"a": "x"}),
        ('{"a": "x\\u00e9', {"a": "xé"}),
        ('{"a": "\\ud83d', {"a": ""}),  # never half a surrogate pair
        ('{"a": "\\ud83d\\ude', {"a": ""}),
        ('{"a": "\\ud83d\\ude00', {"a": "😀"}),
        ('{"a": "\\ud83dx', {"a": "\ud83dx"}),  # a lone surrogate, as json.loads decodes it
        ("[1, [2, [3", [1, [2, []]]),
        ("  ", None),
    ],
)
def test_interim_values(prefix: str, expected: Any) -> None:
    for _, pieces in chunkings(prefix):
        s, _ops = _stream(pieces)
        assert s.value == expected, pieces
        assert loads_partial(prefix) == expected


def test_numbers_complete_at_close() -> None:
    s = JsonStream()
    s.feed("-12.5e3")
    assert s.value is None and not s.started and not s.done
    assert s.close() == [{"op": "add", "path": "", "value": -12500.0}]
    assert s.value == -12500.0 and s.done
    assert loads("0") == 0 and type(loads("1")) is int and type(loads("1.0")) is float


def test_root_string() -> None:
    s = JsonStream()
    ops = s.feed('"ab') + s.feed("cd") + s.feed('"')
    assert s.value == "abcd" and s.done
    assert apply_patch(None, ops) == "abcd"


def test_duplicate_keys_last_wins_and_ops_follow() -> None:
    text = '{"a": "x", "b": 1, "a": [1], "a": {"c": 2}}'
    for _, pieces in chunkings(text):
        s = JsonStream()
        mirror: Any = None
        for piece in pieces:
            mirror = apply_patch(mirror, s.feed(piece))
            assert mirror == s.value
        s.close()
        assert s.value == json.loads(text)
        assert list(s.value) == list(json.loads(text))


def test_value_is_maintained_not_rebuilt() -> None:
    s = JsonStream()
    s.feed('{"a": [1, 2], "b": "')
    first = s.value
    s.feed("more text")
    assert s.value is first  # the same live tree
    assert first["a"] is s.value["a"]


# positions are the first character after which no completion is JSON (tests/structured/test_earliest_error.py)
@pytest.mark.parametrize(
    ("text", "position"),
    [
        ('{"a": 1,}', 8),
        ("[1 2]", 3),
        ('{"a" 1}', 5),
        ("[01]", 2),
        ("[NaN]", 1),
        ("[Infinity]", 1),
        ("[-Infinity]", 2),
        ('["a\tb"]', 3),
        ('["\\x"]', 3),
        ("[truth]", 4),
        ("{} x", 3),
        ("\ufeff{}", 0),
        ("[1.]", 3),
    ],
)
def test_errors_have_position_and_snippet(text: str, position: int) -> None:
    for _, pieces in chunkings(text):
        s = JsonStream()
        with pytest.raises(ParseError) as info:
            for piece in pieces:
                s.feed(piece)
            s.close()
        assert info.value.position == position, pieces
        assert info.value.code in ("json_syntax", "json_number")
        assert info.value.snippet
        with pytest.raises(UsageError):
            s.feed("1")


def test_incomplete_at_close() -> None:
    s = JsonStream()
    s.feed('{"a": ["x')
    with pytest.raises(IncompleteInputError) as info:
        s.close()
    assert info.value.pointer == "/a/0" and info.value.position == 9
    with pytest.raises(IncompleteInputError):
        JsonStream().close()
    with pytest.raises(UsageError):
        s.close()


def test_feed_after_close_is_usage_error() -> None:
    s = JsonStream()
    s.feed("[]")
    s.close()
    with pytest.raises(UsageError):
        s.feed(" ")


# Every parser state, and the text that puts a stream there.
STATES = {
    "value": "",
    "string": '{"a": "x',
    "string with a carried escape": '{"a": "x\\u00',
    "key": '{"ke',
    "object key": '{"a": 1, ',
    "colon": '{"a"',
    "after a value": '{"a": true',
    "number": '{"a": 1',
    "array value": "[",
    "done": "[1]",
}


@pytest.mark.parametrize("wrong", [b'"x"', 42, None, ["x"], 1.5])
@pytest.mark.parametrize("state", [*STATES, "skip_prefix", "skip_prefix trail"])
def test_feed_refuses_what_is_not_text(state: str, wrong: Any) -> None:
    """Not text is a usage error naming the type, from any state, and the stream is dead after it."""
    s = JsonStream(skip_prefix=state.startswith("skip_prefix"))
    s.feed({"skip_prefix": "Here: ", "skip_prefix trail": "Here: [1] and"}.get(state) or STATES.get(state, ""))
    with pytest.raises(UsageError, match=f"feed\\(\\) takes str, not {type(wrong).__name__}"):
        s.feed(wrong)
    with pytest.raises(UsageError, match="failed"):
        s.feed("1")


def test_depth_limit() -> None:
    limits = Limits(max_json_depth=3)
    assert loads("[[[1]]]", limits=limits) == [[[1]]]
    with pytest.raises(LimitExceededError) as info:
        loads("[[[[1]]]]", limits=limits)
    assert info.value.position == 3
    with pytest.raises(LimitExceededError):
        loads("[" * 100_000)  # the default depth limit, not a RecursionError


def test_size_limit() -> None:
    s = JsonStream(limits=Limits(max_input_chars=10))
    s.feed('["abcdef')
    with pytest.raises(LimitExceededError):
        s.feed("ghi")


def test_huge_integer_rejected_like_json_loads() -> None:
    with pytest.raises(ValueError):
        json.loads("1" * 5000)
    with pytest.raises(ParseError):
        loads("1" * 5000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('Sure! Here is the JSON:\n```json\n{"a": [1, 2]}\n```\nHope that helps {x', {"a": [1, 2]}),
        ('{"a": 1} trailing prose', {"a": 1}),
        ("prefix [1, 2] suffix", [1, 2]),
        ('```\n[{"k": "v"}]\n```', [{"k": "v"}]),
    ],
)
def test_skip_prefix(text: str, expected: Any) -> None:
    for _, pieces in chunkings(text):
        s, _ops = _stream(pieces, skip_prefix=True)
        s.close()
        assert s.value == expected and s.done


def test_skip_prefix_without_json_is_incomplete() -> None:
    s = JsonStream(skip_prefix=True)
    s.feed("no json here at all")
    assert not s.started
    with pytest.raises(IncompleteInputError):
        s.close()


def test_trailing_text_rejected_without_skip_prefix() -> None:
    with pytest.raises(ParseError):
        loads('{"a": 1}\n```')
    assert loads('{"a": 1}\n \t') == {"a": 1}


@pytest.mark.parametrize("read_every_piece", [True, False])
@pytest.mark.parametrize("size", [1, 4, 37])
def test_long_strings_past_the_eager_limit(read_every_piece: bool, size: int) -> None:
    """Short open strings are kept current in their container, long ones as parts: both read right."""
    long_text = ('ab\\n"é😀\t \\u00e9\\ud83d\\ude00 ' * 400)[: 2 * _EAGER_LIMIT]
    doc = json.dumps({"short": "x" * 10, "long": long_text, "list": [long_text, "y"]}) + " "
    assert len(json.dumps(long_text)) > _EAGER_LIMIT  # past the limit in input characters, too
    for root in (doc, json.dumps(long_text)):
        s = JsonStream()
        mirror: Any = None
        final = json.loads(root)
        for i in range(0, len(root), size):
            mirror = apply_patch(mirror, s.feed(root[i : i + size]))
            if read_every_piece:
                assert s.value == mirror
        s.close()
        assert s.value == mirror == final
