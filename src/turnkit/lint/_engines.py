"""Cross-engine renders: a chat template rendered by minijinja and @huggingface/jinja on a standard conversation
matrix, compared with turnkit's own render (which equals transformers').

minijinja runs through its Python binding (``pip install 'turnkit[lint]'``), configured as TGI and mistral.rs
configure it: ``trim_blocks``, ``lstrip_blocks``, Python-method shims (``pycompat``), ``raise_exception`` and
``strftime_now``; inputs are passed as minijinja's own values, never as Python objects. @huggingface/jinja runs in
one long-lived ``node`` process (``hf_jinja_runner.cjs`` beside this module), many renders per message.
"""

from __future__ import annotations

import atexit
import copy
import json
import os
import selectors
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from turnkit._extras import require
from turnkit.errors import TemplateError, UsageError
from turnkit.lint._finding import LintFinding
from turnkit.lint._rules import RULES
from turnkit.render import ChatTemplate
from turnkit.render._inputs import alias_reasoning_fields

__all__ = ["ENGINES", "MATRIX", "Case", "Outcome", "cross_render", "engine_unavailable", "render_case"]

ENGINES = ("minijinja", "hf-jinja")
_CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "  # transformers' marker for continue_final_message
_SNIPPET_BEFORE = 20
_SNIPPET_AFTER = 40
_NODE_TIMEOUT = 120.0

SPECIAL_TOKENS: dict[str, str] = {"bos_token": "<s>", "eos_token": "</s>"}
_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city's name, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    }
]
_CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}


@dataclass(frozen=True, slots=True)
class Case:
    """One conversation of the matrix, with the render options it is rendered with."""

    name: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    add_generation_prompt: bool = False
    continue_final_message: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


