"""Property test: for any v2 document and any chunking, the derived v1 view is live, exact and consistent."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit._json import json_copy
from turnkit.structured import PathMap, StructuredStream, Transform, apply_patch

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=10)
_items = st.lists(
    st.fixed_dictionaries({"emoji": _text}, optional={"text": _text, "extra": st.lists(st.integers(), max_size=2)}),
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(items=_items, keep=st.booleans(), data=st.data())
def test_v1_view_of_any_v2_stream(items: list[dict[str, Any]], keep: bool, data: st.DataObject) -> None:
    doc = {"summaryV2": items}
    text = json.dumps(doc, ensure_ascii=data.draw(st.booleans()))
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=30)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True) if a < b]
    transform = Transform(
        PathMap("/summaryV2/*/text", "/summary/*"),
        PathMap("/summaryV2/*", "/labels/*", fn=lambda item: item["emoji"] + item.get("text", "")),
        keep=keep,
    )
    s = StructuredStream(None, transform=transform)
    mirror: Any = None
    texts = [item["text"] for item in items if "text" in item]
    labels = [item["emoji"] + item.get("text", "") for item in items]
    for piece in pieces:
        mirror = apply_patch(mirror, s.feed(piece))
        assert mirror == s.value
        snap = json_copy(s.value) or {}
        summary = snap.get("summary", [])
        assert len(summary) <= len(texts)
        assert all(texts[i].startswith(part) for i, part in enumerate(summary))  # live prefixes, dense indices
        assert snap.get("labels", []) == labels[: len(snap.get("labels", []))]  # whole values only
        if not keep:
            assert set(snap) <= {"summary", "labels"}
    mirror = apply_patch(mirror, s.close())
    expected: dict[str, Any] = {"summary": texts} if texts else {}
    if labels:
        expected["labels"] = labels
    if keep:
        expected = {**doc, **expected}
    assert (s.value or {}) == expected
