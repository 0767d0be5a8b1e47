"""Row sources and sinks: JSON lines and parquet, read and written in batches so memory stays flat.

A source is checked when it is opened (exists, readable, a parquet footer that parses), so a bad input fails
before any output is written. Sinks write whole batches: JSON lines as complete lines in one write, parquet as
one row group per batch, closed (footer written) even on Ctrl-C, so an interrupted run leaves complete rows only
and ``resume`` carries on after them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from turnkit._extras import require
from turnkit.errors import BatchInputError

__all__ = ["Sink", "Source", "file_kind", "open_sink", "open_source"]

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
        else:
            with open(self.path, "rb") as handle:
                head = handle.read(4096)
            try:
                head.decode("utf-8")
            except UnicodeDecodeError as exc:
                if exc.start < len(head) - 4:  # not just a character cut at the end of the sample
                    raise BatchInputError(f"input {self.path!r} is not UTF-8 text (byte {exc.start})") from None

    def batches(self, size: int, *, skip: int = 0) -> Iterator[list[dict[str, Any]]]:
        """Batches of at most ``size`` rows, after skipping ``skip`` rows."""
        if self.kind == "parquet":
            yield from self._parquet_batches(size, skip)
        else:
            yield from self._jsonl_batches(size, skip)

    def _parquet_batches(self, size: int, skip: int) -> Iterator[list[dict[str, Any]]]:
        try:
            for record_batch in self._parquet.iter_batches(batch_size=size):
                rows = record_batch.to_pylist()
                if skip >= len(rows):
                    skip -= len(rows)
                    continue
                yield rows[skip:]
                skip = 0
        except Exception as exc:  # noqa: BLE001 - a corrupt page deep in the file
            raise BatchInputError(f"input {self.path!r}: cannot read parquet data: {exc}") from exc

    def _jsonl_batches(self, size: int, skip: int) -> Iterator[list[dict[str, Any]]]:
        batch: list[dict[str, Any]] = []
        number = 0
        with open(self.path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    continue
                number += 1
                if number <= skip:
                    continue
                batch.append(_json_row(line, number))
                if len(batch) >= size:
                    yield batch
                    batch = []
        if batch:
            yield batch


def _json_row(line: str, number: int) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return {"_line": number, "_invalid": f"line {number}: invalid JSON ({exc.msg} at column {exc.colno})"}
    if not isinstance(value, dict):
        return {"_line": number, "_invalid": f"line {number}: expected a JSON object, got {type(value).__name__}"}
    return value


def complete_rows(path: str | os.PathLike[str]) -> int:
    """Rows already written to an output (for resume): whole lines only; a cut last line is removed."""
    path = os.fspath(path)
    if not os.path.exists(path):
        return 0
    if file_kind(path) == "parquet":
        pq = _pyarrow_parquet()
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
    """Writes output rows batch by batch (see the module docstring for what an interruption leaves)."""

    def __init__(self, path: str | os.PathLike[str], *, append: bool = False) -> None:
        self.path = os.fspath(path)
        self.kind = file_kind(path)
        self.rows = 0
        self._writer: Any = None
        self._schema: Any = None
        self._previous: str | None = None
        if self.kind == "parquet":
            self._pq = _pyarrow_parquet()
            if append and os.path.exists(self.path):
                # parquet cannot be appended to: carry the finished rows over into the new file
                self._previous = self.path + ".resume"
                os.replace(self.path, self._previous)
            self._handle: Any = None
        else:
            self._handle = open(self.path, "a" if append else "w", encoding="utf-8")  # noqa: SIM115

    def write(self, rows: list[dict[str, Any]]) -> None:
        """Write a batch of rows as one atomic unit (whole lines, or one row group)."""
        if not rows:
            return
        if self.kind == "jsonl":
            self._handle.write("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
            self._handle.flush()
        else:
            self._write_parquet(rows)
        self.rows += len(rows)

    def _write_parquet(self, rows: list[dict[str, Any]]) -> None:
        import pyarrow as pa

        rows = [{name: _parquet_value(name, value) for name, value in row.items()} for row in rows]
        if self._writer is None:
            if self._previous is not None:
                previous = self._pq.ParquetFile(self._previous)
                self._schema = previous.schema_arrow
                self._writer = self._pq.ParquetWriter(self.path, self._schema)
                for batch in previous.iter_batches():
                    self._writer.write_batch(batch)
            else:
                names: dict[str, None] = {}
                for row in rows:
                    names.update(dict.fromkeys(row))
                self._schema = pa.schema(
                    [pa.field(name, pa.list_(pa.int64()) if name in _TOKEN_COLUMNS else pa.string()) for name in names]
                )
                self._writer = self._pq.ParquetWriter(self.path, self._schema)
        self._writer.write_table(pa.Table.from_pylist(rows, schema=self._schema))

    def close(self) -> None:
        """Finish the file (the parquet footer); safe to call twice."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
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


_TOKEN_COLUMNS = ("input_ids", "assistant_masks")


def _parquet_value(name: str, value: Any) -> Any:
    """Parquet output columns are strings (other values as JSON text) except the token columns, which are lists
    of int64: rows of any shape fit one schema, and nothing is lost."""
    if value is None or isinstance(value, str) or name in _TOKEN_COLUMNS:
        return value
    return json.dumps(value, ensure_ascii=False)


def open_source(path: str | os.PathLike[str]) -> Source:
    """Open and check an input file (raises :class:`BatchInputError` before anything is written)."""
    return Source(path)


def open_sink(path: str | os.PathLike[str], *, append: bool = False) -> Sink:
    """Open an output file (``append`` for resume)."""
    return Sink(path, append=append)
