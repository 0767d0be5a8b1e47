"""A multi-worker ``turnkit batch`` killed or interrupted mid-run: complete rows only, ``--resume`` finishes the
output exactly, nothing left behind. Real subprocesses, real signals to their process group."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clirun import cli_env, run_cli, start_cli
from turnkit import batch as tbatch
from turnkit.batch import _parts

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups"),
]

ROWS = 240
# ~1 ms a row (12,000 loop steps; Nov 26: 0.34 ms with 4,000, short enough for a loaded machine to let the run end
# before the signal): long enough for the run to be stopped in its middle, short enough for a fast test
SLOW = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{% for i in range(12000) %}{% if i == 0 %}{{ m.content }}"
    "{% endif %}{% endfor %}<|im_end|>\n{% endfor %}"
)


@pytest.fixture
def job(tmp_path: Path) -> dict[str, Path]:
    rows = [{"id": i, "messages": [{"role": "user", "content": f"question {i}"}]} for i in range(ROWS)]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    template = tmp_path / "slow.jinja"
    template.write_text(SLOW, encoding="utf-8")
    expected = tmp_path / "expected.jsonl"
    tbatch.render(source, expected, template=template)
    return {"input": source, "template": template, "expected": expected, "output": tmp_path / "out" / "out.jsonl"}


def _args(job: dict[str, Path], *extra: str) -> list[str]:
    return [
        "batch",
        "render",
        "--template",
        str(job["template"]),
        "--input",
        str(job["input"]),
        "--output",
        str(job["output"]),
        "--workers",
        "2",
        "--batch-size",
        "4",
        "--no-progress",
        *extra,
    ]


def _stop_mid_run(
    job: dict[str, Path], sig: int, *extra: str, group: bool = True, after: int = 8, script: str | None = None
) -> tuple[int, str]:
    """Start the run (the CLI, or a Python ``script`` given the job's paths) in a process group of its own; once
    the output holds ``after`` rows (by default two batches), send ``sig`` to the whole group (as a terminal's
    Ctrl-C does, or a kill of the job), or to the main process alone (``docker stop``, a plain ``kill``). Two: a
    batch whose bytes are visible may still be cut back by the interruption (it lands before the write returns),
    the one before it may not. Parquet output: rows in its journal."""
    output = job["output"]
    output.parent.mkdir(exist_ok=True)
    if script is None:
        process = start_cli(*_args(job, *extra), start_new_session=True)
    else:
        paths = [str(job[name]) for name in ("input", "output", "template")]
        command = [sys.executable, "-c", script, *paths, *extra]
        process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=cli_env(), start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while _rows_written(output) < after and process.poll() is None:
            assert time.monotonic() < deadline, "no output row after 30 s"
            time.sleep(0.002)
        with contextlib.suppress(ProcessLookupError):  # the run ended early: its exit code and message say why
            (os.killpg if group else os.kill)(process.pid, sig)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode, err


def _rows_written(output: Path) -> int:
    """Complete rows in JSON-lines output, or in the journal of parquet output being written (``_journal``), read
    here with pyarrow alone: the IPC stream messages that are whole."""
    if output.suffix != ".parquet":
        return output.read_bytes().count(b"\n") if output.exists() else 0
    import pyarrow as pa
    import pyarrow.ipc as ipc

    rows = 0
    try:
        reader = ipc.open_stream(pa.memory_map(str(output) + ".journal"))
        while True:
            rows += reader.read_next_batch().num_rows
    except (StopIteration, pa.ArrowInvalid, OSError):  # the end, a message being written, or no journal yet
        return rows


def _parts_left(job: dict[str, Path]) -> list[str]:
    return sorted(p.name for p in job["output"].parent.iterdir() if p.name.startswith(".turnkit-parts-"))


@pytest.mark.parametrize("rerun", ["--resume", "overwrite"])
def test_a_killed_run_is_resumed_exactly_and_its_part_files_are_removed(job: dict[str, Path], rerun: str) -> None:
    code, err = _stop_mid_run(job, signal.SIGKILL)
    assert code == -signal.SIGKILL, err
    complete = job["output"].read_bytes().count(b"\n")
    assert complete < ROWS  # stopped mid-run (a torn last line is possible: a kill is a kill)
    assert _parts_left(job), "the killed run's part folder should still be there"
    if rerun == "--resume":
        result = run_cli(*_args(job, "--resume"))
        assert result.returncode == 0 and f"{complete} rows skipped" in result.stderr, result.stderr
    else:
        tbatch.render(job["input"], job["output"], template=job["template"], workers=2, batch_size=4)
    assert job["output"].read_bytes() == job["expected"].read_bytes()  # every row once, in order, none torn
    assert _parts_left(job) == []


@pytest.mark.parametrize(
    ("sig", "method", "group"),
    [
        (signal.SIGINT, "fork", True),
        (signal.SIGINT, "spawn", True),
        (signal.SIGTERM, "fork", True),
        (signal.SIGTERM, "spawn", True),
        (signal.SIGTERM, "fork", False),
    ],
)
def test_ctrl_c_or_sigterm_leaves_complete_rows_one_message_and_resume_finishes(
    job: dict[str, Path], sig: int, method: str, group: bool
) -> None:
    """SIGTERM (a scheduler stopping the job, ``kill``), to the whole group or the main process alone, stops
    the run as Ctrl-C does: the workers stopped, complete rows only, one line said, exit 128 + the signal."""
    returncode, err = _stop_mid_run(job, sig, "--start-method", method, group=group)
    said = "interrupted" if sig == signal.SIGINT else "terminated (SIGTERM)"
    assert returncode == 128 + sig, err
    assert err.count("\n") == 1 and f"turnkit batch: {said};" in err and "--resume" in err, err
    written = job["output"].read_text(encoding="utf-8")
    assert written.endswith("\n") and 0 < written.count("\n") < ROWS
    expected = job["expected"].read_text(encoding="utf-8")
    assert expected.startswith(written)  # whole rows, in order
    assert _parts_left(job) == []
    summary = tbatch.render(job["input"], job["output"], template=job["template"], workers=2, batch_size=4, resume=True)
    assert summary.skipped == written.count("\n") and summary.skipped + summary.rows == ROWS
    assert job["output"].read_text(encoding="utf-8") == expected


def test_sigterm_on_a_first_parquet_run_writes_the_footer_and_resume_finishes(job: dict[str, Path]) -> None:
    """A first run's parquet output has no footer until it is closed: SIGTERM closes it, as Ctrl-C does."""
    pq = pytest.importorskip("pyarrow.parquet")
    job["output"] = job["output"].with_suffix(".parquet")
    returncode, err = _stop_mid_run(job, signal.SIGTERM)
    assert returncode == 143 and "terminated (SIGTERM)" in err, err
    written = pq.ParquetFile(job["output"]).metadata.num_rows
    assert 0 < written < ROWS
    summary = tbatch.render(job["input"], job["output"], template=job["template"], workers=2, batch_size=4, resume=True)
    assert summary.skipped == written and summary.skipped + summary.rows == ROWS
    expected = [json.loads(line) for line in job["expected"].read_text(encoding="utf-8").splitlines()]
    got = pq.read_table(job["output"]).to_pylist()
    assert [(row["id"], row["prompt"]) for row in got] == [(str(row["id"]), row["prompt"]) for row in expected]


def _parquet_job(job: dict[str, Path]) -> Any:
    """Parquet output for ``job``, and an uninterrupted run's table to compare with: returns ``pyarrow.parquet``."""
    pq = pytest.importorskip("pyarrow.parquet")
    job["output"] = job["output"].with_suffix(".parquet")
    job["expected"] = job["expected"].with_suffix(".parquet")
    tbatch.render(job["input"], job["expected"], template=job["template"], workers=2, batch_size=4)
    return pq


def _killed(job: dict[str, Path], *extra: str, after: int = 8) -> int:
    """SIGKILL a parquet run mid-run; the complete rows its journal holds (what a resume keeps)."""
    code, err = _stop_mid_run(job, signal.SIGKILL, *extra, after=after)
    assert code == -signal.SIGKILL, err
    return _rows_written(job["output"])


def _left_beside(job: dict[str, Path]) -> list[str]:
    return sorted(p.name for p in job["output"].parent.iterdir())


def test_a_first_parquet_run_killed_outright_is_resumed_from_its_journal(job: dict[str, Path]) -> None:
    """SIGKILL leaves parquet output without its footer (no reader opens it) and its journal: ``--resume``
    rebuilds the output from the journal's complete batches and finishes it, equal to an uninterrupted run."""
    pq = _parquet_job(job)
    journaled = _killed(job)
    assert 8 <= journaled < ROWS
    with pytest.raises(Exception, match="(?i)parquet|footer|magic"):
        pq.ParquetFile(job["output"])
    result = run_cli(*_args(job, "--resume"))
    assert result.returncode == 0 and f"{journaled} rows skipped" in result.stderr, result.stderr
    got, expected = pq.read_table(job["output"]), pq.read_table(job["expected"])
    assert got.schema == expected.schema and got.to_pylist() == expected.to_pylist()
    assert _left_beside(job) == ["out.parquet"]  # no journal, part folder or copy left


def test_a_resumed_parquet_run_killed_outright_is_resumed_again(job: dict[str, Path]) -> None:
    """A resumed run copies the finished rows (``<output>.resume``) into a new file and its journal, then goes on;
    killed outright after that, the next ``--resume`` keeps the copied and the new rows."""
    pq = _parquet_job(job)
    first = _killed(job)
    second = _killed(job, "--resume", after=first + 8)
    assert first + 8 <= second < ROWS
    assert {"out.parquet", "out.parquet.journal", "out.parquet.resume"} <= set(_left_beside(job))
    result = run_cli(*_args(job, "--resume"))
    assert result.returncode == 0 and f"{second} rows skipped" in result.stderr, result.stderr
    assert pq.read_table(job["output"]).to_pylist() == pq.read_table(job["expected"]).to_pylist()
    assert _left_beside(job) == ["out.parquet"]


SCRIPT = """
import signal, sys
import turnkit.batch

source, output, template, mode = sys.argv[1:5]
called = []
if mode == "own handler":
    signal.signal(signal.SIGTERM, lambda *_: called.append(1))
try:
    summary = turnkit.batch.render(source, output, template=template, workers=2, batch_size=4)
except turnkit.batch.Terminated as exc:
    if mode != "catch":
        raise
    print(f"caught: {exc}", file=sys.stderr)
    sys.exit(143)
print(f"{summary.rows} rows, handler called {len(called)}", file=sys.stderr)
"""


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_sigterm_stops_a_python_api_run_as_ctrl_c_does(job: dict[str, Path], suffix: str) -> None:
    """A program calling ``turnkit.batch.render`` under a job scheduler (SIGTERM to the main process alone, at its
    default action): the run stops with complete rows only (parquet: its footer written, no journal left), no part
    file left, and raises ``turnkit.batch.Terminated``; ``resume=True`` finishes the output exactly."""
    if suffix == ".parquet":
        pq = _parquet_job(job)
    returncode, err = _stop_mid_run(job, signal.SIGTERM, "catch", group=False, script=SCRIPT)
    assert returncode == 143 and "caught: SIGTERM: the batch run stopped" in err, err
    if suffix == ".parquet":
        written = pq.ParquetFile(job["output"]).metadata.num_rows  # the footer is there
    else:
        text = job["output"].read_text(encoding="utf-8")
        assert text.endswith("\n") and job["expected"].read_text(encoding="utf-8").startswith(text)
        written = text.count("\n")
    assert 0 < written < ROWS
    assert _left_beside(job) == [job["output"].name]  # no journal, part folder or copy left
    summary = tbatch.render(job["input"], job["output"], template=job["template"], workers=2, batch_size=4, resume=True)
    assert summary.skipped == written and summary.skipped + summary.rows == ROWS
    if suffix == ".parquet":
        assert pq.read_table(job["output"]).to_pylist() == pq.read_table(job["expected"]).to_pylist()
    else:
        assert job["output"].read_bytes() == job["expected"].read_bytes()


def test_terminated_uncaught_ends_the_program_with_a_traceback(job: dict[str, Path]) -> None:
    """Uncaught, ``Terminated`` ends the program as other exceptions do: a traceback, exit status 1 (CPython ends
    by SIGINT only for ``KeyboardInterrupt`` itself, not a subclass)."""
    returncode, err = _stop_mid_run(job, signal.SIGTERM, "uncaught", group=False, script=SCRIPT)
    assert returncode == 1 and "turnkit.batch._terminate.Terminated: SIGTERM" in err, err
    assert job["output"].read_text(encoding="utf-8").endswith("\n")


def test_a_program_s_own_sigterm_handler_is_left_alone(job: dict[str, Path]) -> None:
    """The run does not take SIGTERM from a program that handles it: the handler is called, the run finishes."""
    returncode, err = _stop_mid_run(job, signal.SIGTERM, "own handler", group=False, script=SCRIPT)
    assert returncode == 0 and f"{ROWS} rows, handler called 1" in err, err
    assert job["output"].read_bytes() == job["expected"].read_bytes()


@pytest.fixture
def default_sigterm() -> Iterator[None]:
    """SIGTERM at its default action in this process for the test (``ray.init`` in an earlier test sets its own)."""
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGTERM, previous)


