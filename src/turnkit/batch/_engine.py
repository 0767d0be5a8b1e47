"""Running a row worker over a file: in this process, in local worker processes, or on Ray Data.

Order is preserved. The local engine keeps at most ``2 x workers`` batches (``4 x workers`` tasks of 64 rows, or
of parquet output) in flight, so memory stays flat whatever the input size; the Ray engine runs the same worker as
``map_batches`` and streams the results back in order into the same sink.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib.util
import itertools
import json
import multiprocessing
import multiprocessing.pool
import os
import pickle
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from turnkit._args import check_fields, expect, expect_callable, expect_choice, expect_int, expect_path
from turnkit._extras import require
from turnkit.batch._io import (
    Chunk,
    Packed,
    Sent,
    Source,
    complete_rows,
    decode_chunk,
    encode_rows,
    file_kind,
    open_sink,
    open_source,
    write_part,
)
from turnkit.batch._journal import PARQUET_COMPRESSIONS
from turnkit.batch._parts import parts_folder, release_inherited_locks, remove_stale
from turnkit.batch._rows import Renderer
from turnkit.batch._terminate import terminate_as_interrupt
from turnkit.errors import TurnkitError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

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


@dataclass
class _Done:
    """A processed batch as a worker hands it back: the encoded output (:func:`encode_rows`), its row count and
    the errors by index in the batch."""

    payload: Any
    count: int
    errors: list[tuple[int, str]]


def _process(
    worker: Worker, chunk: Chunk, kind: str, part: str | None = None, *, pack: bool = False, schema: Any = None
) -> _Done:
    """Decode a chunk, run the worker, encode the output for the sink: all of it in the worker process. With
    ``part``, JSON lines are written to that file, and only its name goes back to the main process; with
    ``pack``, an Arrow table goes back :class:`Packed` (with the output's ``schema`` once the sink has one)."""
    rows = _run_rows(worker, decode_chunk(chunk))
    errors = [(index, row["error"]) for index, row in enumerate(rows) if row.get("error") is not None]
    payload = encode_rows(rows, kind, getattr(worker, "int_columns", ()))
    if part is not None:
        payload = write_part(payload, part)
    elif pack and kind == "parquet":
        payload = Packed(payload, schema)
    return _Done(payload, len(rows), errors)


def _run_rows(worker: Worker, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if type(worker) is Renderer:  # masks as bytes, which the writers take as they are (not a subclass's rows())
        return worker.rows(rows, mask_bytes=True)
    return worker.rows(rows)  # type: ignore[no-any-return]


def _warm(worker: Worker, chunk: Chunk, kind: str) -> None:
    """Run ``worker`` on the chunk's first row here, before the workers are forked, so that what it builds on first
    use (imports, the template's checks, the tokenizer and its piece encoder) is inherited instead of built again in
    each worker. In a fresh process (the command) a worker's first task cost ~320-360 ms of CPU and ~15,000 page
    faults, ~70 ms and ~4,000 with this; its next tasks ~60 ms (256 chat rows, small tokenizer)."""
    encode_rows(_run_rows(worker, decode_chunk(chunk)[:1]), kind, getattr(worker, "int_columns", ()))


_WORKER: Any = None


def _init_worker(worker: Worker) -> None:
    global _WORKER
    # Ctrl-C and SIGTERM reach the whole process group: the main process stops the run and then its workers
    # (SIGKILL: see _Pool), so a worker ignores them instead of printing a traceback of its own or dying with one
    # of the pool's queue locks held, which would hang the main process. They were held since the fork.
    for number in _STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    release_inherited_locks()
    # one process per core: tokenizers' own thread pool in every worker would oversubscribe the cores
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.environ["RAYON_NUM_THREADS"] = "1"
    _WORKER = worker


def _work(chunk: Chunk, kind: str, part: str | None, schema: Any) -> _Done:
    return _process(_WORKER, chunk, kind, part, pack=True, schema=schema)


_SHARD = 64
"""Rows per task with several local workers (JSON lines input), and of the tasks a parquet input's last batches
are split in: small tasks keep the processes evenly busy to the end of the file (the last task is all that one
may wait for), and cost a file (JSON-lines output) or a row group (parquet output) each."""


def _even_end(chunks: Iterator[Chunk], left: int | None, tail: int) -> Iterator[Chunk]:
    """Parquet record batches, those among the last ``tail`` rows (of ``left``) split in tasks of :data:`_SHARD`
    rows: a batch per task, one process would otherwise wait for another's last whole batch at the end of the run
    (~54 ms of ~1 s at 6,000 chat rows and 2 processes). They are written as smaller row groups."""
    for chunk in chunks:
        kind, batch, first = chunk
        if kind != "parquet" or left is None or left > tail:
            yield chunk
        else:
            for start in range(0, batch.num_rows, _SHARD):
                yield kind, batch.slice(start, _SHARD), first
        if left is not None and kind == "parquet":
            left -= batch.num_rows


StartMethod = Literal["fork", "forkserver", "spawn"]


def _start_method(requested: str | None = None) -> str:
    """The start method of local worker processes: ``requested``, else fork where the platform has it (workers
    inherit the compiled template and loaded tokenizer instead of each building their own), except on macOS,
    whose system libraries are not fork-safe (its default, spawn, there)."""
    methods = multiprocessing.get_all_start_methods()
    if requested is None:
        return "fork" if "fork" in methods and sys.platform != "darwin" else methods[0]
    if requested not in methods:
        raise TurnkitError(
            f"start_method {requested!r} is not available here (available: {', '.join(methods)})", code="batch_usage"
        )
    return requested


def _local_results(
    worker: Worker,
    source: Source,
    kind: str,
    workers: int,
    batch_size: int,
    skip: int,
    output: str,
    method: str,
    schema: Callable[[], Any],
) -> Generator[_Done, None, None]:
    """The processed batches in order; ``schema()`` is the parquet output's schema once it has one, sent with
    each task so that workers send tables the sink journals and writes as they are."""
    forked = method == "fork"
    if workers > 1 and not forked:
        try:
            pickle.dumps(worker)
        except Exception as exc:  # noqa: BLE001 - pickle raises PicklingError, AttributeError, TypeError...
            raise TurnkitError(
                f"start_method {method!r} sends the worker to each process, and it cannot be pickled: {exc}",
                code="batch_usage",
            ) from exc
    left = None if source.total is None else source.total - skip
    size = min(batch_size, _SHARD) if source.kind == "jsonl" else batch_size
    chunks = source.chunks(size, skip=skip, ranges=True)
    tasks = -(-batch_size // size)  # a batch's worth of tasks (of JSON lines: up to 63 rows more)
    head = list(itertools.islice(chunks, tasks + 1)) if workers > 1 else []
    if workers <= 1 or len(head) <= tasks or (left is not None and left <= batch_size):
        # one batch of work (read ahead: a JSON-lines input does not say its size): starting the workers would cost
        # more than it (64 chat rows: ~0.1 s of start-up and first tasks against ~0.03 s of work), so it is done here
        for chunk in source.chunks(batch_size, skip=skip):
            yield _process(worker, chunk, kind)
        return
    if forked:
        _warm(worker, head[0], kind)
    # Parquet output is written by this process (~50 CPU-us a row), so it is one of the N: N - 1 worker processes
    # and this one, which renders a task itself whenever they hold enough. N workers and this process's writing on
    # N cores took turns with each other (2 workers: ~1.66x one's speed). JSON-lines output costs this process
    # only copying part files: N workers.
    shared = kind == "parquet"
    work = _even_end(itertools.chain(head, chunks), left, 2 * workers * batch_size)
    context = multiprocessing.get_context(method)
    # The workers' garbage collector would touch every object they inherit and copy the pages holding them (a
    # process with transformers loaded: ~45% more worker CPU); frozen objects are left alone.
    if forked:
        gc.freeze()
    try:
        with contextlib.ExitStack() as stack:
            parts = None if shared else stack.enter_context(parts_folder(output))
            with _stop_signals_held():  # the workers start with them ignored (see _init_worker)
                processes = workers - 1 if shared else workers
                pool = stack.enter_context(
                    _Pool(processes, initializer=_init_worker, initargs=(worker,), context=context)
                )
            if shared:
                yield from _shared(pool, work, worker, workers, schema)
                return
            # Workers read their own rows (byte ranges of a JSON-lines file; parquet record batches are sent to
            # them) and write JSON-lines output to part files of their own: the main process only finds line ends
            # and copies the parts into the output in order, and nothing big goes through a pipe.
            assert parts is not None
            pending: deque[Any] = deque()
            ahead = (4 if size < batch_size else 2) * workers  # small tasks: more queued, so no worker waits
            for number, chunk in enumerate(work):
                part = os.path.join(parts, f"{number}.jsonl")
                pending.append(pool.apply_async(_work, (_sendable(chunk), kind, part, None)))
                if len(pending) >= ahead:
                    yield pending.popleft().get()
            while pending:
                yield pending.popleft().get()
    finally:
        if forked:
            gc.unfreeze()


def _shared(
    pool: multiprocessing.pool.Pool, tasks: Iterator[Chunk], worker: Worker, workers: int, schema: Callable[[], Any]
) -> Generator[_Done, None, None]:
    """Parquet tasks done by the pool's ``workers - 1`` processes and by this one, their results in order: a task
    goes to the pool while it holds fewer than 3 a process (one running, two queued: a batch done here and the
    writes after it take longer than one of theirs, and with one queued a worker sat idle ~10-20 % of a run), or 2
    of the small tasks of the end (the last ones a process waits for), else it is done here. What is done is
    handed on to be written as soon as the tasks before it are."""
    pending: deque[multiprocessing.pool.AsyncResult[_Done] | _Done] = deque()
    for chunk in tasks:
        busy = sum(not item.ready() for item in pending if not isinstance(item, _Done))
        if busy < (2 if _rows(chunk) <= _SHARD else 3) * (workers - 1):
            pending.append(pool.apply_async(_work, (_sendable(chunk), "parquet", None, schema())))
        else:
            pending.append(_process(worker, chunk, "parquet"))
        while pending and (isinstance(pending[0], _Done) or pending[0].ready() or len(pending) >= 4 * workers):
            yield _result(pending.popleft())
    while pending:
        yield _result(pending.popleft())


def _rows(chunk: Chunk) -> int:
    """A chunk's row count (a JSON-lines task: at most :data:`_SHARD`)."""
    return int(chunk[1].num_rows) if chunk[0] == "parquet" else _SHARD


def _result(item: multiprocessing.pool.AsyncResult[_Done] | _Done) -> _Done:
    return item if isinstance(item, _Done) else item.get()


def _sendable(chunk: Chunk) -> Chunk:
    """A chunk as it goes to a worker process: a parquet record batch as an Arrow IPC stream (:class:`Sent`)."""
    return (chunk[0], Sent(chunk[1]), chunk[2]) if chunk[0] == "parquet" else chunk


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _stop_signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM ignored and held back while worker processes start: a forked worker inherits both, a
    spawned one what outlives ``exec`` (ignored signals stay ignored, and Python then leaves SIGINT alone), until
    its initializer ignores them for good. One that comes meanwhile is kept pending for this process (blocked
    signals are not discarded on Linux) and reaches its own handler after, so the run stops. Only the main thread
    handles signals: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    blocking = hasattr(signal, "pthread_sigmask")  # not on Windows: Ctrl-C is only ignored meanwhile there
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS) if blocking else None
    previous = [signal.signal(number, signal.SIG_IGN) for number in _STOP_SIGNALS]
    try:
        yield
    finally:
        for number, handler in zip(_STOP_SIGNALS, previous, strict=True):
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)


_PIPE_BYTES = 1 << 20


class _Pool(multiprocessing.pool.Pool):
    """A process pool whose ``terminate()`` kills its workers with SIGKILL (they ignore SIGTERM), where the
    standard pool sends SIGTERM, but only once the pool's task thread has sent its last message. A worker killed
    while it writes a result holds the result queue's lock forever, and that thread's last message waits on it:
    the standard pool then hangs (rare when workers are stopped at the end of a run, frequent mid-run).

    Its worker thread waits only for a worker to exit or the pool's state to change: the standard pool also wakes
    it whenever the result pipe is readable, so it spins until the result thread has read each result (2,300-3,500
    wake-ups and ~20-70 ms of CPU a 6,000-row parquet run, taking the GIL from the threads that do the work).

    Its pipes hold 1 MB (Linux), not 64 KB: a worker writes a packed result (~100 KB for 256 chat rows) at once, and
    a queued task's rows (~420 KB) wait in the pipe. Through a 64 KB pipe the worker waited, after each 64 KB of a
    result, for the main process's result thread to read it, and that thread waits for the GIL, which the main
    thread holds while it renders (parquet output: see :func:`_shared`)."""

    def _setup_queues(self) -> None:
        super()._setup_queues()  # type: ignore[misc]
        size = getattr(fcntl, "F_SETPIPE_SZ", None)
        if size is None:  # not Linux
            return
        for queue in (self._inqueue, self._outqueue):  # type: ignore[attr-defined]
            with contextlib.suppress(AttributeError, OSError):  # no such pipe here, or above pipe-max-size
                fcntl.fcntl(queue._writer.fileno(), size, _PIPE_BYTES)

    def _get_sentinels(self) -> list[Any]:
        return [self._change_notifier._reader]  # type: ignore[attr-defined]

    def terminate(self) -> None:
        # patched here, on the started workers (a spawned worker was pickled to start: its own copy is not touched)
        for process in getattr(self, "_pool", ()):
            process.terminate = functools.partial(self._kill, process)
        super().terminate()

    def _kill(self, process: Any) -> None:
        sender = getattr(self, "_task_handler", None)
        if sender is not None and sender is not threading.current_thread():
            sender.join(timeout=10)  # bounded: a worker stuck writing a big result to a full pipe never lets go
        process.kill()


def _ray_results(worker: Worker, path: str, kind: str, workers: int, batch_size: int) -> Generator[_Done, None, None]:
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
            runtime_env={
                "env_vars": {"PYTHONPATH": python_path, "TOKENIZERS_PARALLELISM": "false", "RAYON_NUM_THREADS": "1"}
            },
        )
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    if file_kind(path) == "parquet":
        dataset = ray.data.read_parquet(path)
    else:
        # lines as text, decoded by the worker: Arrow's JSON reader would add null keys to ragged objects
        dataset = ray.data.read_text(path, drop_empty_lines=True)
    ints = getattr(worker, "int_columns", ())

    def apply(columns: dict[str, Any]) -> dict[str, Any]:
        """One input batch in, one row out: the batch's JSON lines and errors, so the driver only writes."""
        rows = columns_to_rows(columns)
        if "text" in columns and len(columns) == 1:
            rows = [_json_row(row["text"], 0) for row in rows]
        outs = worker.rows(rows)
        errors = [[index, out["error"]] for index, out in enumerate(outs) if out.get("error") is not None]
        return {
            "lines": numpy.array([encode_rows(outs, "jsonl", ints)], dtype=object),
            "count": numpy.array([len(outs)]),
            "errors": numpy.array([json.dumps(errors)], dtype=object),
        }

    mapped = dataset.map_batches(apply, batch_size=batch_size, concurrency=max(workers, 1), batch_format="numpy")
    for done in mapped.iter_rows():
        lines = bytes(done["lines"])
        count = int(done["count"])
        errors = [(int(index), str(error)) for index, error in json.loads(str(done["errors"]))]
        if kind == "jsonl":
            yield _Done(lines, count, errors)
        else:
            # split on "\n" only: the encoder escapes it inside strings
            rows = [json.loads(line) for line in lines.split(b"\n")[:-1]]
            yield _Done(encode_rows(rows, kind, ints), count, errors)


