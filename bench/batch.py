"""Benchmark: turnkit batch rendering (text, tokens + assistant masks) against transformers 5.23, and scaling.

    python bench/batch.py                 # 2000 conversations, 3 repeats
    python bench/batch.py --rows 500 --quick
    python bench/batch.py --ray --datasets

Same data, same template (SmolLM3's, which has {% generation %} blocks, from the corpora when present, else a
ChatML template with generation blocks) and the same tokenizer (a byte-level BPE trained here) for every peer.

Like for like: transformers' ``apply_chat_template(c, tokenize=True, return_dict=True,
return_assistant_tokens_mask=True)`` per conversation against turnkit's ``render(c, tokenize=True,
return_assistant_tokens_mask=True)`` per conversation; transformers on a list of conversations (one
``encode_batch``) against ``Renderer.rows`` on the same list. In-process cases run with
``TOKENIZERS_PARALLELISM=false`` (one core, as a worker process runs) unless marked "rayon".

The cases are interleaved (case A, B, C, ..., then again) and each figure is the median of --repeat runs, so a
burst of load from other processes hits every case alike; figures are conversations per wall second. Peak memory
is the max RSS of this process and of its local worker processes (Ray's workers are not its children).
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


def _cpu() -> float:
    """CPU seconds of this process (all its threads) and of its reaped children (local worker processes)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _interleaved(
    cases: dict[str, Callable[[], object]], rows: int, repeat: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Conversations per wall second and per CPU second of each case: medians over ``repeat`` rounds, one run of
    every case a round. CPU seconds are less sensitive to other processes' load than wall seconds."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpus: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, fn in cases.items():
            start, cpu = time.perf_counter(), _cpu()
            fn()
            times[name].append(time.perf_counter() - start)
            cpus[name].append(_cpu() - cpu)
    wall = {name: rows / statistics.median(values) for name, values in times.items()}
    return wall, {name: rows / max(statistics.median(values), 1e-9) for name, values in cpus.items()}


def _rayon(fn: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        os.environ["TOKENIZERS_PARALLELISM"] = "true"
        try:
            return fn()
        finally:
            os.environ["TOKENIZERS_PARALLELISM"] = "false"

    return run


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
    parser.add_argument("--batch-size", type=int, default=256)
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
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        mask_options = {"tokenize": True, "return_dict": True, "return_assistant_tokens_mask": True}
        worker = tbatch.Renderer(model=folder, masks=True)
        tokens_only = tbatch.Renderer(model=folder, tokenize=True)
        text_only = tbatch.Renderer(model=folder)
        batch_rows = [{"messages": c} for c in chats]
        cases: dict[str, Callable[[], object]] = {
            "transformers text": lambda: [reference.apply_chat_template(c, tokenize=False) for c in chats],
            "turnkit text": lambda: [template.render(c) for c in chats],
            "turnkit Renderer.rows text": lambda: text_only.rows(batch_rows),
            "transformers tokens+masks": lambda: [reference.apply_chat_template(c, **mask_options) for c in chats],
            "turnkit tokens+masks": lambda: [
                template.render(c, tokenize=True, return_assistant_tokens_mask=True) for c in chats
            ],
            "transformers tokens+masks, one batch": lambda: reference.apply_chat_template(chats, **mask_options),
            "turnkit Renderer.rows tokens+masks": lambda: worker.rows(batch_rows),
            "turnkit Renderer.rows tokens only": lambda: tokens_only.rows(batch_rows),
            "transformers tokens+masks, one batch, rayon": _rayon(
                lambda: reference.apply_chat_template(chats, **mask_options)
            ),
            "turnkit Renderer.rows tokens+masks, rayon": _rayon(lambda: worker.rows(batch_rows)),
        }
        data = Path(tmp) / "in.jsonl"
        data.write_text("".join(json.dumps({"messages": c}) + "\n" for c in chats), encoding="utf-8")
        engines = ["local", "ray"] if args.ray else ["local"]
        for engine in engines:
            for workers in (1, 2):
                out = Path(tmp) / f"out-{engine}-{workers}.jsonl"
                cases[f"turnkit batch --engine {engine} --workers {workers} (file to file)"] = (
                    lambda out=out, workers=workers, engine=engine: tbatch.run(
                        worker, data, out, workers=workers, engine=engine, batch_size=args.batch_size
                    )
                )
        if args.ray:
            import ray

            ray.init(
                num_cpus=2,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {"PYTHONPATH": str(ROOT / "src"), "TOKENIZERS_PARALLELISM": "false"}},
            )
            tbatch.run(worker, data, Path(tmp) / "warm.jsonl", engine="ray", workers=2, batch_size=args.batch_size)
        if args.datasets:
            import datasets

            datasets.disable_progress_bars()
            dataset = datasets.Dataset.from_list(batch_rows)

            def hf_map(batch: dict[str, Any]) -> dict[str, Any]:
                out = reference.apply_chat_template(batch["messages"], **mask_options)
                return {"input_ids": out["input_ids"], "assistant_masks": out["assistant_masks"]}

            for workers in (1, 2):
                for name, fn in (("transformers", hf_map), ("turnkit", worker)):
                    cases[f"datasets.map {name} num_proc={workers}"] = lambda fn=fn, workers=workers: dataset.map(
                        fn,
                        batched=True,
                        batch_size=args.batch_size,
                        num_proc=workers if workers > 1 else None,
                        load_from_cache_file=False,
                    )
        results, per_cpu = _interleaved(cases, rows, repeat)
    width = max(map(len, results))
    print(
        f"{rows} conversations, template {'SmolLM3-3B' if source != CHATML else 'ChatML'}, "
        f"{os.cpu_count()} CPUs, median of {repeat}"
    )
    print(f"  {'':<{width}}  {'conv/s':>9}  {'conv/CPU-s':>10}")
    for name, rate in results.items():
        cpu = "n/a" if "engine ray" in name or "datasets" in name else f"{per_cpu[name]:.0f}"
        print(f"  {name:<{width}}  {rate:>9.0f}  {cpu:>10}")
    print("ratios:")

    def ratio(label: str, ours: str, theirs: str) -> None:
        print(f"  {label:<58} {results[ours] / results[theirs]:.2f}x")

    ratio("text, per conversation, turnkit / transformers", "turnkit text", "transformers text")
    ratio("tokens+masks, per conversation, turnkit / transformers", "turnkit tokens+masks", "transformers tokens+masks")
    ratio(
        "tokens+masks, one batch, turnkit / transformers",
        "turnkit Renderer.rows tokens+masks",
        "transformers tokens+masks, one batch",
    )
    ratio(
        "tokens+masks, Renderer.rows / transformers per conversation",
        "turnkit Renderer.rows tokens+masks",
        "transformers tokens+masks",
    )
    ratio(
        "tokens+masks, one batch, rayon, turnkit / transformers",
        "turnkit Renderer.rows tokens+masks, rayon",
        "transformers tokens+masks, one batch, rayon",
    )
    for engine in engines:
        one = results[f"turnkit batch --engine {engine} --workers 1 (file to file)"]
        two = results[f"turnkit batch --engine {engine} --workers 2 (file to file)"]
        print(f"  {engine + ' 2 workers / 1 worker':<58} {two / one:.2f}x")
    if args.datasets:
        ratio(
            "datasets.map num_proc=1, turnkit / transformers",
            "datasets.map turnkit num_proc=1",
            "datasets.map transformers num_proc=1",
        )
    print(f"load average after the runs: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    own, children = _peak_mb()
    print(f"peak RSS: this process {own:.0f} MB, largest worker {children:.0f} MB")


if __name__ == "__main__":
    main()
