"""Parquet output joined from row groups encoded apart (in worker processes) is the file one ``ParquetWriter``
writes from the same batches, byte for byte; an append interrupted half-way leaves only whole row groups."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from turnkit.batch import _rowgroups
from turnkit.batch._journal import PARQUET_COMPRESSIONS, parquet_writer
from turnkit.batch._rowgroups import JoinedFile, encode

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _tables() -> list[Any]:
    """Batches of the output's shape: strings (with nulls, non-ASCII, repeats for the dictionary), token lists."""
    tables = []
    for number in range(5):
        rows = 1 + number * 7
        ids = [list(range(i, i + 3 + (i * 5) % 40)) if i % 4 else None for i in range(rows)]
        tables.append(
            pa.table(
                {
                    "messages": [json.dumps([{"content": f"é {i % 3}"}]) for i in range(rows)],
                    "prompt": [f"<s>東京 {i} " * (1 + i % 9) for i in range(rows)],
                    "input_ids": pa.array(ids, type=pa.list_(pa.int64())),
                    "assistant_masks": pa.array([v and [x % 2 for x in v] for v in ids], type=pa.list_(pa.int64())),
                    "error": [None if i % 4 else "batch_row: bad" for i in range(rows)],
                }
            )
        )
    return tables


def _one_writer(path: Path, tables: list[Any], compression: str) -> bytes:
    with parquet_writer(str(path), tables[0].schema, pq, compression) as writer:
        for table in tables:
            writer.write(table)
    return path.read_bytes()


@pytest.mark.parametrize("compression", PARQUET_COMPRESSIONS)
def test_joined_parts_are_one_writer_s_file_byte_for_byte(tmp_path: Path, compression: str) -> None:
    tables = _tables()
    expected = _one_writer(tmp_path / "one.parquet", tables, compression)
    with JoinedFile(str(tmp_path / "joined.parquet")) as joined:
        for table in tables:
            joined.append(encode(table, table.schema, compression))
    assert (tmp_path / "joined.parquet").read_bytes() == expected
    back = pq.read_table(tmp_path / "joined.parquet")
    assert back.equals(pa.concat_tables(tables)) and back.schema == tables[0].schema
    assert [group["num_rows"] for group in _groups(tmp_path / "joined.parquet")] == [len(t) for t in tables]


def _groups(path: Path) -> list[dict[str, Any]]:
    metadata = pq.ParquetFile(path).metadata
    return [metadata.row_group(index).to_dict() for index in range(metadata.num_row_groups)]


def test_a_part_of_several_row_groups_keeps_them_all(tmp_path: Path) -> None:
    table = pa.concat_tables(_tables())
    part = pa.BufferOutputStream()
    pq.write_table(table, part, row_group_size=9)
    with JoinedFile(str(tmp_path / "joined.parquet")) as joined:
        joined.append(bytes(part.getvalue().to_pybytes()))
        joined.append(bytes(part.getvalue().to_pybytes()))
    expected = tmp_path / "one.parquet"
    with pq.ParquetWriter(expected, table.schema) as writer:
        writer.write_table(table, row_group_size=9)
        writer.write_table(table, row_group_size=9)
    assert (tmp_path / "joined.parquet").read_bytes() == expected.read_bytes()


def test_the_footer_is_read_and_written_back_unchanged(tmp_path: Path) -> None:
    for compression in PARQUET_COMPRESSIONS:
        data = encode(pa.concat_tables(_tables()), _tables()[0].schema, compression)
        size = int.from_bytes(data[-8:-4], "little")
        footer = data[len(data) - 8 - size : len(data) - 8]
        fields = _rowgroups._Reader(data, len(data) - 8 - size).struct()
        assert _rowgroups._encode_struct(fields) == footer


class _Interrupted(KeyboardInterrupt):
    pass


def test_an_append_interrupted_half_way_is_cut_back_and_the_footer_holds_whole_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tables = _tables()
    path = tmp_path / "out.parquet"
    joined = JoinedFile(str(path))
    joined.append(encode(tables[0], tables[0].schema, "lz4"))
    real = _rowgroups._write
    calls = []

    def torn(file: Any, data: Any) -> int:
        calls.append(len(data))
        file.write(bytes(data)[: len(data) // 2])  # half the row group's bytes, then Ctrl-C
        raise _Interrupted

    monkeypatch.setattr(_rowgroups, "_write", torn)
    with pytest.raises(_Interrupted):
        joined.append(encode(tables[1], tables[1].schema, "lz4"))
    monkeypatch.setattr(_rowgroups, "_write", real)
    joined.close()
    joined.close()  # twice: nothing more
    assert calls and pq.read_table(path).equals(tables[0])
    assert path.read_bytes() == _one_writer(tmp_path / "one.parquet", tables[:1], "lz4")
