"""``turnkit lint``: portability findings for chat templates, printed like a compiler prints them."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from turnkit.cli import CliError
from turnkit.cli._io import read_text
from turnkit.lint import ENGINES, LintFinding, lint

EXIT_FINDINGS = 1


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lint",
        help="check chat templates for constructs other Jinja engines render differently",
        description="Check chat templates (files or model folders) for Python-only Jinja, printed dicts and "
        "booleans, leaked whitespace and other portability problems; with --engines, also render them in "
        "minijinja and @huggingface/jinja and report every difference from transformers. Exit status: 1 when "
        "an error-severity finding is reported, 0 otherwise, 2 on bad usage or unreadable input.",
    )
    parser.add_argument(
        "targets", nargs="+", metavar="TEMPLATE|FOLDER", help="a template file, a model folder, or - for standard input"
    )
    parser.add_argument(
        "--engines",
        metavar="LIST",
        default="",
        help=f"comma-separated engines to cross-render with: {', '.join(ENGINES)}",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    engines = [name.strip() for name in args.engines.split(",") if name.strip()]
    unknown = [name for name in engines if name not in ENGINES]
    if unknown:
        raise CliError(f"unknown engine {unknown[0]!r}: choose from {', '.join(ENGINES)}")
    findings: list[LintFinding] = []
    for target in args.targets:
        source: Any = read_text("-") if target == "-" else Path(target)
        findings += lint(source, engines=engines, path="<stdin>" if target == "-" else target)
    if args.format == "json":
        json.dump([finding.to_dict() for finding in findings], sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        for finding in findings:
            print(finding.format())
        errors = sum(finding.severity == "error" for finding in findings)
        print(f"{len(findings)} finding(s), {errors} error(s)", file=sys.stderr)
    return EXIT_FINDINGS if any(finding.severity == "error" for finding in findings) else 0
