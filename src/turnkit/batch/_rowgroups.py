"""A parquet file joined from row groups encoded elsewhere: worker processes encode their batches, the main process
only appends the bytes and writes the footer.

Encoding a batch's row group (the token columns' levels and values, LZ4) was ~80 % of the main process's work in a
2-worker run with parquet output; any process can do it. A worker writes its batch as a small parquet file with
the output's schema and the sink's writer options (:func:`encode`); :class:`JoinedFile` appends the file's column
chunks to the output and keeps its row groups' metadata, moved to where the chunks now lie; :meth:`JoinedFile.close`
writes the footer: the first part's file metadata with every row group and the total row count. The result is the
file one ``ParquetWriter`` writes from the same batches, byte for byte (``tests/batch/test_rowgroups.py``).

The footer is Thrift's compact protocol (``parquet.thrift``): read here into plain lists and written back in the
same field order and encodings, only the offsets of each row group, its column chunks and their pages changed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["JoinedFile", "encode"]

_MAGIC = b"PAR1"

_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)
"""Thrift compact protocol's type codes."""

Struct = list[list[Any]]
"""A Thrift struct as read: ``[field id, type code, value]`` for each field, in order."""


def encode(table: Any, schema: Any, compression: str) -> bytes:
    """``table`` (with ``schema``) as a parquet file written as the sink writes (:func:`~turnkit.batch._journal.
    parquet_writer`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from turnkit.batch._journal import parquet_writer

    out = pa.BufferOutputStream()
    with parquet_writer(out, schema, pq, compression) as writer:
        writer.write(table)
    return bytes(out.getvalue().to_pybytes())


class JoinedFile:
    """A parquet file written as whole parts (:func:`encode`'s files), each appended or not at all."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "wb", buffering=0)  # noqa: SIM115 - closed by close()
        self._end = _write(self._file, _MAGIC)
        self._head: Struct | None = None  # the first part's file metadata
        self._groups: list[bytes] = []  # each row group's metadata, encoded, offsets moved
        self._rows = 0

    def write(self, data: Any, schema: Any, compression: str) -> None:
        """Encode a table or record batch here and append it."""
        self.append(encode(data, schema, compression))

    def append(self, part: bytes) -> None:
        """Append an encoded part's row groups. Interrupted (Ctrl-C), the file is cut back to before them."""
        size = int.from_bytes(part[-8:-4], "little")
        meta = _Reader(part, len(part) - 8 - size).struct()
        body = memoryview(part)[len(_MAGIC) : len(part) - 8 - size]
        shift = self._end - len(_MAGIC)
        groups = []
        rows = 0
        for index, group in enumerate(_field(meta, 4)[1]):
            _move_group(group, shift, len(self._groups) + index)
            rows += _field(group, 3)
            groups.append(_encode_struct(group))
        try:
            self._end += _write(self._file, body)
        except BaseException:
            self._file.truncate(self._end)
            self._file.seek(self._end)
            raise
        if self._head is None:
            self._head = meta
        self._groups += groups
        self._rows += rows

    def close(self) -> None:
        """Write the footer (safe to call twice)."""
        if self._file.closed:
            return
        try:
            if self._head is not None:
                footer = _footer(self._head, self._rows, self._groups)
                self._file.seek(self._end)
                _write(self._file, footer + len(footer).to_bytes(4, "little") + _MAGIC)
        finally:
            self._file.close()

    def __enter__(self) -> JoinedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _write(file: Any, data: bytes | memoryview) -> int:
    view = memoryview(data)
    while view:
        view = view[file.write(view) :]
    return len(data)


def _field(fields: Struct, number: int) -> Any:
    for field in fields:
        if field[0] == number:
            return field[2]
    raise ValueError(f"parquet metadata without field {number}")


def _shift(fields: Struct, numbers: tuple[int, ...], by: int) -> None:
    for field in fields:
        if field[0] in numbers and field[2]:  # 0 is no offset (the file starts with its magic): pyarrow writes a
            field[2] += by  # ColumnChunk's deprecated file_offset as 0


def _move_group(group: Struct, by: int, ordinal: int) -> None:
    """Move a RowGroup's offsets by ``by`` bytes and number it ``ordinal``: its own ``file_offset`` (5), each
    ColumnChunk's ``file_offset`` (2) and page index offsets (4, 6), and in their ColumnMetaData (3) the data,
    index and dictionary pages' (9, 10, 11) and the bloom filter's (14)."""
    _shift(group, (5,), by)
    for field in group:
        if field[0] == 7:
            field[2] = ordinal
    for chunk in _field(group, 1)[1]:
        _shift(chunk, (2, 4, 6), by)
        for field in chunk:
            if field[0] == 3:
                _shift(field[2], (9, 10, 11, 14), by)


def _footer(head: Struct, rows: int, groups: list[bytes]) -> bytes:
    """FileMetaData: ``head``'s fields, with ``rows`` as ``num_rows`` (3) and ``groups`` as ``row_groups`` (4)."""
    out = bytearray()
    last = 0
    for number, kind, value in head:
        _field_header(out, number, kind, last)
        last = number
        if number == 3:
            _varint(out, _zigzag(rows))
        elif number == 4:
            _list_header(out, len(groups), _STRUCT)
            out += b"".join(groups)
        else:
            _value(out, kind, value)
    out.append(0)
    return bytes(out)


class _Reader:
    """Thrift compact protocol values from ``data`` at ``at``."""

    def __init__(self, data: bytes, at: int) -> None:
        self.data = data
        self.at = at

    def byte(self) -> int:
        self.at += 1
        return self.data[self.at - 1]

    def varint(self) -> int:
        value = shift = 0
        while True:
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def integer(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def struct(self) -> Struct:
        fields: Struct = []
        last = 0
        while True:
            byte = self.byte()
            if byte == 0:
                return fields
            kind, delta = byte & 0x0F, byte >> 4
            number = last + delta if delta else self.integer()
            value = kind == _TRUE if kind in (_TRUE, _FALSE) else self.value(kind)
            fields.append([number, kind, value])
            last = number

    def value(self, kind: int) -> Any:
        if kind in (_I16, _I32, _I64):
            return self.integer()
        if kind == _BINARY:
            size = self.varint()
            self.at += size
            return self.data[self.at - size : self.at]
        if kind == _STRUCT:
            return self.struct()
        if kind in (_LIST, _SET):
            byte = self.byte()
            size, element = byte >> 4, byte & 0x0F
            if size == 15:
                size = self.varint()
            return (element, [self.value(element) for _ in range(size)])
        if kind == _MAP:
            size = self.varint()
            types = self.byte() if size else 0
            return (types, [(self.value(types >> 4), self.value(types & 0x0F)) for _ in range(size)])
        if kind in (_BYTE, _TRUE, _FALSE):  # a bool in a list is a byte of its own
            return self.byte()
        if kind == _DOUBLE:
            self.at += 8
            return self.data[self.at - 8 : self.at]
        raise ValueError(f"unknown Thrift type {kind} in parquet metadata")


def _zigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)


def _varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)


