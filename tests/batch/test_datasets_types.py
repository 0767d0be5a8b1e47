"""``datasets.map`` with the renderer, tokenized, when every row of the first batch is bad: the token columns are
still typed as lists of ints (``datasets`` fixes a column's type from the first batch; typed null, a good row
later stopped the map), with the same features as a map whose first batch is good."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.batch import test_columns
from tests.batch.test_batch import _chat
from turnkit import batch as tbatch

datasets = pytest.importorskip("datasets")
datasets.disable_progress_bars()

model = test_columns.model  # the fixture: a model folder with a tokenizer.json and {% generation %} blocks
BAD = {"messages": [{"role": "robot", "content": "x"}]}


def _map(rows: list[dict[str, Any]], model: Path, **options: Any) -> Any:
    renderer = tbatch.renderer(model=model, masks=True)
    return datasets.Dataset.from_list(rows).map(renderer, batched=True, batch_size=4, **options)


@pytest.mark.parametrize("num_proc", [None, 2])
def test_token_columns_are_typed_when_the_first_batch_has_only_bad_rows(model: Path, num_proc: int | None) -> None:
    """With two processes, the first shard's only batch is bad and the second's first batch good: both shards
    must agree on the features for ``datasets`` to join them."""
    good = [{"messages": _chat(i)} for i in range(8)]
    rows = [BAD] * 4 + good
    mapped = _map(rows, model, num_proc=num_proc)
    features = _map(good + [BAD] * 4, model).features  # the same rows, a good first batch
    assert mapped.features == features
    assert mapped.features["input_ids"] == datasets.List(datasets.Value("int32"))
    assert mapped.features["assistant_masks"] == datasets.List(datasets.Value("int64"))
    renderer = tbatch.Renderer(model=model, masks=True)
    for name in ("prompt", "input_ids", "assistant_masks"):
        assert mapped[name] == [None] * 4 + [renderer.row(row)[name] for row in good], name
    assert all("unknown role 'robot'" in error for error in mapped["error"][:4]) and mapped["error"][4:] == [None] * 8


def test_a_batch_of_only_bad_rows_after_good_ones_keeps_the_types(model: Path) -> None:
    good = [{"messages": _chat(i)} for i in range(4)]
    mapped = _map(good + [BAD] * 4 + good, model)
    assert mapped.features["input_ids"] == datasets.List(datasets.Value("int32"))
    assert mapped["input_ids"][4:8] == [None] * 4 and mapped["input_ids"][8:] == mapped["input_ids"][:4]
