"""The ``turnkit`` command. Thin: every subcommand calls the public API.

Each subcommand lives in its own module beside this one and exposes
``register(subparsers) -> None``, which adds its parser and sets ``handler``
(a function taking the parsed ``argparse.Namespace`` and returning an exit code).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import sys
from collections.abc import Callable, Sequence

from turnkit.errors import TurnkitError

# One line per subcommand module, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = (
    "demo",
    "render",
    "parse",
    "formats",
    "partial_types",
    "serve",
    "lint",
    "batch",
)

EXIT_BAD_INPUT = 2


class CliError(Exception):
    """A user-facing CLI failure: printed as one line, exit code 2."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``turnkit`` parser with every subcommand, or with ``command``'s alone (a module of :data:`COMMANDS`):
    importing every command's module costs a run ~0.2 s, which a short ``turnkit batch`` pays before its workers."""
    parser = argparse.ArgumentParser(
        prog="turnkit",
        description="The conversation I/O layer of LLM applications: render prompts, parse model output, "
        "stream structured JSON.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in COMMANDS if command is None else (command,):
        module = importlib.import_module(f"turnkit.cli.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``turnkit`` console script (``argv`` ``None``: this process's own command line)."""
    program = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0].replace("-", "_") if argv else None
    parser = build_parser(command if command in COMMANDS else None)
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    code = _handle(handler, args)
    if program:
        # The process ends next: the interpreter's last garbage collections would walk every object left (~35 ms
        # after a batch run, pyarrow's and jinja2's and the tokenizer's memo among them); frozen, they go with it.
        gc.freeze()
    return code


def _handle(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        return int(handler(args))
    except KeyboardInterrupt:
        print("turnkit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except (TurnkitError, CliError, OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        print(f"turnkit: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.strerror or exc}: {exc.filename}"
    elif isinstance(exc, json.JSONDecodeError):
        text = f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _version() -> str:
    from turnkit import __version__

    return __version__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
