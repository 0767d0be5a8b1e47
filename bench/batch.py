"""Benchmark: turnkit batch rendering (text, tokens + assistant masks) against transformers 5.23, and scaling.

    python bench/batch.py                 # 2000 conversations, 3 repeats
    python bench/batch.py --rows 500 --quick
    python bench/batch.py --ray --datasets

Same data, same template (SmolLM3's, which has {% generation %} blocks, from the corpora when present, else a
ChatML template with generation blocks) and the same tokenizer (a byte-level BPE trained here) for every peer.
Figures are conversations per second, medians of --repeat runs; peak memory is the max RSS of this process and
of its worker processes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from turnkit import ChatTemplate  # noqa: E402
from turnkit import batch as tbatch  # noqa: E402

CHATML = (
    "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.role == 'assistant' %}{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}"
    "{% else %}{{ m.content }}<|im_end|>{% endif %}\n{% endfor %}"
)
SPECIAL = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
WORDS = "the model answers every question about weather cities tools and time zones with care".split()


def _conversations(n: int) -> list[list[dict[str, str]]]:
    chats = []
    for i in range(n):
        turns = []
        for t in range(1 + i % 4):
            words = " ".join(WORDS[(i + t + k) % len(WORDS)] for k in range(20 + (i * 7 + t) % 60))
            turns += [
                {"role": "user", "content": f"Q{i}.{t}: {words}?"},
                {"role": "assistant", "content": f"A{i}.{t}: {words}."},
            ]
        chats.append([{"role": "system", "content": "You are helpful."}, *turns])
    return chats


def _template_source() -> str:
    path = Path(os.environ.get("TURNKIT_CORPORA", ROOT.parent / "shared" / "corpora"))
    smol = path / "templates" / "huggingface.js" / "HuggingFaceTB-SmolLM3-3B.jinja"
    return smol.read_text(encoding="utf-8") if smol.is_file() else CHATML


def _median_rate(fn: Callable[[], object], rows: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return rows / statistics.median(times)


def _model(folder: Path, source: str) -> None:
    from tests.render.test_tokenize import _added_tokens, build_tokenizer

    build_tokenizer("bpe", tuple(_added_tokens(source))).save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": source, **SPECIAL}), encoding="utf-8")


def _peak_mb() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 repeat")
    parser.add_argument("--ray", action="store_true", help="also time --engine ray at 1 and 2 workers")
    parser.add_argument("--datasets", action="store_true", help="also time datasets.map at num_proc 1 and 2")
    args = parser.parse_args()
    repeat = 1 if args.quick else args.repeat
    source = _template_source()
    chats = _conversations(args.rows)
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        folder.mkdir()
        _model(folder, source)
        template = ChatTemplate.from_pretrained(folder)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from transformers import PreTrainedTokenizerFast
            from transformers.utils import logging
        logging.set_verbosity_error()
        reference = PreTrainedTokenizerFast(
            tokenizer_file=str(folder / "tokenizer.json"), chat_template=source, **SPECIAL
        )
        rows = len(chats)
        results["transformers text"] = _median_rate(
            lambda: [reference.apply_chat_template(c, tokenize=False) for c in chats], rows, repeat
        )
        results["turnkit text"] = _median_rate(lambda: [template.render(c) for c in chats], rows, repeat)
        results["transformers tokens+masks"] = _median_rate(
            lambda: [reference.apply_chat_template(c, return_assistant_tokens_mask=True) for c in chats], rows, repeat
        )
        results["turnkit tokens+masks"] = _median_rate(
            lambda: [template.render(c, tokenize=True, return_assistant_tokens_mask=True) for c in chats], rows, repeat
        )
        worker = tbatch.Renderer(model=folder, masks=True)
        results["turnkit Renderer.rows (tokens+masks, batched)"] = _median_rate(
            lambda: worker.rows([{"messages": c} for c in chats]), rows, repeat
        )

        data = Path(tmp) / "in.jsonl"
        data.write_text("".join(json.dumps({"messages": c}) + "\n" for c in chats), encoding="utf-8")
        for engine in ["local", "ray"] if args.ray else ["local"]:
            for workers in (1, 2):
                out = Path(tmp) / f"out-{engine}-{workers}.jsonl"
                results[f"turnkit batch --engine {engine} --workers {workers} (file to file)"] = _median_rate(
                    lambda out=out, workers=workers, engine=engine: tbatch.run(
                        worker, data, out, workers=workers, engine=engine, batch_size=128
                    ),
                    rows,
                    repeat,
                )
        if args.datasets:
            import datasets

            datasets.disable_progress_bars()
            dataset = datasets.Dataset.from_list([{"messages": c} for c in chats])

            def hf_map(batch: dict[str, Any]) -> dict[str, Any]:
                out = reference.apply_chat_template(batch["messages"], return_assistant_tokens_mask=True)
                return {"input_ids": out["input_ids"], "assistant_masks": out["assistant_masks"]}

            for workers in (1, 2):
                results[f"datasets.map transformers num_proc={workers}"] = _median_rate(
                    lambda workers=workers: dataset.map(
                        hf_map,
                        batched=True,
                        batch_size=128,
                        num_proc=workers if workers > 1 else None,
                        load_from_cache_file=False,
                    ),
                    rows,
                    repeat,
                )
                results[f"datasets.map turnkit num_proc={workers}"] = _median_rate(
                    lambda workers=workers: dataset.map(
                        worker,
                        batched=True,
                        batch_size=128,
                        num_proc=workers if workers > 1 else None,
                        load_from_cache_file=False,
                    ),
                    rows,
                    repeat,
                )
    width = max(map(len, results))
    print(
        f"{rows} conversations, template {'SmolLM3-3B' if source != CHATML else 'ChatML'}, "
        f"{os.cpu_count()} CPUs, median of {repeat}"
    )
    for name, rate in results.items():
        print(f"  {name:<{width}}  {rate:>9.0f} conv/s")
    print("ratios:")
    print(f"  text   turnkit / transformers: {results['turnkit text'] / results['transformers text']:.2f}x")
    print(
        f"  tokens turnkit / transformers: "
        f"{results['turnkit tokens+masks'] / results['transformers tokens+masks']:.2f}x"
    )
    print(
        f"  tokens turnkit batched / transformers: "
        f"{results['turnkit Renderer.rows (tokens+masks, batched)'] / results['transformers tokens+masks']:.2f}x"
    )
    for engine in ["local", "ray"] if args.ray else ["local"]:
        one = results[f"turnkit batch --engine {engine} --workers 1 (file to file)"]
        two = results[f"turnkit batch --engine {engine} --workers 2 (file to file)"]
        print(f"  {engine} 2 workers / 1 worker: {two / one:.2f}x")
    if args.datasets:
        print(
            f"  datasets turnkit / transformers (num_proc=1): "
            f"{results['datasets.map turnkit num_proc=1'] / results['datasets.map transformers num_proc=1']:.2f}x"
        )
    own, children = _peak_mb()
    print(f"peak RSS: this process {own:.0f} MB, largest worker {children:.0f} MB")


if __name__ == "__main__":
    main()
