"""``parse_response`` against transformers 5.12.1's ``recursive_parse``, run for real on the same inputs.

Agreement means: the same result (compared by ``repr``, so key order, ``1`` vs ``1.0`` and ``True``
vs ``1`` all count), or both fail — transformers with any exception, turnkit with a turnkit error.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import turnkit
from tests.corpora import corpus_path, read_jsonl
from tests.parse.response_schema_cases import CASES
from tests.parse.transformers_ref import reference_parse
from turnkit.parse._schema import regex as schema_regex

pytestmark = pytest.mark.reference

_OUTPUT_FILES = ("transformers.jsonl", "llama.cpp.jsonl", "vllm.jsonl", "harmony.jsonl")


def _outcome(fn: Any, text: str, schema: Any) -> tuple[str, str]:
    try:
        return "ok", repr(fn(text, schema))
    except turnkit.TurnkitError as exc:
        return "fail", f"{type(exc).__name__}: {exc}"


def _reference_outcome(ref: Any, text: str, schema: Any) -> tuple[str, str]:
    try:
        return "ok", repr(ref(text, schema))
    except Exception as exc:  # transformers fails with assorted builtin and library exceptions
        return "fail", f"{type(exc).__name__}: {exc}"


def _agree(ours: tuple[str, str], theirs: tuple[str, str]) -> bool:
    return ours[0] == theirs[0] == "fail" or ours == theirs


def _schemas() -> dict[str, Any]:
    path = corpus_path("model-outputs/transformers-response-schemas.json")
    schemas: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["schemas"]
    return schemas


def test_corpus_records_match_reference_and_expected() -> None:
    ref = reference_parse()
    schemas = _schemas()
    records = list(read_jsonl("model-outputs/transformers.jsonl"))
    assert len(records) >= 9
    for record in records:
        schema = schemas[record["context"]["transformers_response_schema"]]
        ours = turnkit.parse_response(record["output"], schema)
        assert ours == ref(record["output"], schema), record["source"]
        assert ours == record["context"]["transformers_expected"], record["source"]
        assert repr(ours) == repr(ref(record["output"], schema))


def test_every_corpus_schema_on_every_corpus_output() -> None:
    """Each transformers schema over every model output in the corpus (thousands of real, foreign inputs)."""
    ref = reference_parse()
    schemas = _schemas()
    outputs = sorted(
        {r["output"] for name in _OUTPUT_FILES for r in read_jsonl(f"model-outputs/{name}") if r.get("output")}
    )
    assert len(outputs) > 500
    disagreements = []
    compared = 0
    for name, schema in schemas.items():
        for text in outputs:
            ours, theirs = _outcome(turnkit.parse_response, text, schema), _reference_outcome(ref, text, schema)
            compared += 1
            if not _agree(ours, theirs):
                disagreements.append((name, text[:80], ours, theirs))
    assert compared == len(outputs) * len(schemas)
    assert disagreements == []


@pytest.mark.parametrize(("name", "schema", "inputs"), CASES, ids=[case[0] for case in CASES])
def test_own_schema_matches_reference(name: str, schema: Any, inputs: list[str]) -> None:
    ref = reference_parse()
    for text in inputs:
        ours, theirs = _outcome(turnkit.parse_response, text, schema), _reference_outcome(ref, text, schema)
        assert _agree(ours, theirs), (name, text[:80], ours, theirs)


@pytest.mark.parametrize(("name", "schema", "inputs"), CASES, ids=[case[0] for case in CASES])
def test_own_schema_matches_reference_on_the_timed_engine(
    name: str, schema: Any, inputs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same table with every regex forced onto the ``regex``-module path (short inputs normally use ``re``)."""
    monkeypatch.setattr(schema_regex, "FAST_PATH_STEPS_PER_SECOND", 0)
    ref = reference_parse()
    for text in inputs:
        ours = _outcome(lambda t, s: turnkit.ResponseSchema(s).parse(t), text, schema)
        theirs = _reference_outcome(ref, text, schema)
        assert _agree(ours, theirs), (name, text[:80], ours, theirs)


def test_every_corpus_schema_on_every_corpus_output_timed_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_regex, "FAST_PATH_STEPS_PER_SECOND", 0)
    ref = reference_parse()
    outputs = sorted(
        {r["output"] for name in _OUTPUT_FILES for r in read_jsonl(f"model-outputs/{name}") if r.get("output")}
    )
    for name, raw in _schemas().items():
        compiled = turnkit.ResponseSchema(raw)
        for text in outputs:
            ours = _outcome(lambda t, _s: compiled.parse(t), text, raw)  # noqa: B023 - used within this iteration
            assert _agree(ours, _reference_outcome(ref, text, raw)), (name, text[:80])


def test_own_cases_cover_success_and_failure() -> None:
    """The table above must keep exercising both outcomes, or the differential proves little."""
    ref = reference_parse()
    kinds = {_reference_outcome(ref, text, schema)[0] for _, schema, inputs in CASES for text in inputs}
    assert kinds == {"ok", "fail"}
    failing_cases = {
        name for name, schema, inputs in CASES if any(_reference_outcome(ref, t, schema)[0] == "fail" for t in inputs)
    }
    assert len(failing_cases) >= 20
