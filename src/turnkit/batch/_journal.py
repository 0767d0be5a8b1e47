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

__all__ = ["Journal", "previous_path", "recover"]

_JOURNAL = ".journal"
_PREVIOUS = ".resume"
_REBUILT = ".recovering"


def previous_path(output: str) -> str:
    """Where a resumed run keeps the finished rows while it copies them into the new file."""
    return output + _PREVIOUS


class Journal:
    """The Arrow IPC stream of the batches written to a parquet output (see the module docstring)."""

    def __init__(self, output: str, schema: Any) -> None:
        import pyarrow as pa
        import pyarrow.ipc as ipc

        self.path = output + _JOURNAL
        self._file = pa.OSFile(self.path, "wb")  # unbuffered: a batch is in the kernel's hands once written
        # LZ4 frames: token columns are int64 lists of small numbers, ~50x their parquet size uncompressed, and
        # compressed they cost less CPU than the system calls that write them uncompressed (bench/batch_journal.py)
        compression = "lz4" if pa.Codec.is_available("lz4") else None
        self._writer = ipc.new_stream(self._file, schema, options=ipc.IpcWriteOptions(compression=compression))

    def write(self, data: Any) -> None:
        """Append a record batch or a table."""
        self._writer.write(data)

    def discard(self) -> None:
        """Close and remove the journal (its parquet file is complete)."""
        self._writer.close()
        self._file.close()
        os.remove(self.path)


def recover(output: str, pq: Any) -> None:
    """Put a parquet output that a killed run left without its footer back together (see the module docstring).
    Leaves ``output`` complete, missing, or (without a journal or the finished rows' copy beside it, so not this
    module's doing) as it was."""
    journal = output + _JOURNAL
    previous = previous_path(output)
    _remove(output + _REBUILT)  # a recovery killed before its rename
    if _complete(output, pq):  # closed normally: only the removal of the journal and the copy was left to do
        _remove(journal, previous)
        return
    journaled = os.path.exists(journal)
    batches = _batches(journal) if journaled else None
    kept = _rows(previous, pq) if os.path.exists(previous) else -1
    if batches is not None and sum(batch.num_rows for batch in batches[1]) > kept:
        _rebuild(output, *batches, pq)
    elif kept >= 0:
        os.replace(previous, output)
    elif journaled:  # a journal without even its schema: the run was killed before it wrote a row
        _remove(output)
    _remove(journal, previous)


def _complete(path: str, pq: Any) -> bool:
    try:
        pq.ParquetFile(path)
    except Exception:  # noqa: BLE001 - missing, or no footer (pyarrow raises ArrowInvalid, OSError...)
        return False
    return True


def _rows(path: str, pq: Any) -> int:
    return int(pq.ParquetFile(path).metadata.num_rows)


def _batches(path: str) -> tuple[Any, list[Any]] | None:
    """The journal's schema and complete record batches (memory-mapped, not copied), or ``None`` when not even the
    schema was written."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    source = pa.memory_map(path)
    try:
        reader = ipc.open_stream(source)
    except (pa.ArrowInvalid, OSError):
        return None
    return reader.schema, list(_whole(reader))


def _whole(reader: Any) -> Iterator[Any]:
    """The record batches of a stream up to its end or its first torn message."""
    import pyarrow as pa

    while True:
        try:
            yield reader.read_next_batch()
        except (StopIteration, pa.ArrowInvalid, OSError):
            return


def _rebuild(output: str, schema: Any, batches: list[Any], pq: Any) -> None:
    """Write ``batches`` as a complete parquet file and rename it over ``output`` (synced first: the journal is
    removed after)."""
    rebuilt = output + _REBUILT
    try:
        with pq.ParquetWriter(rebuilt, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
        with open(rebuilt, "rb") as handle:
            os.fsync(handle.fileno())
    except BaseException:
        _remove(rebuilt)
        raise
    os.replace(rebuilt, output)
    _sync_folder(os.path.dirname(os.path.abspath(output)))


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
