"""Random conversations through real templates: turnkit and transformers 5.23 give the same text or both fail."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.corpora import CORPORA, corpus_path
from tests.render.conversations import TOOLS
from tests.render.reference import SPECIAL_TOKENS, reference_render
from turnkit import ChatTemplate, TemplateError

pytestmark = [pytest.mark.corpus, pytest.mark.reference]

TEMPLATES = [
    "Qwen-Qwen2.5-7B-Instruct.jinja",
    "Qwen3.5-4B.jinja",
    "meta-llama-Llama-3.1-8B-Instruct.jinja",
    "openai-gpt-oss-120b.jinja",
    "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "HuggingFaceTB-SmolLM3-3B.jinja",
]

# Text that stresses escaping and templating: quotes, backslashes, Jinja and special-token look-alikes, Unicode.
PIECES = [*"ab \n\t\"'\\{}%#<>|/éß漢😀", "{{", "{%", "<|im_end|>", "</s>", "[INST]"]
TEXT = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)
ARGUMENTS = st.dictionaries(st.sampled_from(["city", "tz", "unit"]), TEXT | st.integers(-5, 5), max_size=2)
CALL = st.builds(
    lambda name, args, as_json, i: {
        "id": f"call{i:05d}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args) if as_json else args},
    },
    st.sampled_from(["get_weather", "get_time"]),
    ARGUMENTS,
    st.booleans(),
    st.integers(0, 99999),
)
MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "content": TEXT}),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": TEXT | st.none()},
        optional={"tool_calls": st.lists(CALL, min_size=1, max_size=2), "reasoning_content": TEXT},
    ),
    st.fixed_dictionaries({"role": st.just("tool"), "content": TEXT, "tool_call_id": st.just("call00001")}),
)
CONVERSATION = st.tuples(
    st.none() | st.fixed_dictionaries({"role": st.just("system"), "content": TEXT}),
    st.lists(MESSAGE, min_size=1, max_size=5),
).map(lambda pair: ([pair[0]] if pair[0] else []) + pair[1])
OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "tools": st.just(TOOLS),
        "add_generation_prompt": st.booleans(),
        "enable_thinking": st.booleans(),
    },
)


def _outcome(template: ChatTemplate, conversation: Any, options: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", template.render(copy.deepcopy(conversation), **copy.deepcopy(options))
    except TemplateError as exc:
        return "error", exc


@pytest.mark.parametrize("name", TEMPLATES)
def test_random_conversations_match_transformers(name: str) -> None:
    corpus_path("templates")
    source = (CORPORA / "templates" / name).read_text(encoding="utf-8")
    template = ChatTemplate(source, special_tokens=SPECIAL_TOKENS)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(CONVERSATION, OPTIONS)
    def check(conversation: list[dict[str, Any]], options: dict[str, Any]) -> None:
        ours = _outcome(template, conversation, options)
        theirs = reference_render(copy.deepcopy(conversation), source, **copy.deepcopy(options))
        assert ours[0] == theirs[0], (ours, theirs)
        if ours[0] == "ok":
            assert ours[1] == theirs[1]

    check()
