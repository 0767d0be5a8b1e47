"""``turnkit parse`` through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.clirun import run_cli
from tests.corpora import REPO_ROOT

OUTPUT = 'Hi<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'


def test_parse_prints_message_json() -> None:
    out = run_cli("parse", "--format", "hermes", "-", stdin=OUTPUT)
    assert out.returncode == 0, out.stderr
    message = json.loads(out.stdout)
    assert message["content"] == "Hi"
    assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": {"a": 1}}


def test_stream_prints_one_delta_per_line(tmp_path: object) -> None:
    out = run_cli("parse", "--format", "hermes", "--stream", "-", stdin=OUTPUT)
    assert out.returncode == 0, out.stderr
    deltas = [json.loads(line) for line in out.stdout.splitlines()]
    assert deltas[0] == {"content": "Hi"}
    assert deltas[1]["tool_calls"][0]["function"]["name"] == "f"
    args = "".join(d["tool_calls"][0]["function"]["arguments"] for d in deltas[1:])
    assert json.loads(args) == {"a": 1}


def test_prefix_file_starts_in_reasoning(tmp_path: object) -> None:
    from pathlib import Path

    prefix = Path(str(tmp_path)) / "prompt.txt"
    prefix.write_text("<|im_start|>assistant\n<think>\n", encoding="utf-8")
    out = run_cli("parse", "--format", "hermes", "--prefix", str(prefix), "-", stdin="hmm</think>ok")
    assert json.loads(out.stdout)["reasoning_content"] == "hmm"


def test_stream_emits_before_input_ends() -> None:
    """Deltas appear while stdin is still open (the command reads incrementally)."""
    env_path = str(REPO_ROOT / "src")
    proc = subprocess.Popen(
        [sys.executable, "-m", "turnkit.cli", "parse", "--format", "hermes", "--stream", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("Hello there ")
    proc.stdin.flush()
    line = proc.stdout.readline()
    assert json.loads(line) == {"content": "Hello there"}
    _rest, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


def test_unknown_format_is_one_line_error() -> None:
    out = run_cli("parse", "--format", "hermse", "-", stdin="x")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "hermes" in out.stderr


def test_missing_file_is_clear() -> None:
    out = run_cli("parse", "--format", "hermes", "/nonexistent/file.txt")
    assert out.returncode == 2 and "/nonexistent/file.txt" in out.stderr


def test_help_mentions_stream() -> None:
    out = run_cli("parse", "--help")
    assert out.returncode == 0 and "--stream" in out.stdout


def test_schema_calls_parse_response(tmp_path: object) -> None:
    from pathlib import Path

    import turnkit

    schema = {
        "type": "object",
        "properties": {
            "thinking": {"type": "string"},
            "content": {"type": "string"},
        },
        "x-regex": r"(?s)^(?:<think>(?P<thinking>.*?)</think>)?\s*(?P<content>.*)$",
    }
    path = Path(str(tmp_path)) / "schema.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    text = "<think>hmm</think>Hello"
    out = run_cli("parse", "--schema", str(path), "-", stdin=text)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == turnkit.parse_response(text, schema)
