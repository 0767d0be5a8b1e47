"""``turnkit serve`` as a real subprocess: starts on the embedded default, stops cleanly on SIGINT/SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import openai
import pytest

from tests.clirun import run_cli, signalled_cli
from tests.corpora import REPO_ROOT

pytestmark = pytest.mark.timeout(90)


class ServeProcess:
    def __init__(self, *args: str, ignore_sigint: bool = False) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT / "src"), env.get("PYTHONPATH")]))
        env.pop("TURNKIT_API_KEY", None)
        self.proc = subprocess.Popen(
            # `ignore_sigint`: what a shell's `turnkit serve &` does, the server inherits SIGINT ignored
            signalled_cli("serve", "--port", "0", *args, sigint="SIG_IGN" if ignore_sigint else "default_int_handler"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # bounded by the test timeout
        match = re.search(r"listening on (http://\S+)/v1", line)
        if match is None:
            self.proc.kill()
            _, err = self.proc.communicate()
            raise AssertionError(f"no URL printed: {line!r} {err}")
        self.url = match.group(1)

    def stop(self, sig: int) -> int:
        """Send ``sig``; the exit status after a graceful stop is uvicorn's convention (the signal re-raised
        once shut down): 130 for SIGINT (the CLI's KeyboardInterrupt code), killed by SIGTERM for SIGTERM."""
        self.proc.send_signal(sig)
        _, err = self.proc.communicate(timeout=15)
        assert self.proc.returncode == (130 if sig == signal.SIGINT else -sig), (self.proc.returncode, err)
        return 0


def test_no_arguments_starts_on_the_embedded_default_and_the_openai_client_works():
    server = ServeProcess()
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", timeout=10, max_retries=0)
        reply = client.chat.completions.create(model="turnkit-replay", messages=[{"role": "user", "content": "Hi"}])
        assert reply.choices[0].message.content.startswith("Hello!")
        tools = [
            {
                "type": "function",
                "function": {
                    "name": "get_current_temperature",
                    "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
                },
            }
        ]
        stream = client.chat.completions.create(
            model="turnkit-replay",
            stream=True,
            tools=tools,
            messages=[{"role": "user", "content": "Temperature in Paris?"}],
        )
        chunks = list(stream)
        assert chunks[-1].choices[0].finish_reason == "tool_calls"
    finally:
        assert server.stop(signal.SIGTERM) == 0


@pytest.mark.parametrize(
    ("sig", "ignore_sigint"), [(signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, False)]
)
def test_signal_ends_in_flight_streams_with_an_error_event(sig: int, ignore_sigint: bool):
    server = ServeProcess("--replay-delay", "0.2", ignore_sigint=ignore_sigint)
    events: list[str] = []
    got_first = threading.Event()

    def read() -> None:
        with httpx.stream(
            "POST",
            server.url + "/v1/chat/completions",
            timeout=20,
            json={"messages": [{"role": "user", "content": "Hi"}], "stream": True},
        ) as r:
            for line in r.iter_lines():
                if line.startswith("data: "):
                    events.append(line.removeprefix("data: "))
                    got_first.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert got_first.wait(10)
    started = time.monotonic()
    assert server.stop(sig) == 0
    reader.join(10)
    assert not reader.is_alive()
    assert time.monotonic() - started < 10
    assert json.loads(events[-1])["error"]["code"] == "shutting_down"


def test_help_and_startup_errors(tmp_path: Path):
    result = run_cli("serve", "--help")
    assert result.returncode == 0 and "--backend" in result.stdout and "--reasoning-field" in result.stdout
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    result = run_cli("serve", "--template", str(template), "--backend", "replay:x.jsonl")
    assert result.returncode == 2 and "--format" in result.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"output": 3}\n')
    result = run_cli("serve", "--backend", f"replay:{bad}")
    assert result.returncode == 2 and "bad.jsonl:1" in result.stderr and len(result.stderr.splitlines()) == 1
    result = run_cli("serve", "--backend", "ftp://x")
    assert result.returncode == 2 and "replay:FILE" in result.stderr


def test_format_is_detected_from_the_template(tmp_path: Path):
    from turnkit.cli import CliError
    from turnkit.cli.serve import _detected_format

    chatml = (REPO_ROOT / "src" / "turnkit" / "data" / "chatml-tools.jinja").read_text()
    assert _detected_format([chatml]) == "hermes"
    qwen3_coder = "{{ '<tool_call>\\n<function=x>\\n<parameter=y>\\n1\\n</parameter>\\n</function>' }}</tool_call>"
    assert _detected_format([qwen3_coder]) == "qwen3_coder_xml"
    with pytest.raises(CliError, match="pass --format"):
        _detected_format(["{{ messages }}"])


def test_missing_extra_is_a_one_line_install_hint():
    code = "import sys; sys.modules['starlette'] = None; from turnkit.cli import main; sys.exit(main(['serve']))"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT / "src")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "pip install 'turnkit[serve]'" in result.stderr
    code = (
        "import sys; sys.modules['starlette'] = None\n"
        "try:\n import turnkit.serve\nexcept ImportError as e: print(type(e).__name__)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.stdout.strip() == "MissingDependencyError"
