"""The JSON-lines writer gives exactly ``json.dumps(row, ensure_ascii=False)``'s characters, on hostile rows; the
reader turns lines it cannot use into bad rows, never a crash."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from turnkit import batch as tbatch
from turnkit.batch import _io
from turnkit.batch._lines import json_lines

INTS = ("input_ids", "assistant_masks")

# every code point: controls, quotes, backslashes, U+2028, astral characters, lone surrogates (the reader refuses
# them in input, but a template's own literal can write one: the line has its \u escape)
TEXT = st.text(st.characters(), max_size=12)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),  # NaN and Infinity: written as json writes them
    TEXT,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)
TOKEN_IDS = st.one_of(
    st.lists(st.integers(0, 300_000), max_size=90),
    # starting with token 0 or 1 (a BOS at id 1 is common), then ids past 255: not a mask
    st.tuples(st.sampled_from([0, 1]), st.lists(st.integers(0, 100_000), min_size=1, max_size=90)).map(
        lambda pair: [pair[0], *pair[1]]
    ),
    st.lists(st.integers(0, 2), max_size=90),  # mask-like until a 2
)
MASKS = st.lists(st.lists(st.integers(0, 1), min_size=1, max_size=30).map(lambda run: run * 3), max_size=8).map(
    lambda runs: [bit for run in runs for bit in run]
)
NOT_LISTS = VALUES.filter(lambda value: type(value) is not list)
KEYS = st.one_of(TEXT, st.sampled_from(INTS), st.integers(-5, 5), st.sampled_from([None, True, 1.5]))


@st.composite
def rows(draw: st.DrawFn) -> dict[Any, Any]:
    """A row of any shape: the token columns anywhere (or absent, or holding a value that is not a list: their
    lists are the worker's own, of non-negative ints), other columns of any JSON-like value, keys that json
    writes as text (numbers, ``null``, ``true``)."""
    row: dict[Any, Any] = {}
    for key in draw(st.lists(KEYS, max_size=7)):
        if key == "input_ids":
            row[key] = draw(st.one_of(TOKEN_IDS, NOT_LISTS))
        elif key == "assistant_masks":
            row[key] = draw(st.one_of(MASKS, NOT_LISTS))
        else:
            row[key] = draw(VALUES)
    return row


def _reference(batch: list[dict[Any, Any]]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in batch).encode("utf-8", "backslashreplace")


@settings(max_examples=400, deadline=None)
@given(batch=st.lists(rows(), max_size=5))
def test_json_lines_are_json_dumps_characters_on_rows_of_any_shape(batch: list[dict[Any, Any]]) -> None:
    assert json_lines(batch, INTS) == _reference(batch)
    assert json_lines(batch) == _reference(batch)
    assert _io.encode_rows(batch, "jsonl", list(INTS)) == _reference(batch)


@pytest.mark.parametrize(
    "row",
    [
        {},
        {"input_ids": []},
        {"input_ids": [7]},
        {"assistant_masks": [1]},
        {"input_ids": [1, 300, 2, 70000] * 40},  # ids that start with 1 and pass 255 (once a ValueError)
        {"input_ids": [0] + list(range(70)), "assistant_masks": [0] * 70 + [1] * 5 + [0]},
        {"assistant_masks": [1] * 500 + [0] * 3 + [1]},
        {"input_ids": None, "prompt": 'a"\\\n\x00\x1f\u2028\U0001f600é', "assistant_masks": "not a list"},
        {"prompt": "x\ud800y 東京 \U0001f600", "input_ids": [1, 300, 2], "assistant_masks": [0, 1, 1]},
        {"a": 1, "input_ids": [5, 6], "b": [1, 2], "assistant_masks": [0, 1], "c": {"input_ids": [3]}},
        {"x": math.nan, "y": -math.inf, 1: "one", None: "null key", "input_ids": [2, 2]},
    ],
)
def test_json_lines_edge_rows(row: dict[Any, Any]) -> None:
    assert json_lines([row], INTS) == _reference([row])


def _as_bytes(row: dict[Any, Any]) -> dict[Any, Any]:
    masks = row.get("assistant_masks")
    return {**row, "assistant_masks": bytes(masks)} if type(masks) is list else row


@settings(max_examples=200, deadline=None)
@given(batch=st.lists(rows(), max_size=5))
@example(batch=[{"assistant_masks": []}, {"assistant_masks": [1]}, {"input_ids": [3, 4], "assistant_masks": [0, 1]}])
def test_masks_given_as_bytes_are_written_as_their_lists(batch: list[dict[Any, Any]]) -> None:
    """A worker hands masks over as ``bytes`` (``Renderer.rows(mask_bytes=True)``): the same line as the list."""
    assert json_lines([_as_bytes(row) for row in batch], INTS) == _reference(batch)


def test_a_row_json_cannot_write_fails_as_json_does() -> None:
    with pytest.raises(TypeError):
        json_lines([{"input_ids": [1, 2], "bad": object()}], INTS)
    with pytest.raises(TypeError):
        json.dumps({"bad": object()})


# pieces of JSON string text: escaped backslashes, halves of surrogate pairs, whole pairs, other escapes, raw text
ESCAPES = st.lists(
    st.sampled_from(
        ["\\\\", "\\ud83d", "\\ude00", "\\uDBFF", "\\udc00", "\\ud83d\\ude00", '\\"', "ud800", "\\u00e9", "é"]
    ),
    max_size=12,
)


@settings(max_examples=400, deadline=None)
@given(pieces=ESCAPES)
@example(pieces=["\\\\", "ud800", "\\ude00"])  # a literal backslash and "ud800", then a lone low half
@example(pieces=["\\ud800", "\\\\", "\\udc00"])  # two lone halves an escaped backslash apart
@example(pieces=["\\\\", "\\ud83d\\ude00"])  # an escaped backslash, then a pair
def test_lone_surrogate_escapes_are_found_as_json_reads_them(pieces: list[str]) -> None:
    """Only lines whose strings hold a lone surrogate are bad rows; a pair's escapes (an emoji as json.dumps writes
    it), escaped backslashes before ``u`` and escapes after them are not mistaken for one, nor the other way."""
    line = '{"messages": "' + "".join(pieces) + '"}'
    lone = _io._lone_surrogate(json.loads(line))
    row = _io._json_row(line, 1)
    assert ("lone surrogate" in row.get("_invalid", "")) == (lone is not None)


def _write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_lines_the_reader_cannot_use_are_bad_rows_and_the_run_goes_on(tmp_path: Path) -> None:
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}", encoding="utf-8")
    good = '{"messages": [{"role": "user", "content": "fine \\ud83d\\ude00"}]}'  # an escaped pair: one character
    lines = [
        good,
        '{"messages": [{"role": "user", "content": "a\\ud800b"}]}',  # half a pair
        '{"messages": [{"role": "user", "content": "z\\uDFFF"}]}',
        "[" * 100_000,  # deeper than the parser goes
        '{"n": ' + "9" * 5000 + "}",  # more digits than Python converts
        good,
    ]
    source = tmp_path / "in.jsonl"
    _write_lines(source, lines)
    for suffix in (".jsonl", ".parquet"):
        output = tmp_path / f"out{suffix}"
        summary = tbatch.render(source, output, template=template)
        assert (summary.rows, summary.errors) == (6, 4), summary
        if suffix == ".jsonl":
            out = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
        else:
            import pyarrow.parquet as pq

            out = pq.read_table(output).to_pylist()
        assert [row["prompt"] for row in out] == ["user: fine \U0001f600\n", None, None, None, None, out[0]["prompt"]]
        errors = [row["error"] for row in out]
        assert errors[0] is None and errors[5] is None
        assert "line 2: a string holds the lone surrogate \\ud800" in errors[1]
        assert "line 3: a string holds the lone surrogate \\udfff" in errors[2]
        assert "line 4: JSON nested too deeply" in errors[3]
        assert "line 5: invalid JSON" in errors[4] and "digits" in errors[4]


def test_a_lone_surrogate_a_template_writes_is_kept_as_its_json_escape(tmp_path: Path) -> None:
    """Only a template's own string literal can put one in a prompt: the line stays valid UTF-8 JSON and reads
    back as the same string."""
    template = tmp_path / "t.jinja"
    template.write_text('{{ "x\\ud800y" }}{{ messages[0].content }}', encoding="utf-8")
    source = tmp_path / "in.jsonl"
    _write_lines(source, ['{"messages": [{"role": "user", "content": "hi"}]}'])
    output = tmp_path / "out.jsonl"
    assert tbatch.render(source, output, template=template).errors == 0
    raw = output.read_bytes()
    raw.decode("utf-8")  # valid UTF-8
    assert json.loads(raw)["prompt"] == "x\ud800yhi"
