"""``turnkit parse``: model output -> assistant message JSON (or one OpenAI-style delta per line)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from turnkit.cli import CliError

_READ_SIZE = 4096


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "parse",
        help="parse model output into an assistant message (built-in format or x-regex response schema)",
        description="Parse raw model output (FILE or - for standard input) into an assistant message. "
        "With --stream, print one OpenAI chat.completion.chunk delta per line as the input arrives.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--format", metavar="NAME", help="a built-in output format (e.g. hermes, qwen3_coder_xml)")
    source.add_argument("--schema", metavar="FILE", help="an x-regex response schema (JSON file)")
    parser.add_argument(
        "--prefix",
        metavar="FILE",
        help="the rendered prompt the output continues (decides whether it starts inside reasoning)",
    )
    parser.add_argument("--tools", metavar="FILE", help="JSON list of tool definitions (types XML/pythonic arguments)")
    parser.add_argument("--stream", action="store_true", help="print one delta per line as input arrives")
    parser.add_argument("input", metavar="FILE", help="the model output, or - for standard input")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from turnkit.cli._io import read_json, read_text

    if args.schema is not None:
        if args.stream:
            raise CliError("--stream works with --format only (response schemas parse complete output)")
        import turnkit

        parse_response = getattr(turnkit, "parse_response", None)
        if parse_response is None:
            raise CliError("--schema needs turnkit.parse_response, which this build does not include")
        schema = read_json(args.schema, what="response schema")
        result = parse_response(read_text(args.input), schema)
        _print(result)
        return 0

    from turnkit.parse import load_format

    fmt = load_format(args.format)
    prefix = read_text(args.prefix) if args.prefix else None
    tools = read_json(args.tools, what="tools") if args.tools else None
    if tools is not None and not isinstance(tools, list):
        raise CliError("--tools file must hold a JSON list of tool definitions")
    if not args.stream:
        _print(dict(fmt.parse(read_text(args.input), prefix=prefix, tools=tools)))
        return 0
    parser = fmt.stream(prefix=prefix, tools=tools)
    for chunk in _chunks(args.input):
        for delta in parser.feed(chunk):
            _print(delta, compact=True)
    for delta in parser.close():
        _print(delta, compact=True)
    return 0


def _chunks(path: str) -> Any:
    """Text of ``path`` (or stdin) as it arrives: stdin is read with os.read so pipes stream."""
    if path != "-":
        with open(path, encoding="utf-8") as handle:
            while chunk := handle.read(_READ_SIZE):
                yield chunk
        return
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    fd = sys.stdin.fileno()
    while True:
        data = os.read(fd, _READ_SIZE)
        if not data:
            tail = decoder.decode(b"", final=True)
            if tail:
                yield tail
            return
        text = decoder.decode(data)
        if text:
            yield text


def _print(value: Any, *, compact: bool = False) -> None:
    if compact:
        sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    else:
        sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
