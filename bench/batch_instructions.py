"""Machine instructions per conversation of ``turnkit batch`` file to file and of transformers, counted by valgrind.

    python bench/batch_instructions.py                       # chat rows, both tokenizers
    python bench/batch_instructions.py --tokenizer wide --rows 1000 --reference-rows 300
    python bench/batch_instructions.py --dataset chat,chat-intl --cases all   # parquet and datasets.map too

Wall-clock and even CPU-time ratios on a shared machine swing by more than the changes worth measuring; an
instruction count does not depend on the load. The same data and model folders as bench/batch.py (chat rows,
SmolLM3-3B's template, the small and wide byte-level BPE tokenizers trained there). Each case runs under
``valgrind --tool=callgrind`` once with zero and once with ``--rows`` conversations; the difference divided by
the rows is the cost per conversation, with start-up, imports and template compilation cancelled out. turnkit:
``turnkit.batch.run`` with one worker, tokens and masks, memos starting empty as on a real run, JSON lines in and
out (``--cases``: also parquet in and/or out, parquet input holding messages as ``list<struct>``), and
``datasets.map(renderer, batched=True)``. transformers 5.23: ``apply_chat_template(c, tokenize=True,
return_dict=True, return_assistant_tokens_mask=True)`` per conversation (it has no memo: fewer rows give the
same figure), and in ``datasets.map`` on batches of 256 (the whole dataset for both). Instructions are not time;
confirm with bench/batch.py.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _callgrind import count  # noqa: E402


def _turnkit(folder: str, data: str, rows: int, output: str = "jsonl") -> None:
    from turnkit import batch as tbatch

    worker = tbatch.Renderer(model=folder, masks=True)
    worker.chat_template()
    with tempfile.TemporaryDirectory() as tmp:
        # one row first, in both counts: imports and first-use set-up (pyarrow's writer) cancel out
        tbatch.run(worker, _first_row(data, tmp), os.path.join(tmp, f"warm.{output}"))
        if rows:
            tbatch.run(worker, data, os.path.join(tmp, f"out.{output}"))


def _first_row(data: str, folder: str) -> str:
    """A file of the same kind holding ``data``'s first row."""
    path = os.path.join(folder, "first" + os.path.splitext(data)[1])
    if data.endswith(".parquet"):
        import pyarrow.parquet as pq

        pq.write_table(pq.read_table(data).slice(0, 1), path)
    else:
        with open(data, encoding="utf-8") as source, open(path, "w", encoding="utf-8") as target:
            target.write(source.readline())
    return path


def _dataset(data: str) -> Any:
    import datasets

    datasets.disable_progress_bars()
    with open(data, encoding="utf-8") as handle:
        return datasets.Dataset.from_list([json.loads(line) for line in handle])


def _datasets_turnkit(folder: str, data: str, rows: int) -> None:
    from turnkit import batch as tbatch

    worker = tbatch.Renderer(model=folder, masks=True)
    worker.chat_template()
    dataset = _dataset(data)
    dataset.select([0]).map(worker, batched=True, load_from_cache_file=False)  # in both counts, as above
    if rows:
        dataset.map(worker, batched=True, batch_size=256, load_from_cache_file=False)


def _datasets_transformers(folder: str, data: str, rows: int) -> None:
    reference = _reference(folder)
    dataset = _dataset(data)
    options = {"tokenize": True, "return_dict": True, "return_assistant_tokens_mask": True}
    reference.apply_chat_template(dataset[0]["messages"], **options)

    def apply(batch: dict[str, Any]) -> dict[str, Any]:
        out = reference.apply_chat_template(batch["messages"], **options)
        return {"input_ids": out["input_ids"], "assistant_masks": out["assistant_masks"]}

    dataset.select([0]).map(apply, batched=True, load_from_cache_file=False)
    if rows:
        dataset.map(apply, batched=True, batch_size=256, load_from_cache_file=False)


