"""Parquet output's costs per row: the writer's options, and how a worker's table reaches the main process.

    python bench/batch_parquet.py                            # chat rows, small tokenizer
    python bench/batch_parquet.py --dataset chat-intl --tokenizer wide --repeat 15

Writer: the same 4 batches of 256 rendered rows (tokens and masks, as ``turnkit batch`` encodes them) written with
pyarrow's defaults (Snappy, every column dictionary-encoded, statistics on every column), with turnkit's options
(``turnkit.batch._journal.parquet_writer``: the token columns without dictionary or statistics, LZ4) and with
variants between; each file is read back and must equal the batches, schema included. Transport: a batch's table
pickled (what the pool's pipe carried before) against :class:`turnkit.batch._io.Packed` (an LZ4 Arrow IPC
stream): bytes a row, and CPU microseconds a row to make and to read back. Medians of ``--repeat`` runs, cases
interleaved; the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from batch import _DATASETS, _model, _template_source  # noqa: E402
from turnkit import batch as tbatch  # noqa: E402
from turnkit.batch._io import Packed, encode_rows  # noqa: E402
from turnkit.batch._journal import parquet_writer  # noqa: E402

_TOKENS = ("input_ids", "assistant_masks")


def _variants(schema: Any) -> dict[str, Callable[[Path], Any]]:
    import pyarrow.parquet as pq

    strings = [name for name in schema.names if name not in _TOKENS]

    def options(**kwargs: Any) -> Callable[[Path], Any]:
        return lambda path: pq.ParquetWriter(path, schema, **kwargs)

    return {
        "pyarrow defaults (before)": options(),
        "no dictionary on token columns": options(use_dictionary=strings),
        "+ no statistics on token columns": options(use_dictionary=strings, write_statistics=strings),
        "+ LZ4 (turnkit)": lambda path: parquet_writer(str(path), schema, pq),
        "turnkit's, no statistics at all": options(use_dictionary=strings, write_statistics=False, compression="lz4"),
        "turnkit's, zstd": options(use_dictionary=strings, write_statistics=strings, compression="zstd"),
        "turnkit's, delta-encoded tokens": options(
            use_dictionary=strings,
            write_statistics=strings,
            compression="lz4",
            column_encoding={f"{name}.list.element": "DELTA_BINARY_PACKED" for name in _TOKENS},
        ),
    }


def _median_us(fn: Callable[[], object], rows: int, repeat: int) -> float:
    values = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        values.append(time.process_time() - start)
    return statistics.median(values) * 1e6 / rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="chat", choices=sorted(_DATASETS))
    parser.add_argument("--tokenizer", default="small", choices=["small", "wide"])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    import pyarrow as pa
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        folder.mkdir()
        _model(folder, _template_source(), args.tokenizer)
        worker = tbatch.Renderer(model=folder, masks=True)
        rows = [{"messages": c} for c in _DATASETS[args.dataset](1024)]
        tables = [
            encode_rows(worker.rows(rows[i : i + 256]), "parquet", worker.int_columns) for i in range(0, 1024, 256)
        ]
        whole = pa.concat_tables(tables)
        path = Path(tmp) / "out.parquet"
        print(
            f"{args.dataset} rows, {args.tokenizer} tokenizer, 4 batches of 256; load average {os.getloadavg()[0]:.1f}"
        )
        variants = _variants(tables[0].schema)

        def write(open_writer: Callable[[Path], Any]) -> None:
            with open_writer(path) as writer:
                for table in tables:
                    writer.write_table(table)

        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.repeat):
            for name, open_writer in variants.items():
                times[name].append(_median_us(lambda open_writer=open_writer: write(open_writer), 1024, 1))
        print(f"  {'writer':<36} {'CPU-us/row':>10} {'file KB':>8}")
        for name, open_writer in variants.items():
            write(open_writer)
            back = pq.read_table(path)
            assert back.schema == whole.schema and back.equals(whole), name
            print(f"  {name:<36} {statistics.median(times[name]):10.1f} {path.stat().st_size / 1024:8.0f}")
        table = tables[0]
        pickled = pickle.dumps(table)
        packed = pickle.dumps(Packed(table))
        print(f"  {'worker -> main, a batch of 256':<36} {'bytes/row':>10} {'make us':>8} {'read us':>8}")
        for name, data, make, read in (
            ("pickled table (before)", pickled, lambda: pickle.dumps(table), lambda: pickle.loads(pickled)),
            (
                "Packed (LZ4 Arrow IPC)",
                packed,
                lambda: pickle.dumps(Packed(table)),
                lambda: pickle.loads(packed).table(),
            ),
        ):
            made = _median_us(make, 256, args.repeat)
            taken = _median_us(read, 256, args.repeat)
            print(f"  {name:<36} {len(data) / 256:10.0f} {made:8.1f} {taken:8.1f}")
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
