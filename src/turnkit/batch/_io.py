"""Row sources and sinks: JSON lines and parquet, read and written in batches so memory stays flat.

A source is checked when it is opened (exists, readable, a parquet footer that parses), so a bad input fails
before any output is written. Sinks write whole batches: JSON lines as complete lines in one write, parquet as
one row group per batch, closed (footer written) even on Ctrl-C, so an interrupted run leaves complete rows only
and ``resume`` carries on after them. Parquet output also keeps a journal while it is written, from which
``resume`` rebuilds a file that a run killed outright left without its footer (:mod:`~turnkit.batch._journal`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from turnkit._extras import require
from turnkit.batch._arrays import string_array
from turnkit.batch._journal import Journal, batch_messages, ipc_stream, parquet_writer, previous_path, recover
from turnkit.batch._lines import json_lines, json_text
from turnkit.batch._tokens import token_array
from turnkit.errors import BatchInputError

__all__ = [
    "Chunk",
    "Packed",
    "Part",
    "Sent",
    "Sink",
    "Source",
    "conform",
    "decode_chunk",
    "encode_rows",
    "file_kind",
    "open_sink",
    "open_source",
    "write_part",
]

_KINDS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".parquet": "parquet", ".pq": "parquet"}


def file_kind(path: str | os.PathLike[str]) -> str:
    """``"jsonl"`` or ``"parquet"`` from the file name, else :class:`BatchInputError`."""
    suffix = Path(path).suffix.lower()
    if suffix not in _KINDS:
        raise BatchInputError(
            f"{os.fspath(path)!r}: unknown file kind {suffix or '(no extension)'!r}; use .jsonl or .parquet"
        )
    return _KINDS[suffix]


def _pyarrow_parquet() -> Any:
    require("pyarrow", "batch", purpose="reading and writing parquet")
    import pyarrow.parquet as pq

    return pq


class Source:
    """Rows of a JSON-lines or parquet file, in batches; ``total`` is the row count when it is known."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.kind = file_kind(path)
        self.total: int | None = None
        if not os.path.isfile(self.path):
            raise BatchInputError(f"input {self.path!r} does not exist or is not a file")
        if not os.access(self.path, os.R_OK):
            raise BatchInputError(f"input {self.path!r} is not readable")
        self._parquet: Any = None
        if self.kind == "parquet":
            pq = _pyarrow_parquet()
            try:
                self._parquet = pq.ParquetFile(self.path)
            except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError...
                raise BatchInputError(f"input {self.path!r} is not a readable parquet file: {exc}") from exc
            self.total = self._parquet.metadata.num_rows
            self._parquet_module = pq
        else:
            with open(self.path, "rb") as handle:
                head = handle.read(4096)
            try:
                head.decode("utf-8")
            except UnicodeDecodeError as exc:
                if exc.start < len(head) - 4:  # not just a character cut at the end of the sample
                    raise BatchInputError(f"input {self.path!r} is not UTF-8 text (byte {exc.start})") from None

    @property
    def columns(self) -> list[str]:
        """The input's columns when the file declares them (parquet), else ``[]``."""
        return list(self._parquet.schema_arrow.names) if self._parquet is not None else []

    def batches(self, size: int, *, skip: int = 0) -> Iterator[list[dict[str, Any]]]:
        """Batches of at most ``size`` rows, after skipping ``skip`` rows."""
        for chunk in self.chunks(size, skip=skip):
            yield decode_chunk(chunk)

    def chunks(self, size: int, *, skip: int = 0, ranges: bool = False) -> Iterator[Chunk]:
        """Undecoded batches (:data:`Chunk`): JSON lines as text, parquet as Arrow record batches. They are cheap
        to send to a worker process, which decodes them (:func:`decode_chunk`). ``ranges`` gives JSON lines as
        byte ranges of the file instead, which a worker process reads itself (nothing is sent through a pipe)."""
        if self.kind == "parquet":
            yield from self._parquet_chunks(size, skip)
        elif ranges:
            yield from self._jsonl_ranges(size, skip)
        else:
            yield from self._jsonl_chunks(size, skip)

    def _parquet_chunks(self, size: int, skip: int) -> Iterator[Chunk]:
        try:
            # on this thread: Arrow's thread pool, here and in each worker process, only adds futex calls and
            # turns taken from the processes doing the work (one process per core)
            for record_batch in self._parquet.iter_batches(batch_size=size, use_threads=False):
                if skip >= record_batch.num_rows:
                    skip -= record_batch.num_rows
                    continue
                yield ("parquet", record_batch.slice(skip) if skip else record_batch, 0)
                skip = 0
        except Exception as exc:  # noqa: BLE001 - a corrupt page deep in the file
            raise BatchInputError(f"input {self.path!r}: cannot read parquet data: {exc}") from exc

    def _jsonl_chunks(self, size: int, skip: int) -> Iterator[Chunk]:
        with open(self.path, "rb") as handle:
            for (_, start, end), first in self._jsonl_spans(size, skip):
                handle.seek(start)
                yield ("jsonl", _lines(handle.read(end - start)), first)

    def _jsonl_ranges(self, size: int, skip: int) -> Iterator[Chunk]:
        for span, first in self._jsonl_spans(size, skip):
            yield ("jsonl-range", span, first)

    def _jsonl_spans(self, size: int, skip: int) -> Iterator[tuple[tuple[str, int, int], int]]:
        """``((path, start byte, end byte), number of the first row)`` of each batch of ``size`` rows after
        ``skip``. Rows are the lines that are not blank (``\\n`` ends a line); blank lines are not counted."""
        number = 0
        count = 0
        start = offset = 0
        with open(self.path, "rb") as handle:
            for line in handle:
                at = offset
                offset += len(line)
                if not line.strip():
                    continue
                number += 1
                if number <= skip:
                    continue
                if not count:
                    start = at
                count += 1
                if count >= size:
                    yield (self.path, start, offset), number - count + 1
                    count = 0
        if count:
            yield (self.path, start, offset), number - count + 1

    def tail(self, skip: int, path: str) -> None:
        """Write the rows after the first ``skip`` to ``path`` (same kind): a resumed Ray run reads only those."""
        if self.kind == "parquet":
            writer = None
            try:
                for _, record_batch, _ in self._parquet_chunks(65536, skip):
                    if writer is None:
                        writer = self._parquet_module.ParquetWriter(path, record_batch.schema)
                    writer.write_batch(record_batch)
            finally:
                if writer is not None:
                    writer.close()
            if writer is None:
                self._parquet_module.write_table(self._parquet.schema_arrow.empty_table(), path)
            return
        with open(path, "wb") as out, open(self.path, "rb") as handle:
            for (_, start, end), _ in self._jsonl_spans(4096, skip):
                handle.seek(start)
                out.write(handle.read(end - start))


