"""Run the real ``turnkit`` command in a subprocess against this checkout's sources."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from tests.corpora import REPO_ROOT


def cli_env() -> dict[str, str]:
    """This process's environment with the checkout's ``src`` first on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT / "src"), env.get("PYTHONPATH")]))
    return env


def run_cli(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "turnkit.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(),
    )


def signalled_cli(*args: str, sigint: str = "default_int_handler") -> list[str]:
    """The command line of a CLI run that a test signals: SIGINT as a terminal's foreground job has it
    (``KeyboardInterrupt``), or ``sigint="SIG_IGN"``, whatever this process inherited (a test suite started
    by a shell's ``cmd &`` has SIGINT ignored, and its children with it)."""
    code = f"import signal, sys; signal.signal(signal.SIGINT, signal.{sigint}); from turnkit.cli import main; "
    return [sys.executable, "-c", code + "sys.exit(main(sys.argv[1:]))", *args]


def start_cli(*args: str, **popen: Any) -> subprocess.Popen[str]:
    """Start the command without waiting (standard error piped): for tests that signal it mid-run."""
    return subprocess.Popen(signalled_cli(*args), stderr=subprocess.PIPE, text=True, env=cli_env(), **popen)
