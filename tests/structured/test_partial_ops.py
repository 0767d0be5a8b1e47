"""``$partial`` markers on the operation stream: a client applying the ops holds exactly ``annotated()``."""

from __future__ import annotations

import json
from typing import Any

import jsonpatch  # type: ignore[import-untyped]
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.structured.test_properties import _chunked
from turnkit.structured import JsonStream, OpDecoder, OpEncoder, PartialMarkers, apply_patch, coalesce_ops


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _follow(pieces: list[str], marker: str = "$partial") -> list[list[dict[str, Any]]]:
    """Feed ``pieces`` (then close); after every step the client equals ``annotated()``. Returns the batches."""
    s = PartialMarkers(JsonStream(), marker)
    client: Any = None
    batches = []
    for piece in [*pieces, None]:
        try:
            ops = s.feed(piece) if piece is not None else s.close()
        except Exception:  # invalid text, or incomplete at close: the stream is dead, nothing more to check
            return batches
        batches.append(ops)
        client = apply_patch(client, ops)
        assert _canon(client) == _canon(s.stream.annotated(marker)), (piece, ops)
    assert _canon(client) == _canon(s.stream.value)  # complete: no marker left
    return batches


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_chunked())
def test_ops_rebuild_annotated_after_every_feed(doc: tuple[str, list[str]]) -> None:
    _follow(doc[1])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_chunked(), st.integers(1, 6))
def test_coalesced_wire_batches_rebuild_annotated(doc: tuple[str, list[str]], every: int) -> None:
    """Markers survive coalescing and the compact wire form; standard jsonpatch applies the non-append ops."""
    s = PartialMarkers(JsonStream())
    encoder, decoder = OpEncoder(), OpDecoder()
    client: Any = None
    pending: list[dict[str, Any]] = []
    pieces = doc[1]
    for i, piece in enumerate(pieces, 1):
        try:
            pending.extend(s.feed(piece))
        except Exception:
            return
        if i % every == 0 or i == len(pieces):
            client = apply_patch(client, decoder.decode(encoder.encode(coalesce_ops(pending))))
            pending = []
            assert _canon(client) == _canon(s.stream.annotated())


def test_markers_follow_the_open_member() -> None:
    batches = _follow(['{"a": 1, "b": {"c": [1, {"d": "x', 'y"}], "e": t', "rue}}"])
    flat = [op for batch in batches for op in batch if "$partial" in op["path"]]
    assert flat[0] == {"op": "add", "path": "/$partial", "value": {"b": True}}
    assert {"op": "replace", "path": "/b/$partial", "value": {}} in flat  # "e": t... is not shown yet
    assert flat[-2:] == [{"op": "remove", "path": "/$partial"}, {"op": "remove", "path": "/b/$partial"}]


def test_duplicate_key_replaces_an_open_object() -> None:
    _follow(['{"a": {"x": 1', '}, "a": {"y": "', 'z"}}'])
    _follow(['{"a": {"x": 1}, "a": {"y"', ': "z', '"}}'])
    _follow(["[", '{"a": {"b": {"c": ', '"d"}, "b": {"e', '": 1}}}]'])


@pytest.mark.parametrize("marker", ["$partial", "~/odd", "partial"])
def test_custom_marker(marker: str) -> None:
    _follow(list('{"x": {"y": ["z", {"w": "v"}]}, "q": 1.5}'), marker)


def test_marker_ops_are_standard_json_patch() -> None:
    s = PartialMarkers(JsonStream())
    doc: Any = None
    for piece in ['{"a": {"b": 1, "c": [', "2, 3], ", '"d": {}}}']:
        ops = s.feed(piece)
        doc = jsonpatch.apply_patch(doc, ops)  # no append here: plain RFC 6902 throughout
        assert _canon(doc) == _canon(s.stream.annotated())