def _field_header(out: bytearray, number: int, kind: int, last: int) -> None:
    if 0 < number - last <= 15:
        out.append((number - last) << 4 | kind)
    else:
        out.append(kind)
        _varint(out, _zigzag(number))


def _list_header(out: bytearray, size: int, element: int) -> None:
    if size < 15:
        out.append(size << 4 | element)
    else:
        out.append(0xF0 | element)
        _varint(out, size)


def _encode_struct(fields: Struct) -> bytes:
    out = bytearray()
    _struct(out, fields)
    return bytes(out)


def _struct(out: bytearray, fields: Struct) -> None:
    last = 0
    for number, kind, value in fields:
        if kind in (_TRUE, _FALSE):
            _field_header(out, number, _TRUE if value else _FALSE, last)
        else:
            _field_header(out, number, kind, last)
            _value(out, kind, value)
        last = number
    out.append(0)


def _value(out: bytearray, kind: int, value: Any) -> None:
    if kind in (_I16, _I32, _I64):
        _varint(out, _zigzag(value))
    elif kind == _BINARY:
        _varint(out, len(value))
        out += value
    elif kind == _STRUCT:
        _struct(out, value)
    elif kind in (_LIST, _SET):
        element, values = value
        _list_header(out, len(values), element)
        for item in values:
            _value(out, element, item)
    elif kind == _MAP:
        types, pairs = value
        _varint(out, len(pairs))
        if pairs:
            out.append(types)
        for key, item in pairs:
            _value(out, types >> 4, key)
            _value(out, types & 0x0F, item)
    elif kind in (_BYTE, _TRUE, _FALSE):
        out.append(value)
    elif kind == _DOUBLE:
        out += value
    else:
        raise ValueError(f"unknown Thrift type {kind} in parquet metadata")
