"""Parquet output: the writer's options (token columns without dictionary or statistics, LZ4 pages) keep the schema
and values of pyarrow's defaults, in a run, a multi-worker run (tables packed through the pool's pipes) and a file
rebuilt from its journal."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from turnkit import batch as tbatch
from turnkit.batch._io import Packed, complete_rows, encode_rows, open_sink
from turnkit.errors import TurnkitError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.role == 'assistant' %}{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}"
    "{% else %}{{ m.content }}<|im_end|>{% endif %}\n{% endfor %}"
)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.render.test_tokenize import _added_tokens, build_tokenizer

    folder = tmp_path_factory.mktemp("model")
    build_tokenizer("bpe", tuple(_added_tokens(TEMPLATE))).save(str(folder / "tokenizer.json"))
    config = {"chat_template": TEMPLATE, "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def _rows(n: int) -> list[dict[str, Any]]:
    words = ["café", "東京", "🙂", "plain", "“quoted”"]
    rows: list[dict[str, Any]] = []
    for i in range(n):
        if i % 9 == 4:
            rows.append({"id": i, "messages": [{"role": "wizard", "content": "x"}]})  # a bad row: null tokens
            continue
        text = " ".join(words[(i + k) % len(words)] for k in range(1 + i % 6))
        rows.append(
            {
                "id": i,
                "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": f"{text} {i}"}],
            }
        )
    return rows


def _defaults(path: Path) -> Any:
    """The same table written again with pyarrow's default options."""
    table = pq.read_table(path)
    pq.write_table(table, path.with_suffix(".defaults.parquet"))
    return pq.read_table(path.with_suffix(".defaults.parquet"))


def _check_options(path: Path, codec: str = "LZ4") -> None:
    """turnkit's writer options (LZ4), or pyarrow's defaults with another ``codec``."""
    metadata = pq.ParquetFile(path).metadata
    assert metadata.num_row_groups >= 1
    for group in range(metadata.num_row_groups):
        for index in range(metadata.num_columns):
            column = metadata.row_group(group).column(index)
            plain = codec == "LZ4" and column.path_in_schema.split(".")[0] in ("input_ids", "assistant_masks")
            assert column.compression == codec, column
            assert ("RLE_DICTIONARY" in column.encodings) is not plain, column
            assert column.is_stats_set is not plain, column


@pytest.mark.parametrize("workers", [1, 2])
def test_parquet_output_has_the_default_writer_s_schema_and_values(tmp_path: Path, model: Path, workers: int) -> None:
    rows = _rows(40)
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    output = tmp_path / "out.parquet"
    summary = tbatch.render(source, output, model=model, masks=True, batch_size=6, workers=workers)
    assert (summary.rows, summary.errors) == (40, 4)
    table = pq.read_table(output)
    again = _defaults(output)
    assert table.schema == again.schema and table.equals(again)
    assert str(table.schema.field("input_ids").type) == "list<element: int64>"
    assert pq.ParquetFile(output).metadata.num_row_groups == 7  # one per batch, as before
    _check_options(output)
    # the same rows as the renderer gives, encoded in this process
    worker = tbatch.Renderer(model=model, masks=True)
    rendered = worker.rows(json.loads(json.dumps(rows)))
    expected = encode_rows(rendered, "parquet", worker.int_columns)
    for name in ("prompt", "input_ids", "assistant_masks", "error"):
        assert table.column(name).to_pylist() == expected.column(name).to_pylist(), name


def test_a_file_rebuilt_from_its_journal_is_written_as_the_run_writes(tmp_path: Path) -> None:
    output = tmp_path / "out.parquet"
    batch = [{"id": str(i), "prompt": "p" * i, "input_ids": list(range(i)), "error": None} for i in range(6)]
    with open_sink(output) as sink:
        sink.write(batch)
        journal = (tmp_path / "out.parquet.journal").read_bytes()
        torn = output.read_bytes()  # no footer yet: what a kill would leave
    output.write_bytes(torn)
    (tmp_path / "out.parquet.journal").write_bytes(journal)
    assert complete_rows(output) == 6
    assert pq.read_table(output).to_pylist() == batch
    _check_options(output)


def test_a_packed_table_is_the_same_table_and_much_smaller_to_pickle() -> None:
    ids = [list(range(i * 50)) for i in range(20)] + [None]
    table = pa.table(
        {
            "prompt": [f"prompt “{i}” 東京 🙂" for i in range(20)] + [None],
            "input_ids": pa.array(ids, type=pa.list_(pa.int64())),
            "error": [None] * 20 + ["messages: missing"],
        }
    )
    packed = pickle.loads(pickle.dumps(Packed(table)))
    assert packed.table().equals(table) and packed.table().schema == table.schema
    if pa.Codec.is_available("lz4"):
        assert len(pickle.dumps(Packed(table))) * 4 < len(pickle.dumps(table))


