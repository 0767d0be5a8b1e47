"""Loops compiled without jinja2's ``LoopContext`` (render/_loops.py) give what transformers 5.23 and plain jinja2 give.

Each template runs through both sides of the run-time test (a list or tuple takes the plain path; a string, a
dict, a generator, a range and a list longer than the loops counted up front keep the ``LoopContext``), and the
compile-time test is checked on its own: the templates below that must not take the plain path (``loop`` passed
on, cycled, kept in a macro or call block, a recursive or filtered loop) are asserted not to.
"""

from __future__ import annotations

from typing import Any

import jinja2
import jinja2.ext
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tests.render.test_fast_paths import _matches_transformers
from turnkit import ChatTemplate, Limits, TemplateError, TemplateLimitError
from turnkit.render._sandbox import sandbox_for

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "S"},
    {"role": "user", "content": "U1"},
    {"role": "assistant", "content": "A1"},
    {"role": "tool", "content": "T1"},
    {"role": "tool", "content": "T2"},
    {"role": "user", "content": "U2"},
]

# every property the plain path computes, printed and tested
ALL = (
    "[{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}"
    "{{ loop.revindex0 }}{{ loop.depth }}{{ loop.depth0 }}|{{ loop.previtem }}|{{ loop.nextitem }}"
    "|{{ loop.previtem is defined }}{{ loop.nextitem is defined }}]"
)

PLAIN = [
    "{% for m in messages %}" + ALL.replace("loop.previtem }}", "loop.previtem.role }}") + "{% endfor %}",
    "{% for m in messages %}{% if loop.first or loop.previtem['role'] != m['role'] %}<{{ m.role }}>{% endif %}"
    "{{ m.content }}{% if loop.last or loop.nextitem.role != m.role %}</{{ m.role }}>{% endif %}{% endfor %}",
    "{% for x in (1, 2, 3) %}" + ALL + "{% endfor %}",
    "{% for x in 'abc' %}" + ALL + "{% endfor %}",
    "{% for k in messages[0] %}" + ALL + "{% endfor %}",
    "{% for k, v in messages[0].items() %}{{ k }}={{ v }}" + ALL + "{% endfor %}",
    "{% for x in range(4) %}" + ALL + "{% endfor %}",
    "{% for m in messages | selectattr('role', 'equalto', 'tool') %}" + ALL + "{% endfor %}",
    "{% for x in range(1030) | list %}{% if loop.index0 > 1025 or loop.first %}" + ALL + "{% endif %}{% endfor %}",
    "{% for x in [] %}{{ loop.index }}{% else %}empty{% endfor %}",
    "{% for x in [7] %}" + ALL + "{% endfor %}",
    # nested: the inner body's ``loop`` is the inner loop; its iterable and else branch see the outer one
    "{% for m in messages %}{% for c in m.content %}{{ loop.index }}/{{ loop.length }};{% endfor %}"
    "{% for x in range(loop.index) %}{{ x }}{% else %}none at {{ loop.index }}{% endfor %}"
    "{% for y in [] %}{% else %}{{ loop.revindex }}{% endfor %}{{ loop.last }}|{% endfor %}",
    "{% for m in messages %}{% if loop.index == 2 %}{% continue %}{% endif %}{{ loop.index }}"
    "{% if loop.nextitem is defined and loop.nextitem.role == 'tool' %}{% break %}{% endif %}{% endfor %}",
    "{% for m in messages %}{% set x %}{{ loop.index }}:{{ m.role }}{% endset %}{{ x }}{% endfor %}",
    "{% for m in messages %}{% filter upper %}{{ m.role }}{{ loop.first }}{% endfilter %}{% endfor %}",
    "{% for m in messages %}{{ loop.previtem.missing }}{{ loop.nextitem.content }}{% endfor %}",
]

