"""The tool-set cache's key (render/_inputs.tool_set_key): ``marshal`` (version 4) of exact built-in data, and
the guard that keeps marshal's one inexactness (any buffer written as ``bytes``) out of the cache.

Each property the cache relies on has a test that fails without it: values of other types, float bits, order and
container kinds give other keys; subclasses and foreign objects give None; a value whose expansion is huge keys in
the time its size takes; a tool set holding a buffer renders as itself, never as the bytes it marshals like.
"""

from __future__ import annotations

import enum
import json
import marshal
import time
from typing import Any

import numpy
import pytest

from tests.render.reference import reference_render
from turnkit import ChatTemplate, TemplateLimitError
from turnkit.render._inputs import tool_schemas, tool_set_key

CHAT = [{"role": "user", "content": "Hi"}]
TEMPLATE = "{% for t in tools %}{{ t | tojson }}\n{% endfor %}"


class Color(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    ONE = 1


VALUES: list[Any] = [[{"a": 1, "b": [1.5, True, None]}], [("t", 1)], [{"k": "v" * 70000}], [{"é": "ü\ud800"}]]


def test_keys_are_marshal_version_4() -> None:
    assert [tool_set_key(value) for value in VALUES] == [marshal.dumps(value, 4) for value in VALUES]


def test_equal_values_of_other_types_order_or_bits_have_other_keys() -> None:
    distinct: list[Any] = [
        [1],
        [1.0],
        [True],
        [0.0],
        [-0.0],
        [float("nan")],
        [(1,)],
        [[1]],
        [{"a": 1, "b": 2}],
        [{"b": 2, "a": 1}],
        ["1"],
        [{1: "a"}],
        [{"1": "a"}],
        [None],
        [2**70],
    ]
    keys = [tool_set_key(value) for value in distinct]
    assert None not in keys
    assert len(set(keys)) == len(keys)


def test_subclasses_and_foreign_objects_have_no_key() -> None:
    for value in ([Color.RED], [Level.ONE], [{"f": len}], [{Color.RED: 1}], [{"k": object()}]):
        assert tool_set_key(value) is None
    assert tool_set_key([{"k": "v" * (1 << 19)}]) is None  # past the bound: not cached


def test_a_huge_expansion_keys_in_the_time_its_size_takes() -> None:
    # marshal writes a part met twice as a back-reference; the copy the cache would make is the tree, which the
    # container limit stops as it does for any input
    shared: list[Any] = ["a"]
    for _ in range(40):
        shared = [shared, shared]  # 2**40 leaves once written out
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    start = time.process_time()
    key = tool_set_key([{"x": shared}])
    assert key is not None and len(key) < 1000
    assert tool_set_key([{"x": cyclic}]) is not None
    with pytest.raises(TemplateLimitError):
        tool_schemas([{"x": shared}], set())
    assert time.process_time() - start < 5


@pytest.mark.reference
@pytest.mark.parametrize(
    ("first", "second"),
    [
        (bytearray(b"1"), b"1"),
        (b"1", bytearray(b"1")),
        (numpy.float64(1.5), numpy.float64(1.5).tobytes()),
        (numpy.float64(1.5).tobytes(), numpy.float64(1.5)),
        (numpy.array([1, 2], dtype=numpy.uint8), bytes([1, 2])),
    ],
)
def test_a_buffer_and_the_bytes_it_marshals_like_render_as_themselves(first: Any, second: Any) -> None:
    template = ChatTemplate(TEMPLATE)
    template._memos["default"] = None
    one, other = [{"a": first, "n": 1}], [{"a": second, "n": 1}]
    assert tool_set_key(one) == tool_set_key(other)  # marshal cannot tell them apart
    expected = [template.render(CHAT, tools=tools) for tools in (one, other)]
    assert expected[0] != expected[1]
    assert [template.render(CHAT, tools=tools) for tools in (one, other, one)] == [*expected, expected[0]]
    if isinstance(first, numpy.floating):  # transformers' own tojson of the numpy value
        assert expected[0] == reference_render(CHAT, TEMPLATE, tools=one)[1]


def test_only_json_types_are_cached() -> None:
    # a cached tool set is handed the same private copy every time; any other gets a fresh copy per render
    plain = [{"type": "function", "function": {"name": "cached", "enum": ("a", "b")}}]
    assert tool_schemas(plain, set()) is tool_schemas(plain, set())
    for odd in ({"a": {1, 2}}, {"a": frozenset()}, {"a": b"x"}, {"a": bytearray(b"x")}, {"a": 1j}, {"a": ...}):
        assert tool_set_key([odd]) is not None
        assert tool_schemas([odd], set()) is not tool_schemas([odd], set())


@pytest.mark.parametrize("afresh", [False, True])
def test_a_tool_set_misses_once_whether_it_is_the_same_objects_or_made_afresh(
    afresh: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # strings parsed at run time have one reference until the private copy shares them (marshal flags an object
    # referred to more than once): the entry is filed under the key of the same objects and of equal new ones
    from turnkit.render import _inputs

    texts = [
        json.dumps([{"type": "function", "function": {"name": f"f{afresh}{n}", "description": "d"}}]) for n in (1, 2)
    ]
    misses: list[Any] = []
    check = _inputs._json_types_only
    monkeypatch.setattr(_inputs, "_json_types_only", lambda value: misses.append(value) or check(value))
    tools = [json.loads(text) for text in texts]
    first = [tool_schemas(one, set()) for one in tools]
    for _ in range(3):  # two tool sets in turn: the last one met is never the one asked for
        for text, one, copied in zip(texts, tools, first, strict=True):
            assert tool_schemas(json.loads(text) if afresh else one, set()) is copied
    assert len(misses) == 2


def test_the_private_copy_shares_no_string_with_the_callers_tools() -> None:
    # a string of the caller's referred to once stays so: the same objects key as they did before the first render
    tools = json.loads(json.dumps([{"type": "function", "function": {"name": "private", "description": "d" * 40}}]))
    key = tool_set_key(tools)
    copied = tool_schemas(tools, set())
    assert copied == tools and copied is not tools
    assert copied[0]["function"]["description"] is not tools[0]["function"]["description"]
    assert tool_set_key(tools) == key
    assert tool_schemas(tools, set()) is copied
