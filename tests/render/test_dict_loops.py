"""Loop bodies compiled twice, once for an exact dict in the loop variable (render/_loops.dict_loop_target), give
what transformers 5.23 and plain jinja2 give, on both copies.

Every template here loops over values of several kinds in one loop, so that each iteration picks its copy: plain
dicts (the dict copy: items read straight off the dict, ``.get`` called directly, repeated reads kept), and
strings, namespaces, lists, undefined values and dicts with missing keys or keys named like dict methods (the
generic copy, or the dict copy's undefined value). The compile-time test is checked on its own: loops that rebind
their variable, hold a macro or call block, or read it too little keep one body.
"""

from __future__ import annotations

import re
from typing import Any

import jinja2
import jinja2.ext
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tests.render.test_fast_paths import _matches_transformers
from turnkit import ChatTemplate, Limits
from turnkit.render._sandbox import sandbox_for

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "S", "get": "g", "n": 0},
    {"role": "user", "content": "U1", "tool_calls": None},
    {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
    {"role": "tool", "content": "T1"},
    {"role": "user", "content": ["a", "b"], "items": "it"},
]

# the loop's values: the conversation's dicts, and (the MIXED prefix) a string, a namespace, a list, an undefined
# value, a template-made dict holding an undefined value, an empty dict
MIXED = "{% set ns = namespace(role='nsr', content='nsc') %}"
VALUES = "[messages[0], 'str', ns, messages[1], [1, 2], nothing, {'role': nothing, 'content': 'made'}, {}] + messages"

SPECIALISED = [
    MIXED + "{% for m in " + VALUES + " %}{{ m.role }}|{{ m['role'] }}|{{ m.content }}|{{ m['content'] }};{% endfor %}",
    MIXED + "{% for m in " + VALUES + " %}{{ m.role is defined }}{{ m.nope is defined }}{{ m['role'] is none }}"
    "{{ m.content is string }}{{ m.role is undefined }};{% endfor %}",
    # ``get`` and ``items`` are dict methods (the method, not the item), ``n`` is falsy, ``tool_calls`` is None
    MIXED + "{% for m in " + VALUES + " %}{{ m.get('role', 'dflt') }}{{ m.get('nope') }}{{ m['get'] }}"
    "{{ m.items is callable }}{{ m['items'] }}{{ m.n }}{{ m.tool_calls }};{% endfor %}",
    # repeated reads (kept items), in every branch of an if chain
    "{% for m in messages + ['x'] + messages %}{% if m['role'] == 'system' %}S{{ m.content }}"
    "{% elif m.role == 'user' %}U{{ m.content }}{% elif m['role'] == 'tool' %}T{{ m['content'] }}"
    "{% else %}{{ m.role }}{{ m.content }}{% endif %}{% endfor %}",
    # nested loops: each picks its own copy; the inner one reads the outer variable too
    "{% for m in messages + ['xy'] %}{% for c in m.get('tool_calls') or m.content or [] %}{{ c.function }}"
    "{{ c.function is defined }}{{ m.role }}{{ m.role }}{{ c['function']['name'] if c.function is defined }}"
    "{% endfor %}|{% endfor %}",
    "{% for m in messages %}{% for k in m %}{{ k }}={{ m[k] }}{{ m.role }}{{ m.role }},{% endfor %}{% endfor %}",
    # loop controls, else branches, loop properties, set and filter blocks, an inline if
    "{% for m in messages %}{% if m.role == 'tool' %}{% break %}{% endif %}{% if m.content is none %}{% continue %}"
    "{% endif %}{{ loop.index }}{{ m.role }}{{ loop.nextitem.role if not loop.last }}{% for x in [] %}{% else %}"
    "{{ m.role }}{% endfor %}{% set t %}{{ m.role }}:{{ m.content }}{% endset %}{{ t }}{% filter upper %}"
    "{{ m.role }}{% endfilter %}{{ m.content if m.content is string else m.role }};{% endfor %}",
    # the variable's items printed, concatenated, filtered and passed on
    "{% for m in messages %}{{ m.role + ':' + (m.content if m.content is string else '') }}{{ m.role | upper }}"
    "{{ m.role ~ m.n }}{{ m | length }}{{ m.content | tojson }}{{ m.role | trim }}{% endfor %}",
    "{% for m in messages %}{{ m.role.upper() }}{{ m.role.nope }}{{ m['role'][0] }}{% endfor %}",
    # a loop inside a macro, a loop over a dict's items, a filtered loop
    "{% macro show(ms) %}{% for m in ms %}{{ m.role }}{{ m.content }}{% endfor %}{% endmacro %}"
    "{{ show(messages) }}{{ show(['ab', messages[0]]) }}",
    "{% for m in messages if m.role != 'tool' %}{{ m.role }}{{ m.content }}{% endfor %}",
    # failures: a missing item used, an item of a non-dict that fails
    "{% for m in messages %}{{ m.nope + 1 }}{{ m.role }}{% endfor %}",
    "{% for m in messages + [1] %}{{ m.role }}{{ m.role + 'x' }}{% endfor %}",
]

