"""Benchmark: what the journal of parquet output costs (the Arrow IPC stream a parquet sink writes beside the output
so that a run killed before the footer can be resumed; src/turnkit/batch/_journal.py).

    python bench/batch_journal.py                       # 1000 chat rows, tokens and masks, batches of 256
    python bench/batch_journal.py --rows 4000 --repeat 9 --tokenizer wide

The output rows of ``bench/batch.py``'s chat dataset (prompt, input_ids, assistant_masks, error, the input's
messages), rendered once and encoded as the workers encode them, are written four ways: with turnkit's parquet
sink (journal included), with pyarrow's ParquetWriter alone on the same tables (the sink before the journal, less
its schema checks), with the journal alone, and with an IPC stream written without compression (what the journal
would cost without LZ4). The cases are interleaved and each
figure is the median CPU time (user + system: the journal's cost is mostly write system calls) over --repeat
runs, per thousand rows; the sizes are those of the files.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import pyarrow.parquet as pq  # noqa: E402

from turnkit import batch as tbatch  # noqa: E402
from turnkit.batch._io import encode_rows, open_sink  # noqa: E402
from turnkit.batch._journal import Journal  # noqa: E402


def _tables(rows: int, batch_size: int, tokenizer: str, tmp: str) -> list[Any]:
    import batch as bench

    folder = Path(tmp, "model")
    folder.mkdir()
    bench._model(folder, bench._template_source(), tokenizer)
    worker = tbatch.Renderer(model=folder, masks=True)
    rows_in = [{"messages": chat} for chat in bench._conversations(rows)]
    return [
        encode_rows(worker.rows(rows_in[at : at + batch_size]), "parquet", worker.int_columns)
        for at in range(0, rows, batch_size)
    ]


def _sink(tables: list[Any], path: str) -> int:
    with open_sink(path) as sink:
        for table in tables:
            sink.write_encoded(table, table.num_rows)
    return os.path.getsize(path)


def _parquet(tables: list[Any], path: str) -> int:
    with pq.ParquetWriter(path, tables[0].schema) as writer:
        for table in tables:
            writer.write(table)
    return os.path.getsize(path)


def _journal(tables: list[Any], path: str) -> int:
    journal = Journal(path, tables[0].schema)
    for table in tables:
        journal.write(table)
    size = os.path.getsize(journal.path)
    journal.discard()
    return size


def _uncompressed(tables: list[Any], path: str) -> int:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    with pa.OSFile(path, "wb") as file, ipc.new_stream(file, tables[0].schema) as writer:
        for table in tables:
            writer.write(table)
    return os.path.getsize(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--tokenizer", default="small", help="small or wide (see bench/batch.py)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tables = _tables(args.rows, args.batch_size, args.tokenizer, tmp)
        # the sink's schema (every column typed): the other cases write the same columns
        _sink(tables, os.path.join(tmp, "schema.parquet"))
        schema = pq.read_schema(os.path.join(tmp, "schema.parquet"))
        tables = [table.select(schema.names).cast(schema) for table in tables]
        cases: dict[str, Callable[[list[Any], str], int]] = {
            "turnkit parquet sink (with its journal)": _sink,
            "pyarrow ParquetWriter alone": _parquet,
            "the journal alone (LZ4 IPC stream)": _journal,
            "an IPC stream without compression": _uncompressed,
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        sizes: dict[str, int] = {}
        for _ in range(args.repeat):
            for number, (name, write) in enumerate(cases.items()):
                path = os.path.join(tmp, f"{number}.parquet")
                start = time.process_time()
                sizes[name] = write(tables, path)
                times[name].append(time.process_time() - start)
                if os.path.exists(path):
                    os.remove(path)
        print(
            f"{args.rows} chat rows (tokens and masks, {args.tokenizer} tokenizer), batches of {args.batch_size}, "
            f"median of {args.repeat} interleaved runs; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
        )
        for name, values in times.items():
            print(
                f"  {name:<42} {statistics.median(values) / args.rows * 1e6:8.1f} CPU-us/row  "
                f"{sizes[name] / args.rows:8.0f} bytes/row"
            )
        sink, alone = (statistics.median(times[name]) for name in list(cases)[:2])
        print(f"  sink / ParquetWriter alone: {sink / alone:.2f}x CPU")


if __name__ == "__main__":
    main()