NOT_PLAIN = [
    "{% for m in messages %}{{ loop.cycle('a', 'b') }}{{ loop.index }}{% endfor %}",
    "{% for m in messages %}{{ loop.changed(m.role) }}{% endfor %}",
    "{% macro f(l) %}{{ l.index }}{% endmacro %}{% for m in messages %}{{ f(loop) }}{% endfor %}",
    "{% for m in messages %}{% macro g() %}{{ loop.index }}{% endmacro %}{{ g() }}{% endfor %}",
    "{% macro h() %}{{ caller() }}{% endmacro %}{% for m in messages %}{% call h() %}{{ loop.index }}{% endcall %}"
    "{% endfor %}",
    "{% for m in messages %}{{ loop['index'] }}{{ loop | length }}{% endfor %}",
    "{% for m in messages if m.role != 'system' %}{{ loop.index }}{{ loop.last }}{% endfor %}",
    "{% for m in messages recursive %}{{ loop.index }}{{ loop.depth }}{% endfor %}",
    "{% for m in messages %}{{ loop.nope }}{{ loop.index }}{% endfor %}",
]


def _compiled(source: str) -> str:
    return sandbox_for(Limits()).compile(source, raw=True)


@pytest.mark.reference
@pytest.mark.parametrize("source", PLAIN + NOT_PLAIN)
def test_loops_match_transformers(source: str) -> None:
    _matches_transformers(source, CHAT)


@pytest.mark.parametrize("source", PLAIN)
def test_plain_loops_take_the_plain_path(source: str) -> None:
    assert "tk_plain_loop(" in _compiled(source)


@pytest.mark.parametrize("source", NOT_PLAIN)
def test_other_loops_keep_the_loop_context(source: str) -> None:
    code = _compiled(source)
    assert "LoopContext(" in code
    assert "tk_plain_loop(" not in code


def test_only_the_loop_whose_body_allows_it_is_plain() -> None:
    # the outer loop passes its ``loop`` on; the inner one reads a property only
    code = _compiled(
        "{% macro f(l) %}{{ l.index }}{% endmacro %}"
        "{% for m in messages %}{{ f(loop) }}{% for c in m.content %}{{ loop.first }}{% endfor %}{% endfor %}"
    )
    assert code.count("tk_plain_loop(") == 1
    assert code.count("in LoopContext(") == 1


def test_plain_loops_are_counted_against_the_loop_limit() -> None:
    template = ChatTemplate(
        "{% for m in messages %}{% for c in m.content %}{{ loop.index }}{% endfor %}{{ loop.last }}{% endfor %}",
        limits=Limits(max_loop_iterations=10),
    )
    assert template.render(CHAT[:3])  # 3 + 6 iterations
    with pytest.raises(TemplateLimitError, match="max_loop_iterations"):
        template.render(CHAT)


_JINJA = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
_PROPERTIES = ALL + "{% if loop.index0 % 3 == 2 %}{% continue %}{% endif %}."

_items = st.lists(st.one_of(st.integers(-5, 5), st.text("ab", max_size=3)), max_size=8)


@settings(max_examples=60, deadline=None)
@given(items=_items, as_tuple=st.booleans())
def test_any_list_or_tuple_gives_what_jinja2_gives(items: list[Any], as_tuple: bool) -> None:
    source = (
        "{% for x in items %}{{ x }}" + _PROPERTIES + "{% for y in items %}{{ loop.revindex }}{% endfor %}{% endfor %}"
    )
    value = tuple(items) if as_tuple else items
    expected = _JINJA.from_string(source).render(items=value)
    assert ChatTemplate(source).render([{"role": "user", "content": ""}], items=value) == expected


@pytest.mark.parametrize(
    ("source", "hint"),
    [
        ("{% for m in messages %}{{ loop.previtem.role }}{% endfor %}", "there is no previous item"),
        ("{% for m in messages %}{{ loop.nextitem.role }}{% endfor %}", "there is no next item"),
    ],
)
def test_past_the_ends_is_jinja2s_undefined_value(source: str, hint: str) -> None:
    assert "tk_plain_loop(" in _compiled(source)
    with pytest.raises(TemplateError, match=hint):
        ChatTemplate(source).render(CHAT)
