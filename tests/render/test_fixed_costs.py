"""The per-render set-up outside the template's own code (context, budget, inputs) gives what transformers gives.

Each shortcut of the fixed cost has its fast side and its fallback side tested here, each with a case that fails
if the shortcut were taken where it must not be.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.render.reference import reference_render
from turnkit import ChatTemplate, TemplateError

pytestmark = pytest.mark.reference

CHAT: list[dict[str, Any]] = [{"role": "user", "content": "<a> & b"}]


def test_a_template_without_autoescape_blocks_shares_one_evaluation_context() -> None:
    source = "{% for m in messages %}{{ [m.content, '<i>'] | join }}|{{ m.content | replace('&', '+') }}{% endfor %}"
    template = ChatTemplate(source)
    compiled = template._compile("default")
    shared = compiled.turnkit_eval_ctx  # type: ignore[union-attr]
    assert shared.autoescape is False and shared.volatile is False
    expected = reference_render(copy.deepcopy(CHAT), source)[1]
    assert template.render(CHAT) == template.render(CHAT) == expected
    assert compiled.turnkit_eval_ctx is shared  # type: ignore[union-attr]


def test_a_template_with_an_autoescape_block_gets_a_fresh_evaluation_context_per_render() -> None:
    # A render that fails inside the block leaves its evaluation context escaping; ``join`` reads it (outside the
    # block) in the next render, which would escape '<a>' if the context were the one the failed render left.
    source = (
        "{% if messages[0].role == 'fail' %}{% autoescape true %}{{ raise_exception('boom') }}{% endautoescape %}"
        "{% endif %}{{ [messages[0].content, '|' | safe] | join }}"
    )
    template = ChatTemplate(source)
    assert not hasattr(template._compile("default"), "turnkit_eval_ctx")
    with pytest.raises(TemplateError, match="boom"):
        template.render([{"role": "fail", "content": "x"}])
    expected = reference_render(copy.deepcopy(CHAT), source)[1]
    assert expected == "<a> & b|"
    assert template.render(CHAT) == expected
