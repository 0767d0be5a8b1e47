"""Loops compiled without jinja2's ``LoopContext``, and a variable's items read again from the last dict read
(render/_loops.py), give what transformers 5.23 and plain jinja2 give.

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
from turnkit.render._loops import plain_loop
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

# the same item read again: from the same dict, another dict, a rebound variable, a missing key, values that are
# not dicts (strings, namespaces, undefined), in nested loops, their else branches and ``{% set %}`` blocks
KEPT_ITEMS = [
    "{% for m in messages %}{% if m['role'] == 'system' %}S{% elif m.role == 'user' %}U{{ m.content }}"
    "{% elif m['role'] == 'tool' %}T{{ m['content'] }}{% else %}{{ m.role }}{{ m.content }}{% endif %}{% endfor %}",
    "{% for m in messages %}{{ m.role }}{% set m = messages[0] %}{{ m.role }}{% set m = 'x' %}{{ m.role }}|"
    "{% endfor %}",
    "{% for m in messages %}{{ m.nope }}{{ m.nope is defined }}{{ m.role }}{% set m = {'nope': 1} %}{{ m.nope }}"
    "{% endfor %}",
    "{% for m in messages %}{% for c in [m, messages[0], m] %}{{ c.role }}{{ m.role }}{% else %}{{ m.role }}"
    "{% endfor %}{% endfor %}",
    "{% for m in messages %}{% for m in [messages[-1], m] %}{{ m.role }}{% endfor %}{{ m.role }};{% endfor %}",
    "{% set ns = namespace(role='n') %}{% for m in [ns, messages[1], 'str', ns] %}{{ m.role }}{{ m.role is defined }}"
    "{% endfor %}",
    "{% for m in messages %}{% set x %}{{ m.role }}{{ m.role }}{% endset %}{{ x }}{% endfor %}",
    "{% for m in messages %}{{ m.content.upper() }}{{ m.content.upper }}{{ m.content }}{% endfor %}",
    "{% macro f(m) %}{{ m.role }}{% endmacro %}{% for m in messages %}{{ f(m) }}{{ m.role }}{{ f(messages[0]) }}"
    "{{ m.role }}{% endfor %}",
    "{% for m in messages %}{{ m.role.nope }}{% endfor %}{% for m in messages %}{{ m.role }}{{ m.role }}{% endfor %}",
    # a namespace changes during the render: its reads are never kept
    "{% set ns = namespace(n=0, d={'a': 1}) %}{% for m in messages %}{{ ns.n }}{% set ns.n = ns.n + 1 %}{{ ns.n }}"
    "{{ ns.d.a }}{% set ns.d = {'a': ns.n} %}{{ ns.d.a }}{% endfor %}",
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
@pytest.mark.parametrize("source", PLAIN + KEPT_ITEMS + NOT_PLAIN)
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


@pytest.mark.parametrize(
    "source",
    [
        "{% for x in [1, 2, 3] %}{{ loop.index }}{% endfor %}",  # plain: a literal list, counted at run time
        "{% for x in [1, 2, 3] %}{{ x }}{% endfor %}",  # not plain: the loop guard
        "{% for x in range(3) %}{{ loop.index }}{% endfor %}",  # plain loop over no list: a LoopContext
        "{% for x in range(3) | list %}{{ loop.first }}{% endfor %}{% for x in 'ab' %}{{ x }}{% endfor %}",
    ],
)
def test_every_kind_of_loop_is_counted(source: str) -> None:
    assert ChatTemplate(source, limits=Limits(max_loop_iterations=5)).render(CHAT[:1])
    with pytest.raises(TemplateLimitError, match="max_loop_iterations"):
        ChatTemplate(source, limits=Limits(max_loop_iterations=2)).render(CHAT[:1])


def test_a_long_plain_loop_is_counted_as_it_runs() -> None:
    # over 1,024 items: a LoopContext over the counting generator, stopped at the limit, not before it starts
    source = "{% for x in range(3000) | list %}{{ loop.index if loop.index > 1990 }}{% endfor %}"
    limits = Limits(max_loop_iterations=2000)
    with pytest.raises(TemplateLimitError, match="max_loop_iterations") as failure:
        ChatTemplate(source, limits=limits).render(CHAT[:1])
    assert failure.traceback[-1].name == "guard_loop"


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


@pytest.mark.parametrize("source", KEPT_ITEMS[:7])
def test_repeated_items_are_kept(source: str) -> None:
    assert "tk_unset" in _compiled(source).split("def root", 1)[1].split("\nblocks = ", 1)[0]


@pytest.mark.parametrize("prefix_cache", [False, True])
def test_kept_items_follow_the_object_not_the_name(prefix_cache: bool) -> None:
    # every read of ``m.role`` after a rebinding must see the new dict, in every iteration
    source = KEPT_ITEMS[1]
    expected = _JINJA.from_string(source).render(messages=CHAT)
    assert ChatTemplate(source, prefix_cache=prefix_cache).render(CHAT) == expected
    assert ChatTemplate(source, prefix_cache=prefix_cache).render(CHAT[::-1]) == _JINJA.from_string(source).render(
        messages=CHAT[::-1]
    )


@pytest.mark.reference
@pytest.mark.parametrize(
    "source",
    [
        "{% for m in messages %}[{% for c in m.get('tool_calls', []) %}{{ loop.index }}{{ c }}{% endfor %}]"
        "{% endfor %}",
        "{% for c in [] %}{{ loop.first }}{% else %}none{% endfor %}{% for c in () %}{{ loop.last }}{% endfor %}",
        "{% for m in messages %}{% for c in m.get('tool_calls', ()) %}{{ loop.length }}{% else %}-{% endfor %}"
        "{{ loop.index }}{% endfor %}",
    ],
)
def test_an_empty_plain_loop_runs_no_iteration_and_counts_none(source: str) -> None:
    """An empty list or tuple is handed to the loop as it is (no pairs to make, nothing to count)."""
    assert plain_loop([], None) == [] and plain_loop((), None) == ()
    _matches_transformers(source, CHAT)
    # the empty loops count nothing: the messages loop alone fits a limit of its own length
    assert ChatTemplate(source, limits=Limits(max_loop_iterations=len(CHAT))).render(CHAT) is not None
