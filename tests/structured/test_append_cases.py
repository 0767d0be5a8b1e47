"""turnkit's own ``append`` cases (tests/structured/append_cases.json), shared with the JS client's tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from turnkit.errors import JsonPatchError
from turnkit.structured import apply_patch

CASES = json.loads((Path(__file__).parent / "append_cases.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES, ids=[c["comment"] for c in CASES])
def test_append_case(case: dict[str, Any]) -> None:
    before = json.dumps(case["doc"])
    if "error" in case:
        with pytest.raises(JsonPatchError) as info:
            apply_patch(case["doc"], case["patch"])
        assert info.value.op_index == case["op_index"]
        assert case["error"] in str(info.value)
    else:
        assert apply_patch(case["doc"], case["patch"]) == case["expected"]
    assert json.dumps(case["doc"]) == before
