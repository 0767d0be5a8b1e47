"""Token and string columns built from flat buffers are the arrays ``pa.array`` makes from the lists; parquet output
and the ``datasets`` helper give the same values (and features) as the plain paths and as transformers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.batch.test_batch import BAD_ROWS, SPECIAL, TEMPLATE, TOOL, _chat, _good_rows, _write_jsonl
from turnkit import batch as tbatch
from turnkit.batch import _arrays, _io
from turnkit.batch._tokens import token_array, token_arrays

pa = pytest.importorskip("pyarrow")
LISTS = st.lists(st.one_of(st.none(), st.lists(st.integers(0, 2**40), max_size=40)), max_size=12)
MASKS = st.lists(st.one_of(st.none(), st.lists(st.integers(0, 1), max_size=40)), max_size=12)


@settings(max_examples=200, deadline=None)
@given(values=st.one_of(LISTS, MASKS), bits=st.booleans())
def test_token_columns_are_the_arrays_of_the_lists(values: list[list[int] | None], bits: bool) -> None:
    """Masks read as bytes, ids (or a "mask" with a value past 255) as int64; ``None`` rows are null."""
    reference = pa.array(values, type=pa.list_(pa.int64()))
    built = token_array(values, bits=bits)
    built.validate(full=True)  # built from buffers: offsets, bitmap and child checked as pyarrow checks its own
    assert built.equals(reference) and built.type == reference.type
    arrays = token_arrays(values, bits=bits)
    assert [None if a is None else (a.dtype.name, a.tolist()) for a in arrays] == [
        None if v is None else ("int64", v) for v in values
    ]


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.text(st.characters(exclude_categories=["Cs"]))), max_size=20))
def test_string_columns_are_the_arrays_of_the_strings(values: list[str | None]) -> None:
    built = _arrays.string_array(values)
    built.validate(full=True)
    assert built.equals(pa.array(values, type=pa.string())) and built.null_count == values.count(None)


def test_a_string_column_past_int32_offsets_is_left_to_pa_array(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_arrays, "_MAX_OFFSET", 5)
    values = ["abc", None, "défg"]
    assert _arrays.string_array(values).equals(pa.array(values, type=pa.string()))
    monkeypatch.setattr(pa, "array", lambda *args, **kwargs: "pa.array's")
    assert _arrays.string_array(values) == "pa.array's"
    assert _arrays.string_array(values[:2]) != "pa.array's"


def test_a_lone_surrogate_is_refused_as_pa_array_refuses_it() -> None:
    with pytest.raises(UnicodeEncodeError):
        pa.array(["a\ud800"], type=pa.string())
    with pytest.raises(UnicodeEncodeError):
        _arrays.string_array(["a\ud800"])


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.render.test_tokenize import _added_tokens, build_tokenizer

    folder = tmp_path_factory.mktemp("model")
    build_tokenizer("bpe", tuple(_added_tokens(TEMPLATE))).save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": TEMPLATE, **SPECIAL}), "utf-8")
    return folder


def _rows() -> list[dict[str, Any]]:
    rows = _good_rows(30)
    rows[17:17] = [row for row, _ in BAD_ROWS]  # bad rows after a first batch of good ones
    return rows


def test_parquet_token_columns_match_the_plain_arrays(model: Path) -> None:
    renderer = tbatch.Renderer(model=model, masks=True)
    outs = renderer.rows(_rows())
    fast = _io.encode_rows(outs, "parquet", renderer.int_columns)
    plain = _io.encode_rows(outs, "parquet")  # no int columns declared: pa.array on the lists
    assert fast.equals(plain) and fast.schema == plain.schema
    assert fast.column("input_ids").null_count == len(BAD_ROWS)
    # masks as bytes (what a run's workers make): the same rows, the same table
    raw = renderer.rows(_rows(), mask_bytes=True)
    assert [type(row["assistant_masks"]) for row in raw if row["error"] is None] == [bytes] * (len(raw) - len(BAD_ROWS))
    assert [{**row, "assistant_masks": row["assistant_masks"] and list(row["assistant_masks"])} for row in raw] == outs
    assert _io.encode_rows(raw, "parquet", renderer.int_columns).equals(fast)


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_file_outputs_hold_the_renderers_values(tmp_path: Path, model: Path, suffix: str) -> None:
    import pyarrow.parquet as pq

    rows = _rows()
    source = _write_jsonl(tmp_path / "in.jsonl", rows)
    output = tmp_path / f"out{suffix}"
    tbatch.render(source, output, model=model, masks=True, batch_size=8)
    local = tbatch.Renderer(model=model, masks=True).rows(rows)
    if suffix == ".parquet":
        table = pq.read_table(output)
        assert table.schema.field("input_ids").type == pa.list_(pa.int64())
        assert table.schema.field("assistant_masks").type == pa.list_(pa.int64())
        got = table.to_pylist()
        assert [row["input_ids"] for row in got] == [row["input_ids"] for row in local]
        assert [row["assistant_masks"] for row in got] == [row["assistant_masks"] for row in local]
    else:
        lines = output.read_bytes()
        assert lines == "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in local).encode()


def _datasets() -> Any:
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    return datasets


def test_datasets_map_gives_the_plain_columns_and_transformers_tokens(model: Path) -> None:
    """The renderer reads a ``datasets`` batch without marking its columns and returns NumPy token columns: the
    dataset holds what a function returning the renderer's Python lists gives (the path before), with
    ``error`` typed as strings, and transformers' ``input_ids`` and ``assistant_masks``."""
    datasets = _datasets()
    rows = [{"id": i, "messages": _chat(i), "tools": [TOOL] if i % 3 == 0 else None} for i in range(20)]
    dataset = datasets.Dataset.from_list(rows)
    renderer = tbatch.renderer(model=model, masks=True)
    mapped = dataset.map(renderer, batched=True, batch_size=8)

    def plain(batch: dict[str, Any]) -> dict[str, Any]:
        return renderer(dict(batch))  # a plain dict of columns: the renderer's Python lists, every column

    reference = dataset.map(plain, batched=True, batch_size=8)
    assert mapped.column_names == reference.column_names
    features = dict(reference.features)
    features["error"] = datasets.Value("string")  # was null-typed: a later bad row stopped the map
    assert mapped.features == datasets.Features(features)
    assert mapped.features["input_ids"] == datasets.List(datasets.Value("int32"))
    assert mapped.to_list() == reference.to_list()

    from tests.render.test_tokenize import _reference

    template = renderer.chat_template()
    theirs = _reference(template.tokenizer.backend, TEMPLATE)
    for i in (0, 1, 19):
        out = theirs.apply_chat_template(
            _chat(i), tools=rows[i]["tools"], tokenize=True, return_dict=True, return_assistant_tokens_mask=True
        )
        assert mapped[i]["input_ids"] == list(out["input_ids"])
        assert mapped[i]["assistant_masks"] == list(out["assistant_masks"])


