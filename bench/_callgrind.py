"""Instructions a worker process executes under callgrind: deterministic figures for a noisy shared machine."""

from __future__ import annotations

import os
import re
import subprocess


def count(command: list[str], *, env: dict[str, str] | None = None) -> tuple[int, int]:
    """(instructions, the last number the worker printed) of ``command`` run under ``valgrind --tool=callgrind``."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    )
    match = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if match is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(match.group(1)), int(done.stdout.split()[-1])