MATRIX: tuple[Case, ...] = (
    Case("plain", [{"role": "user", "content": "Hello!"}]),
    Case(
        "system",
        [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Hi there"}],
    ),
    Case(
        "multi-turn",
        [
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "2+2 is 4."},
            {"role": "user", "content": "And 3+3?"},
        ],
    ),
    Case(
        "tools", [{"role": "user", "content": "What's the weather in Paris?"}], tools=_TOOLS, add_generation_prompt=True
    ),
    Case(
        "tool-results",
        [
            {"role": "user", "content": "What's the weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [_CALL]},
            {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": '{"temperature": 21}'},
        ],
        tools=_TOOLS,
    ),
    Case(
        "generation-prompt",
        [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Hello!"}],
        add_generation_prompt=True,
    ),
    Case(
        "continue-final",
        [{"role": "user", "content": "Write a haiku."}, {"role": "assistant", "content": "Autumn moonlight"}],
        continue_final_message=True,
    ),
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A render's result: the prompt text (``ok``) or the engine's error message."""

    ok: bool
    text: str


# -- turnkit (the reference) ----------------------------------------------------------------------------------


def render_case(source: str, case: Case) -> Outcome | None:
    """turnkit's render of ``case`` (= transformers'), or ``None`` when transformers refuses the inputs themselves."""
    try:
        template = _chat_template(source)
        text = template.render(
            copy.deepcopy(case.messages),
            tools=case.tools,
            add_generation_prompt=case.add_generation_prompt,
            continue_final_message=case.continue_final_message,
            **case.extra,
        )
    except TemplateError as exc:
        if exc.code == "template_input":
            return None
        return Outcome(False, str(exc))
    return Outcome(True, text)


@lru_cache(maxsize=16)
def _chat_template(source: str) -> ChatTemplate:
    """The compiled template (compiled once for the whole matrix)."""
    return ChatTemplate(source, special_tokens=SPECIAL_TOKENS)


def _context(case: Case) -> dict[str, Any]:
    """The variables transformers hands the template for ``case`` (continue_final_message: the tagged message)."""
    messages = alias_reasoning_fields(copy.deepcopy(case.messages))
    if case.continue_final_message:
        messages[-1]["content"] = messages[-1]["content"] + _CONTINUE_TAG
    return {
        **SPECIAL_TOKENS,
        **case.extra,
        "messages": messages,
        "tools": case.tools,
        "documents": None,
        "add_generation_prompt": case.add_generation_prompt,
    }


def _finish(case: Case, outcome: Outcome) -> Outcome:
    """transformers' cut at the continue_final_message tag, applied to another engine's render."""
    if not case.continue_final_message or not outcome.ok:
        return outcome
    text = outcome.text
    final = case.messages[-1]["content"]
    tag = _CONTINUE_TAG.strip()
    if final.strip() not in text or tag not in text:
        return Outcome(False, "the final message does not appear in the rendered chat")
    at = text.rindex(tag)
    return Outcome(True, text[:at] if text[at : at + len(_CONTINUE_TAG)] == _CONTINUE_TAG else text[:at].rstrip())


# -- minijinja ------------------------------------------------------------------------------------------------


def _literal(value: Any) -> str:
    """``value`` as a Jinja literal, so minijinja holds it as its own value (not a wrapped Python object)."""
    if value is None:
        return "none"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float | str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_literal(str(k))}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_literal(item) for item in value) + "]"
    raise TypeError(f"cannot pass {type(value).__name__} to minijinja")


def _render_minijinja(source: str, contexts: Sequence[dict[str, Any]]) -> list[Outcome]:
    minijinja = require("minijinja", "lint", purpose="rendering under minijinja")

    def raise_exception(message: Any) -> None:
        raise minijinja.TemplateError(str(message))

    def strftime_now(format: str) -> str:  # noqa: A002 - the name templates use
        return datetime.now().strftime(format)

    env = minijinja.Environment(trim_blocks=True, lstrip_blocks=True, pycompat=True)
    env.fuel = 50_000_000
    env.add_global("raise_exception", raise_exception)
    env.add_global("strftime_now", strftime_now)
    try:
        env.add_template("chat", source)
    except Exception as exc:  # noqa: BLE001 - a syntax error: every case fails the same way
        return [Outcome(False, _first_line(exc))] * len(contexts)
    results = []
    for context in contexts:
        wrapper = "".join(f"{{% set {key} = {_literal(value)} %}}" for key, value in context.items())
        try:
            results.append(Outcome(True, env.render_str(wrapper + '{% include "chat" %}')))
        except Exception as exc:  # noqa: BLE001 - any engine failure is an outcome to compare
            cause = exc.__cause__ or exc
            results.append(Outcome(False, _first_line(cause)))
    return results


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- @huggingface/jinja -----------------------------------------------------------------------------------------

_RUNNER = Path(__file__).with_name("hf_jinja_runner.cjs")


def _hf_jinja_package() -> Path | None:
    """The @huggingface/jinja package folder: $TURNKIT_HF_JINJA, else a node_modules or .refs/node above here."""
    configured = os.environ.get("TURNKIT_HF_JINJA")
    if configured:
        path = Path(configured)
        return path if (path / "package.json").is_file() else None
    starts = [Path.cwd(), Path(__file__).resolve().parent]
    for start in starts:
        for folder in (start, *start.parents):
            for base in (folder / ".refs" / "node" / "node_modules", folder / "node_modules"):
                candidate = base / "@huggingface" / "jinja"
                if (candidate / "package.json").is_file():
                    return candidate
    return None


class _NodeRunner:
    """One ``node`` process rendering batches of templates with @huggingface/jinja."""

    def __init__(self, node: str, package: Path) -> None:
        self._process = subprocess.Popen(
            [node, str(_RUNNER), str(package)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        atexit.register(self.close)

    def render(self, items: Sequence[tuple[str, dict[str, Any]]]) -> list[Outcome]:
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        request = json.dumps([{"source": source, "context": context} for source, context in items], ensure_ascii=False)
        process.stdin.write(request + "\n")
        process.stdin.flush()
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            if not selector.select(_NODE_TIMEOUT):
                self.close()
                raise TemplateError(
                    f"@huggingface/jinja did not answer within {_NODE_TIMEOUT:.0f} s", code="lint_engine"
                )
        line = process.stdout.readline()
        if not line:
            error = process.stderr.read() if process.stderr is not None else ""
            self.close()
            raise TemplateError(f"the node runner for @huggingface/jinja stopped: {error.strip()}", code="lint_engine")
        return [Outcome("ok" in answer, answer.get("ok", answer.get("error", ""))) for answer in json.loads(line)]

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def close(self) -> None:
        process = self._process
        if process.poll() is None:
            if process.stdin is not None:
                process.stdin.close()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


_RUNNERS: dict[tuple[str, Path], _NodeRunner] = {}


def _node_runner() -> _NodeRunner:
    node = shutil.which("node")
    package = _hf_jinja_package()
    if node is None or package is None:
        raise UsageError(engine_unavailable("hf-jinja") or "hf-jinja is unavailable")
    key = (node, package)
    runner = _RUNNERS.get(key)
    if runner is None or not runner.alive:
        runner = _RUNNERS[key] = _NodeRunner(node, package)
    return runner


def _render_hf_jinja(source: str, contexts: Sequence[dict[str, Any]]) -> list[Outcome]:
    return _node_runner().render([(source, context) for context in contexts])


# -- comparing ------------------------------------------------------------------------------------------------

_RENDERERS: dict[str, Callable[[str, Sequence[dict[str, Any]]], list[Outcome]]] = {
    "minijinja": _render_minijinja,
    "hf-jinja": _render_hf_jinja,
}


def engine_unavailable(engine: str) -> str | None:
    """Why ``engine`` cannot run here (a sentence), or ``None`` when it can."""
    if engine == "minijinja":
        try:
            import minijinja  # noqa: F401
        except ImportError:
            return "minijinja is not installed: pip install 'turnkit[lint]'"
        return None
    if engine == "hf-jinja":
        if shutil.which("node") is None:
            return "hf-jinja needs Node.js ('node' is not on PATH)"
        if _hf_jinja_package() is None:
            return (
                "@huggingface/jinja is not installed: npm install --prefix .refs/node @huggingface/jinja "
                "(or set TURNKIT_HF_JINJA to its folder)"
            )
        return None
    return f"unknown engine {engine!r}: choose from {', '.join(ENGINES)}"


def engine_renders(engine: str, source: str, cases: Sequence[Case] = MATRIX) -> list[Outcome]:
    """``engine``'s render of each case (transformers' continue_final_message cut applied)."""
    outcomes = _RENDERERS[engine](source, [_context(case) for case in cases])
    return [_finish(case, outcome) for case, outcome in zip(cases, outcomes, strict=True)]


def cross_render(source: str, engines: Sequence[str], cases: Sequence[Case] = MATRIX) -> list[LintFinding]:
    """A ``TK901`` finding per (engine, case) whose render differs from turnkit's."""
    references = [render_case(source, case) for case in cases]
    kept = [(case, ref) for case, ref in zip(cases, references, strict=True) if ref is not None]
    findings: list[LintFinding] = []
    for engine in engines:
        outcomes = engine_renders(engine, source, [case for case, _ in kept])
        for (case, reference), outcome in zip(kept, outcomes, strict=True):
            finding = compare(engine, case.name, reference, outcome)
            if finding is not None:
                findings.append(finding)
    return findings


def compare(engine: str, case: str, reference: Outcome, outcome: Outcome) -> LintFinding | None:
    """The divergence between turnkit's outcome and an engine's, or ``None`` when they agree."""
    rule = RULES["TK901"]
    if not reference.ok and not outcome.ok:
        return None
    if reference.ok and outcome.ok:
        if reference.text == outcome.text:
            return None
        at = _first_difference(reference.text, outcome.text)
        expected, actual = _snippet(reference.text, at), _snippet(outcome.text, at)
        message = (
            f"{engine} renders the '{case}' conversation differently from transformers at character {at}: "
            f"expected {expected!r}, got {actual!r}"
        )
        return LintFinding(
            "TK901",
            rule.severity,
            message,
            rule.hint,
            engine=engine,
            case=case,
            position=at,
            expected=expected,
            actual=actual,
        )
    if reference.ok:
        message = f"{engine} fails on the '{case}' conversation, which transformers renders: {outcome.text}"
        return LintFinding(
            "TK901",
            rule.severity,
            message,
            rule.hint,
            engine=engine,
            case=case,
            position=0,
            expected=_snippet(reference.text, 0),
            actual=f"error: {outcome.text}",
        )
    message = f"{engine} renders the '{case}' conversation, which transformers refuses: {reference.text}"
    return LintFinding(
        "TK901",
        rule.severity,
        message,
        rule.hint,
        engine=engine,
        case=case,
        position=0,
        expected=f"error: {reference.text}",
        actual=_snippet(outcome.text, 0),
    )


def _first_difference(a: str, b: str) -> int:
    for at, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return at
    return min(len(a), len(b))


def _snippet(text: str, at: int) -> str:
    return text[max(0, at - _SNIPPET_BEFORE) : at + _SNIPPET_AFTER]
