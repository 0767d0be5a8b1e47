"""Property tests: for any document of the model and any chunking, the client's view obeys its policies."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from turnkit._json import json_copy
from turnkit.structured import (
    ItemsWhenComplete,
    RequireFields,
    StructuredStream,
    WhenComplete,
    WithState,
    apply_patch,
    partial_model,
)


class PLine(BaseModel):
    emoji: Annotated[str, WhenComplete()]
    text: str


class PStep(BaseModel):
    kind: Literal["search", "answer"]
    body: str
    note: Annotated[str, WithState()] = ""


class PDoc(BaseModel):
    title: str
    tags: Annotated[list[str], ItemsWhenComplete()]
    lines: list[PLine]
    steps: list[Annotated[PStep, RequireFields("kind")]]
    state: Annotated[str, WithState()]
    n: int | float | None = None


_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_docs = st.fixed_dictionaries(
    {
        "title": _text,
        "tags": st.lists(_text, max_size=4),
        "lines": st.lists(st.fixed_dictionaries({"emoji": _text, "text": _text}), max_size=3),
        "steps": st.lists(
            st.fixed_dictionaries(
                {"kind": st.sampled_from(["search", "answer"]), "body": _text}, optional={"note": _text}
            ),
            max_size=3,
        ),
        "state": _text,
    },
    optional={"n": st.one_of(st.none(), st.integers(), st.floats(allow_nan=False, allow_infinity=False))},
)


def _consistent(snap: Any, final: Any) -> bool:
    """Nothing the client saw is contradicted later: containers grow, text only extends."""
    if isinstance(snap, dict):
        return isinstance(final, dict) and all(k in final and _consistent(v, final[k]) for k, v in snap.items())
    if isinstance(snap, list):
        return isinstance(final, list) and len(snap) <= len(final) and all(map(_consistent, snap, final))
    if isinstance(snap, str):
        return isinstance(final, str) and final.startswith(snap)
    return bool(snap == final and type(snap) is type(final))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_docs, data=st.data())
def test_any_document_any_chunking(doc: dict[str, Any], data: st.DataObject) -> None:
    text = json.dumps(doc, ensure_ascii=data.draw(st.booleans()), indent=data.draw(st.sampled_from([None, 1])))
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=40)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True) if a < b]
    partial = partial_model(PDoc)
    s = StructuredStream(PDoc)
    mirror: Any = None
    snapshots = []
    for piece in pieces:
        mirror = apply_patch(mirror, s.feed(piece))
        assert mirror == s.value
        snapshots.append(json_copy(s.value))
        partial.model_validate(s.value)  # every client value is an instance of the partial type
    assert s.close() == []
    assert s.result == PDoc.model_validate_json(text)
    final = snapshots[-1]
    assert final["state"] == {"state": "complete", "value": doc["state"]}
    final_plain = {k: v for k, v in json_copy(final).items() if k != "state"}
    for step in final_plain["steps"]:  # unwrap the state of each step's note to compare with the document
        note = step.pop("note")
        assert note["state"] in ("pending", "complete")
        if note["state"] == "complete":
            step["note"] = note["value"]
    assert final_plain == {k: v for k, v in doc.items() if k != "state"}
    for snap in map(json_copy, snapshots):
        if snap is None:
            continue
        assert snap.get("tags", []) == doc["tags"][: len(snap.get("tags", []))]  # whole items only
        for i, line in enumerate(snap.get("lines", [])):
            assert "emoji" not in line or line["emoji"] == doc["lines"][i]["emoji"]
        for i, step in enumerate(snap.get("steps", [])):
            assert step["kind"] == doc["steps"][i]["kind"]
            note = step.pop("note")  # present from the moment the step is shown
            assert note["state"] in ("pending", "incomplete", "complete")
            if note["value"] is not None:
                assert doc["steps"][i]["note"].startswith(note["value"])
        assert snap["state"]["state"] in ("pending", "incomplete", "complete")
        plain_doc = {k: v for k, v in doc.items() if k != "state"}
        plain_doc["steps"] = [{k: v for k, v in step.items() if k != "note"} for step in doc["steps"]]
        assert _consistent({k: v for k, v in snap.items() if k != "state"}, plain_doc)
