"""A parquet output's journal, and the recovery of parquet output that a killed run left without its footer.

Parquet says where its row groups are in a footer written when the file is closed: a run killed outright (SIGKILL,
the OOM killer) leaves a file that no reader opens. So while a parquet sink writes, every batch also goes to an
Arrow IPC stream beside the output (``<output>.journal``; not encoded, LZ4-compressed), which needs no footer: its
messages are read one after the other, and a torn last one (the kill came while it was written) is detected and
left out. The journal is removed once the parquet file is closed. It is not synced to disk: what a killed process
wrote is in the kernel's hands and survives, a power cut may lose what the system had not yet written back.

A resumed parquet run cannot append to the file: it moves the finished rows to ``<output>.resume`` and copies them
into a new file (and its journal) before the new rows. :func:`recover` puts a killed run's output back together
from whichever of the two holds more rows, writing a rebuilt file under a temporary name and renaming it over the
output, so a kill during the recovery loses nothing either.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

__all__ = [
    "PARQUET_COMPRESSIONS",
    "Journal",
    "batch_messages",
    "ipc_stream",
    "parquet_writer",
    "previous_path",
    "recover",
]

_JOURNAL = ".journal"
_PREVIOUS = ".resume"
_REBUILT = ".recovering"


PARQUET_COMPRESSIONS = ("lz4", "snappy", "zstd", "gzip", "none")
"""Codecs a parquet output can be written with (``compression=`` of :func:`~turnkit.batch.run`)."""


def parquet_writer(path: str, schema: Any, pq: Any, compression: str = "lz4") -> Any:
    """The writer of a parquet output, here so a recovered file is written as the run would have written it.

    With ``"lz4"`` (the default), token columns (``list<int64>``) skip dictionary encoding and statistics: the same
    schema and values as pyarrow's defaults (Snappy, every column dictionary-encoded, with statistics) for ~35-45 %
    less CPU a row and a file within 10 % of the size (``bench/batch_parquet.py``). Dictionary-encoding ~1,300 ids a
    row costs a hash each, and Snappy does poorly on plain int64 pages, LZ4 well. Parquet's LZ4 is LZ4_RAW, which
    Spark reads from 3.5 (parquet-mr 1.13) on: any other codec writes pyarrow's defaults with that codec (without
    the dictionary, Snappy and zstd files of token ids are about 3x larger).
    """
    import pyarrow as pa

    if compression != "lz4" or not pa.Codec.is_available("lz4"):  # (pyarrow's wheels have it)
        return pq.ParquetWriter(path, schema, compression="snappy" if compression == "lz4" else compression)
    lists = {field.name for field in schema if pa.types.is_list(field.type)}
    others = [name for name in schema.names if name not in lists]
    return pq.ParquetWriter(path, schema, use_dictionary=others, write_statistics=others, compression="lz4")


def previous_path(output: str) -> str:
    """Where a resumed run keeps the finished rows while it copies them into the new file."""
    return output + _PREVIOUS


class Journal:
    """The Arrow IPC stream of the batches written to a parquet output (see the module docstring).

    Its messages are written as they are made, one write each: the schema's at once, then each batch's. A batch a
    worker process already encoded as such a stream (:class:`~turnkit.batch._io.Packed`, with the journal's
    schema) is appended as it came instead of being compressed again here (:meth:`write_messages`)."""

    def __init__(self, output: str, schema: Any) -> None:
        import pyarrow as pa

        self.path = output + _JOURNAL
        self.schema = schema.serialize().to_pybytes()  # the stream's first message, as a stream writer writes it
        self._file = pa.OSFile(self.path, "wb")  # unbuffered: a batch is in the kernel's hands once written
        self._file.write(self.schema)

    def write(self, data: Any) -> None:
        """Append a record batch or a table."""
        stream = ipc_stream(data)
        self.write_messages(memoryview(stream)[_MARKER + int.from_bytes(stream[4:_MARKER], "little") : -_END])

    def write_messages(self, messages: Any) -> None:
        """Append record batch messages of an IPC stream with the journal's schema (bytes-like)."""
        self._file.write(messages)

    def discard(self) -> None:
        """Close and remove the journal (its parquet file is complete)."""
        self._file.close()
        os.remove(self.path)


