"""``turnkit formats``: the built-in output formats (names, aliases, markers), or which one a template uses."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from turnkit._model_format import detect_format, model_format
from turnkit.parse import format_markers
from turnkit.parse._detect import builtin_specs


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "formats",
        help="list the built-in output formats, or detect the one a chat template uses",
        description="List the built-in model output formats with their aliases (vLLM parser names, family "
        "names), the special-token markers each declares and the prompt-side markers its templates write around "
        "the tool list and tool results. With --detect, read a chat template (a .jinja "
        "file, or a model folder) and print the format that parses its model outputs, and why.",
    )
    parser.add_argument(
        "--detect",
        metavar="FOLDER|TEMPLATE",
        help="a model folder or a .jinja template file: print the detected format and the reason",
    )
    parser.add_argument(
        "--format",
        dest="output_format",
        choices=("table", "json"),
        default="table",
        help="output as a text table (default) or JSON",
    )
    parser.set_defaults(handler=run)


def _rows() -> list[dict[str, Any]]:
    return [
        {
            "name": spec.name,
            "aliases": list(spec.aliases),
            "markers": list(format_markers(spec)),
            "prompt_markers": list(spec.prompt_markers),
            "description": spec.description,
        }
        for spec in builtin_specs()
    ]


def _detect(target: str) -> dict[str, Any]:
    if Path(target).is_dir():
        chosen = model_format(target)
        detection = chosen.detection
        result: dict[str, Any] = {"format": detection.format if detection else None}
        result.update(
            source=detection.source if detection else "none",
            markers=list(detection.markers) if detection else [],
            prompt_markers=list(detection.prompt_markers) if detection else [],
            candidates=list(detection.candidates) if detection else [],
            response_template=chosen.source == "response_template",
            uses="response_template" if chosen.source == "response_template" else result["format"],
            reason=chosen.reason,
        )
        return result
    detection = detect_format(target)
    return {
        "format": detection.format,
        "source": detection.source,
        "markers": list(detection.markers),
        "prompt_markers": list(detection.prompt_markers),
        "candidates": list(detection.candidates),
        "reason": detection.reason,
    }


def run(args: Any) -> int:
    if args.detect is not None:
        result = _detect(args.detect)
        if args.output_format == "json":
            print(json.dumps(result, ensure_ascii=False, indent=2))
        else:
            print(f"format: {result['format'] if result['format'] is not None else '(none)'}")
            if "uses" in result and result["uses"] != result["format"]:
                print(f"uses: {result['uses']}")
            print(f"source: {result['source']}")
            print(f"markers: {' '.join(result['markers']) or '(none)'}")
            if result["prompt_markers"]:
                print(f"prompt markers: {_quoted(result['prompt_markers'])}")
            print(f"why: {result['reason']}")
        return 0 if result["format"] is not None or result.get("uses") else 1
    rows = _rows()
    if args.output_format == "json":
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    width = max(len(r["name"]) for r in rows)
    out = sys.stdout
    out.write(f"{'FORMAT':<{width}}  ALIASES / MARKERS\n")
    for row in rows:
        aliases = ", ".join(row["aliases"]) or "-"
        out.write(f"{row['name']:<{width}}  aliases: {aliases}\n")
        out.write(f"{'':<{width}}  markers: {' '.join(row['markers']) or '-'}\n")
        if row["prompt_markers"]:
            out.write(f"{'':<{width}}  prompt:  {_quoted(row['prompt_markers'])}\n")
    return 0


def _quoted(markers: list[str]) -> str:
    """Markers that may contain spaces (``List of tools:``), each quoted so the list reads unambiguously."""
    return " ".join(json.dumps(m, ensure_ascii=False) for m in markers)
