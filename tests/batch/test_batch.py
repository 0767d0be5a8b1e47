"""turnkit batch: files in, files out, bad rows recorded, order kept, resumable; local processes, Ray, datasets."""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.clirun import run_cli
from turnkit import BatchInputError, ChatTemplate, MissingDependencyError, TurnkitError
from turnkit import batch as tbatch

TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.role == 'assistant' %}{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}"
    "{% else %}{{ m.content }}<|im_end|>{% endif %}\n{% endfor %}"
    "{% if tools %}<tools>{{ tools | map(attribute='function.name') | join(',') }}</tools>{% endif %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}}


def _chat(i: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": f"answer number {i}"}]


def _good_rows(n: int) -> list[dict[str, Any]]:
    return [{"id": i, "messages": _chat(i), **({"tools": [TOOL]} if i % 3 == 0 else {})} for i in range(n)]


BAD_ROWS = [
    ({"id": "bad-missing"}, "messages: missing"),
    ({"id": "bad-role", "messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role: unknown role"),
    ({"id": "bad-content", "messages": [{"role": "user", "content": 5}]}, "messages[0].content: expected a string"),
    (
        {"id": "bad-tool", "messages": _chat(1), "tools": [{"type": "function", "function": {"parameters": {}}}]},
        "tools[0].function.name",
    ),
    ({"id": "bad-tool-type", "messages": _chat(1), "tools": "not json"}, "tools: is a string but not valid JSON"),
]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder: chat template, special tokens and a tokenizer.json trained here."""
    from tests.render.test_tokenize import _added_tokens, build_tokenizer

    folder = tmp_path_factory.mktemp("model")
    build_tokenizer("bpe", tuple(_added_tokens(TEMPLATE))).save(str(folder / "tokenizer.json"))
    config = {"chat_template": TEMPLATE, **SPECIAL}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def _write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows), encoding="utf-8"
    )
    return path


def _read(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return list(pq.read_table(path).to_pylist())
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def test_render_rows_match_chat_template_and_keep_order(tmp_path: Path, model: Path) -> None:
    rows = _good_rows(40)
    source = _write_jsonl(tmp_path / "in.jsonl", rows)
    summary = tbatch.render(source, tmp_path / "out.jsonl", model=model, masks=True, workers=2, batch_size=7)
    assert (summary.rows, summary.errors) == (40, 0)
    out = _read(tmp_path / "out.jsonl")
    template = ChatTemplate.from_pretrained(model)
    assert [row["id"] for row in out] == list(range(40))
    for row in out:
        tools = [TOOL] if row["id"] % 3 == 0 else None
        assert row["prompt"] == template.render(row["messages"], tools=tools)
        expected = template.render(row["messages"], tools=tools, tokenize=True, return_assistant_tokens_mask=True)
        assert row["input_ids"] == expected["input_ids"]
        assert row["assistant_masks"] == expected["assistant_masks"] and 1 in row["assistant_masks"]
    assert "<tools>get_weather</tools>" in out[0]["prompt"] and "<tools>" not in out[1]["prompt"]


def test_bad_rows_are_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    rows: list[Any] = [*_good_rows(2), *[bad for bad, _ in BAD_ROWS], "{not json", "[1, 2]", *_good_rows(1)]
    source = _write_jsonl(tmp_path / "in.jsonl", rows)
    template = tmp_path / "t.jinja"
    template.write_text(TEMPLATE, encoding="utf-8")
    summary = tbatch.render(source, tmp_path / "out.jsonl", template=template)
    out = _read(tmp_path / "out.jsonl")
    assert len(out) == len(rows) and summary.errors == len(BAD_ROWS) + 2
    for row, (_, message) in zip(out[2:], BAD_ROWS, strict=False):
        assert row["prompt"] is None and message in row["error"], row
    assert "line 8: invalid JSON" in out[7]["error"] and "expected a JSON object, got list" in out[8]["error"]
    assert out[-1]["error"] is None and out[-1]["prompt"]


def test_parquet_in_and_out_streams_in_record_batches(tmp_path: Path, model: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _good_rows(30)
    pq.write_table(
        pa.Table.from_pylist([{"id": r["id"], "messages": r["messages"]} for r in rows]),
        tmp_path / "in.parquet",
        row_group_size=8,
    )
    summary = tbatch.render(
        tmp_path / "in.parquet", tmp_path / "out.parquet", model=model, tokenize=True, batch_size=5, workers=2
    )
    assert summary.rows == 30 and summary.errors == 0
    out = _read(tmp_path / "out.parquet")
    assert [row["id"] for row in out] == [str(i) for i in range(30)]  # non-string input columns as JSON text
    assert all(isinstance(row["input_ids"], list) and row["input_ids"] for row in out)
    # one atomic group per task: 6 batches (the last ones are split in tasks of 64 rows: these are smaller)
    assert pq.ParquetFile(tmp_path / "out.parquet").metadata.num_row_groups == 6


def test_corrupt_or_missing_input_fails_before_any_output(tmp_path: Path) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(BatchInputError, match="not a readable parquet file"):
        tbatch.render(tmp_path / "bad.parquet", tmp_path / "out.jsonl", template=TEMPLATE)
    assert not (tmp_path / "out.jsonl").exists()
    with pytest.raises(BatchInputError, match="does not exist"):
        tbatch.render(tmp_path / "nope.jsonl", tmp_path / "out.jsonl", template=TEMPLATE)
    with pytest.raises(BatchInputError, match="unknown file kind"):
        tbatch.render(tmp_path / "bad.parquet", tmp_path / "out.csv", template=TEMPLATE)
    assert not (tmp_path / "out.jsonl").exists()


def _interrupt_after(rows: int, worker: tbatch.Renderer, source: Path, output: Path) -> None:
    """Run in batches of 10 and stop like Ctrl-C once ``rows`` rows are done."""

    def stop(done: int) -> None:
        if done >= rows:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tbatch.run(worker, source, output, batch_size=10, on_batch=stop)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_interrupted_run_leaves_complete_rows_and_resume_carries_on(tmp_path: Path, suffix: str, workers: int) -> None:
    rows = _good_rows(50)
    source = _write_jsonl(tmp_path / "in.jsonl", rows)
    output = tmp_path / f"out{suffix}"
    worker = tbatch.Renderer(template=TEMPLATE)
    _interrupt_after(20, worker, source, output)
    if suffix == ".jsonl":
        with open(output, "a", encoding="utf-8") as handle:
            handle.write('{"id": 20, "prompt": "cut in the midd')  # a line torn by a kill
    partial = _read(output) if suffix == ".parquet" else _read_whole_lines(output)
    assert len(partial) == 20
    summary = tbatch.run(worker, source, output, batch_size=10, resume=True, workers=workers)
    assert summary.skipped == 20 and summary.rows == 30
    out = _read(output)
    assert [int(row["id"]) for row in out] == list(range(50))


def _read_whole_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n")[:-1]]


def test_parse_rows_into_messages(tmp_path: Path) -> None:
    outputs = [
        {"generated_text": '<think>plan</think>Sure. <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'},
        {"generated_text": "plain answer"},
        {"generated_text": 17},
    ]
    source = _write_jsonl(tmp_path / "in.jsonl", outputs)
    summary = tbatch.parse(source, tmp_path / "out.jsonl", format="hermes", workers=2)
    out = _read(tmp_path / "out.jsonl")
    assert summary.errors == 1 and "generated_text: expected the model output as a string, got int" in out[2]["error"]
    assert out[0]["message"]["reasoning_content"] == "plan"
    assert out[0]["message"]["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a": 1}'}
    assert out[1]["message"]["content"] == "plain answer"


def test_ray_data_llm_pre_and_postprocess(model: Path) -> None:
    pre = tbatch.preprocess(model=model, sampling_params={"max_tokens": 8})
    row = pre({"messages": [{"role": "user", "content": "hi"}], "tools": [TOOL]})
    template = ChatTemplate.from_pretrained(model)
    assert row["prompt"] == template.render(
        [{"role": "user", "content": "hi"}], tools=[TOOL], add_generation_prompt=True
    )
    assert row["sampling_params"] == {"max_tokens": 8} and row["error"] is None
    continued = pre({"messages": _chat(1)})
    assert not continued["prompt"].endswith("<|im_start|>assistant\n")  # Ray's rule: last role is the assistant's
    post = tbatch.postprocess("hermes")
    parsed = post({"generated_text": '<tool_call>{"name": "f", "arguments": {}}</tool_call>'})
    assert parsed["tool_calls"][0]["function"]["name"] == "f" and parsed["error"] is None
    import pickle

    assert pickle.loads(pickle.dumps(pre))({"messages": _chat(2)})["prompt"] == template.render(_chat(2))


def test_renderer_on_columns_matches_rows(model: Path) -> None:
    renderer = tbatch.renderer(model=model, masks=True)
    columns = {"id": [0, 1], "messages": [_chat(0), _chat(1)]}
    out = renderer(columns)
    assert out["prompt"] == [renderer.row({"messages": _chat(i)})["prompt"] for i in range(2)]
    assert len(out["assistant_masks"]) == 2 and out["error"] == [None, None]


def test_datasets_map_batched_with_processes(model: Path) -> None:
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_list([{"id": i, "messages": _chat(i)} for i in range(12)])
    mapped = dataset.map(tbatch.renderer(model=model, tokenize=True), batched=True, batch_size=4, num_proc=2)
    template = ChatTemplate.from_pretrained(model)
    assert mapped["prompt"] == [template.render(_chat(i)) for i in range(12)]
    assert mapped["input_ids"][5] == template.render(_chat(5), tokenize=True, return_dict=False)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_ray_engine_on_a_local_cluster(tmp_path: Path, model: Path) -> None:
    try:
        import ray  # noqa: F401
        import ray.data  # noqa: F401
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but ray is not installed: pip install 'turnkit[ray]'")
        pytest.skip("ray is not installed (pip install 'turnkit[ray]')")
    rows = _good_rows(24) + [BAD_ROWS[1][0]]
    source = _write_jsonl(tmp_path / "in.jsonl", rows)
    rows[3]["messages"][0]["content"] = "line\u2028separator"  # one JSON line, though str.splitlines cuts it
    source = _write_jsonl(tmp_path / "in.jsonl", rows)
    try:
        summary = tbatch.render(
            source, tmp_path / "out.jsonl", model=model, masks=True, engine="ray", workers=2, batch_size=6
        )
        in_parquet = tbatch.render(source, tmp_path / "out.parquet", model=model, masks=True, engine="ray", workers=2)
    finally:
        import ray

        ray.shutdown()
    out = _read(tmp_path / "out.jsonl")
    local = tbatch.Renderer(model=model, masks=True).rows(rows)
    assert summary.rows == 25 and summary.errors == 1
    assert out == local
    tbatch.render(source, tmp_path / "local.parquet", model=model, masks=True)
    assert in_parquet.rows == 25 and _read(tmp_path / "out.parquet") == _read(tmp_path / "local.parquet")


def test_missing_extra_is_a_one_line_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from turnkit._extras import require

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'turnkit\[batch\]'"):
        require("pyarrow", "batch", purpose="parquet")
    assert issubclass(MissingDependencyError, ImportError)


def test_cli_batch_render_and_parse(tmp_path: Path, model: Path) -> None:
    source = _write_jsonl(tmp_path / "in.jsonl", [*_good_rows(5), BAD_ROWS[0][0]])
    result = run_cli(
        "batch",
        "render",
        "--model",
        str(model),
        "--input",
        str(source),
        "--output",
        str(tmp_path / "out.jsonl"),
        "--masks",
        "--workers",
        "2",
        "--no-progress",
    )
    code, err = result.returncode, result.stderr
    assert code == 0, err
    assert "6 rows" in err and "1 errors" in err and "messages: missing" in err
    assert len(_read(tmp_path / "out.jsonl")) == 6
    result = run_cli(
        "batch",
        "render",
        "--template",
        str(tmp_path / "none.jinja"),
        "--input",
        str(source),
        "--output",
        str(tmp_path / "o2.jsonl"),
    )
    code, err = result.returncode, result.stderr
    assert code == 2 and "none.jinja" in err
    (tmp_path / "bad.parquet").write_bytes(b"garbage")
    result = _cli_parse(tmp_path / "bad.parquet", tmp_path / "o3.jsonl")
    code, err = result.returncode, result.stderr
    assert code == 2 and "not a readable parquet file" in err and not (tmp_path / "o3.jsonl").exists()
    result = _cli_parse(source, tmp_path / "o4.parquet", "--compression", "snappy")
    assert result.returncode == 0, result.stderr
    import pyarrow.parquet as pq

    assert pq.ParquetFile(tmp_path / "o4.parquet").metadata.row_group(0).column(0).compression == "SNAPPY"
    result = _cli_parse(source, tmp_path / "o5.parquet", "--compression", "brotli")
    assert result.returncode == 2 and "invalid choice: 'brotli'" in result.stderr


def audited_cli(log: Path, modules: tuple[str, ...], *args: str) -> Any:
    """Run the command with an audit hook, which forked workers inherit, that appends to ``log`` a line
    ``pid event`` for each fork (``os.fork``) and each import of one of ``modules``."""
    import subprocess

    from tests.clirun import cli_env

    hook = (
        "import os, sys\n"
        "def hook(event, args):\n"
        f"    if event == 'os.fork' or event == 'import' and args[0] in {modules!r}:\n"
        "        line = f'{os.getpid()} {event} {args[0] if args else \"\"}'.rstrip()\n"
        f"        with open({str(log)!r}, 'a') as f: f.write(line + '\\n')\n"
        "sys.addaudithook(hook)\n"
        "from turnkit.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", hook, *args], capture_output=True, text=True, env=cli_env(), timeout=120
    )


def test_the_progress_bar_is_imported_after_the_workers_start(tmp_path: Path, model: Path) -> None:
    """Importing rich (~50 ms) delayed the workers' start; the bar now appears with the first batch done."""
    source = _write_jsonl(tmp_path / "in.jsonl", _good_rows(40))
    log = tmp_path / "events.log"
    args = ["--input", str(source), "--output", str(tmp_path / "out.jsonl"), "--workers", "2", "--batch-size", "8"]
    result = audited_cli(log, ("rich",), "batch", "render", "--model", str(model), *args)
    assert result.returncode == 0, result.stderr
    assert "40/? " in result.stderr and "rows/s" in result.stderr  # the bar (drawn once at its end off a terminal)
    events = log.read_text().splitlines()
    first = events.index(next(line for line in events if line.endswith("import rich")))
    assert any(line.endswith("os.fork") for line in events[:first]), events


def _cli_parse(source: Path, output: Path, *options: str) -> Any:
    return run_cli("batch", "parse", "--format", "hermes", "--input", str(source), "--output", str(output), *options)


@pytest.mark.parametrize("argv", [["batch", "--help"], ["batch", "render", "--help"], ["batch", "parse", "--help"]])
def test_cli_help(argv: list[str]) -> None:
    result = run_cli(*argv)
    assert result.returncode == 0 and "usage: turnkit batch" in result.stdout


def test_parquet_output_keeps_columns_that_appear_after_the_first_batch(tmp_path: Path) -> None:
    """tools first appear in row 12 (the third batch): a declared column, kept. An unknown column appearing late
    cannot join the file's schema: that row says so in its error; nothing is dropped silently."""
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = [{"id": i, "messages": _chat(i)} for i in range(15)]
    rows[12]["tools"] = [TOOL]
    rows[13]["late"] = "x"
    source = _write_jsonl(tmp_path / "in.jsonl", rows)
    summary = tbatch.render(source, tmp_path / "out.parquet", template=TEMPLATE, batch_size=5, workers=2)
    out = _read(tmp_path / "out.parquet")
    assert "tools" in pq.ParquetFile(tmp_path / "out.parquet").schema_arrow.names
    assert json.loads(out[12]["tools"]) == [TOOL] and "<tools>get_weather</tools>" in out[12]["prompt"]
    assert out[12]["error"] is None and out[11]["tools"] is None
    assert summary.errors == 1 and "'late'" in out[13]["error"] and "batch_schema" in out[13]["error"]
    assert out[13]["prompt"] and "late" in summary.first_errors[0]


def test_ray_resume_reads_only_the_rows_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from turnkit.batch import _engine, _io

    rows = _good_rows(50)
    source = _write_jsonl(tmp_path / "in.jsonl", rows)
    output = tmp_path / "out.jsonl"
    worker = tbatch.Renderer(template=TEMPLATE)
    tbatch.run(worker, source, output, batch_size=10, on_batch=lambda done: None)
    _write_jsonl(output, _read(output)[:20])
    seen: list[int] = []

    def fake_ray(worker: Any, path: str, kind: str, workers: int, batch_size: int) -> Any:
        chunks = list(_io.open_source(path).chunks(batch_size))
        seen.append(sum(len(chunk[1]) for chunk in chunks))
        return (_engine._process(worker, chunk, kind) for chunk in chunks)

    monkeypatch.setattr(_engine, "_ray_results", fake_ray)
    summary = tbatch.run(worker, source, output, engine="ray", batch_size=10, resume=True)
    assert seen == [30] and summary.skipped == 20 and summary.rows == 30
    assert [row["id"] for row in _read(output)] == list(range(50))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]  # the tail file is gone


def test_workers_read_their_own_byte_ranges_and_write_part_files(tmp_path: Path, model: Path) -> None:
    """With several workers, JSON lines go to them as byte ranges and come back as part files: the output, the
    errors and their line numbers are the same as one in-process worker's, and no part file is left behind."""
    from turnkit.batch import _io

    rows: list[Any] = [*_good_rows(23), "{not json", "", "   ", *_good_rows(9), "[1]"]
    source = _write_jsonl(tmp_path / "in.jsonl", rows)
    outputs = []
    for workers in (1, 2):
        output = tmp_path / f"out{workers}.jsonl"
        summary = tbatch.render(source, output, model=model, masks=True, workers=workers, batch_size=5)
        assert (summary.rows, summary.errors) == (34, 2)
        outputs.append(output.read_bytes())
    assert outputs[0] == outputs[1]
    assert gc.get_freeze_count() == 0  # the objects frozen for the forked workers are unfrozen again
    out = _read(tmp_path / "out2.jsonl")
    assert "line 24: invalid JSON" in out[23]["error"] and "line 34: expected a JSON object" in out[33]["error"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out1.jsonl", "out2.jsonl"]
    opened = _io.open_source(source)
    ranges = list(opened.chunks(5, skip=3, ranges=True))
    assert {chunk[0] for chunk in ranges} == {"jsonl-range"}
    assert [_io.decode_chunk(chunk) for chunk in ranges] == [
        _io.decode_chunk(chunk) for chunk in opened.chunks(5, skip=3)
    ]


def test_an_interrupted_write_is_cut_back_to_the_last_complete_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from turnkit.batch import _io

    output = tmp_path / "out.jsonl"
    sink = _io.open_sink(output)
    sink.write([{"id": 1}])
    part = _io.write_part(_io.encode_rows([{"id": i} for i in range(2, 5)], "jsonl"), str(tmp_path / "0.jsonl"))

    def torn(raw: Any, data: bytes) -> None:
        raw.write(data[: len(data) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(_io, "_write_all", torn)
    with pytest.raises(KeyboardInterrupt):
        sink.write_encoded(part, 3)
    sink.close()
    assert output.read_text(encoding="utf-8") == '{"id": 1}\n'


def test_json_lines_that_fit_in_one_batch_are_done_without_starting_workers(
    tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSON-lines input does not say its size: the run reads ahead one batch before it starts the workers, and
    rows that fit in it are done in this process, the same output as the workers give."""
    from turnkit.batch import _engine

    pools = []

    class Counted(_engine._Pool):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pools.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(_engine, "_Pool", Counted)
    source = _write_jsonl(tmp_path / "in.jsonl", [*_good_rows(5), "{not json", "", BAD_ROWS[1][0]])
    shared = tbatch.render(source, tmp_path / "pool.jsonl", model=model, masks=True, batch_size=3, workers=2)
    assert len(pools) == 1  # 7 rows, batches of 3: the workers start
    alone = tbatch.render(source, tmp_path / "alone.jsonl", model=model, masks=True, batch_size=7, workers=2)
    assert len(pools) == 1  # 7 rows, batches of 7: they do not
    assert (alone.rows, alone.errors) == (shared.rows, shared.errors) == (7, 2)
    assert (tmp_path / "alone.jsonl").read_bytes() == (tmp_path / "pool.jsonl").read_bytes()
    _write_jsonl(source, [*_good_rows(5), "{not json", "", BAD_ROWS[1][0], *_good_rows(1)])
    assert tbatch.render(source, tmp_path / "more.jsonl", model=model, batch_size=7, workers=2).rows == 8
    assert len(pools) == 2  # one row more than a batch: they start


def test_forked_workers_inherit_a_worker_that_ran_on_the_first_row(tmp_path: Path) -> None:
    """Before it forks the workers, the run gives the worker the input's first row in this process: what a worker
    builds on first use (imports, a template's checks, a tokenizer) is then inherited, not built in each worker."""
    calls = []

    class Counted(tbatch.Parser):
        def rows(self, rows: Any) -> list[dict[str, Any]]:
            calls.append(len(rows))
            return super().rows(rows)

    source = _write_jsonl(tmp_path / "in.jsonl", [{"generated_text": f"answer {i}"} for i in range(20)])
    summary = tbatch.run(Counted("hermes"), source, tmp_path / "out.jsonl", workers=2, batch_size=4)
    assert summary.rows == 20
    assert calls == [1]  # here: the first row, once; every row in the workers


@pytest.mark.parametrize(("method", "suffix"), [("spawn", ".jsonl"), ("forkserver", ".parquet")])
def test_workers_started_without_fork_give_the_in_process_output(
    tmp_path: Path, model: Path, method: str, suffix: str
) -> None:
    """Spawned (macOS's default) and forkserver (Linux's from Python 3.14) workers get the renderer pickled and
    import everything else by module path: the same output as one in-process worker (JSON lines: the same
    bytes, from part files; parquet: the same rows, as Arrow tables through the pool's pipes)."""
    import multiprocessing

    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} here")
    rows: list[Any] = [*_good_rows(14), BAD_ROWS[1][0], "{not json", *_good_rows(3)]
    source = _write_jsonl(tmp_path / "in.jsonl", rows)
    alone = tbatch.render(source, tmp_path / f"one{suffix}", model=model, masks=True, batch_size=4)
    summary = tbatch.render(
        source, tmp_path / f"two{suffix}", model=model, masks=True, batch_size=4, workers=2, start_method=method
    )
    assert (summary.rows, summary.errors) == (alone.rows, alone.errors) == (19, 2)
    if suffix == ".jsonl":
        assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    else:
        assert _read(tmp_path / "two.parquet") == _read(tmp_path / "one.parquet")
    assert gc.get_freeze_count() == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", f"one{suffix}", f"two{suffix}"]


def test_start_method_is_checked(tmp_path: Path) -> None:
    from turnkit.batch import _engine

    source = _write_jsonl(tmp_path / "in.jsonl", _good_rows(3))
    with pytest.raises(TurnkitError, match="start_method"):
        tbatch.render(source, tmp_path / "out.jsonl", template=TEMPLATE, workers=2, start_method="thread")  # type: ignore[arg-type]

    class Local(tbatch.Parser):  # a class defined in a function: spawn cannot pickle it
        pass

    with pytest.raises(TurnkitError, match="cannot be pickled"):
        tbatch.run(Local("hermes"), source, tmp_path / "out.jsonl", workers=2, start_method="spawn")
    assert _engine._start_method() == ("spawn" if sys.platform == "darwin" else "fork")


def test_a_resumed_parquet_run_killed_before_its_new_file_was_closed_loses_nothing(tmp_path: Path) -> None:
    """Resuming parquet output moves the finished rows to ``out.parquet.resume`` and copies them into a new file;
    killed in between (a new file without its footer), the next resume puts the finished rows back."""
    source = _write_jsonl(tmp_path / "in.jsonl", _good_rows(30))
    output = tmp_path / "out.parquet"
    worker = tbatch.Renderer(template=TEMPLATE)
    _interrupt_after(10, worker, source, output)
    finished = output.read_bytes()
    os.replace(output, tmp_path / "out.parquet.resume")
    output.write_bytes(finished[: len(finished) // 2])  # the kill: rows copied, no footer
    summary = tbatch.run(worker, source, output, batch_size=10, resume=True)
    assert (summary.skipped, summary.rows) == (10, 20)
    assert [int(row["id"]) for row in _read(output)] == list(range(30))
    # killed after the new file was closed but before the old rows' copy was removed: the new file counts
    (tmp_path / "out.parquet.resume").write_bytes(finished)
    assert tbatch.run(worker, source, output, batch_size=10, resume=True).skipped == 30
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.parquet"]