_MARKER = _END = 8
"""Bytes before an IPC message's metadata (continuation marker, metadata size), and of the end-of-stream marker."""


def ipc_stream(data: Any, *, compress: bool = True) -> bytes:
    """A table or record batch as an Arrow IPC stream with LZ4-compressed buffers (uncompressed where pyarrow has
    no LZ4, or without ``compress``): token columns are int64 lists of small numbers, ~50x their parquet size
    uncompressed, and compressed they cost less CPU than the system calls that write them uncompressed
    (``bench/batch_journal.py``)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    out = pa.BufferOutputStream()
    codec = "lz4" if compress and pa.Codec.is_available("lz4") else None
    options = ipc.IpcWriteOptions(compression=codec, use_threads=False)  # one process per core: no thread pool
    with ipc.new_stream(out, data.schema, options=options) as writer:
        writer.write(data)
    return bytes(out.getvalue().to_pybytes())


def batch_messages(stream: bytes, schema: bytes) -> memoryview | None:
    """The record batch messages of an IPC stream (:func:`ipc_stream`) whose schema message is ``schema``, else
    ``None``."""
    if not stream.startswith(schema):
        return None
    return memoryview(stream)[len(schema) : -_END]


def recover(output: str, pq: Any, compression: str = "lz4") -> None:
    """Put a parquet output that a killed run left without its footer back together (see the module docstring).
    Leaves ``output`` complete, missing, or (without a journal or the finished rows' copy beside it, so not this
    module's doing) as it was. Memory stays flat: the journal is read and written one batch at a time."""
    journal = output + _JOURNAL
    previous = previous_path(output)
    rebuilt = output + _REBUILT
    _remove(rebuilt)  # a recovery killed before its rename
    if _complete(output, pq):  # closed normally: only the removal of the journal and the copy was left to do
        _remove(journal, previous)
        return
    journaled = os.path.exists(journal)
    rows = _rebuild(journal, rebuilt, pq, compression) if journaled else None
    kept = _rows(previous, pq) if os.path.exists(previous) else -1
    if rows is not None and rows > kept:
        with open(rebuilt, "rb") as handle:  # on disk before the journal goes
            os.fsync(handle.fileno())
        os.replace(rebuilt, output)
        _sync_folder(os.path.dirname(os.path.abspath(output)))
    elif kept >= 0:
        os.replace(previous, output)
    elif journaled:  # a journal without even its schema: the run was killed before it wrote a row
        _remove(output)
    _remove(rebuilt, journal, previous)


def _complete(path: str, pq: Any) -> bool:
    try:
        pq.ParquetFile(path)
    except Exception:  # noqa: BLE001 - missing, or no footer (pyarrow raises ArrowInvalid, OSError...)
        return False
    return True


def _rows(path: str, pq: Any) -> int:
    return int(pq.ParquetFile(path).metadata.num_rows)


def _rebuild(journal: str, rebuilt: str, pq: Any, compression: str) -> int | None:
    """Write the journal's complete batches to the parquet file ``rebuilt``; their row count, or ``None`` (nothing
    written) when not even the journal's schema was."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    rows = 0
    with pa.memory_map(journal) as source:
        try:
            reader = ipc.open_stream(source)
        except (pa.ArrowInvalid, OSError):
            return None
        try:
            with parquet_writer(rebuilt, reader.schema, pq, compression) as writer:
                for batch in _whole(reader):
                    writer.write_batch(batch)
                    rows += batch.num_rows
        except BaseException:
            _remove(rebuilt)
            raise
    return rows


def _whole(reader: Any) -> Iterator[Any]:
    """The record batches of a stream up to its end or its first torn message."""
    import pyarrow as pa

    while True:
        try:
            yield reader.read_next_batch()
        except (StopIteration, pa.ArrowInvalid, OSError):
            return


def _sync_folder(folder: str) -> None:
    """Make a rename in ``folder`` durable (POSIX; a no-op where folders cannot be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove(*paths: str) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