def test_datasets_map_records_bad_rows_after_good_batches(model: Path) -> None:
    """A bad row in a later batch is an ``error`` string, not a stopped map (a null-typed first batch did that)."""
    datasets = _datasets()
    rows = [{"messages": json.dumps(_chat(i)), "text": "an answer"} for i in range(10)]
    rows.append({"messages": "not json", "text": None})
    dataset = datasets.Dataset.from_list(rows)
    rendered = dataset.map(tbatch.renderer(model=model), batched=True, batch_size=5, remove_columns=["messages"])
    parsed = dataset.map(tbatch.Parser("hermes", text_column="text"), batched=True, batch_size=5)
    for mapped, problem in ((rendered, "messages: is a string but not valid JSON"), (parsed, "text: expected")):
        assert mapped["error"][:10] == [None] * 10 and problem in mapped["error"][10]
    assert "messages" not in rendered.column_names and rendered["text"] == [row["text"] for row in rows]
    assert parsed["message"][0]["content"] == "an answer"


def test_datasets_map_goes_on_after_a_first_batch_of_only_bad_rows(model: Path) -> None:
    """A first batch with no prompt at all still types ``prompt`` as strings, so later prompts are written."""
    datasets = _datasets()
    rows = [{"messages": [{"role": "robot", "content": "x"}]}] * 4 + [{"messages": _chat(i)} for i in range(4)]
    renderer = tbatch.renderer(model=model)
    mapped = datasets.Dataset.from_list(rows).map(renderer, batched=True, batch_size=4)
    assert mapped.features["prompt"] == datasets.Value("string")
    assert mapped["prompt"] == [None] * 4 + [renderer.row(row)["prompt"] for row in rows[4:]]
    assert all("unknown role 'robot'" in error for error in mapped["error"][:4]) and mapped["error"][4:] == [None] * 4


def test_datasets_map_keeps_input_columns_and_runs_in_processes(model: Path) -> None:
    datasets = _datasets()
    rows = [{"id": i, "messages": _chat(i), "extra": {"n": [i, i + 1]}} for i in range(12)]
    dataset = datasets.Dataset.from_list(rows)
    mapped = dataset.map(tbatch.renderer(model=model, tokenize=True), batched=True, batch_size=4, num_proc=2)
    assert mapped["id"] == list(range(12)) and mapped["extra"] == [row["extra"] for row in rows]
    assert mapped["messages"] == [_chat(i) for i in range(12)]
    renderer = tbatch.Renderer(model=model, tokenize=True)
    assert mapped["input_ids"] == [renderer.row(row)["input_ids"] for row in rows]
    assert "assistant_masks" not in mapped.column_names
