"""Cross-engine renders on small hand-written templates with a known divergence (and one without)."""

from __future__ import annotations

import pytest

from tests.lint.engines import require_engines
from turnkit import lint
from turnkit.lint._engines import MATRIX, compare, engine_renders, render_case

CHATML = (
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)


def divergences(source, engines):
    return [f for f in lint(source, engines=engines) if f.code == "TK901"]


def test_portable_template_agrees_everywhere():
    require_engines("minijinja", "hf-jinja")
    assert divergences(CHATML, ["minijinja", "hf-jinja"]) == []


def test_printed_dict_diverges_in_hf_jinja_with_position_and_snippets():
    require_engines("hf-jinja")
    source = CHATML + "{%- for m in messages if m.tool_calls %}{{ m.tool_calls[0].function }}{%- endfor %}"
    (finding,) = divergences(source, ["hf-jinja"])
    assert (finding.engine, finding.case, finding.severity) == ("hf-jinja", "tool-results", "error")
    reference = render_case(source, next(c for c in MATRIX if c.name == "tool-results"))
    assert reference is not None and reference.text[finding.position :].startswith("'name': 'get_weather'")
    assert finding.expected is not None and finding.actual is not None
    assert "{'name'" in finding.expected and '{"name"' in finding.actual


def test_strip_with_argument_diverges_in_hf_jinja_only():
    require_engines("minijinja", "hf-jinja")
    source = CHATML.replace("{{ m.content }}", "{{ (m.content ~ ' \\n\\n').rstrip('\\n') }}")
    found = divergences(source, ["minijinja", "hf-jinja"])
    assert found and {f.engine for f in found} == {"hf-jinja"}
    assert all(f.expected and f.actual and f.expected.startswith("\n") is False for f in found)


def test_tojson_apostrophe_diverges_in_minijinja():
    require_engines("minijinja")
    source = CHATML + "{%- if tools %}{{ tools|tojson }}{%- endif %}"
    found = divergences(source, ["minijinja"])
    assert {f.case for f in found} == {"tools", "tool-results"}
    assert all("\\u0027" in (f.actual or "") for f in found)


def test_engine_failure_is_a_divergence():
    require_engines("minijinja")
    (finding, *_) = divergences("{% generation %}{{ messages[0].content }}{% endgeneration %}", ["minijinja"])
    assert finding.actual is not None and finding.actual.startswith("error: ")


def test_transformers_failure_where_engines_render():
    require_engines("minijinja")
    found = divergences("{% for t in tools %}{{ t.function.name }}{% endfor %}{{ messages[0].content }}", ["minijinja"])
    assert any(f.case == "plain" and (f.expected or "").startswith("error: ") for f in found)


@pytest.mark.parametrize("case", MATRIX, ids=lambda c: c.name)
def test_continue_final_message_cut_matches(case):
    require_engines("minijinja")
    reference = render_case(CHATML, case)
    (outcome,) = engine_renders("minijinja", CHATML, [case])
    assert reference is not None and compare("minijinja", case.name, reference, outcome) is None
