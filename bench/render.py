"""Rendering speed: turnkit vs transformers 5.23 on the same conversation, tools and template, in one run.

Run: python bench/render.py   (needs the `bench` extra: transformers, tokenizers)

A 6-message tool-calling conversation with two tools goes through a ChatML/Hermes-style template (turnkit's
bundled demo template), with the tools given as JSON schemas and as Python functions. Prints the median
microseconds per call and the speed-up; asserts both libraries give identical text.

Three turnkit figures per case, each against transformers in the same run:

- *warm*: ``render`` again with an unchanged input, answered from the render memo (the bench's own loop);
- *cold*: the same messages in a new list with the memo off, what a conversation turnkit has not rendered before
  costs (the tools are the same on every call, as in serving: their schemas and JSON text come from the per-tool-set
  cache);
- *grown*: the memo on, every call the conversation plus one new user message never rendered before (a serving
  loop: an unchanged prefix, a new turn), by a default ``ChatTemplate`` (a cold render plus the memo's miss)
  and by ``ChatTemplate(prefix_cache=True)``, which takes the prefix's messages from its loop cache.

``--template FILE`` runs the same cases through another chat template (e.g. one of the shared corpus);
``--phases`` prints where a cold render's time goes (each step timed on its own) instead; ``--instructions``
prints the machine instructions per render, counted by valgrind (repeatable on a loaded machine: a worker runs 0
and then ``--runs`` renders after the same warm-up, and the difference is divided by the runs): cold, and grown
(cold with the memo off, the default memo, ``prefix_cache``); ``--turns N`` lengthens the conversation by N
assistant/user exchanges (where prefix reuse starts to pay).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from turnkit import ChatTemplate, apply_chat_template  # noqa: E402
from turnkit.cli.demo import get_current_temperature, get_current_wind_speed  # noqa: E402

# CPU time of this process: on a shared machine, wall time mostly measures the other jobs.
CLOCK = time.process_time

SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "<|im_end|>", "unk_token": "<unk>", "pad_token": "<pad>"}


PYTHON_TOOLS = [get_current_temperature, get_current_wind_speed]
CITIES = ["Paris", "Lyon", "Nice", "Lille"]

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a weather bot. Answer in the unit used at the location."},
    {"role": "user", "content": "Hey, what's the temperature in Paris right now?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {
                    "name": "get_current_temperature",
                    "arguments": {"location": "Paris, France", "unit": "celsius"},
                },
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_0", "name": "get_current_temperature", "content": "22.0"},
    {"role": "assistant", "content": "It is 22 °C in Paris right now."},
    {"role": "user", "content": "And how windy is it?"},
]


def reference_tokenizer(template: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import tokenizers
        from tokenizers.models import WordLevel
        from transformers import PreTrainedTokenizerFast
        from transformers.utils import logging
    logging.set_verbosity_error()
    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS.values())}
    backend = tokenizers.Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, **SPECIAL_TOKENS)
    tokenizer.chat_template = template
    return tokenizer


def calibrate(fn: Callable[[], object], *, min_time: float = 0.02) -> int:
    """How many calls make a batch lasting at least ``min_time`` seconds."""
    fn()
    number = 1
    while True:
        start = CLOCK()
        for _ in range(number):
            fn()
        if CLOCK() - start >= min_time:
            return number
        number *= 2


def interleaved_us(fns: list[Callable[[], object]], *, rounds: int = 31) -> list[float]:
    """Median µs per call of each function, timed in alternating batches so machine load hits all alike."""
    numbers = [calibrate(fn) for fn in fns]
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, number, out in zip(fns, numbers, samples, strict=True):
            start = CLOCK()
            for _ in range(number):
                fn()
            out.append((CLOCK() - start) / number * 1e6)
    return [statistics.median(s) for s in samples]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", help="a chat template file (default: turnkit's bundled ChatML/Hermes one)")
    parser.add_argument("--phases", action="store_true", help="print where a cold render's time goes, and stop")
    parser.add_argument("--instructions", action="store_true", help="count instructions per render (valgrind)")
    parser.add_argument("--runs", type=int, default=500, help="renders counted per case by --instructions")
    parser.add_argument(
        "--turns",
        type=int,
        default=0,
        help="with --instructions: this many more assistant/user exchanges in every conversation (a longer prefix)",
    )
    parser.add_argument("--worker", choices=["json", "python"], help=argparse.SUPPRESS)
    parser.add_argument("--case", choices=list(CASES), default="cold", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.template:
        template = Path(args.template).read_text(encoding="utf-8")
    else:
        template = files("turnkit").joinpath("data", "chatml-tools.jinja").read_text(encoding="utf-8")
    if args.worker:
        return instructions_worker(template, args.worker, args.case, args.runs, args.turns)
    if args.instructions:
        return instructions(args.template, args.runs, args.turns)
    if args.phases:
        return phases(template)
    tokenizer = reference_tokenizer(template)
    json_tools = [get_schema(tool) for tool in PYTHON_TOOLS]
    compiled = ChatTemplate(template, special_tokens=SPECIAL_TOKENS)
    cold = ChatTemplate(template, special_tokens=SPECIAL_TOKENS)
    cold._memos["default"] = None  # every call renders (what a new conversation costs)
    grown_template = ChatTemplate(template, special_tokens=SPECIAL_TOKENS)
    prefix_template = ChatTemplate(template, special_tokens=SPECIAL_TOKENS, prefix_cache=True)
    # more distinct conversations than the memo keeps (256) and than it remembers having met (1,024), cycled:
    # every call is an input never met
    grown = [
        [*CONVERSATION, {"role": "user", "content": f"And in {city} #{n}?"}] for n, city in enumerate(CITIES * 1024)
    ]
    rows = []
    for label, tools in (("JSON-schema tools", json_tools), ("Python-function tools", PYTHON_TOOLS)):
        # one sequence each, so that turnkit's calls never come back to a conversation it still remembers
        hf_turns, tk_turns, prefix_turns = (itertools.cycle(grown) for _ in range(3))

        def hf(tools: Any = tools) -> str:
            return str(
                tokenizer.apply_chat_template(CONVERSATION, tools=tools, add_generation_prompt=True, tokenize=False)
            )

        def tk(tools: Any = tools) -> str:
            return compiled.render(CONVERSATION, tools=tools, add_generation_prompt=True)

        def tk_cold(tools: Any = tools) -> str:  # a new list, as a new conversation is (some loops answer one met)
            return cold.render(list(CONVERSATION), tools=tools, add_generation_prompt=True)

        def hf_grown(tools: Any = tools, turns: Any = hf_turns) -> str:
            return str(
                tokenizer.apply_chat_template(next(turns), tools=tools, add_generation_prompt=True, tokenize=False)
            )

        def tk_grown(tools: Any = tools, turns: Any = tk_turns) -> str:
            return grown_template.render(next(turns), tools=tools, add_generation_prompt=True)

        def tk_prefix(tools: Any = tools, turns: Any = prefix_turns) -> str:
            return prefix_template.render(next(turns), tools=tools, add_generation_prompt=True)

        def tk_fn(tools: Any = tools) -> str:
            return apply_chat_template(
                CONVERSATION, template, tools=tools, add_generation_prompt=True, **SPECIAL_TOKENS
            )

        expected = hf()
        assert tk() == expected, "turnkit ChatTemplate.render differs from transformers"
        assert tk_fn() == expected, "turnkit apply_chat_template differs from transformers"
        assert tk_cold() == expected, "turnkit ChatTemplate.render (cold) differs from transformers"
        for chat in grown[:8]:
            reference = str(
                tokenizer.apply_chat_template(chat, tools=tools, add_generation_prompt=True, tokenize=False)
            )
            assert grown_template.render(chat, tools=tools, add_generation_prompt=True) == reference, "grown differs"
            assert prefix_template.render(chat, tools=tools, add_generation_prompt=True) == reference, "prefix differs"
        rows.append((label, *interleaved_us([hf, tk, tk_fn, tk_cold, hf_grown, tk_grown, tk_prefix])))

    print(
        f"{'case':<22}{'transformers':>13}{'warm':>7}{'apply_chat_t.':>14}{'x':>7}{'cold':>7}{'x':>7}"
        f"{'| grown: transformers':>21}{'turnkit':>8}{'x':>7}{'prefix_cache':>13}{'x':>7}"
    )
    for label, t_hf, t_tk, t_fn, t_cold, t_hf_grown, t_grown, t_prefix in rows:
        print(
            f"{label:<22}{t_hf:>13.1f}{t_tk:>7.1f}{t_fn:>14.1f}{t_hf / t_tk:>6.2f}x{t_cold:>7.1f}{t_hf / t_cold:>6.2f}x"
            f"{t_hf_grown:>21.1f}{t_grown:>8.1f}{t_hf_grown / t_grown:>6.2f}x{t_prefix:>13.1f}"
            f"{t_hf_grown / t_prefix:>6.2f}x"
        )
    print("(CPU µs per call, median of 31 interleaved batches; identical output asserted; x = transformers / turnkit.")
    print(" warm = ChatTemplate.render of an unchanged input (a render-memo hit); cold = the same render with the memo")
    print(" off; grown = the conversation plus a new user message never rendered before (memo on), rendered by a")
    print(" default ChatTemplate and by ChatTemplate(prefix_cache=True), which reruns only the new message)")
    return 0


def phases(template: str) -> int:
    """A cold render (JSON-schema tools) taken apart: median CPU µs of each step, run on its own."""
    import jinja2

    from turnkit.render._inputs import plain_messages, tool_schemas
    from turnkit.render._template import _run

    tools = [get_schema(tool) for tool in PYTHON_TOOLS]
    cold = ChatTemplate(template, special_tokens=SPECIAL_TOKENS)
    cold._memos["default"] = None
    empty = ChatTemplate("", special_tokens=SPECIAL_TOKENS)
    empty._memos["default"] = None
    compiled, nothing = cold._compile("default"), empty._compile("default")
    assert not isinstance(compiled, Exception) and not isinstance(nothing, Exception)
    trusted: set[int] = set()
    variables = {
        **SPECIAL_TOKENS,
        "messages": plain_messages(CONVERSATION, trusted),
        "tools": tool_schemas(tools, trusted),
        "documents": None,
        "add_generation_prompt": True,
    }
    plain = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    plain.filters["tojson"] = lambda value, **kw: json.dumps(value, ensure_ascii=False, **kw)
    unsandboxed = plain.from_string(template)
    steps = {
        "whole cold render": lambda: cold.render(CONVERSATION, tools=tools, add_generation_prompt=True),
        "render() with an empty template": lambda: empty.render(CONVERSATION, tools=tools, add_generation_prompt=True),
        "  of which: copying/adopting the messages": lambda: plain_messages(CONVERSATION, set()),
        "  of which: the tool set (cache hit)": lambda: tool_schemas(tools, set()),
        "  of which: _run of an empty template": lambda: _run(empty._sandbox, nothing, dict(variables), trusted),
        "the template's own code (_run minus empty _run)": lambda: _run(
            cold._sandbox, compiled, dict(variables), trusted
        ),
        "for reference: plain jinja2, no sandbox": lambda: unsandboxed.render(**variables),
    }
    times = dict(zip(steps, interleaved_us(list(steps.values()), rounds=15), strict=True))
    times["the template's own code (_run minus empty _run)"] -= times["  of which: _run of an empty template"]
    for step, us in times.items():
        print(f"{step:<52}{us:>8.1f} µs")
    print("(CPU µs per call, median of 15 interleaved batches; the conversation and JSON tools of the main bench)")
    return 0


def instructions_worker(template: str, kind: str, case: str, runs: int, turns: int) -> int:
    """``runs`` renders of one case after a warm-up (compiling, the tool-set cache, the interpreter's
    specialisation): *cold* renders, or *grown* ones (each a conversation never rendered before, the bench's one
    plus a new user message) by a default ``ChatTemplate`` or (case *prefix*) a ``prefix_cache=True`` one, or with
    the memo off (case *cold-grown*: what the same grown conversation costs cold). ``turns``: assistant/user
    exchanges added to the bench's conversation."""
    conversation = [*CONVERSATION]
    for n in range(turns):
        conversation.append({"role": "assistant", "content": f"It is {10 + n} km/h in {CITIES[n % 4]}."})
        conversation.append({"role": "user", "content": f"And in {CITIES[(n + 1) % 4]}, {n} hours later?"})
    tools: list[Any] = [get_schema(tool) for tool in PYTHON_TOOLS] if kind == "json" else list(PYTHON_TOOLS)
    template_object = ChatTemplate(template, special_tokens=SPECIAL_TOKENS, prefix_cache=case == "prefix")
    if case.startswith("cold"):  # a new list each render, as a new conversation is (some loops answer one met)
        template_object._memos["default"] = None
    if case == "cold":
        chats = [list(conversation) for _ in range(20 + runs)]
    else:
        chats = [
            [*conversation, {"role": "user", "content": f"And in {CITIES[n % 4]} #{n}?"}] for n in range(20 + runs)
        ]
    for chat in chats[:20]:
        template_object.render(chat, tools=tools, add_generation_prompt=True)
    for chat in chats[20:]:
        template_object.render(chat, tools=tools, add_generation_prompt=True)
    print(runs)
    return 0


def instructions(template: str | None, runs: int, turns: int) -> int:
    """Instructions per render, JSON-schema and Python-function tools (valgrind's callgrind): a cold render, and
    a grown one cold (memo off), by a default ``ChatTemplate`` and by ``ChatTemplate(prefix_cache=True)``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _callgrind import count

    where = ["--template", template] if template else []
    seed = {"PYTHONHASHSEED": "0"}  # the same dict and set layouts in every run
    for kind in ("json", "python"):
        for case in CASES:
            worker = [sys.executable, __file__, *where, "--turns", str(turns), "--worker", kind, "--case", case]
            base, _ = count([*worker, "--runs", "0"], env=seed)
            total, _ = count([*worker, "--runs", str(runs)], env=seed)
            print(f"{kind:>6} tools, {CASES[case]:<26}{(total - base) / runs:>10,.0f} instructions per render")
    return 0


CASES = {
    "cold": "cold:",
    "cold-grown": "grown, cold (memo off):",
    "grown": "grown, default:",
    "prefix": "grown, prefix_cache=True:",
}


def get_schema(func: Callable[..., Any]) -> dict[str, Any]:
    from turnkit import get_json_schema

    return get_json_schema(func)


if __name__ == "__main__":
    sys.exit(main())
