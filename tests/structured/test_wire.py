"""The compact wire form: exact encoding, carry-over of op and path across batches, round trips, errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.errors import JsonPatchError, ParseError, UsageError
from turnkit.structured import JsonStream, Op, OpDecoder, OpEncoder, apply_patch, decode_ops, encode_ops


def test_exact_encoding() -> None:
    ops: list[Op] = [
        {"op": "add", "path": "", "value": {}},
        {"op": "add", "path": "/title", "value": "Hel"},
        {"op": "append", "path": "/title", "value": "lo"},
        {"op": "append", "path": "/title", "value": " 세계"},
        {"op": "add", "path": "/n", "value": 1},
        {"op": "replace", "path": "/n", "value": "x"},
        {"op": "remove", "path": "/n"},
        {"op": "move", "from": "/title", "path": "/t"},
    ]
    text = encode_ops(ops)
    assert text == (
        '[{"v":{}},["/title","Hel"],"lo"," 세계",["/n",1],{"o":"r","v":"x"},{"o":"x"},{"o":"m","p":"/t","f":"/title"}]'
    )
    assert decode_ops(text) == ops


def test_state_carries_across_batches() -> None:
    s = JsonStream()
    encoder, decoder = OpEncoder(), OpDecoder()
    sent = []
    for piece in ['{"story": "Once', " upon", " a time", '"}']:
        ops = s.feed(piece)
        sent.append(encoder.encode(ops))
        assert decoder.decode(sent[-1]) == ops
    assert sent == ['[{"v":{}},["/story","Once"]]', '[" upon"]', '[" a time"]', "[]"]
    # a fresh decoder cannot read a batch out of context the same way
    assert decode_ops(sent[2]) == [{"op": "append", "path": "", "value": " a time"}]


def test_feed_encoded() -> None:
    """The parser writes the wire form itself: the encoder's text, "" where nothing changed."""
    s = JsonStream()
    decoder = OpDecoder()
    pieces = ['{"story": "Once', " upon", '", "n": [1, {"a": tr', 'ue, "a": null}], "e": "\\u00e9', '"}']
    sent = [s.feed_encoded(piece) for piece in pieces]
    assert sent == ['[{"v":{}},["/story","Once"]]', '[" upon"]', '[["/n",[]],["0/0",1],["1/1",{}]]',
                    '[["0/a",true],{"o":"r","v":null},{"o":"a","p":"/e","v":"é"}]', ""]  # fmt: skip
    assert s.close_encoded() == ""
    ops = [op for text in sent if text for op in decoder.decode(text)]
    assert apply_patch(None, ops) == s.value == {"story": "Once upon", "n": [1, {"a": None}], "e": "é"}


def test_feed_encoded_is_not_mixed_with_feed() -> None:
    s = JsonStream()
    s.feed("[")
    with pytest.raises(UsageError, match="read with feed"):
        s.feed_encoded("1")
    s = JsonStream()
    s.feed_encoded('["a')
    s.feed("bc")  # an append: the carried path is unchanged, nothing is lost track of
    assert s.feed_encoded("d") == '["d"]'
    s.feed('", 2, ')  # a new member the wire form did not see
    with pytest.raises(UsageError, match="lost track"):
        s.feed_encoded("]")
    with pytest.raises(UsageError, match="lost track"):
        s.close_encoded()


def test_feed_encoded_after_an_error() -> None:
    s = JsonStream()
    with pytest.raises(ParseError):
        s.feed_encoded('{"a": [1, }')
    with pytest.raises(UsageError, match="failed"):  # the stream's own error, not a wire-form one
        s.feed_encoded("]")
    with pytest.raises(UsageError, match="failed"):
        s.close_encoded()


def test_infinity_round_trips() -> None:
    s = JsonStream()
    ops = s.feed("[1e400, -1e400]")
    assert decode_ops(encode_ops(ops)) == ops
    assert json.loads(encode_ops(ops)) is not None  # valid JSON