@terminate_as_interrupt()  # SIGTERM stops the run as Ctrl-C does, when the program has no handler of its own
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
    start_method: StartMethod | None = None,
    compression: str = "lz4",
) -> Summary:
    """Run ``worker`` over every row of ``input`` into ``output`` and return a :class:`Summary`.

    The input is checked before the output is touched. ``resume`` keeps the complete rows already in
    ``output`` and carries on after them (the rows before are neither read by the workers nor processed).
    ``start_method`` (``"fork"``, ``"forkserver"``, ``"spawn"``) starts the local worker processes; by default
    fork, except on macOS (spawn); forked workers inherit ``worker`` after this process has run it on the input's
    first row (the result is dropped), so that what it builds on first use is built once. Other than fork, the
    worker is pickled to each process. ``compression`` is the
    codec of a parquet output's pages: ``"lz4"`` (the fastest to write; Spark reads it from 3.5 on), ``"snappy"``
    (pyarrow's default, read everywhere), ``"zstd"``, ``"gzip"`` or ``"none"``.

    Ctrl-C (``KeyboardInterrupt``) stops the run with complete rows only in the output; so does SIGTERM, raising
    :class:`~turnkit.batch.Terminated`, when the run is in the main thread and the program has not set a SIGTERM
    handler of its own (see :mod:`~turnkit.batch._terminate`).
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
    if start_method is not None:
        expect_choice(start_method, ("fork", "forkserver", "spawn"), name="start_method", func="run")
    expect_choice(compression, PARQUET_COMPRESSIONS, name="compression", func="run")
    method = _start_method(start_method) if engine == "local" and workers > 1 else ""
    if engine not in ("local", "ray"):
        raise TurnkitError(f"engine must be 'local' or 'ray', got {engine!r}", code="batch_usage")
    if workers < 1 or batch_size < 1:
        raise TurnkitError("workers and batch_size must be at least 1", code="batch_usage")
    kind = file_kind(output)
    source = open_source(input)
    if os.path.abspath(os.fspath(input)) == os.path.abspath(os.fspath(output)):
        raise TurnkitError("the output would overwrite the input: choose another output path", code="batch_usage")
    remove_stale(os.fspath(output))  # what killed runs on this output left (never a live run's)
    skip = complete_rows(output, compression) if resume else 0
    summary = Summary(skipped=skip)
    started = time.perf_counter()
    bar = _Progress(source.total, skip) if progress else None
    declared = _declared_columns(worker, source.columns)
    sink = open_sink(output, append=resume and skip > 0, declared=declared, compression=compression)
    tail: str | None = None
    results: Generator[_Done, None, None] | None = None
    try:
        if engine == "ray":
            path = source.path
            if skip:
                # Ray reads whole files: give it only the rows still to do
                tail = f"{os.fspath(output)}.tail{os.path.splitext(source.path)[1]}"
                source.tail(skip, tail)
                path = tail
            results = _ray_results(worker, path, kind, workers, batch_size)
        else:
            results = _local_results(
                worker, source, kind, workers, batch_size, skip, os.fspath(output), method, lambda: sink.schema
            )
        for done in results:
            errors = dict(done.errors)
            added = sink.write_encoded(done.payload, done.count)
            for index in sorted(added):
                if index not in errors:
                    errors[index] = added[index]
            summary.errors += len(errors)
            for index in sorted(errors)[: max(0, 5 - len(summary.first_errors))]:
                summary.first_errors.append(f"row {skip + summary.rows + index + 1}: {errors[index]}")
            summary.rows += done.count
            if bar is not None:
                bar.advance(done.count)
            if on_batch is not None:
                on_batch(summary.rows)
    finally:
        if results is not None:
            results.close()  # now, not when the traceback is gone: stops the workers and removes the part files
        sink.close()
        if tail is not None and os.path.exists(tail):
            os.remove(tail)
        if bar is not None:
            bar.close()
        summary.seconds = time.perf_counter() - started
    return summary


def _declared_columns(worker: Worker, input_columns: list[str]) -> list[str]:
    """Columns parquet output has even when the first batch lacks them: the input file's, the worker's input
    columns (``messages``, ``tools``, ``documents``) and its output columns."""
    names = [*input_columns]
    for attribute in ("messages_column", "tools_column", "documents_column", "text_column"):
        name = getattr(worker, attribute, None)
        if isinstance(name, str) and getattr(worker, "keep_columns", True):
            names.append(name)
    names += list(getattr(worker, "output_columns", []))
    return list(dict.fromkeys(names))


class _Progress:
    """A rich progress bar on standard error with rows/s. It appears with the first batch done: importing rich
    (~50 ms) then overlaps the workers' first tasks, where it delayed their start."""

    def __init__(self, total: int | None, done: int) -> None:
        if importlib.util.find_spec("rich") is None:  # missing: say so now, before any output is written
            require("rich", "batch", purpose="the progress bar")
        self._total = total
        self._done_before = done
        self._started = time.perf_counter()
        self._done = 0
        self._progress: Any = None

    def _start(self) -> None:
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
        self._task = self._progress.add_task("rows", total=self._total, completed=self._done_before, rate="-")
        self._progress.start()

    def advance(self, rows: int) -> None:
        if self._progress is None:
            self._start()
        self._done += rows
        rate = self._done / max(time.perf_counter() - self._started, 1e-9)
        self._progress.update(self._task, advance=rows, rate=f"{rate:,.0f}")

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