def test_a_sent_record_batch_gives_the_batch_s_rows() -> None:
    """Parquet input goes to a worker as an Arrow IPC stream: the rows it decodes are the record batch's."""
    from turnkit.batch._io import Sent, decode_chunk

    batch = pa.RecordBatch.from_pylist([*_rows(20), {"id": 99, "messages": None, "tools": "[]"}])
    sent = pickle.loads(pickle.dumps(Sent(batch)))
    assert decode_chunk(("parquet", sent, 0)) == decode_chunk(("parquet", batch, 0)) == batch.to_pylist()
    assert decode_chunk(("parquet", sent, 0))[4]["messages"] == [{"role": "wizard", "content": "x"}]


@pytest.mark.parametrize("codec", ["snappy", "zstd", "none"])
def test_another_codec_writes_pyarrow_s_defaults_with_it_in_a_run_and_a_recovery(
    tmp_path: Path, model: Path, codec: str
) -> None:
    """``compression=`` for older readers (Spark before 3.5 reads no LZ4_RAW): the same values, pyarrow's own
    options with that codec, in the run and in a file rebuilt from its journal on resume."""
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in _rows(20)), encoding="utf-8")
    lz4, other = tmp_path / "lz4.parquet", tmp_path / "other.parquet"
    tbatch.render(source, lz4, model=model, masks=True, batch_size=6)
    tbatch.render(source, other, model=model, masks=True, batch_size=6, compression=codec)
    assert pq.read_table(other).equals(pq.read_table(lz4))
    _check_options(other, codec.upper() if codec != "none" else "UNCOMPRESSED")
    with open_sink(other, compression=codec) as sink:  # a killed run's footer-less output and its journal
        sink.write(pq.read_table(lz4).slice(0, 6).to_pylist())
        journal = (tmp_path / "other.parquet.journal").read_bytes()
        torn = other.read_bytes()
    other.write_bytes(torn)
    (tmp_path / "other.parquet.journal").write_bytes(journal)
    summary = tbatch.render(source, other, model=model, masks=True, batch_size=6, compression=codec, resume=True)
    assert summary.skipped == 6
    assert pq.read_table(other).equals(pq.read_table(lz4))
    _check_options(other, codec.upper() if codec != "none" else "UNCOMPRESSED")


def test_an_unknown_codec_is_refused_before_any_output(tmp_path: Path, model: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(_rows(1)[0]) + "\n", encoding="utf-8")
    with pytest.raises(TurnkitError, match="compression"):
        tbatch.render(source, tmp_path / "out.parquet", model=model, compression="brotli")
    assert not (tmp_path / "out.parquet").exists()


def test_the_last_batches_are_split_in_small_tasks() -> None:
    """The parquet batches among the last ``tail`` rows go out as tasks of 64 rows, in order, every row once."""
    from turnkit.batch._engine import _even_end

    batches = [pa.record_batch({"n": list(range(start, min(start + 100, 450)))}) for start in range(0, 450, 100)]
    tasks = list(_even_end(iter([("parquet", batch, 0) for batch in batches]), 450, 200))
    assert [task[1].num_rows for task in tasks] == [100, 100, 100, 64, 36, 50]
    assert [n for task in tasks for n in task[1].column("n").to_pylist()] == list(range(450))
    lines = [("jsonl-range", ("in.jsonl", 0, 10), 0)]
    assert list(_even_end(iter(lines), None, 200)) == lines  # JSON lines: small tasks already


@pytest.mark.parametrize(("workers", "split"), [(2, 4), (3, 6)])
def test_rows_stay_in_order_and_complete_with_tiny_batches_and_split_tails(
    tmp_path: Path, model: Path, workers: int, split: int
) -> None:
    """Parquet output at several workers (the pool's processes and this one share the tasks): the same table, errors
    and row numbers as one worker's, from parquet input whose last ``2 x workers`` batches are split (bad rows among
    them), from JSON lines a row a task, and from parquet input in batches of 2."""
    rows = _rows(600)
    parquet, lines = tmp_path / "in.parquet", tmp_path / "in.jsonl"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    lines.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows[:37]), encoding="utf-8")
    pairs = tmp_path / "pairs.parquet"
    pq.write_table(pa.Table.from_pylist(rows[:300]), pairs)
    # a row group per task: 6 batches of 100, of which the last ``split`` go out as 64 + 36 rows (a bad row every 9:
    # 4, 13, ... 598, in the last task)
    cases = ((parquet, 100, 6 + split, 67), (lines, 1, 37, 4), (pairs, 2, 150, 33))
    for source, batch_size, groups, errors in cases:
        one, many = tmp_path / "one.parquet", tmp_path / "many.parquet"
        alone = tbatch.render(source, one, model=model, masks=True, batch_size=batch_size)
        shared = tbatch.render(source, many, model=model, masks=True, batch_size=batch_size, workers=workers)
        assert (shared.rows, shared.errors, shared.first_errors) == (alone.rows, alone.errors, alone.first_errors)
        assert shared.errors == errors, source.name
        assert pq.read_table(many).equals(pq.read_table(one)), source.name
        assert pq.ParquetFile(many).metadata.num_row_groups == groups, source.name
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "in.jsonl",
        "in.parquet",
        "many.parquet",
        "one.parquet",
        "pairs.parquet",
    ]


class _Where(tbatch.Parser):
    """A parser that writes which process parsed each row."""

    def rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**row, "pid": str(os.getpid())} for row in super().rows(rows)]


