"""The model-output corpus as test cases: which built-in format, prompt prefix and tools each record uses,
and how its expected value is compared. Shared by the corpus test and ``tests/parse/corpus_report.py``.

Every record of ``model-outputs/*.jsonl`` becomes a case. A case is *exact* when its expected value is
complete (not ``expected: null``, not ``expected_is_partial``, not ``tool_calls_count``, has text output);
exact cases must match (or be listed with a reason in ``corpus_xfail.json``); the others must still parse
without error under every chunking.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from tests.corpora import CORPORA, read_jsonl

FILES = ("llama.cpp", "vllm", "transformers", "harmony")
XFAIL_FILE = Path(__file__).with_name("corpus_xfail.json")


@dataclass
class Case:
    key: str
    record: dict[str, Any]
    format: str
    prefix: str | None
    tools: list[dict[str, Any]] | None
    exact: bool
    why_not_exact: str = ""
    no_calls: bool = False
    """``parse_tool_calls: false``: the source did not look for calls; run the format without its tool regions."""
    whole_calls: bool = False
    """The source returned a call only once complete (vLLM's non-streaming ``extract_tool_calls``): run
    with the format's ``whole_calls`` option."""


@lru_cache(maxsize=1)
def _llama_tools() -> dict[str, Any]:
    path = CORPORA / "model-outputs" / "llama.cpp-tools.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _tools(record: dict[str, Any]) -> list[dict[str, Any]] | None:
    names = record.get("context", {}).get("tools")
    if not names:
        return None
    out = []
    for item in names:
        if isinstance(item, str) and item in _llama_tools():
            out.append({"type": "function", "function": _llama_tools()[item]})
        elif isinstance(item, dict):
            out.append(item)
    return out or None


@cache
def generation_prompt(template_file: str, enable_thinking: bool | None) -> str | None:
    """The generation prompt a template renders after a user turn (the ``prefix`` of the output)."""
    from datetime import datetime

    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    path = CORPORA / "templates" / template_file
    if not path.exists():
        return None

    def raise_exception(message: str) -> None:
        raise jinja2.TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = lambda v, indent=None, **_: json.dumps(v, ensure_ascii=False, indent=indent)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime(2025, 7, 10, 12).strftime(fmt)
    marker = "USER-TURN-MARKER"
    variables: dict[str, Any] = {
        "messages": [{"role": "user", "content": marker}],
        "add_generation_prompt": True,
        "bos_token": "<s>",
        "eos_token": "</s>",
    }
    if enable_thinking is not None:
        variables["enable_thinking"] = enable_thinking
    try:
        rendered = env.from_string(path.read_text(encoding="utf-8")).render(**variables)
    except Exception:  # noqa: BLE001 - a template we cannot render gives no prefix
        return None
    return rendered.rpartition(marker)[2] if marker in rendered else None


def _prefix(record: dict[str, Any], fmt: str) -> str | None:
    context = record.get("context", {})
    if context.get("case_fields", {}).get("reasoning_effort") == "no_think":
        return ""  # the vLLM test disabled thinking, so the prompt did not open a reasoning block
    if context.get("vllm_reasoning_parser") == "hy_v3" and "case_fields" in context:
        # vLLM's hy_v3 parser takes reasoning_effort from the request and defaults to "no_think" (identity
        # parser) when the request sets none: a record whose recorded fields give no effort ran without thinking.
        if not context["case_fields"].get("reasoning_effort"):
            return ""
    prefix = _rendered_prefix(record, fmt)
    if prefix is not None and record.get("context", {}).get("reasoning_format") == "none":
        # The source does no reasoning extraction: a prompt that opened thinking is not taken into account.
        from turnkit.parse import load_format

        for reasoning in load_format(fmt).spec.reasoning:
            for marker in reasoning.starts:
                at = prefix.rfind(marker)
                if at >= 0 and not prefix[at + len(marker) :].strip():
                    prefix = prefix[:at]
    return prefix


def _rendered_prefix(record: dict[str, Any], fmt: str) -> str | None:
    context = record.get("context", {})
    if context.get("thinking_forced_open"):
        from turnkit.parse import load_format

        spec = load_format(fmt).spec
        if spec.reasoning:
            return spec.reasoning[0].starts[0] + "\n"
    template = context.get("template")
    if isinstance(template, list):
        template = template[0]
    if isinstance(template, str):
        return generation_prompt(template, context.get("enable_thinking"))
    return None


# vLLM parser names whose syntax is a llama.cpp label, or a reasoning-only variant.
REASONING_ALIASES = {
    "deepseek_r1": "think_open",
    "qwen3": "qwen3_reasoning",
    "holo2": "think",
    "olmo3": "think_open",
    "hy_v3": "think_open",
    "seed_oss": "seed_oss_reasoning",
    "step3p5": "think_open",
    "gemma4": "gemma4_reasoning",
    "granite": "granite_reasoning",
    "kimi_k2": "kimi_k2_reasoning",
    "mistral": "mistral_nemo",
    "nemotron_v3": "think_open",
    "minimax_m2": "minimax_m2_reasoning",
    "minimax_m2_append_think": "minimax_m2_append_think",  # a content_prefix format (vllm_reasoning.py)
    "glm45": "think",
    "ernie45": "ernie45_reasoning",
    "deepseekv3": "deepseek_v3_reasoning",
    "base_thinking": "base_thinking",
    "hunyuan_a13b": "hunyuan_a13b",
}


# vLLM reasoning parsers whose non-streaming reading differs from their streaming one: records run only
# non-streaming (``modes: ["non-streaming"]``) use the declared complete-output variant.
COMPLETE_ALIASES = {
    "gemma4": "gemma4_reasoning_complete",
    "glm45": "think_complete",
}


# ... and whose streaming reading differs from the non-streaming one: records run only streaming.
STREAMING_ALIASES = {"minimax_m2_append_think": "minimax_m2_append_think_stream"}


def _format(record: dict[str, Any], source: str) -> str:
    label = record["format"]
    context = record.get("context", {})
    if source == "vllm" and "vllm_reasoning_parser" in context and "vllm_tool_parser" not in context:
        if context.get("modes") == ["non-streaming"] and label in COMPLETE_ALIASES:
            return COMPLETE_ALIASES[label]
        if context.get("modes") == ["streaming"] and label in STREAMING_ALIASES:
            return STREAMING_ALIASES[label]
        return REASONING_ALIASES.get(label, label)
    return label


def _exactness(record: dict[str, Any], source: str) -> tuple[bool, str]:
    expected = record.get("expected")
    if record.get("output") is None:
        return False, "output given only as token ids"
    if expected is None:
        return False, "expected: null (source asserts only that parsing does not fail)"
    if record.get("expected_is_partial"):
        return False, "expected_is_partial"
    if "tool_calls_count" in expected:
        return False, "tool_calls_count only"
    if "error" in expected:
        return False, "strict-mode error (turnkit parses harmony leniently)"
    if str(record.get("source", "")).endswith("#test_regex_timeout_handling"):
        # vLLM's test patches the parser's regex with a mock that raises TimeoutError: the expected value is
        # the parser's timeout fallback (whole output as content), not a parse of the text.
        return False, "expected value made by a mocked regex timeout, not by parsing"
    return True, ""


# vLLM tool parsers whose non-streaming ``extract_tool_calls`` returns a call only when its region is
# complete (closing marker / whole JSON) and otherwise gives the whole output back as content. (MiniMax-M1
# and Mistral accept an unclosed region, so they are not here.)
WHOLE_CALL_PARSERS = frozenset({"gemma4", "glm4_moe", "glm45", "glm47_moe", "llama3_json"})


def _non_streaming_tool_test(record: dict[str, Any], source: str) -> bool:
    """A record of a ``WHOLE_CALL_PARSERS`` parser made by ``extract_tool_calls`` (no streaming mode)."""
    context = record.get("context", {})
    return (
        source == "vllm"
        and context.get("vllm_tool_parser") in WHOLE_CALL_PARSERS
        and context.get("streaming") in (None, False, "False")
        and context.get("modes") in (None, ["non-streaming"])
    )


def cases() -> list[Case]:
    # ``base_thinking`` is a built-in (vllm_reasoning.py, with the tests' second end marker ``<alt:end>``):
    # no test copy is registered, it would shadow the built-in.
    out = []
    for source in FILES:
        for record in read_jsonl(f"model-outputs/{source}.jsonl"):
            fmt = _format(record, source)
            exact, why = _exactness(record, source)
            out.append(
                Case(
                    key=f"{source}:{record['_line']}",
                    record=record,
                    format=fmt,
                    prefix=None,
                    tools=_tools(record),
                    exact=exact,
                    why_not_exact=why,
                    no_calls=record.get("context", {}).get("parse_tool_calls") is False,
                    whole_calls=_non_streaming_tool_test(record, source),
                )
            )
    return out


def resolve_prefix(case: Case) -> str | None:
    try:
        return _prefix(case.record, case.format)
    except LookupError:
        return None


def xfails() -> dict[str, str]:
    if not XFAIL_FILE.exists():
        return {}
    data = json.loads(XFAIL_FILE.read_text(encoding="utf-8"))
    return {key: entry["reason"] for key, entry in data.items()}


# -- comparison -----------------------------------------------------------------------------------------
def _text(value: Any) -> str:
    return (value or "").strip()


def _norm_ws(text: str) -> str:
    return re.sub(r"\s+", "", text)


_EXACT_DOUBLE = 2**53


def _same_value(got: Any, want: Any, *, doubles: bool) -> bool:
    """JSON values equal; with ``doubles`` (the source parsed arguments with a JSON library that stores
    integers beyond 2**53 as doubles — llama.cpp's nlohmann::json) such an integer equals the double the
    source produced. Only that case is relaxed: everything else compares as ``==`` does."""
    if not doubles:
        return bool(got == want)
    if isinstance(want, float) and isinstance(got, int) and not isinstance(got, bool):
        return abs(got) > _EXACT_DOUBLE and float(got) == want
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(_same_value(got[k], want[k], doubles=True) for k in want)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(_same_value(g, w, doubles=True) for g, w in zip(got, want, strict=True))
    return bool(got == want)


def expected_message(record: dict[str, Any]) -> dict[str, Any]:
    """The record's expected value as turnkit-comparable fields (harmony messages folded into one message)."""
    expected = record["expected"]
    if "harmony_messages" not in expected:
        return expected
    content, reasoning, calls = [], [], []
    for message in expected["harmony_messages"]:
        recipient = message.get("recipient") or ""
        if recipient.startswith("functions."):
            calls.append({"name": recipient[len("functions.") :], "arguments": json.loads(message["content"])})
        elif message.get("channel") == "analysis":
            reasoning.append(message["content"])
        else:
            content.append(message["content"])
    return {"content": "".join(content), "reasoning_content": "".join(reasoning), "tool_calls": calls}


def _markers_of(record: dict[str, Any]) -> list[str]:
    """Region markers of the record's format (not content, even when the source kept them in content)."""
    from turnkit.parse import load_format

    try:
        spec = load_format(_format(record, "llama.cpp")).spec
    except LookupError:
        return []
    markers = [m for r in spec.reasoning for m in (*r.starts, *r.ends)] + list(spec.discard)
    return sorted(set(markers), key=len, reverse=True)


def _split_blocks(record: dict[str, Any], text: str) -> tuple[str, str] | None:
    """Content kept whole by the source, split the way turnkit reads it: every complete reasoning block
    (the format's start marker .. end marker) taken out, their texts joined as the reasoning. Exact: the
    rest must equal turnkit's content and the joined blocks its reasoning (several blocks, unlike the
    "ends with / contains" reading above)."""
    from turnkit.parse import load_format

    try:
        spec = load_format(_format(record, "llama.cpp")).spec
    except LookupError:
        return None
    content, reasoning = text, []
    for region in spec.reasoning:
        for start in region.starts:
            for end in region.ends:
                pattern = re.escape(start) + "(.*?)" + re.escape(end)
                reasoning += re.findall(pattern, content, flags=re.S)
                content = re.sub(pattern, "", content, flags=re.S)
    if not reasoning:
        return None
    return content.strip(), "".join(reasoning).strip()


def _without_opening_marker(record: dict[str, Any], expected: dict[str, Any]) -> str:
    """Expected reasoning without a leading opening marker of the format. llama.cpp keeps the opening
    marker as reasoning text when the prompt already opened reasoning: a repeated ``<think>`` written by
    the model (thinking forced open) or the prompt's own opener (Apriel's "Here are my reasoning steps:").
    A marker is never reasoning text, so it is not compared; everything after it is, exactly."""
    from turnkit.parse import load_format

    want = _text(expected["reasoning_content"])
    try:
        spec = load_format(_format(record, "llama.cpp")).spec
    except LookupError:
        return want
    if not _from_llama_cpp(record):
        return want
    for region in spec.reasoning:
        for start in sorted(region.starts, key=len, reverse=True):
            if want.startswith(start):
                return want[len(start) :].strip()
    return want


def _from_llama_cpp(record: dict[str, Any]) -> bool:
    return str(record.get("source", "")).startswith("ggml-org/llama.cpp")


def compare(record: dict[str, Any], message: dict[str, Any]) -> str | None:
    """``None`` when ``message`` matches the record's expected value, else what differs."""
    expected = expected_message(record)
    context = record.get("context", {})
    keep_reasoning_in_content = (
        context.get("reasoning_format") == "none"
        or context.get("reasoning_in_content")
        or context.get("vllm_reasoning_parser") == "minimax_m2_append_think"  # thinking kept inside content
        # vLLM tool-parser tests run without a reasoning parser: thinking text stays in their content.
        or (bool(context.get("vllm_tool_parser")) and not context.get("vllm_reasoning_parser"))
    )
    got_content, got_reasoning = _text(message.get("content")), _text(message.get("reasoning_content"))
    if keep_reasoning_in_content and "content" in expected:
        # The source kept the thinking text inside content: compare what that leaves meaningful — the
        # content ends with our content and contains our reasoning text.
        raw_want = _text(expected["content"])
        stripped = raw_want
        for marker in _markers_of(record):
            stripped = stripped.replace(marker, "")

        def kept(want: str) -> bool:
            fits = len(got_content) + len(got_reasoning) <= len(want)
            return want.endswith(got_content) and got_reasoning in want and fits

        if not (
            kept(raw_want) or kept(stripped.strip()) or _split_blocks(record, raw_want) == (got_content, got_reasoning)
        ):
            want = raw_want
            if raw_want != got_content:
                return f"content {got_content!r} / reasoning {got_reasoning!r} vs kept-in-content {want!r}"
    else:
        if context.get("json_schema") is not None:
            # A json_schema response format: llama.cpp parses the answer as that JSON document and gives the
            # document without the Markdown code fence the model put around it. The document is compared exactly.
            fenced = re.fullmatch(r"```(?:json)?\s*\n(.*?)\n?```", got_content, flags=re.S)
            if fenced is not None:
                got_content = fenced.group(1).strip()
        if "content" in expected and _text(expected["content"]) != got_content:
            return f"content {got_content!r} != {_text(expected['content'])!r}"
        if "reasoning_content" in expected and _without_opening_marker(record, expected) != got_reasoning:
            return f"reasoning {got_reasoning!r} != {_text(expected['reasoning_content'])!r}"
    if "tool_calls" in expected and context.get("parse_tool_calls") is not False:
        # (with parse_tool_calls: false the source did not extract calls: nothing to compare them with)
        want_calls = expected["tool_calls"]
        got_calls = message.get("tool_calls") or []
        if len(want_calls) != len(got_calls):
            return f"{len(got_calls)} tool calls != {len(want_calls)}: {got_calls!r}"
        for want, got in zip(want_calls, got_calls, strict=True):
            if want["name"] != got["function"]["name"]:
                return f"tool name {got['function']['name']!r} != {want['name']!r}"
            if "id" in want and want["id"] != got["id"]:
                return f"tool id {got['id']!r} != {want['id']!r}"
            args = got["function"]["arguments"]
            if want.get("arguments_is_partial_json"):
                got_text = args if isinstance(args, str) else json.dumps(args)
                if not _norm_ws(got_text).startswith(_norm_ws(want["arguments"])) and not _norm_ws(
                    want["arguments"]
                ).startswith(_norm_ws(got_text)):
                    return f"partial arguments {got_text!r} vs {want['arguments']!r}"
            elif not _same_value(args, want["arguments"], doubles=_from_llama_cpp(record)):
                return f"arguments {args!r} != {want['arguments']!r}"
    return None
