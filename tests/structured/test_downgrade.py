"""The RFC 6902 downgrade: standard ``jsonpatch`` applying the downgraded ops reaches turnkit's documents."""

from __future__ import annotations

import json
from typing import Any

import jsonpatch  # type: ignore[import-untyped]
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.corpora import CORPORA, corpus_path
from tests.structured.test_properties import _chunked
from turnkit.errors import JsonPatchError
from turnkit.structured import JsonStream, PartialMarkers, Rfc6902Downgrader, apply_patch, to_rfc6902


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _check_batches(batches: list[list[dict[str, Any]]], *, coalesce: bool) -> None:
    turnkit_doc: Any = None
    standard_doc: Any = None
    downgrader = Rfc6902Downgrader(coalesce=coalesce)
    for batch in batches:
        turnkit_doc = apply_patch(turnkit_doc, batch)
        plain = downgrader.downgrade(batch)
        assert all(op["op"] != "append" for op in plain)
        for op in plain:  # add before replace: every replace names a path the client already has
            if op["op"] == "replace" and op["path"]:
                parent, _, last = op["path"].rpartition("/")
                container = jsonpatch.JsonPointer(parent).resolve(standard_doc) if parent else standard_doc
                assert last.replace("~1", "/").replace("~0", "~") in container or isinstance(container, list)
            standard_doc = jsonpatch.apply_patch(standard_doc, [op])
        assert _canon(standard_doc) == _canon(turnkit_doc)
        assert _canon(downgrader.value) == _canon(turnkit_doc)


def _batches(pieces: list[str], every: int, markers: bool) -> list[list[dict[str, Any]]]:
    stream = JsonStream()
    marked = PartialMarkers(stream) if markers else None
    batches: list[list[dict[str, Any]]] = []
    pending: list[dict[str, Any]] = []
    for i, piece in enumerate([*pieces, None], 1):
        try:
            if piece is None:
                ops = marked.close() if marked else stream.close()
            else:
                ops = marked.feed(piece) if marked else stream.feed(piece)
        except Exception:
            break
        pending.extend(ops)
        if i % every == 0 or piece is None:
            batches.append(pending)
            pending = []
    if pending:
        batches.append(pending)
    return batches


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_chunked(), st.integers(1, 5), st.booleans(), st.booleans())
def test_downgraded_ops_give_the_same_documents(
    doc: tuple[str, list[str]], every: int, markers: bool, coalesce: bool
) -> None:
    _check_batches(_batches(doc[1], every, markers), coalesce=coalesce)


def test_append_becomes_replace_of_the_whole_string() -> None:
    ops = [{"op": "append", "path": "/a/0", "value": "lo"}, {"op": "append", "path": "/a/0", "value": "!"}]
    assert to_rfc6902(ops, {"a": ["Hel"]}) == [{"op": "replace", "path": "/a/0", "value": "Hello!"}]
    assert to_rfc6902(ops, {"a": ["Hel"]}, coalesce=False) == [
        {"op": "replace", "path": "/a/0", "value": "Hello"},
        {"op": "replace", "path": "/a/0", "value": "Hello!"},
    ]
    # a string added and grown in one batch is sent once, added whole
    added = [{"op": "add", "path": "/b", "value": "x"}, {"op": "append", "path": "/b", "value": "y"}]
    assert to_rfc6902(added, {}) == [{"op": "add", "path": "/b", "value": "xy"}]
    root = [{"op": "append", "path": "", "value": "b"}]
    assert to_rfc6902(root, "a") == [{"op": "replace", "path": "", "value": "ab"}]


def test_doc_before_is_not_modified_and_errors_name_the_op() -> None:
    before = {"t": "a"}
    to_rfc6902([{"op": "append", "path": "/t", "value": "b"}], before)
    assert before == {"t": "a"}
    with pytest.raises(JsonPatchError) as info:
        to_rfc6902([{"op": "add", "path": "/x", "value": 1}, {"op": "append", "path": "/zz", "value": "b"}], before)
    assert info.value.op_index == 1 and info.value.pointer == "/zz"


@pytest.mark.corpus
def test_conformance_cases_pass_through() -> None:
    """Without appends the downgrade changes nothing: jsonpatch reaches the suites' expected documents."""
    checked = 0
    for suite in ("json-patch-tests/tests.json", "json-patch-tests/spec_tests.json"):
        corpus_path(suite)
        for case in json.loads((CORPORA / suite).read_text(encoding="utf-8")):
            if case.get("disabled") or "patch" not in case or "error" in case or "expected" not in case:
                continue
            plain = to_rfc6902(case["patch"], case["doc"], coalesce=False)
            assert _canon(jsonpatch.apply_patch(case["doc"], plain)) == _canon(case["expected"])
            checked += 1
    assert checked >= 50
