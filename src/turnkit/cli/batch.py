"""``turnkit batch``: render or parse a whole dataset (JSON lines or parquet), locally or on Ray Data."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Literal

from turnkit import batch
from turnkit.batch._journal import PARQUET_COMPRESSIONS


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "batch",
        help="render or parse a dataset (jsonl/parquet) with worker processes or Ray Data",
        description="Render conversations into prompts (and tokens and assistant masks), or parse raw model "
        "outputs into messages, for every row of a JSON-lines or parquet file. A bad row gets an 'error' column "
        "and the run goes on.",
    )
    commands = parser.add_subparsers(title="batch commands", metavar="COMMAND")

    render = commands.add_parser(
        "render",
        help="render every row's messages through a chat template",
        description="Render each row's 'messages' (with the row's own tools and documents) exactly as "
        "transformers 5.23 does; --tokenize adds input_ids, --masks adds assistant_masks.",
    )
    source = render.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", metavar="FOLDER", help="a local model folder (template, tokens, tokenizer.json)")
    source.add_argument("--template", metavar="FILE", help="a Jinja chat template file")
    render.add_argument("--tokenizer", metavar="FILE", help="tokenizer.json to use with --template (or override)")
    render.add_argument("--tokenize", action="store_true", help="add input_ids (needs a tokenizer.json)")
    render.add_argument("--masks", action="store_true", help="add assistant_masks from {%% generation %%} blocks")
    render.add_argument("--messages-column", default="messages", metavar="NAME", help="column of messages")
    render.add_argument("--tools-column", default="tools", metavar="NAME", help="column of per-row tool schemas")
    render.add_argument("--documents-column", default="documents", metavar="NAME", help="column of documents")
    render.add_argument(
        "--generation-prompt",
        choices=["yes", "no", "auto"],
        default="no",
        help="add the assistant generation prompt (auto: when the last message is not the assistant's)",
    )
    _common(render)
    render.set_defaults(handler=run_render)

    parse = commands.add_parser(
        "parse",
        help="parse every row's raw model output into a message",
        description="Parse each row's raw model output (the Ray Data LLM postprocess case) into an OpenAI-style "
        "'message' (content, reasoning_content, tool_calls).",
    )
    parse.add_argument("--format", required=True, metavar="NAME", help="the output format (see turnkit parse)")
    parse.add_argument("--text-column", default="generated_text", metavar="NAME", help="column of raw outputs")
    _common(parse)
    parse.set_defaults(handler=run_parse)
    parser.set_defaults(handler=lambda args: _help(parser))


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", required=True, metavar="FILE", help="data.jsonl or data.parquet")
    parser.add_argument("--output", required=True, metavar="FILE", help="out.jsonl or out.parquet")
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="worker processes (or Ray workers)")
    parser.add_argument("--engine", choices=["local", "ray"], default="local", help="local processes or Ray Data")
    parser.add_argument("--batch-size", type=int, default=256, metavar="N", help="rows per batch")
    parser.add_argument("--resume", action="store_true", help="keep the output's complete rows and carry on")
    parser.add_argument(
        "--start-method",
        choices=["fork", "forkserver", "spawn"],
        help="how --workers processes start (default: fork, spawn on macOS)",
    )
    parser.add_argument(
        "--compression",
        choices=PARQUET_COMPRESSIONS,
        default="lz4",
        help="parquet output's codec (default lz4, the fastest; snappy for Spark before 3.5 and other older readers)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _report(summary: batch.Summary) -> int:
    print(f"turnkit batch: {summary}", file=sys.stderr)
    for line in summary.first_errors:
        print(f"  {line}", file=sys.stderr)
    return 0


def run_render(args: argparse.Namespace) -> int:
    generation: bool | Literal["auto"] = "auto" if args.generation_prompt == "auto" else args.generation_prompt == "yes"
    worker = batch.Renderer(
        model=args.model,
        template=args.template,
        tokenizer=args.tokenizer,
        tokenize=args.tokenize,
        masks=args.masks,
        messages_column=args.messages_column,
        tools_column=args.tools_column or None,
        documents_column=args.documents_column or None,
        add_generation_prompt=generation,
    )
    return _run(worker, args)


def _run(worker: batch.Renderer | batch.Parser, args: argparse.Namespace) -> int:
    """Run ``worker`` over the input with the options both subcommands share, and print the summary."""
    written = [0]
    try:
        summary = batch.run(
            worker,
            args.input,
            args.output,
            workers=args.workers,
            engine=args.engine,
            batch_size=args.batch_size,
            resume=args.resume,
            progress=not args.no_progress,
            on_batch=lambda rows: written.__setitem__(0, rows),
            start_method=args.start_method,
            compression=args.compression,
        )
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM: batch.run stops on both alike
        how, code = ("terminated (SIGTERM)", 143) if isinstance(exc, batch.Terminated) else ("interrupted", 130)
        print(
            f"turnkit batch: {how}; {written[0]} rows written by this run, the output holds complete rows "
            "only (run again with --resume to carry on)",
            file=sys.stderr,
        )
        return code
    return _report(summary)


def run_parse(args: argparse.Namespace) -> int:
    worker = batch.Parser(args.format, text_column=args.text_column)
    return _run(worker, args)
