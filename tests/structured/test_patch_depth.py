"""apply_patch handles every depth the parser accepts (no recursion-limit failures)."""

from __future__ import annotations

import json

from turnkit._json import json_copy
from turnkit.limits import DEFAULT_LIMITS
from turnkit.structured import JsonStream, apply_patch
from turnkit.structured._patch import json_equal


def _deep(depth: int) -> object:
    value: object = {"leaf": [1, 2.5, "x", None, True]}
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def test_copy_and_equal_at_parser_depth() -> None:
    doc = _deep(DEFAULT_LIMITS.max_json_depth + 1000)
    copy = json_copy(doc)
    assert copy is not doc and json_equal(copy, doc)
    assert not json_equal(copy, _deep(DEFAULT_LIMITS.max_json_depth + 999))


def test_apply_patch_mirrors_a_deep_stream() -> None:
    depth = DEFAULT_LIMITS.max_json_depth - 2
    text = json.dumps(_deep(depth))
    stream = JsonStream()
    mirror = None
    for start in range(0, len(text), 64):
        mirror = apply_patch(mirror, stream.feed(text[start : start + 64]))
    stream.close()
    assert json_equal(mirror, json.loads(text))


def test_json_equal_is_json_equality() -> None:
    assert json_equal({"a": [1, {"b": 2}]}, {"a": [1.0, {"b": 2}]})
    assert not json_equal([True], [1])
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})
    assert not json_equal(["1"], [1])
    assert json_equal(None, None) and not json_equal(None, 0)