def test_this_process_does_tasks_while_the_pool_holds_two(tmp_path: Path) -> None:
    """Parquet output at 2 workers: a pool of 1 process and this one, which does a task whenever the pool holds 2
    small tasks (the first 2 always go to the pool); JSON-lines output: a pool of 2 processes, this one only writes
    (which of the 2 takes a task is the scheduler's choice: on a busy machine one may take them all)."""
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"generated_text": f"answer {i}"}) + "\n" for i in range(40)), "utf-8")
    for suffix in (".parquet", ".jsonl"):
        output = tmp_path / f"out{suffix}"
        assert tbatch.run(_Where("hermes"), source, output, workers=2, batch_size=4).rows == 40
        out = (
            pq.read_table(output).to_pylist()
            if suffix == ".parquet"
            else [json.loads(line) for line in output.read_text("utf-8").splitlines()]
        )
        pids = [row["pid"] for row in out]
        assert [row["generated_text"] for row in out] == [f"answer {i}" for i in range(40)]
        here = {index // 4 for index, pid in enumerate(pids) if pid == str(os.getpid())}
        if suffix == ".parquet":
            assert len(set(pids)) == 2 and here and 0 not in here and 1 not in here, pids
        else:
            assert len(set(pids)) <= 2 and not here, pids


def test_one_batch_of_parquet_rows_is_done_without_starting_workers(
    tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows that fit in one batch: starting 2 workers would cost more than the work; the output is the same."""
    from turnkit.batch import _engine

    source = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(_rows(12)), source)
    tbatch.render(source, tmp_path / "one.parquet", model=model, masks=True, batch_size=12)

    def no_pool(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a pool was started")

    monkeypatch.setattr(_engine, "_Pool", no_pool)
    summary = tbatch.render(source, tmp_path / "two.parquet", model=model, masks=True, batch_size=12, workers=2)
    assert (summary.rows, summary.errors) == (12, 1)
    assert pq.read_table(tmp_path / "two.parquet").equals(pq.read_table(tmp_path / "one.parquet"))
    with pytest.raises(AssertionError, match="a pool was started"):  # one row more: the workers start
        pq.write_table(pa.Table.from_pylist(_rows(13)), source)
        tbatch.render(source, tmp_path / "three.parquet", model=model, masks=True, batch_size=12, workers=2)


def test_the_pool_s_worker_thread_waits_without_spinning(
    tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool's worker thread wakes when a worker exits or the pool's state changes, not while results sit in the
    result pipe (the standard pool spins there: thousands of wake-ups a run, CPU and the GIL taken from the work)."""
    import multiprocessing.pool

    wakes = []
    wait = multiprocessing.pool.Pool._wait_for_updates

    def counted(*args: Any, **kwargs: Any) -> Any:
        wakes.append(1)
        return wait(*args, **kwargs)

    monkeypatch.setattr(multiprocessing.pool.Pool, "_wait_for_updates", staticmethod(counted))
    source = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(_rows(400) * 5), source)
    summary = tbatch.render(source, tmp_path / "out.parquet", model=model, masks=True, batch_size=50, workers=2)
    assert summary.rows == 2000
    assert len(wakes) <= 2000 // 50  # at most once a task (when no task is left in flight); 525 before


def test_the_pool_s_pipes_hold_a_task_and_its_result() -> None:
    """Linux: the pool's pipes hold 1 MB, so a worker writes a packed result (~100 KB for 256 chat rows) at once,
    instead of waiting for the main process's result thread to read each 64 KB."""
    fcntl = pytest.importorskip("fcntl")
    if not hasattr(fcntl, "F_GETPIPE_SZ"):
        pytest.skip("no pipe sizes here")
    from turnkit.batch._engine import _Pool

    with _Pool(1) as pool:
        for queue in (pool._inqueue, pool._outqueue):  # type: ignore[attr-defined]
            assert fcntl.fcntl(queue._writer.fileno(), fcntl.F_GETPIPE_SZ) >= 1 << 20


def test_a_parquet_command_and_its_workers_import_neither_pandas_nor_pyarrow_compute(
    tmp_path: Path, model: Path
) -> None:
    """``pa.array`` imports pandas on its first call and ``cast`` imports ``pyarrow.compute``: ~0.25 s of the
    command's serial start (the first row is encoded before the fork). The command and its 2 workers, watched."""
    from tests.batch.test_batch import audited_cli

    source, output, log = tmp_path / "in.parquet", tmp_path / "out.parquet", tmp_path / "events.log"
    pq.write_table(pa.Table.from_pylist(_rows(48)), source)
    options = ["--masks", "--workers", "2", "--batch-size", "8", "--no-progress"]
    modules = ("pandas", "pyarrow.compute")
    argv = ["batch", "render", "--model", str(model), "--input", str(source), "--output", str(output), *options]
    result = audited_cli(log, modules, *argv)
    assert result.returncode == 0, result.stderr
    assert pq.read_table(output).num_rows == 48
    events = log.read_text().splitlines()
    assert len(events) == 1 and events[0].endswith("os.fork"), events  # one worker forked, nothing imported