def _reference(folder: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from transformers import PreTrainedTokenizerFast
        from transformers.utils import logging
    logging.set_verbosity_error()
    config = json.loads(Path(folder, "tokenizer_config.json").read_text(encoding="utf-8"))
    source = config.pop("chat_template")
    return PreTrainedTokenizerFast(tokenizer_file=str(Path(folder, "tokenizer.json")), chat_template=source, **config)


def _transformers(folder: str, data: str, rows: int) -> None:
    reference = _reference(folder)
    with open(data, encoding="utf-8") as handle:
        chats = [json.loads(line)["messages"] for line in handle]
    options = {"tokenize": True, "return_dict": True, "return_assistant_tokens_mask": True}
    reference.apply_chat_template(chats[0], **options)  # the template compiled in both counts
    for chat in chats[:rows]:
        reference.apply_chat_template(chat, **options)


WORKERS: dict[str, Callable[[str, str, int], None]] = {
    "turnkit": _turnkit,
    "turnkit-parquet": functools.partial(_turnkit, output="parquet"),
    "transformers": _transformers,
    "datasets-turnkit": _datasets_turnkit,
    "datasets-transformers": _datasets_transformers,
}
CASES = {
    "jsonl>jsonl": ("turnkit", "jsonl"),
    "jsonl>parquet": ("turnkit-parquet", "jsonl"),
    "parquet>jsonl": ("turnkit", "parquet"),
    "parquet>parquet": ("turnkit-parquet", "parquet"),
    "datasets": ("datasets-turnkit", "jsonl"),
}
"""``--cases``: turnkit's worker and input kind of each (datasets.map is compared with transformers in datasets)."""


def _per_row(case: str, folder: Path, data: Path, rows: int) -> float:
    def instructions(n: int) -> int:
        worker = ["--worker", case, "--folder", str(folder), "--data", str(data), "--rows", str(n)]
        return count([sys.executable, __file__, *worker], env={"TOKENIZERS_PARALLELISM": "false"})[0]

    return (instructions(rows) - instructions(0)) / rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default="small,wide", help="small, wide or both (comma-separated)")
    parser.add_argument("--dataset", default="chat", help="chat, chat-intl or both (comma-separated)")
    parser.add_argument("--cases", default="jsonl>jsonl", help=f"comma-separated among {', '.join(CASES)}, or all")
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

    cases = list(CASES) if args.cases == "all" else args.cases.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        for dataset in args.dataset.split(","):
            rows = [{"messages": chat} for chat in bench._DATASETS[dataset](max(args.rows, args.reference_rows))]
            data = Path(tmp, f"{dataset}.jsonl")
            data.write_text("".join(json.dumps(row) + "\n" for row in rows[: args.rows]), encoding="utf-8")
            reference_data = Path(tmp, f"{dataset}-reference.jsonl")
            reference_data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
            if any(CASES[case][1] == "parquet" for case in cases):
                import pyarrow as pa
                import pyarrow.parquet as pq

                pq.write_table(pa.Table.from_pylist(rows[: args.rows]), Path(tmp, f"{dataset}.parquet"))
            for tokenizer in args.tokenizer.split(","):
                folder = Path(tmp, f"model-{tokenizer}")
                if not folder.exists():
                    folder.mkdir()
                    bench._model(folder, bench._template_source(), tokenizer)
                theirs = _per_row("transformers", folder, reference_data, args.reference_rows)
                print(
                    f"{dataset}, {tokenizer} tokenizer: transformers per conversation {theirs:,.0f} instructions "
                    f"({args.reference_rows} rows)"
                )
                for case in cases:
                    worker, kind = CASES[case]
                    ours = _per_row(worker, folder, Path(tmp, f"{dataset}.{kind}"), args.rows)
                    versus = theirs
                    if case == "datasets":
                        versus = _per_row("datasets-transformers", folder, data, args.rows)
                        print(f"  datasets.map with transformers: {versus:,.0f} per conversation ({args.rows} rows)")
                    print(f"  turnkit {case}: {ours:,.0f} per conversation ({args.rows} rows): {versus / ours:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