def test_nan_cannot_be_encoded() -> None:
    with pytest.raises(JsonPatchError):
        encode_ops([{"op": "add", "path": "", "value": float("nan")}])


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "{}",
        "[1]",
        '[{"x": 1}]',
        '[{"o": 1}]',
        '[{"p": null}]',
        "[NaN]",
        '[{"v": Infinity}]',
        '[{"p": "x"}]',  # neither a pointer nor a relative path
        '[{"p": "1"}]',  # relative: above the root
        '[{"p": "/a"}, {"p": "2/b"}]',
        "[[]]",  # an array is [path] or [path, value]
        '[["/a", 1, 2]]',
        "[[1, 2]]",
        '[["x", 1]]',
    ],
)
def test_bad_wire_text(text: str) -> None:
    with pytest.raises(JsonPatchError):
        decode_ops(text)


def test_encode_needs_op_and_path() -> None:
    with pytest.raises(JsonPatchError):
        encode_ops([{"value": 1}])


def test_encode_needs_a_pointer() -> None:
    with pytest.raises(JsonPatchError):
        encode_ops([{"op": "add", "path": "1/x", "value": 1}])


def test_op_codes_and_long_names() -> None:
    with pytest.raises(JsonPatchError):  # a code used as an op name would not round-trip
        encode_ops([{"op": "+", "path": "/a", "value": "x"}])
    ops: list[Op] = [{"op": "frobnicate", "path": "/a"}, {"op": "append", "path": "/b", "value": "x"}]
    assert encode_ops(ops) == '[{"o":"frobnicate","p":"/a"},{"o":"+","p":"/b","v":"x"}]'
    assert decode_ops(encode_ops(ops)) == ops
    assert decode_ops('[{"o":"append","p":"/b","v":"x"}]') == [ops[1]]  # long names are read too


def test_relative_paths() -> None:
    ops: list[Op] = [
        {"op": "add", "path": "/sections/12/tags", "value": []},
        {"op": "add", "path": "/sections/12/tags/0", "value": "a"},
        {"op": "add", "path": "/sections/12/tags/1", "value": "b"},
        {"op": "add", "path": "/sections/12/score", "value": 1.5},
        {"op": "add", "path": "/sections/13", "value": {}},
        {"op": "add", "path": "/s", "value": 0},
        {"op": "add", "path": "", "value": 0},
        {"op": "add", "path": "/a~1b/", "value": 0},
        {"op": "add", "path": "/a~1b/c", "value": 0},
    ]
    text = encode_ops(ops)
    assert text == (
        '[["/sections/12/tags",[]],["0/0","a"],["1/1","b"],["2/score",1.5],["2/13",{}],["/s",0],["",0],'
        '["/a~1b/",0],["1/c",0]]'
    )
    assert decode_ops('[{"o":"x"},["/a"],["1/b",2]]') == [
        {"op": "remove", "path": ""},
        {"op": "remove", "path": "/a"},
        {"op": "remove", "path": "/b", "value": 2},
    ]
    assert decode_ops(text) == ops


_TOKENS = st.sampled_from(["", "0", "1", "12", "a", "a~0b", "~1", "x/y".replace("/", "~1"), "é", "-"])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "replace", "remove", "append", "move", "copy", "test", "other", "ab"]),
            st.lists(_TOKENS, max_size=4),
            st.one_of(st.none(), st.text(max_size=3), st.integers(), st.just({})),
        ),
        max_size=12,
    ),
    st.integers(min_value=0, max_value=12),
)
def test_any_ops_round_trip(raw: list[tuple[str, list[str], object]], split: int) -> None:
    ops: list[Op] = []
    for name, tokens, value in raw:
        op: Op = {"op": name, "path": "".join("/" + t for t in tokens)}
        if name == "move" or name == "copy":
            op["from"] = "/x"
        elif value is not None or name != "remove":
            op["value"] = value
        ops.append(op)
    assert decode_ops(encode_ops(ops)) == ops
    encoder, decoder = OpEncoder(), OpDecoder()  # carried state across two batches
    assert decoder.decode(encoder.encode(ops[:split])) + decoder.decode(encoder.encode(ops[split:])) == ops
