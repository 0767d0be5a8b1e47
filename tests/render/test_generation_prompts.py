"""llama.cpp's generation-prompt cases: the text add_generation_prompt appends, for real model templates."""

from __future__ import annotations

from typing import Any

import pytest

from tests.corpora import CORPORA, corpus_params, corpus_path
from tests.render.reference import reference_render
from turnkit import ChatTemplate

pytestmark = [pytest.mark.corpus, pytest.mark.reference]

RECORDS = [
    param
    for param in corpus_params("template-renders/llama.cpp-generation-prompts.jsonl")
    if param.values[0] is None or param.values[0]["continue_final_message"] == "none"
]


@pytest.mark.parametrize("record", RECORDS)
def test_generation_prompt(record: dict[str, Any] | None) -> None:
    corpus_path("template-renders/llama.cpp-generation-prompts.jsonl")
    assert record is not None
    source = (CORPORA / record["template_file"]).read_text(encoding="utf-8")
    variables: dict[str, Any] = {"bos_token": "", "eos_token": "", **record["python_jinja2"]["extra_variables"]}
    template = ChatTemplate(source, special_tokens=variables)
    with_prompt = template.render(record["messages"], add_generation_prompt=True)
    without = template.render(record["messages"], add_generation_prompt=False)
    assert with_prompt.startswith(without)
    suffix = with_prompt[len(without) :]
    assert suffix == record["expected_generation_prompt"] == record["python_jinja2"]["generation_prompt"]
    status, text = reference_render(record["messages"], source, add_generation_prompt=True, **variables)
    assert (status, text) == ("ok", with_prompt)