@pytest.mark.usefixtures("default_sigterm")
def test_the_run_s_sigterm_handler_lasts_as_long_as_the_run_and_only_replaces_the_default(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(
        "".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"}]}) + "\n" for i in range(12))
    )
    worker = tbatch.Renderer(template="{{ messages[0].content }}")
    output = tmp_path / "out.jsonl"

    def terminate(done: int) -> None:
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)  # else SIGTERM kills pytest
        if done == 4:
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(tbatch.Terminated):
        tbatch.run(worker, source, output, batch_size=2, on_batch=terminate)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert output.read_text(encoding="utf-8").count("\n") == 4

    def own(signum: int, frame: object) -> None:
        raise AssertionError("not sent")

    seen: list[object] = []
    signal.signal(signal.SIGTERM, own)
    tbatch.run(worker, source, output, batch_size=2, on_batch=lambda _: seen.append(signal.getsignal(signal.SIGTERM)))
    assert seen == [own] * 6 and signal.getsignal(signal.SIGTERM) is own
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # in another thread, the run cannot set handlers: SIGTERM keeps its default action
    seen.clear()
    thread = threading.Thread(
        target=tbatch.run,
        args=(worker, source, output),
        kwargs={"batch_size": 2, "on_batch": lambda _: seen.append(signal.getsignal(signal.SIGTERM))},
    )
    thread.start()
    thread.join()
    assert seen == [signal.SIG_DFL] * 6


