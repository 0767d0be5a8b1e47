"""Templates compiled to straight Python (``render/_straight.py``) render, fail and stop as the generator did."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.render.reference import reference_render
from turnkit import ChatTemplate, Limits, TemplateError, TemplateLimitError
from turnkit.limits import DEFAULT_LIMITS
from turnkit.render._sandbox import sandbox_for

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi", "meta": {"n": 1}},
    {"role": "assistant", "content": "Hello"},
]


def _straight(source: str, *, fragments: bool = False) -> bool:
    code = sandbox_for(DEFAULT_LIMITS, fragments=fragments).compile(source, raw=True)
    return "\n    return tk_out\n" in code


@pytest.mark.parametrize(
    ("source", "straight"),
    [
        ("{% for m in messages %}{{ m.content }}{% endfor %}", True),
        ("{% macro f() %}{{ caller() }}{% endmacro %}{% call f() %}x{% endcall %}{% set y %}z{% endset %}", True),
        ("{% generation %}x{% endgeneration %}", False),  # the span tracker needs the length before the block
        ("{% macro f() %}{% generation %}x{% endgeneration %}{% endmacro %}", False),
        ("{% block b %}x{% endblock %}", False),
        ("{% extends 'base' %}", False),
        ("{% include 'other' %}", False),
        ("{% import 'other' as o %}", False),
        ("{% from 'other' import f %}", False),
        ("{{ self }}", False),
    ],
)
def test_which_templates_are_straight(source: str, straight: bool) -> None:
    assert _straight(source) is straight
    assert _straight(source, fragments=True) is straight  # remembered loop iterations append to the list too


@pytest.mark.reference
@pytest.mark.parametrize(
    "source",
    [
        # macros, call blocks, set blocks and filter blocks render into their own buffers, output in the root's
        "{% macro f(m) %}[{{ m.role }}]{% endmacro %}{% for m in messages %}{{ f(m) }}{% call f(m) %}{% endcall %}"
        "{% set t %}{{ m.content }}{% endset %}{{ t | upper }}{% filter lower %}{{ m.role }}X{% endfilter %}"
        "{% endfor %}",
        # recursive loops (their body is a function of its own), loop else, break and continue, nested loops
        "{% for m in [messages, [messages[0]]] recursive %}{% if m is mapping %}{{ m.role }}{% else %}"
        "({{ loop(m) }}){% endif %}{% endfor %}",
        "{% for m in [] %}x{% else %}empty{% endfor %}{% for m in messages %}{% if loop.index == 2 %}{% continue %}"
        "{% endif %}{% for k in m %}{{ k }}{% if k == 'content' %}{% break %}{% endif %}{% endfor %};{% endfor %}",
        # a loop filter, loop.cycle and a bare ``loop`` (a LoopContext), output in many pieces
        "{% for m in messages if m.role != 'system' %}{{ loop.cycle('a', 'b') }}{{ loop | length }}{{ m.role }}"
        "{{ '|' }}{{ m.content }}{% endfor %}{{ messages | length }}",
        # the root's variables read from the render's dict: given, global, absent (undefined), assigned first
        "{{ absent }}{{ absent is defined }}{% if absent %}x{% endif %}{{ range(2) | list }}"
        "{% set add_generation_prompt = 5 %}{{ add_generation_prompt }}{% set absent = 1 %}{{ absent }}",
        "{{ absent.deeper }}",
        # a template that prints nothing, and one that only prints constants
        "{% set x = 1 %}",
        "a{{ 'b' }}c",
        # errors: raise_exception inside a loop, an undefined value used mid-render, a Python error
        "{% for m in messages %}{{ m.role }}{% if loop.last %}{{ raise_exception('no ' + m.role) }}{% endif %}"
        "{% endfor %}",
        "{% for m in messages %}{{ m.role }}{{ m.missing.deeper }}{% endfor %}",
        "{% for m in messages %}{{ m.content + 1 }}{% endfor %}",
    ],
)
def test_straight_templates_match_transformers(source: str) -> None:
    assert _straight(source)
    try:
        ours: tuple[str, Any] = ("ok", ChatTemplate(source).render(copy.deepcopy(CHAT)))
    except TemplateError as exc:
        ours = ("error", exc)
    theirs = reference_render(copy.deepcopy(CHAT), source)
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "ok":
        assert ours[1] == theirs[1]
    elif "raise_exception" in source:
        assert str(ours[1]) == str(theirs[1].args[0]) == "no assistant"


def test_an_error_names_its_template_line() -> None:
    source = "{% for m in messages %}\n{{ m.role }}\n{{ m.missing.deeper }}\n{% endfor %}"
    assert _straight(source)
    with pytest.raises(TemplateError, match=r"\(template line 3\)"):
        ChatTemplate(source).render(CHAT)


def test_the_output_limit_stops_a_loop_midway() -> None:
    # the loop would print 10 MB; the check at its iterations stops it after about 1,000 characters
    template = ChatTemplate(
        "{% for i in range(1000000) %}{{ messages[0].content }}{% endfor %}",
        limits=Limits(max_output_chars=1000, max_range=10**6, max_loop_iterations=10**7),
    )
    chat = [{"role": "user", "content": "x" * 10}]
    with pytest.raises(TemplateLimitError, match="max_output_chars") as failure:
        template.render(chat)
    assert failure.value.code == "template_output"
    assert failure.traceback[-1].name == "check_output"
    assert failure.traceback[-2].name == "output_grew"  # raised mid-render, not once the loop was over


@pytest.mark.parametrize("generation", ["", "{% generation %}{% endgeneration %}"])
def test_the_output_limit_holds_for_straight_and_generator_templates(generation: str) -> None:
    source = generation + "{{ messages[0].content * 5 }}"
    assert _straight(source) is not generation
    limits = Limits(max_output_chars=10)
    chat = [{"role": "user", "content": "x" * 100}]
    # 500 characters: over 10 plus twice the input (about 150 characters of variables)
    with pytest.raises(TemplateLimitError, match=r"grew past \d+ characters \(Limits.max_output_chars\)"):
        ChatTemplate(source, limits=limits).render(chat)
    # 200 characters: within twice the input
    assert ChatTemplate(generation + "{{ messages[0].content * 2 }}", limits=limits).render(chat) == "x" * 200


def test_jinja2s_own_render_joins_the_list() -> None:
    template = sandbox_for(DEFAULT_LIMITS).from_string("{% for x in xs %}{{ x }},{% endfor %}")
    assert template.render(xs=[1, 2]) == "1,2,"
    assert "".join(template.generate(xs=[3])) == "3,"


def test_a_captured_block_is_held_to_the_output_limit() -> None:
    source = "{% set x %}{% for i in range(1000) %}{{ messages[0].content }}{% endfor %}{% endset %}{{ x | length }}"
    chat = [{"role": "user", "content": "x" * 10}]
    assert ChatTemplate(source).render(chat) == "10000"
    with pytest.raises(TemplateLimitError, match="a captured block grew past 100 characters") as failure:
        ChatTemplate(source, limits=Limits(max_output_chars=100)).render(chat)
    assert failure.value.code == "template_output"


@pytest.mark.parametrize(("length", "charged"), [(1023, False), (1024, True)])
def test_a_captured_string_is_charged_from_4_kb(length: int, charged: bool) -> None:
    # non-ASCII: counted as 4 bytes a character, so 1,024 characters are the first 4 KB charged; 300 of them
    # (1.2 MB) are over a 1 MB budget, 300 of 1,023 characters are charged nothing
    source = "{% for i in range(300) %}{% set x %}{{ messages[0].content }}{% endset %}{% endfor %}ok"
    template = ChatTemplate(source, limits=Limits(max_render_bytes=1 << 20))
    chat = [{"role": "user", "content": "é" * length}]
    if charged:
        with pytest.raises(TemplateLimitError, match="max_render_bytes") as failure:
            template.render(chat)
        assert failure.value.code == "template_memory"
    else:
        assert template.render(chat) == "ok"
