"""Running a row worker over a file: in this process, in local worker processes, or on Ray Data.

Order is preserved. The local engine keeps at most ``2 x workers`` batches in flight, so memory stays flat
whatever the input size; the Ray engine runs the same worker as ``map_batches`` and streams the results back in
order into the same sink.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from turnkit._args import check_fields, expect, expect_callable, expect_choice, expect_int, expect_path
from turnkit._extras import require
from turnkit.batch._io import complete_rows, file_kind, open_sink, open_source
from turnkit.errors import TurnkitError

__all__ = ["Summary", "run"]

Engine = Literal["local", "ray"]
Worker = Any  # Renderer | Parser: picklable, with .rows(list[dict]) -> list[dict]


@dataclass
class Summary:
    """What a batch run did."""

    rows: int = 0
    errors: int = 0
    skipped: int = 0
    seconds: float = 0.0
    first_errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_fields(self)

    @property
    def rows_per_second(self) -> float:
        """Throughput of this run (rows processed / wall seconds)."""
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def __str__(self) -> str:
        text = f"{self.rows} rows in {self.seconds:.1f} s ({self.rows_per_second:.0f} rows/s), {self.errors} errors"
        if self.skipped:
            text += f", {self.skipped} rows skipped (already written)"
        return text


_WORKER: Any = None


def _init_worker(worker: Worker) -> None:
    global _WORKER
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _WORKER = worker


def _work(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = _WORKER.rows(rows)
    return result


def _local_results(worker: Worker, batches: Iterator[list[dict[str, Any]]], workers: int) -> Iterator[list[Any]]:
    if workers <= 1:
        for batch in batches:
            yield worker.rows(batch)
        return
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    with context.Pool(workers, initializer=_init_worker, initargs=(worker,)) as pool:
        pending: deque[Any] = deque()
        for batch in batches:
            pending.append(pool.apply_async(_work, (batch,)))
            if len(pending) >= 2 * workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def _ray_results(worker: Worker, path: str, workers: int, batch_size: int, skip: int) -> Iterator[list[Any]]:
    require("ray.data", "ray", purpose="--engine ray")
    import numpy
    import ray
    import ray.data

    from turnkit.batch._io import _json_row
    from turnkit.batch._rows import columns_to_rows

    if not ray.is_initialized():
        # workers import the same turnkit as this process (a checkout or an install)
        import turnkit

        root = os.path.dirname(os.path.dirname(os.path.abspath(turnkit.__file__)))
        python_path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
        ray.init(
            num_cpus=max(workers, 1),
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": python_path, "TOKENIZERS_PARALLELISM": "false"}},
        )
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    if file_kind(path) == "parquet":
        dataset = ray.data.read_parquet(path)
    else:
        # lines as text, decoded by the worker: Arrow's JSON reader would add null keys to ragged objects
        dataset = ray.data.read_text(path, drop_empty_lines=True)

    def apply(columns: dict[str, Any]) -> dict[str, Any]:
        rows = columns_to_rows(columns)
        if "text" in columns and len(columns) == 1:
            rows = [_json_row(row["text"], 0) for row in rows]
        outs = worker.rows(rows)
        return {"row": numpy.array([json.dumps(out, ensure_ascii=False) for out in outs], dtype=object)}

    mapped = dataset.map_batches(apply, batch_size=batch_size, concurrency=max(workers, 1), batch_format="numpy")
    seen = 0
    for batch in mapped.iter_batches(batch_size=batch_size, batch_format="numpy"):
        rows = [json.loads(str(text)) for text in batch["row"]]
        if seen + len(rows) <= skip:
            seen += len(rows)
            continue
        start = max(0, skip - seen)
        seen += len(rows)
        yield rows[start:]


def run(
    worker: Worker,
    input: str | os.PathLike[str],  # noqa: A002
    output: str | os.PathLike[str],
    *,
    workers: int = 1,
    engine: Engine = "local",
    batch_size: int = 256,
    resume: bool = False,
    progress: bool = False,
    on_batch: Callable[[int], None] | None = None,
) -> Summary:
    """Run ``worker`` over every row of ``input`` into ``output`` and return a :class:`Summary`.

    The input is checked before the output is touched. ``resume`` keeps the complete rows already in
    ``output`` and carries on after them.
    """
    if not callable(getattr(worker, "rows", None)):
        expect(worker, (), name="worker", func="run", accepts="a Renderer or a Parser (an object with .rows())")
    expect_path(input, name="input", func="run")
    expect_path(output, name="output", func="run")
    expect_int(workers, name="workers", func="run", minimum=1)
    expect_choice(engine, ("local", "ray"), name="engine", func="run")
    expect_int(batch_size, name="batch_size", func="run", minimum=1)
    expect(resume, bool, name="resume", func="run")
    expect(progress, bool, name="progress", func="run")
    expect_callable(on_batch, name="on_batch", func="run", none=True)
    if engine not in ("local", "ray"):
        raise TurnkitError(f"engine must be 'local' or 'ray', got {engine!r}", code="batch_usage")
    if workers < 1 or batch_size < 1:
        raise TurnkitError("workers and batch_size must be at least 1", code="batch_usage")
    file_kind(output)
    source = open_source(input)
    if os.path.abspath(os.fspath(input)) == os.path.abspath(os.fspath(output)):
        raise TurnkitError("the output would overwrite the input: choose another output path", code="batch_usage")
    skip = complete_rows(output) if resume else 0
    summary = Summary(skipped=skip)
    started = time.perf_counter()
    bar = _Progress(source.total, skip) if progress else None
    sink = open_sink(output, append=resume and skip > 0)
    try:
        if engine == "ray":
            results = _ray_results(worker, source.path, workers, batch_size, skip)
        else:
            results = _local_results(worker, source.batches(batch_size, skip=skip), workers)
        for rows in results:
            sink.write(rows)
            summary.rows += len(rows)
            for row in rows:
                error = row.get("error")
                if error is not None:
                    summary.errors += 1
                    if len(summary.first_errors) < 5:
                        summary.first_errors.append(
                            f"row {skip + summary.rows - len(rows) + rows.index(row) + 1}: {error}"
                        )
            if bar is not None:
                bar.advance(len(rows))
            if on_batch is not None:
                on_batch(summary.rows)
    finally:
        sink.close()
        if bar is not None:
            bar.close()
        summary.seconds = time.perf_counter() - started
    return summary


class _Progress:
    """A rich progress bar on standard error with rows/s."""

    def __init__(self, total: int | None, done: int) -> None:
        require("rich", "batch", purpose="the progress bar")
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("[bold]turnkit batch"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]} rows/s"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._started = time.perf_counter()
        self._done = 0
        self._task = self._progress.add_task("rows", total=total, completed=done, rate="-")
        self._progress.start()

    def advance(self, rows: int) -> None:
        self._done += rows
        rate = self._done / max(time.perf_counter() - self._started, 1e-9)
        self._progress.update(self._task, advance=rows, rate=f"{rate:,.0f}")

    def close(self) -> None:
        self._progress.stop()