def test_only_the_part_folders_of_dead_runs_on_this_output_are_removed(tmp_path: Path) -> None:
    output = str(tmp_path / "out.jsonl")
    dead = tmp_path / ".turnkit-parts-out.jsonl.dead1234"
    dead.mkdir()
    (dead / "3.jsonl").write_text("{}\n", encoding="utf-8")
    (dead / ".lock").touch()  # its run's lock died with it
    born = tmp_path / ".turnkit-parts-out.jsonl.born1234"
    born.mkdir()  # killed before it made its lock
    other = tmp_path / ".turnkit-parts-other.jsonl.dead5678"
    other.mkdir()
    with _parts.parts_folder(output) as live:
        assert Path(live).name.startswith(".turnkit-parts-out.jsonl.")
        removed = _parts.remove_stale(output)
        assert sorted(removed) == sorted([str(dead), str(born)])
        assert os.path.isdir(live) and other.is_dir() and not dead.exists() and not born.exists()
        # a forked worker closes its copy of the lock: the lock lives as long as the main process's
        held = set(_parts._HELD)
        assert held
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+: fork with threads about
            child = os.fork()
        if child == 0:  # pragma: no cover - the child
            _parts.release_inherited_locks()
            os._exit(0 if all(_closed(fd) for fd in held) else 1)
        assert os.waitpid(child, 0)[1] == 0
        assert _parts.remove_stale(output) == [] and os.path.isdir(live)
    assert not os.path.exists(live)
    assert _parts.remove_stale(output) == [] and other.is_dir()


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False