ONE_BODY = [
    # rebinds its variable (a set, a nested loop's target): the test at the top would not hold
    "{% for m in messages %}{{ m.role }}{% set m = 'x' %}{{ m.role }}{% endfor %}",
    "{% for m in messages %}{{ m.role }}{% for m in ['a'] %}{{ m.role }}{% endfor %}{{ m.role }}{% endfor %}",
    "{% for m in messages %}{% if m.role %}{% set m = {'role': 1} %}{% endif %}{{ m.role }}{% endfor %}",
    # a macro or call block in the body could run with the variable rebound
    "{% for m in messages %}{% macro f() %}{{ m.role }}{% endmacro %}{{ f() }}{{ m.role }}{% endfor %}",
    "{% macro h() %}{{ caller() }}{% endmacro %}{% for m in messages %}{% call h() %}{{ m.role }}{% endcall %}"
    "{{ m.role }}{% endfor %}",
    # too few reads of its items, a tuple target, a recursive loop
    "{% for m in messages %}{{ m.role }}{% endfor %}",
    "{% for k, v in messages[0].items() %}{{ k.role }}{{ v.role }}{{ k.x }}{{ v.x }}{% endfor %}",
    "{% for m in messages recursive %}{{ m.role }}{{ m.content }}{% endfor %}",
]


def _compiled(source: str) -> str:
    return sandbox_for(Limits()).compile(source, raw=True)


@pytest.mark.reference
@pytest.mark.parametrize("source", SPECIALISED + ONE_BODY)
def test_both_copies_match_transformers(source: str) -> None:
    _matches_transformers(source, CHAT)


@pytest.mark.parametrize("source", SPECIALISED[:9] + SPECIALISED[11:])
def test_loops_that_qualify_get_a_dict_copy(source: str) -> None:
    code = _compiled(source)
    assert "if type(l_1_m) is dict:" in code
    assert re.search(r"'\w+' in l_1_m |\(l_1_m\.get\(", code)  # a read straight off the dict, untested


def test_loops_in_macros_and_filtered_loops_get_a_dict_copy() -> None:
    assert "if type(l_2_m) is dict:" in _compiled(SPECIALISED[9])
    assert "if type(l_1_m) is dict:" in _compiled(SPECIALISED[10])


@pytest.mark.parametrize("source", ONE_BODY)
def test_other_loops_keep_one_body(source: str) -> None:
    assert " is dict:" not in _compiled(source)


def test_nested_loops_in_the_generic_copy_stay_generic() -> None:
    # the outer body twice, the inner body once in the generic copy and twice in the dict copy: 3, not 4
    code = _compiled(SPECIALISED[4])
    assert code.count("if type(l_1_m) is dict:") == 1
    assert code.count("if type(l_2_c) is dict:") == 1
    assert code.count("for l_2_c in ") == 2


_JINJA = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])

_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text("ab", max_size=2)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["role", "content", "get", "items", "x"]), inner, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=80, deadline=None)
@given(items=st.lists(_values, max_size=6))
def test_any_values_give_what_jinja2_gives(items: list[Any]) -> None:
    source = (
        "{% for m in items %}{{ m.role }}|{{ m['content'] }}|{{ m.x is defined }}|{{ m.get('x', 'd') if m is mapping }}"
        "|{{ m['get'] is defined }}|{% if m.role is string %}{{ m.role + '!' }}{% endif %}{{ m['role'] }};{% endfor %}"
    )
    assert "if type(l_1_m) is dict:" in _compiled(source)
    expected = _JINJA.from_string(source).render(items=items)
    assert ChatTemplate(source).render([{"role": "user", "content": ""}], items=items) == expected
