"""Machine instructions per conversation of ``turnkit batch`` file to file and of transformers, counted by valgrind.

    python bench/batch_instructions.py                       # chat rows, both tokenizers
    python bench/batch_instructions.py --tokenizer wide --rows 1000 --reference-rows 300

Wall-clock and even CPU-time ratios on a shared machine swing by more than the changes worth measuring; an
instruction count does not depend on the load. The same data and model folders as bench/batch.py (chat rows,
SmolLM3-3B's template, the small and wide byte-level BPE tokenizers trained there). Each case runs under
``valgrind --tool=callgrind`` once with zero and once with ``--rows`` conversations; the difference divided by
the rows is the cost per conversation, with start-up, imports and template compilation cancelled out. turnkit:
``turnkit.batch.run`` with one worker, JSON lines in and out, tokens and masks, memos starting empty as on a real
run. transformers 5.23: ``apply_chat_template(c, tokenize=True, return_dict=True,
return_assistant_tokens_mask=True)`` per conversation (it has no memo: fewer rows give the same figure).
Instructions are not time; confirm with bench/batch.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _callgrind import count  # noqa: E402


def _turnkit(folder: str, data: str, rows: int) -> None:
    from turnkit import batch as tbatch

    worker = tbatch.Renderer(model=folder, masks=True)
    worker.chat_template()
    if rows:
        with tempfile.TemporaryDirectory() as tmp:
            tbatch.run(worker, data, os.path.join(tmp, "out.jsonl"))


def _transformers(folder: str, data: str, rows: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from transformers import PreTrainedTokenizerFast
        from transformers.utils import logging
    logging.set_verbosity_error()
    config = json.loads(Path(folder, "tokenizer_config.json").read_text(encoding="utf-8"))
    source = config.pop("chat_template")
    reference = PreTrainedTokenizerFast(
        tokenizer_file=str(Path(folder, "tokenizer.json")), chat_template=source, **config
    )
    with open(data, encoding="utf-8") as handle:
        chats = [json.loads(line)["messages"] for line in handle]
    options = {"tokenize": True, "return_dict": True, "return_assistant_tokens_mask": True}
    reference.apply_chat_template(chats[0], **options)  # the template compiled in both counts
    for chat in chats[:rows]:
        reference.apply_chat_template(chat, **options)


WORKERS = {"turnkit": _turnkit, "transformers": _transformers}


def _per_row(case: str, folder: Path, data: Path, rows: int) -> float:
    def instructions(n: int) -> int:
        worker = ["--worker", case, "--folder", str(folder), "--data", str(data), "--rows", str(n)]
        return count([sys.executable, __file__, *worker], env={"TOKENIZERS_PARALLELISM": "false"})[0]

    return (instructions(rows) - instructions(0)) / rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default="small,wide", help="small, wide or both (comma-separated)")
    parser.add_argument("--rows", type=int, default=1000, help="conversations turnkit renders")
    parser.add_argument("--reference-rows", type=int, default=300, help="conversations transformers renders")
    parser.add_argument("--worker", choices=list(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
        WORKERS[args.worker](args.folder, args.data, args.rows)
        print(0)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    import batch as bench

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp, "chat.jsonl")
        rows = [{"messages": chat} for chat in bench._conversations(max(args.rows, args.reference_rows))]
        data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        for tokenizer in args.tokenizer.split(","):
            folder = Path(tmp, f"model-{tokenizer}")
            folder.mkdir()
            bench._model(folder, bench._template_source(), tokenizer)
            ours = _per_row("turnkit", folder, data, args.rows)
            theirs = _per_row("transformers", folder, data, args.reference_rows)
            print(
                f"chat, {tokenizer} tokenizer: turnkit batch file to file {ours:,.0f} instructions per conversation "
                f"({args.rows} rows), transformers per conversation {theirs:,.0f} ({args.reference_rows} rows): "
                f"{theirs / ours:.2f}x"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
