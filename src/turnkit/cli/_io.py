"""Reading the CLI's input files: paths or ``-`` for standard input, JSON with clear errors."""

from __future__ import annotations

import json
import sys
from typing import Any

from turnkit.cli import CliError


def read_text(path: str) -> str:
    """The text of ``path``, or of standard input when ``path`` is ``-``."""
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def read_json(path: str, *, what: str) -> Any:
    """Parse the JSON in ``path``; a decode error names the file and what it was meant to hold."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        name = "standard input" if path == "-" else path
        raise CliError(
            f"{what} file {name} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
