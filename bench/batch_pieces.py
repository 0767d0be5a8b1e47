"""How often a batch render's text misses the memos and takes a slower path, on bench/batch.py's data.

    python bench/batch_pieces.py                       # chat, chat-intl and agent rows, small and wide tokenizers
    python bench/batch_pieces.py --rows 4000 --dataset chat-intl --tokenizer wide

``Renderer.rows`` with tokens and masks (as ``turnkit batch render --masks`` runs it), batches of 256, memos empty
at the start, counted by wrapping the piece encoder's steps (:mod:`turnkit.render._pieces`,
:mod:`turnkit.render._pretokens`). Per text piece between special tokens: found in the piece memo, or new (then
encoded from pre-tokens, or, the slow path, by ``tokenizers``); pieces a generation span covers in part need token
offsets on every occurrence (from pre-tokens, else ``tokenizers``' ``encode_batch`` with offsets); a text whose
mask pieces cannot give is encoded whole by ``tokenizers`` (the slowest path). Pre-tokens: found in their memo, or
new (BPE by the tokenizer's model). Counts do not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from batch import _DATASETS, _agent_rows, _model, _template_source  # noqa: E402
from turnkit import batch as tbatch  # noqa: E402
from turnkit.render import _pieces, _pretokens, _tokenize  # noqa: E402

COUNTS: Counter[str] = Counter()


def _wrap(owner: Any, name: str, count: Callable[..., None]) -> None:
    original = getattr(owner, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        count(result, *args)
        return result

    setattr(owner, name, wrapped)


def _instrument() -> None:
    original = _pieces.PieceEncoder.encode

    def encode(self: Any, texts: Any, spans: Any = None, **kwargs: Any) -> Any:
        memo = self._memo.entries
        seen: set[str] = set()
        for text in texts:
            for _, _, token, piece in self.segments(text):
                if token is None:
                    COUNTS["pieces"] += 1
                    COUNTS["piece characters"] += len(piece)
                    if piece in memo or piece in seen:
                        COUNTS["pieces found in the memo"] += 1
                    else:
                        COUNTS["new pieces"] += 1
                        COUNTS["new piece characters"] += len(piece)
                        seen.add(piece)
        return original(self, texts, spans, **kwargs)

    _pieces.PieceEncoder.encode = encode  # type: ignore[method-assign]

    def new_piece(result: Any, _: Any, piece: str) -> None:
        COUNTS["pre-token encodes"] += 1
        if result is None:
            COUNTS["new pieces to tokenizers"] += 1
            COUNTS["new piece characters to tokenizers"] += len(piece)

    def located(result: Any, _: Any, piece: str) -> None:
        COUNTS["pieces located (offsets)"] += 1
        if result is None:
            COUNTS["located pieces to tokenizers"] += 1

    def words(result: Any, *_: Any) -> None:
        COUNTS["pre-tokens"] += len(result or ())

    def new_word(*_: Any) -> None:
        COUNTS["new pre-tokens (BPE)"] += 1

    def whole(result: Any, _: Any, texts: Any, **__: Any) -> None:
        COUNTS["texts encoded whole"] += len(texts)

    _wrap(_pretokens.PreTokenEncoder, "locate", located)
    _wrap(_pretokens.PreTokenEncoder, "_words", words)
    _wrap(_pretokens.PreTokenEncoder, "_new", new_word)
    _wrap(_tokenize.ChatTokenizer, "encode", whole)
    original_encode = _pretokens.PreTokenEncoder.encode

    def pretoken_encode(self: Any, piece: str) -> Any:
        result = original_encode(self, piece)
        if not COUNTS.get("_in_locate"):
            new_piece(result, self, piece)
        return result

    _pretokens.PreTokenEncoder.encode = pretoken_encode  # type: ignore[method-assign]
    original_locate = _pretokens.PreTokenEncoder.locate

    def locate(self: Any, piece: str) -> Any:
        COUNTS["_in_locate"] = 1
        try:
            return original_locate(self, piece)
        finally:
            COUNTS["_in_locate"] = 0

    _pretokens.PreTokenEncoder.locate = locate  # type: ignore[method-assign]


def _share(part: str, whole: str) -> str:
    return f"{COUNTS[part]:,} of {COUNTS[whole]:,} ({COUNTS[part] / max(COUNTS[whole], 1):.1%})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--dataset", default="chat,chat-intl,agent")
    parser.add_argument("--tokenizer", default="small,wide")
    args = parser.parse_args()
    _instrument()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for tokenizer in args.tokenizer.split(","):
            folder = Path(tmp) / tokenizer
            folder.mkdir()
            _model(folder, _template_source(), tokenizer)
            for dataset in args.dataset.split(","):
                rows = (
                    _agent_rows(args.rows)
                    if dataset == "agent"
                    else [{"messages": c} for c in _DATASETS[dataset](args.rows)]
                )
                COUNTS.clear()
                worker = tbatch.Renderer(model=folder, masks=True)
                for start in range(0, len(rows), 256):
                    worker.rows(rows[start : start + 256], mask_bytes=True)
                print(f"{dataset}, {tokenizer} tokenizer, {args.rows} rows:")
                lines = {
                    "pieces found in the piece memo": _share("pieces found in the memo", "pieces"),
                    "new pieces": _share("new pieces", "pieces"),
                    "their characters": _share("new piece characters", "piece characters"),
                    "new pieces sent to tokenizers": _share("new pieces to tokenizers", "pre-token encodes"),
                    "pieces needing offsets, to tokenizers": _share(
                        "located pieces to tokenizers", "pieces located (offsets)"
                    ),
                    "new pre-tokens (BPE)": _share("new pre-tokens (BPE)", "pre-tokens"),
                    "texts encoded whole by tokenizers": f"{COUNTS['texts encoded whole']:,} of {len(rows):,}",
                }
                for name, value in lines.items():
                    print(f"  {name}: {value}")


if __name__ == "__main__":
    main()
