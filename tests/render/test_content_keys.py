"""The tool-set cache's key (render/_inputs.content_key): the content of exact built-in data, with no
back-references, written to a writer that stops the dump at the size bound.

Each property the cache relies on has a test that fails without it: values of other types, float bits, order and
container kinds give other keys; a refused or too-big value gives None and leaves the reused pickler clean; a
value whose expansion is huge stops within a frame of the bound instead of being written out.
"""

from __future__ import annotations

import copy
import enum
import pickle
import threading
import time
from typing import Any

from turnkit.render._inputs import content_key

BIG = 1 << 20


class Color(enum.StrEnum):
    RED = "red"


def _fresh(value: Any) -> bytes:
    """What a new memo-off pickler writes for ``value``."""

    class Sink:
        def __init__(self) -> None:
            self.data = b""

        def write(self, data: bytes) -> int:
            self.data += data
            return len(data)

    sink = Sink()
    pickler = pickle.Pickler(sink, 5)
    pickler.fast = True
    pickler.dump(value)
    return sink.data


VALUES: list[Any] = [[{"a": 1, "b": [1.5, True, None]}], ("t", 1), {"k": "v" * 70000}, {"k": "w" * 200000}]


def test_keys_are_the_memo_off_pickle() -> None:
    # the last value is written in several frames: the key joins them
    assert [content_key(value, BIG) for value in VALUES] == [_fresh(value) for value in VALUES]


def test_equal_values_of_other_types_order_or_bits_have_other_keys() -> None:
    distinct: list[Any] = [
        [1],
        [1.0],
        [True],
        [0.0],
        [-0.0],
        [(1,)],
        [[1]],
        [{"a": 1, "b": 2}],
        [{"b": 2, "a": 1}],
        ["1"],
        [b"1"],
        [bytearray(b"1")],
        [{1: "a"}],
        [{"1": "a"}],
    ]
    keys = [content_key(value, BIG) for value in distinct]
    assert None not in keys
    assert len(set(keys)) == len(keys)


def test_sharing_does_not_change_the_key() -> None:
    # the tool-set cache's copy is a tree whether the caller's schemas share a part or not
    part = {"enum": ["c", "f"]}
    assert content_key([part, part], BIG) == content_key([part, copy.deepcopy(part)], BIG)


def test_refused_values_give_none_and_the_next_key_is_clean() -> None:
    keys = [content_key(value, BIG) for value in VALUES]
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    refused: list[Any] = [[Color.RED], [{"f": len}], cyclic, {"k": "v" * 200}]
    for value in refused:
        assert content_key(value, 100 if isinstance(value, dict) else BIG) is None
        assert [content_key(value, BIG) for value in VALUES] == keys


def test_a_huge_expansion_stops_at_the_bound() -> None:
    shared: list[Any] = ["a"]
    for depth in range(40):
        shared = [shared, shared]  # 2**40 leaves once written out
        if depth == 9:
            small = shared  # 2**10 leaves: under the bound, written out in full
    start = time.process_time()
    assert content_key({"x": shared}, 1 << 18) is None
    assert time.process_time() - start < 2
    assert content_key({"x": small}, 1 << 18) == _fresh({"x": small})


def test_keys_from_many_threads() -> None:
    keys = [content_key(value, BIG) for value in VALUES]
    results: list[list[bytes | None]] = []

    def worker() -> None:
        results.append([content_key(value, BIG) for value in VALUES * 20])

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(result == keys * 20 for result in results)