Chunk = tuple[str, Any, int]
"""``("jsonl", lines, number of the first line)``, ``("jsonl-range", (path, start byte, end byte), number of the
first line)`` or ``("parquet", record batch, 0)``."""


def decode_chunk(chunk: Chunk) -> list[dict[str, Any]]:
    """The rows of a chunk (a line that is not a JSON object becomes a row with ``_invalid``)."""
    kind, data, first = chunk
    if kind == "parquet":
        rows: list[dict[str, Any]] = data.to_pylist()
        return rows
    if kind == "jsonl-range":
        path, start, end = data
        with open(path, "rb") as handle:
            handle.seek(start)
            data = _lines(handle.read(end - start))
    return [_json_row(line, first + index) for index, line in enumerate(data)]


def _lines(data: bytes) -> list[str]:
    """The rows of a piece of a JSON-lines file: its lines that are not blank, as text."""
    return [line.decode("utf-8", errors="replace") for line in data.split(b"\n") if line.strip()]


class Part:
    """Encoded output a worker process wrote to a file of its own (``path``) for the sink to copy in order."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path


class Packed:
    """An Arrow table (parquet output) as a worker process hands it back: an Arrow IPC stream with LZ4-compressed
    buffers. Pickled as it is, a batch's table went through the pipe at ~24 KB a row (small-tokenizer chat rows,
    token ids as int64) and cost the worker ~36 CPU-us a row to pickle; packed, ~0.4 KB and ~4 us
    (``bench/batch_parquet.py``)."""

    __slots__ = ("data",)

    def __init__(self, table: Any, schema: Any = None) -> None:
        if schema is not None and set(table.column_names) <= set(schema.names):
            table = conform(table, schema)  # the output's: the main process then journals the stream as it is
        self.data = ipc_stream(table)

    def table(self) -> Any:
        """The table, as it was packed."""
        return _read_stream(self.data)


class Sent:
    """A parquet record batch on its way to a worker process, as an Arrow IPC stream (not compressed: text, and a
    pipe costs less than LZ4), decoded by :func:`decode_chunk` as the batch is. Pickled as it is, a batch of 256
    chat rows cost the pool's task thread ~314 CPU-us and the worker ~37 to read back; as a stream ~22 and ~7."""

    __slots__ = ("data",)

    def __init__(self, batch: Any) -> None:
        self.data = ipc_stream(batch, compress=False)

    def to_pylist(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = _read_stream(self.data).to_pylist()
        return rows


def _read_stream(data: bytes) -> Any:
    """The table of an Arrow IPC stream, read on this thread: not Arrow's thread pool, which only adds futex calls
    to a process that has a core to itself."""
    import pyarrow.ipc as ipc

    return ipc.open_stream(data, options=ipc.IpcReadOptions(use_threads=False)).read_all()


def write_part(payload: bytes, path: str) -> Part:
    """Write a batch of JSON lines (:func:`encode_rows`) to a part file."""
    with open(path, "wb") as handle:
        handle.write(payload)
    return Part(path)


def encode_rows(rows: list[dict[str, Any]], kind: str, ints: Sequence[str] = ()) -> Any:
    """Output rows ready for a sink of ``kind``: JSON lines (UTF-8), or an Arrow table (string columns, non-string
    values as JSON text; ``input_ids``/``assistant_masks`` as ``list<int64>``). Workers call this, so the main
    process only writes. ``ints`` names columns whose lists are known to hold only non-negative ``int``\\ s
    (the token columns a worker made): see :func:`~turnkit.batch._lines.json_lines` and
    :func:`~turnkit.batch._tokens.token_array`."""
    if kind == "jsonl":
        return json_lines(rows, ints)
    import pyarrow as pa

    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    arrays = []
    for name in names:
        if name in _TOKEN_COLUMNS:
            values = [row.get(name) for row in rows]
            if name in ints:
                arrays.append(token_array(values, bits=name == "assistant_masks"))
            else:
                arrays.append(pa.array(values, type=_TOKEN_TYPE()))
        else:
            arrays.append(string_array([_parquet_value(name, row.get(name)) for row in rows]))
    return pa.Table.from_arrays(arrays, names=list(names))


def conform(table: Any, schema: Any) -> Any:
    """``table`` with the columns of ``schema`` (in its order, missing ones null, values cast to its types: only
    those of another type, as casting imports ``pyarrow.compute``)."""
    import pyarrow as pa

    columns = [
        _cast(table.column(field.name), field.type)
        if field.name in table.column_names
        else pa.nulls(len(table), type=field.type)
        for field in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def _cast(column: Any, type: Any) -> Any:  # noqa: A002 - pyarrow's name
    return column if column.type == type else column.cast(type)


def _TOKEN_TYPE() -> Any:  # noqa: N802 - a type constructor
    import pyarrow as pa

    return pa.list_(pa.int64())


def _json_row(line: str, number: int) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return _invalid(number, f"invalid JSON ({exc.msg} at column {exc.colno})")
    except ValueError as exc:  # an integer of more than 4300 digits (Python's limit)
        return _invalid(number, f"invalid JSON ({exc})")
    except RecursionError:
        return _invalid(number, "JSON nested too deeply")
    if not isinstance(value, dict):
        return _invalid(number, f"expected a JSON object, got {type(value).__name__}")
    if _SURROGATE_ESCAPE(line) and (lone := _lone_surrogate(value)):
        return _invalid(number, f"a string holds the lone surrogate {lone} (a \\u escape that is half a pair)")
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]").search
"""A ``\\u`` escape of a surrogate (or text that looks like one): only then are a row's strings checked."""


def _invalid(number: int, problem: str) -> dict[str, Any]:
    """The row of a line that is not a usable JSON object: a bad row (its ``error`` says why), not a crash."""
    return {"_line": number, "_invalid": f"line {number}: {problem}"}


def _lone_surrogate(value: Any) -> str | None:
    """``\\udXXX`` of the first lone surrogate in ``value``'s strings (json reads one from a ``\\u`` escape of
    half a pair, and it is not text: it cannot be tokenized or written as UTF-8), else ``None``."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"\\u{ord(exc.object[exc.start]):04x}"
    except RecursionError:  # nested deeper than the encoder goes: writing the row says so
        return None
    return None


def complete_rows(path: str | os.PathLike[str], compression: str = "lz4") -> int:
    """Rows already written to an output (for resume): whole lines only, a cut last line removed; parquet output
    that a killed run left without its footer is first rebuilt from its journal (:mod:`~turnkit.batch._journal`),
    written with ``compression``."""
    path = os.fspath(path)
    parquet = file_kind(path) == "parquet"
    if parquet:
        pq = _pyarrow_parquet()
        try:
            recover(path, pq, compression)
        except Exception as exc:  # noqa: BLE001 - an unreadable copy of the finished rows, a full disk...
            raise BatchInputError(f"cannot resume: recovering the output {path!r} failed ({exc})") from exc
    if not os.path.exists(path):
        return 0
    if parquet:
        try:
            return int(pq.ParquetFile(path).metadata.num_rows)
        except Exception as exc:  # noqa: BLE001
            raise BatchInputError(
                f"cannot resume: the output {path!r} is not a complete parquet file ({exc}); remove it to start over"
            ) from exc
    count = 0
    good = 0
    with open(path, "rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break
            count += 1
            good += len(line)
    if good != os.path.getsize(path):
        with open(path, "r+b") as handle:
            handle.truncate(good)
    return count


class Sink:
    """Writes output rows batch by batch (see the module docstring for what an interruption leaves).

    Parquet output has one schema for the whole file: the columns of the first batch, plus ``declared`` columns
    (the renderer's input and output columns) when given, or the columns of the file being resumed. A column that
    first appears in a later row is not dropped silently: that row's ``error`` says so (the other values are
    written). JSON-lines output keeps every row's own columns. Parquet pages are compressed with ``compression``
    (see :func:`~turnkit.batch._journal.parquet_writer`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        append: bool = False,
        declared: list[str] | None = None,
        compression: str = "lz4",
    ) -> None:
        self.path = os.fspath(path)
        self.compression = compression
        self.kind = file_kind(path)
        self.rows = 0
        self.declared = list(declared or [])
        self._writer: Any = None
        self._journal: Journal | None = None
        self._schema: Any = None
        self._previous: str | None = None
        if self.kind == "parquet":
            self._pq = _pyarrow_parquet()
            if append and os.path.exists(self.path):
                # parquet cannot be appended to: carry the finished rows over into the new file
                self._previous = previous_path(self.path)
                os.replace(self.path, self._previous)
            elif not append and os.path.exists(previous_path(self.path)):
                os.remove(previous_path(self.path))  # a killed run's finished rows: this run starts over
            self._handle: Any = None
        else:
            self._handle = open(self.path, "ab" if append else "wb", buffering=0)  # noqa: SIM115

    def write(self, rows: list[dict[str, Any]]) -> dict[int, str]:
        """Write a batch of rows as one atomic unit (whole lines, or one row group)."""
        if not rows:
            return {}
        return self.write_encoded(encode_rows(rows, self.kind), len(rows))

    def write_encoded(self, payload: Any, count: int) -> dict[int, str]:
        """Write a batch :func:`encode_rows` made; returns the rows whose ``error`` the sink set (by index in the
        batch): rows with a value in a column the parquet file does not have."""
        if not count:
            return {}
        errors: dict[int, str] = {}
        if self.kind == "jsonl":
            self._write_lines(payload)
        else:
            errors = (
                self._write_table(payload.table(), payload)
                if isinstance(payload, Packed)
                else self._write_table(payload)
            )
        self.rows += count
        return errors

    def _write_lines(self, payload: bytes | Part) -> None:
        """Append whole lines; interrupted half-way (Ctrl-C), the file is cut back to its last complete batch."""
        raw = self._handle  # unbuffered: nothing is left in a buffer to be written after an interruption
        before = raw.seek(0, os.SEEK_END)
        try:
            if isinstance(payload, Part):
                with open(payload.path, "rb") as part:
                    while block := part.read(1 << 20):
                        _write_all(raw, block)
                os.remove(payload.path)
            else:
                _write_all(raw, payload)
        except BaseException:
            raw.truncate(before)  # then re-raise: the batch was not written
            raw.seek(before)
            raise

    def _write_table(self, table: Any, packed: Packed | None = None) -> dict[int, str]:
        """Write a table, conformed to the file's schema. ``packed``, the table as a worker sent it, goes to the
        journal as it is when its schema is the file's: then it needs no conforming."""
        import pyarrow as pa

        if self._writer is None:
            previous = self._pq.ParquetFile(self._previous) if self._previous is not None else None
            if previous is not None:
                self._schema = previous.schema_arrow
            else:
                names = dict.fromkeys([*table.column_names, *self.declared])
                self._schema = pa.schema(
                    [pa.field(name, _TOKEN_TYPE() if name in _TOKEN_COLUMNS else pa.string()) for name in names]
                )
            self._journal = Journal(self.path, self._schema)  # before the output: a footer-less one has a journal
            self._writer = parquet_writer(self.path, self._schema, self._pq, self.compression)
            for batch in previous.iter_batches() if previous is not None else ():
                self._write_batch(batch)
        assert self._journal is not None
        messages = batch_messages(packed.data, self._journal.schema) if packed is not None else None
        if messages is not None:
            self._journal.write_messages(messages)
            self._writer.write(table)
            return {}
        errors: dict[int, str] = {}
        known = set(self._schema.names)
        extra = [name for name in table.column_names if name not in known and name not in _INTERNAL_COLUMNS]
        if extra:
            values = {name: table.column(name).to_pylist() for name in extra}
            current = table.column("error").to_pylist() if "error" in table.column_names else [None] * len(table)
            for index in range(len(table)):
                lost = [name for name in extra if values[name][index] is not None]
                if lost:
                    message = (
                        f"batch_schema: column{'s' if len(lost) > 1 else ''} {', '.join(map(repr, lost))} first "
                        "appear after the first batch and are not in the parquet output (its columns are the first "
                        "batch's); write .jsonl output, or give the first rows these columns"
                    )
                    errors[index] = message if current[index] is None else f"{current[index]}; {message}"
            if errors and "error" in known:
                current = [errors.get(index, value) for index, value in enumerate(current)]
                table = table.drop_columns([c for c in ["error"] if c in table.column_names]).append_column(
                    "error", string_array(current)
                )
        self._write_batch(conform(table, self._schema))
        return errors

    @property
    def schema(self) -> Any:
        """The Arrow schema of a parquet output, once its first batch came (else ``None``)."""
        return self._schema

    def _write_batch(self, data: Any) -> None:
        """A table or record batch into the journal, then into the parquet file."""
        assert self._journal is not None
        self._journal.write(data)
        self._writer.write(data)

    def close(self) -> None:
        """Finish the file (the parquet footer); safe to call twice."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._journal is not None:  # after the footer: until then, the journal is what a kill leaves readable
            self._journal.discard()
            self._journal = None
        if self._previous is not None and os.path.exists(self._previous):
            if not os.path.exists(self.path):  # nothing new was written: keep the old rows
                os.replace(self._previous, self.path)
            else:
                os.remove(self._previous)
            self._previous = None

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _write_all(raw: Any, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[raw.write(view) :]


_INTERNAL_COLUMNS = ("_line", "_invalid")  # a bad JSON line's markers: its error already says what they say
_TOKEN_COLUMNS = ("input_ids", "assistant_masks")


def _parquet_value(name: str, value: Any) -> Any:
    """Parquet output columns are strings (other values as JSON text) except the token columns, which are lists
    of int64: rows of any shape fit one schema, and nothing is lost."""
    if value is None or isinstance(value, str) or name in _TOKEN_COLUMNS:
        return value
    return json_text(value)


def open_source(path: str | os.PathLike[str]) -> Source:
    """Open and check an input file (raises :class:`BatchInputError` before anything is written)."""
    return Source(path)


def open_sink(
    path: str | os.PathLike[str],
    *,
    append: bool = False,
    declared: list[str] | None = None,
    compression: str = "lz4",
) -> Sink:
    """Open an output file (``append`` for resume; ``declared`` columns and ``compression`` for parquet, see
    :class:`Sink`)."""
    return Sink(path, append=append, declared=declared, compression=compression)
