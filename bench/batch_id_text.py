"""Would remembered piece texts make a row's ``input_ids`` JSON text cheaper? (issue #14) CPU us per row.

    python bench/batch_id_text.py                                   # chat rows, wide tokenizer
    python bench/batch_id_text.py --dataset agent --tokenizer small --min-ids 64

The rows are ``Renderer(masks=True).rows`` of bench/batch.py's data and model folders. Each row's ids are
written as JSON text (what ``turnkit.batch._lines`` does for ``input_ids``) four ways, each checked against
``json.dumps``:

- ``table``: today, one ``itemgetter`` over a table of the numbers' texts, one join;
- ``all pieces``: every piece's text already known (a lower bound no real run reaches: a piece seen once must
  still be turned into text);
- ``repeated pieces``: the text kept only for pieces that occur in more than one row (of at least ``--min-ids``
  ids); the ids between them are joined from the table, a slice at a time;
- ``repr``: ``repr(ids)``, the same text for non-negative ints.

The memo's own cost (making a repeated piece's text once, carrying the marks to the writer) is left out: the
figures bound what the idea can save.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from operator import itemgetter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import batch as bench  # noqa: E402
from turnkit import batch as tbatch  # noqa: E402

_NUMBERS = [str(i) for i in range(1 << 17)]


def _join(ids: list[int]) -> str:
    return ", ".join(itemgetter(*ids)(_NUMBERS)) if len(ids) > 1 else _NUMBERS[ids[0]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--dataset", default="chat", help="chat, chat-intl or agent")
    parser.add_argument("--tokenizer", default="wide", help="small or wide")
    parser.add_argument("--min-ids", type=int, default=1, help="remember the text of pieces this long or longer")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    folder = Path(tempfile.mkdtemp()) / "model"
    folder.mkdir()
    bench._model(folder, bench._template_source(), args.tokenizer)
    if args.dataset == "agent":
        rows_in = bench._agent_rows(args.rows)
    else:
        rows_in = [{"messages": c} for c in bench._DATASETS[args.dataset](args.rows)]
    renderer = tbatch.Renderer(model=folder, masks=True)
    rows = renderer.rows(rows_in)
    tokenizer = renderer.chat_template().tokenizer
    pieces = tokenizer._pieces[True]
    segments = [pieces.segments(row["prompt"]) for row in rows]
    counts = Counter(piece for row in segments for _, _, token, piece in row if token is None)
    distinct = list(counts)
    ids_of = {
        p: e.ids
        for p, e in zip(distinct, tokenizer.backend.encode_batch(distinct, add_special_tokens=False), strict=True)
    }
    text_of = {p: ", ".join(map(str, ids)) for p, ids in ids_of.items()}
    kept = {p for p, n in counts.items() if n > 1 and len(ids_of[p]) >= max(args.min_ids, 1)}
    marks = []  # per row: (start, end, text) of each kept piece's ids
    for row in segments:
        at, found = 0, []
        for _, _, token, piece in row:
            size = 1 if token is not None else len(ids_of[piece])
            if token is None and piece in kept:
                found.append((at, at + size, text_of[piece]))
            at += size
        marks.append(found)
    all_ids = [row["input_ids"] for row in rows]

    def table() -> list[str]:
        return ["[" + ", ".join(itemgetter(*ids)(_NUMBERS)) + "]" for ids in all_ids]

    def all_pieces() -> list[str]:
        return [
            "["
            + ", ".join([text_of[p] if t is None else _NUMBERS[t] for _, _, t, p in row if t is not None or ids_of[p]])
            + "]"
            for row in segments
        ]

    def repeated() -> list[str]:
        out = []
        for ids, found in zip(all_ids, marks, strict=True):
            parts, at = [], 0
            for start, end, text in found:
                if start > at:
                    parts.append(_join(ids[at:start]))
                parts.append(text)
                at = end
            if at < len(ids):
                parts.append(_join(ids[at:]))
            out.append("[" + ", ".join(parts) + "]")
        return out

    cases: dict[str, Callable[[], list[str]]] = {
        "table": table,
        "all pieces": all_pieces,
        "repeated pieces": repeated,
        "repr": lambda: [repr(ids) for ids in all_ids],
    }
    expected = [json.dumps(ids) for ids in all_ids]
    for name, case in cases.items():
        assert case() == expected, name
    held = sum(len(text_of[p]) for p in kept)
    share = sum(len(ids_of[p]) * counts[p] for p in kept) / sum(map(len, all_ids))
    print(
        f"{args.dataset}, {args.tokenizer} tokenizer, {len(rows)} rows: ids/row median "
        f"{statistics.median(map(len, all_ids))}, pieces/row median {statistics.median(map(len, segments))}, "
        f"kept pieces {len(kept)} ({held} characters of text) holding {share:.0%} of the ids, marks/row median "
        f"{statistics.median(map(len, marks))}"
    )
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeat):  # interleaved
        for name, case in cases.items():
            start = time.process_time()
            case()
            times[name].append((time.process_time() - start) / len(rows) * 1e6)
    for name, values in times.items():
        print(f"  {name:16} {statistics.median(values):7.2f} us/row (median of {args.repeat})")


if __name__ == "__main__":
    main()
