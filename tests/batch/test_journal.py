"""Parquet output killed before its footer was written: rebuilt from its journal by ``resume``, whatever point the
kill came at (a torn journal, a missing output, a resumed run's copy of the finished rows, the recovery itself).

A kill is modelled by copying the files a run has on disk while it writes (what the kernel holds when the
process dies), and for the recovery by a real SIGKILL at chosen points of a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.clirun import cli_env
from turnkit import BatchInputError
from turnkit import batch as tbatch
from turnkit.batch._io import Packed, complete_rows, encode_rows, open_sink
from turnkit.batch._journal import Journal

pq = pytest.importorskip("pyarrow.parquet")

BATCH = 5


def _batch(number: int) -> list[dict[str, Any]]:
    first = number * BATCH
    return [
        {"id": str(i), "prompt": f"prompt {i} " * (i % 4), "input_ids": list(range(i % 7)), "error": None}
        for i in range(first, first + BATCH)
    ]


def _written(
    folder: Path, batches: int, *, packed: bool = False, declared: list[str] | None = None
) -> tuple[dict[str, bytes], list[int]]:
    """Write ``batches`` batches to ``folder/out.parquet`` and copy the files on disk before the footer: the
    files' bytes, and the journal's size after each batch. ``packed``: as worker processes hand batches over
    (:class:`Packed`, with the output's schema once the sink has one), whose streams the journal keeps as they
    are."""
    output = folder / "out.parquet"
    sizes = [0]
    with open_sink(output, declared=declared) as sink:
        for number in range(batches):
            if packed:
                sink.write_encoded(Packed(encode_rows(_batch(number), "parquet"), sink.schema), BATCH)
            else:
                sink.write(_batch(number))
            sizes.append(os.path.getsize(str(output) + ".journal"))
        files = {path.name: path.read_bytes() for path in folder.iterdir()}
    assert sorted(files) == ["out.parquet", "out.parquet.journal"]
    assert sorted(path.name for path in folder.iterdir()) == ["out.parquet"]  # closed: the journal is removed
    return files, sizes


def _restore(folder: Path, files: dict[str, bytes]) -> Path:
    for path in folder.iterdir():
        path.unlink()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder / "out.parquet"


def _rows(batches: int) -> list[dict[str, Any]]:
    return [row for number in range(batches) for row in _batch(number)]


def test_packed_batches_are_journaled_as_they_came(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The main process appends a worker's stream to the journal without encoding it again (all but the first
    batch, packed before the output had a schema, here without its declared column): the same journal."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    files, sizes = _written(tmp_path / "a", 3, declared=["documents"])
    encoded: list[int] = []
    write = Journal.write
    monkeypatch.setattr(Journal, "write", lambda self, data: (encoded.append(len(data)), write(self, data))[1])
    packed, packed_sizes = _written(tmp_path / "b", 3, packed=True, declared=["documents"])
    assert encoded == [BATCH]
    assert packed_sizes == sizes
    assert packed["out.parquet.journal"] == files["out.parquet.journal"]
    assert packed["out.parquet"] == files["out.parquet"]


@pytest.mark.parametrize("packed", [False, True])
def test_resume_keeps_the_journal_s_complete_batches_wherever_it_was_torn(tmp_path: Path, packed: bool) -> None:
    files, sizes = _written(tmp_path, 4, packed=packed)
    with pytest.raises(Exception, match="(?i)magic"):
        pq.ParquetFile(_restore(tmp_path, files))  # without its footer: no reader opens it
    journal = files["out.parquet.journal"]
    cuts = {cut + delta for cut in sizes for delta in (-1, 0, 1)} | set(range(0, len(journal), 29))
    for cut in sorted(cut for cut in cuts if 0 <= cut <= len(journal)):
        output = _restore(tmp_path, {**files, "out.parquet.journal": journal[:cut]})
        complete = max(number for number, size in enumerate(sizes) if size <= cut)
        assert complete_rows(output) == complete * BATCH, cut
        if complete:
            assert pq.read_table(output).to_pylist() == _rows(complete), cut
        else:  # nothing to keep: the output is rebuilt empty or removed (a journal without even its schema)
            assert not output.exists() or pq.read_table(output).num_rows == 0, cut
        assert sorted(path.name for path in tmp_path.iterdir()) == ["out.parquet"][: int(output.exists())], cut


def test_a_journal_without_its_output_is_rebuilt(tmp_path: Path) -> None:
    files, _ = _written(tmp_path, 3)
    output = _restore(tmp_path, {"out.parquet.journal": files["out.parquet.journal"]})
    assert complete_rows(output) == 3 * BATCH
    assert pq.read_table(output).to_pylist() == _rows(3)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.parquet"]


def test_footer_less_output_without_a_journal_is_refused(tmp_path: Path) -> None:
    """Not written by a sink that keeps a journal (or damaged otherwise): resume says so and changes nothing."""
    files, _ = _written(tmp_path, 2)
    output = _restore(tmp_path, {"out.parquet": files["out.parquet"]})
    with pytest.raises(BatchInputError, match="not a complete parquet file"):
        complete_rows(output)
    assert output.read_bytes() == files["out.parquet"]


def test_a_resumed_run_killed_outright_keeps_whichever_holds_more_rows(tmp_path: Path) -> None:
    """A resumed run moves the finished rows to ``out.parquet.resume`` and copies them into the new file and its
    journal first: killed before the copy is journaled, those are kept; after, the journal (copy and new rows)."""
    output = tmp_path / "out.parquet"
    with open_sink(output) as sink:
        sink.write(_batch(0))
        sink.write(_batch(1))
    with open_sink(output, append=True) as sink:  # a resumed run
        sink.write(_batch(2))
        sink.write(_batch(3))
        sizes = _batch_ends(str(output) + ".journal")
        files = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert sorted(files) == ["out.parquet", "out.parquet.journal", "out.parquet.resume"]
    assert len(sizes) == 3  # the copy (one row group of 10), then the two new batches
    journal = files["out.parquet.journal"]
    for cut, kept in [(len(journal), 4), (sizes[1], 3), (sizes[0], 2), (sizes[0] - 1, 2), (0, 2)]:
        _restore(tmp_path, {**files, "out.parquet.journal": journal[:cut]})
        assert complete_rows(output) == kept * BATCH, cut
        assert pq.read_table(output).to_pylist() == _rows(kept), cut
        assert sorted(path.name for path in tmp_path.iterdir()) == ["out.parquet"], cut


def _batch_ends(journal: str) -> list[int]:
    """Byte offsets of the end of each record batch in an IPC stream (pyarrow's own reader, message by message)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    ends = []
    with pa.OSFile(journal) as source:
        reader = ipc.MessageReader.open_stream(source)
        for message in reader:
            if message.type == "record batch":
                ends.append(source.tell())
    return ends


def test_a_fresh_run_drops_a_killed_run_s_leftovers(tmp_path: Path) -> None:
    """Without ``resume`` the output starts over: a killed resumed run's copy of its rows is removed too."""
    (tmp_path / "out.parquet.resume").write_bytes(b"old rows")
    (tmp_path / "out.parquet.journal").write_bytes(b"old journal")
    with open_sink(tmp_path / "out.parquet") as sink:
        sink.write(_batch(0))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.parquet"]
    assert pq.read_table(tmp_path / "out.parquet").to_pylist() == _rows(1)


TEMPLATE = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"


def test_python_resume_finishes_a_run_killed_before_the_footer(tmp_path: Path) -> None:
    """``turnkit.batch.run(..., resume=True)``: the files a run killed after two batches left, resumed, equal an
    uninterrupted run's output."""
    source = tmp_path / "in.jsonl"
    chats = [{"id": i, "messages": [{"role": "user", "content": f"question {i}"}]} for i in range(40)]
    source.write_text("".join(json.dumps(row) + "\n" for row in chats), encoding="utf-8")
    worker = tbatch.Renderer(template=TEMPLATE)
    tbatch.run(worker, source, tmp_path / "expected.parquet", batch_size=7)
    folder = tmp_path / "out"
    folder.mkdir()
    output = folder / "out.parquet"
    left: dict[str, bytes] = {}

    def kill(done: int) -> None:
        if done >= 14:
            left.update({path.name: path.read_bytes() for path in folder.iterdir()})
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tbatch.run(worker, source, output, batch_size=7, on_batch=kill)
    _restore(folder, left)
    summary = tbatch.run(worker, source, output, batch_size=7, resume=True)
    assert (summary.skipped, summary.rows) == (14, 26)
    assert pq.read_table(output).to_pylist() == pq.read_table(tmp_path / "expected.parquet").to_pylist()
    assert sorted(path.name for path in folder.iterdir()) == ["out.parquet"]


KILLER = """
import os, signal, sys
import pyarrow.parquet as pq
from turnkit.batch import _io, _journal

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

point = sys.argv[2]
if point == "writing":  # the second row group of the rebuilt file
    write = pq.ParquetWriter.write_batch
    calls = []
    def write_batch(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            die()
        return write(self, *args, **kwargs)
    pq.ParquetWriter.write_batch = write_batch
elif point == "renaming":
    os.replace = die
elif point == "renamed":  # the rebuilt file in place, the journal not yet removed
    _journal._sync_folder = die
_io.complete_rows(sys.argv[1])
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("point", ["writing", "renaming", "renamed"])
def test_a_recovery_killed_outright_loses_nothing(tmp_path: Path, point: str) -> None:
    """The rebuilt file is written under a temporary name and renamed over the output: SIGKILL at any point of
    the recovery leaves the journal or the rebuilt output, and the next resume finishes the job."""
    files, _ = _written(tmp_path, 4)
    output = _restore(tmp_path, files)
    result = subprocess.run(
        [sys.executable, "-c", KILLER, str(output), point], env=cli_env(), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == -signal.SIGKILL, result.stderr
    left = sorted(path.name for path in tmp_path.iterdir())
    if point == "renamed":
        assert left == ["out.parquet", "out.parquet.journal"] and pq.read_table(output).num_rows == 4 * BATCH
    else:
        assert left == ["out.parquet", "out.parquet.journal", "out.parquet.recovering"]
        assert output.read_bytes() == files["out.parquet"]
    assert complete_rows(output) == 4 * BATCH
    assert pq.read_table(output).to_pylist() == _rows(4)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.parquet"]
