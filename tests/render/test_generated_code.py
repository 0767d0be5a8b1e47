"""The code generator's cheaper forms of a template's own code give what transformers 5.23 (or jinja2) gives.

Each form is asserted to be in the generated code (so the test fails if the form is no longer taken) and its
template rendered on both sides of what the form relies on: one f-string per ``+``/``~`` chain, the shared empty
``_loop_vars``, kept items forgotten at each iteration of a dict copy, ``tojson``'s stand-in slot and text, reads
of a namespace variable namespace first, a plain loop's position, a loop's variables resolved inline, and variables
read without the ``missing`` test after a ``{% set %}``.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tests.render.reference import reference_render
from turnkit import ChatTemplate, Limits, TemplateError
from turnkit.render import _sandbox
from turnkit.render._inputs import frozen_json, tool_schemas
from turnkit.render._loops import plain_loop
from turnkit.render._sandbox import sandbox_for
from turnkit.render._template import render_template_string

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "Be {brief}.\\ 'ok'", "name": "first"},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "x" * 5000, "name": "third"},
    {"role": "user", "content": ["not", "a", "str"], "name": {"a": 1}},
]


def _compiled(source: str) -> str:
    return sandbox_for(Limits()).compile(source, raw=True)


def _ours(source: str, conversation: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", ChatTemplate(source).render(copy.deepcopy(conversation), **kwargs)
    except TemplateError as exc:
        return "error", exc


def _matches_transformers(source: str, conversation: Any = CHAT, **kwargs: Any) -> None:
    ours = _ours(source, conversation, **kwargs)
    theirs = reference_render(copy.deepcopy(conversation), source, **kwargs)
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "ok":
        assert ours[1] == theirs[1]


# (template, a piece of the generated code that shows the form is taken)
FORMS = [
    # one f-string per chain of three operands or more; constants with braces, quotes and backslashes kept as
    # they are; a str subclass (Markup), a non-str, an undefined value and a long total take the sized filter
    (
        "{% for m in messages %}{{ '{' + m.role + '}\\\\\\'\"' + m.content + '{x}' }}|"
        "{{ m.role ~ ':' ~ m.name ~ '}' }}|{{ ('<b>'|safe) + m.role + '<i>' }}{% endfor %}",
        "f'{",
    ),
    ("{% for m in messages %}{{ '[' + m.role + m.name + ']' }}{% endfor %}", "f'{"),
    ("{{ ('y' * 4090) + messages[0].role + messages[1].role }}", "f'{"),
    # kept items of the loop variable forgotten at each iteration: the second message has no ``name``, and must
    # not print the first one's; the fourth's is a dict
    (
        "{% for m in messages %}{{ m['name'] }}|{{ m['name'] is defined }}|{{ m.name }}/{{ m.role }}{{ m.role }}"
        "{% endfor %}",
        "is not missing else",
    ),
    # tojson of a loop variable: a schema first, then a short string, then the filter (a dict that is no schema, a
    # long string, Markup, a number)
    (
        "{% for t in [messages[0], 'x' * 10, 'y' * 700, ('<b>'|safe), 3, messages[0].missing] %}{{ t | tojson }}|"
        "{% endfor %}",
        "tk_no_slot",
    ),
    # reads of a variable set to a namespace: the namespace first, then a dict, then anything else
    (
        "{% macro f() %}F{% endmacro %}{% set ns = namespace(a=1, b=messages, f=f) %}{{ ns.a }}|{{ ns.b | length }}"
        "|{{ ns.f() }}|{{ ns.missing is defined }}|{% set ns = messages[0] %}{{ ns.role }}|{{ ns.nope is defined }}"
        "|{% set ns = 'text' %}{{ ns.upper is defined }}|{{ ns.nope is defined }}",
        "is tk_namespace and",
    ),
    # a plain loop's position: every property, in a nested loop too, and a loop over a string (a LoopContext)
    (
        "{% for m in messages %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}"
        "{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.previtem.role if loop.previtem is defined }}"
        "{{ loop.nextitem.role if loop.nextitem is defined }}{{ loop.depth }}{{ loop.depth0 }}"
        "{% for c in m.role %}{{ loop.index }}{{ loop.last }}{% endfor %}{% endfor %}",
        "type(l_1_loop) is int",
    ),
    # a loop's variable read before the loop may set it: from the template's top-level names, else the render's
    # variables, else undefined (what ``context.resolve_or_missing`` finds, inline)
    (
        "{% set t = 'top' %}{% for m in messages %}{{ t }}{% if m.role == 'user' %}{% set t = m.role %}{% endif %}"
        "{{ t }}|{{ add_generation_prompt }}{% if false %}{% set add_generation_prompt = 1 %}{% endif %}"
        "|{{ zz is defined }}{% if false %}{% set zz = 1 %}{% endif %};{% endfor %}",
        "in tk_vars else tk_parent_get(",
    ),
    # variables read without the test for ``missing`` after a ``set``; before it, in an ``if`` not taken, and in
    # a macro defined in a loop and called after it (when jinja2 has reset the loop's variables) they are tested
    (
        "{{ w is defined }}{% set w = 1 %}{{ w }}{% if false %}{% set y = 1 %}{% endif %}{{ y is defined }}"
        "{% set ns = namespace(g=none) %}{% for m in messages %}{% set x = m.role %}{{ x }}"
        "{% macro g() %}[{{ x is defined }}]{% endmacro %}{% set ns.g = g %}{% endfor %}{{ ns.g() }}",
        "{{ x }}",  # (checked below: the read after the set is the bare name)
    ),
]


@pytest.mark.reference
@pytest.mark.parametrize(("source", "form"), FORMS)
def test_generated_forms_match_transformers(source: str, form: str) -> None:
    if form != "{{ x }}":
        assert form in _compiled(source)
    _matches_transformers(source)


def test_a_variable_set_before_is_read_bare_and_others_are_tested() -> None:
    code = _compiled(
        "{{ a }}{% set a = 1 %}{{ a }}{% if a %}{% set b = 2 %}{{ b }}{% endif %}{{ b }}"
        "{% for m in messages %}{% set c = m %}{{ c }}{% endfor %}{% macro f() %}{{ a }}{% endmacro %}"
    )
    lines = [line.strip() for line in code.splitlines()]
    prints = [line for line in lines if line.startswith(("tk_out.append(", "t_")) or "l_0_a" in line]
    assert sum("undefined(name='a')" in line for line in lines) == 2, prints  # before the set, and in the macro
    assert sum("undefined(name='b')" in line for line in lines) == 1  # after the ``if`` only
    assert "undefined(name='c')" not in code


def test_loop_vars_stay_per_iteration_for_context_functions() -> None:
    """A context function called in a loop sees the names the iteration set so far, as in jinja2; the shared empty
    dict the iterations start with is never written."""

    @jinja2.pass_context
    def probe(context: Any) -> str:
        return str(context.get("x", "-"))

    source = (
        "{% for m in messages %}{{ probe() }}{% set x = m.role %}{{ probe() }}{% for c in [1] %}{{ probe() }}"
        "{% endfor %}{{ probe() }}{% endfor %}{{ probe() }}|{% for m in messages %}{{ probe() }}{% endfor %}"
    )
    assert "_loop_vars = tk_no_vars" in _compiled(source)
    conversation = [{"role": "system", "content": "a"}, {"role": "user", "content": "b"}]
    expected = ImmutableSandboxedEnvironment().from_string(source).render(messages=conversation, probe=probe)
    assert render_template_string(source, {"messages": conversation, "probe": probe}) == expected
    # (after a nested loop, jinja2's iteration dict is the nested loop's: the name set before it is no longer seen)
    assert expected == "-system---user---|--"
    assert _sandbox._NO_LOOP_VARS == {}


def test_plain_loops_hand_out_positions() -> None:
    items = [{"a": 1}, {"a": 2}, {"a": 3}]
    assert list(plain_loop(items, None)) == [(items[0], 0), (items[1], 1), (items[2], 2)]
    assert list(plain_loop(tuple(items), None)) == [(items[0], 0), (items[1], 1), (items[2], 2)]
    assert type(next(iter(plain_loop("ab", jinja2.Undefined)))[1]).__name__ == "LoopContext"


@pytest.mark.reference
def test_tool_json_of_a_long_schema_takes_the_filter_every_time() -> None:
    """A schema whose text is long enough to be charged is never printed by the inline read (its kept text's third
    item is infinite), on the first render and the ones after; a short one's is its size estimate."""
    tool = {
        "type": "function",
        "function": {"name": "f", "description": "d" * 5000, "parameters": {"type": "object", "properties": {}}},
    }
    source = "{% for t in tools %}{{ t | tojson }}|{{ t | tojson(indent=2) }}{% endfor %}"
    chat = [{"role": "user", "content": "hi"}]
    template = ChatTemplate(source)
    first = template.render(chat, tools=[tool])
    assert template.render(chat, tools=[tool]) == first == reference_render(chat, source, tools=[tool])[1]
    slot = frozen_json(tool_schemas([tool], set())[0])  # the private copy's slot: what the inline read tests
    assert slot is not None
    texts = slot[1]
    assert texts[(False, None, None, False)][2] == texts[(False, 2, None, False)][2] == math.inf
    short = {"type": "function", "function": {"name": "g", "parameters": {"type": "object", "properties": {}}}}
    ChatTemplate(source).render(chat, tools=[short])
    slot = frozen_json(tool_schemas([short], set())[0])
    assert slot is not None
    assert [text[2] for text in slot[1].values()] == [text[1] for text in slot[1].values()]  # its estimates


@pytest.mark.reference
def test_filters_and_tests_are_looked_up_once_per_template() -> None:
    """The root has no lookup of its filters and tests (they are module globals, looked up when the template's code
    runs); one the sandbox lacks still fails only when a render reaches it, as in transformers, in the root, a
    macro and a loop body alike."""
    source = (
        "{% macro f(x) %}{{ x | upper }}{% if x == 'boom' %}{{ x | no_such_filter }}{% endif %}{% endmacro %}"
        "{% for m in messages %}{{ f(m.role) }}{{ m.content is string }}"
        "{% if m.role == 'tool' %}{{ m is no_such_test }}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}{{ messages | no_such_filter }}{% endif %}"
    )
    code = _compiled(source)
    root = code[code.index("def root(") : code.index("\nblocks = ")]
    assert "environment.filters[" not in root and "environment.tests[" not in root
    assert "t_1 = environment.filters[" in code or "= environment.filters['upper']" in code
    chat = [{"role": "user", "content": "hi"}]
    for conversation, kwargs in (
        (chat, {}),  # no missing filter or test reached: renders
        (chat, {"add_generation_prompt": True}),
        ([{"role": "boom", "content": "x"}], {}),
        ([{"role": "tool", "content": "x"}], {}),
    ):
        _matches_transformers(source, conversation, **kwargs)
    assert _ours(source, chat, add_generation_prompt=True)[0] == "error"


def test_top_level_names_are_not_exported() -> None:
    """A template's exports are read only by a template importing it, which this sandbox cannot do (no loader):
    top-level ``set``s and macros still bind their names for the macros that read them."""
    source = "{% set a = 'A' %}{% set b, c = 'B', 'C' %}{% macro m() %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m() }}"
    assert "exported_vars" not in _compiled(source)
    assert "exported_vars" in ImmutableSandboxedEnvironment().compile(source, raw=True)
    assert render_template_string(source, {}) == "ABC"
    with pytest.raises(TemplateError):
        render_template_string("{% import 'x' as y %}{{ y }}", {})


@pytest.mark.reference
def test_tojson_of_an_input_container_is_the_shared_encoders_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """``x | tojson`` of a container of the render's input (a tool call's arguments) is written inline by the shared
    encoder; a template-made value, and a private tool schema whose text is not kept yet, take the filter (which
    keeps the schema's text for the next render)."""
    encoded: list[Any] = []
    real = _sandbox._TREE_ENCODER
    monkeypatch.setattr(_sandbox, "_TREE_ENCODER", lambda value, level: encoded.append(value) or real(value, level))
    source = (
        "{% for m in messages %}{% for c in m.tool_calls or [] %}{{ c.function.arguments | tojson }}|"
        "{{ {'made': c.function.name} | tojson }}|{{ [c.id] | tojson }}|{% endfor %}{% endfor %}"
        "{% for t in tools %}{{ t | tojson }}|{% endfor %}{{ 'inline tree encoder' }}"
    )
    assert "tk_tree_encoder(" in _compiled(source)
    arguments = {"location": "Paris", "days": [1, 2.5, None, True], "nested": {"é": "\ud800"}}
    chat = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": arguments}}]},
    ]
    tool = {"type": "function", "function": {"name": "inline_tree_encoder", "parameters": {}}}
    ours = ChatTemplate(source).render(chat, tools=[tool])
    assert ours == reference_render(copy.deepcopy(chat), source, tools=[tool])[1]
    assert encoded == [arguments]  # the arguments (adopted as they are), neither the made dict nor list
    slot = frozen_json(tool_schemas([tool], set())[0])
    assert slot is not None and (False, None, None, False) in slot[1]  # the filter kept the schema's text


def test_tojson_of_a_long_input_container_is_charged() -> None:
    source = "{% for i in range(40) %}{{ messages[0].content | tojson }}{% endfor %}"
    assert "tk_tree_encoder(" in _compiled(source)
    chat = [{"role": "user", "content": ["x" * 5000]}]
    assert len(ChatTemplate(source).render(chat)) == 40 * 5004
    with pytest.raises(TemplateError) as caught:
        ChatTemplate(source, limits=Limits(max_render_bytes=100_000)).render(chat)
    assert caught.value.code == "template_memory"


@pytest.mark.reference
def test_tests_of_a_bare_variable_read_its_local() -> None:
    """``x is defined / undefined / none / string`` of a variable that may be unset test its local (no undefined
    value built): unset, ``None``, an undefined value, a ``str`` subclass (Markup), a string, a bool, a loop
    variable, a macro's parameters with and without a default."""
    tests = "{{ X is defined }}{{ X is undefined }}{{ X is none }}{{ X is string }}{{ X is not defined }}|"
    source = (
        "{% if add_generation_prompt is defined %}{% set u = messages.nope %}{% set mk = '<b>' | safe %}"
        "{% set s = 'text' %}{% set n = none %}{% endif %}"
        + "".join(tests.replace("X", name) for name in ("a", "tools", "u", "mk", "s", "n", "add_generation_prompt"))
        + "{% for m in messages %}"
        + tests.replace("X", "m")
        + "{% endfor %}{% macro f(p, q=none) %}"
        + tests.replace("X", "p")
        + tests.replace("X", "q")
        + "{% endmacro %}{{ f() }}{{ f(1, 'q') }}{{ f(none) }}"
    )
    code = _compiled(source)
    assert "(l_0_a is not missing and not isinstance(l_0_a, Undefined))" in code
    assert "undefined(name='u')" not in code and "undefined(name='p')" not in code
    _matches_transformers(source)
    _matches_transformers(source, tools=None)


@pytest.mark.reference
def test_tests_of_an_item_read_a_missing_key_as_missing() -> None:
    """``m.x is defined / undefined / none / string`` of a dict's item tests ``missing`` for a missing key (no
    undefined value built); present, ``None``, Markup, list and undefined items, a namespace's attribute, a
    string's, a loop property, an item of an item, and a kept item read before and after the test."""
    tests = "{{ X is defined }}{{ X is undefined }}{{ X is none }}{{ X is string }}{{ X is not defined }}|"
    items = ["m.content", "m['content']", "m.name", "m.nope", "m.role.x", "m['role']['upper']", "loop.previtem"]
    made = ["d.mk", "d['n']", "d.u", "d.x", "ns.a", "ns.b", "s.x", "s['upper']"]
    source = (
        "{% set ns = namespace(a=none) %}{% set d = {'mk': '<b>' | safe, 'n': none, 'u': ns.nope} %}"
        "{% set s = 'text' %}"
        + "".join(tests.replace("X", item) for item in made)
        + "{% for m in messages %}{{ m.content if m.content is string }}"
        + "".join(tests.replace("X", item) for item in items)
        + "{{ m.content if m.content is string }}{% endfor %}"
    )
    assert "'content' in l_1_m else missing)" in _compiled(source)
    conversations = [CHAT, [{"role": "user", "content": None, "name": "n"}, {"role": "tool"}]]
    assert [_ours(source, chat)[0] for chat in conversations] == ["ok", "ok"]
    for chat in conversations:
        _matches_transformers(source, chat)


@pytest.mark.reference
def test_an_item_tested_for_truth_reads_a_missing_key_as_none() -> None:
    """A dict's missing key read where only an ``if`` tests its truth (through ``not``, ``and``, ``or`` and inline
    ``if``) is ``None``, as false as the undefined value; a value printed, set, joined, filtered or tested is still the
    undefined value."""
    source = (
        "{% for m in messages %}{% if m.nope %}1{% elif not m.nope and (m.role or m.nope) %}2{% endif %}"
        "{{ 'a' if m.nope or m['content'] else 'b' }}{{ 'c' if not (m.name and m.nope) }}"
        "[{{ m.nope or m.name }}][{{ m.nope and m.name }}]{% set x = m.nope or m.nope %}[{{ x }}]"
        "{% if m.name or m.nope %}[{{ x if x else m.nope }}]{% endif %}{% if m.nope or (m.nope ~ '') %}3{% endif %}"
        "{% if m.nope is defined or m.nope | default('') %}4{% endif %}{% endfor %}"
    )
    assert "'nope' in l_1_m else None" in _compiled(source)
    _matches_transformers(source)
    _matches_transformers(source, [{"role": "user", "content": ""}, {"role": "tool", "name": "n"}])


def test_items_tested_for_truth_keep_an_undefined_class_that_refuses_it() -> None:
    source = "{% for m in messages %}{% if m.nope %}yes{% endif %}{% endfor %}"
    sandbox = _sandbox.TemplateSandbox()
    sandbox.undefined = jinja2.StrictUndefined
    assert "else None" not in sandbox.compile(source, raw=True)
    with pytest.raises(jinja2.UndefinedError):
        sandbox.from_string(source).render(messages=[{"role": "user"}])


@pytest.mark.reference
def test_type_tests_of_plain_values_are_decided_by_their_type() -> None:
    """``x is mapping / iterable / sequence`` of each plain type, and of values of other types (Markup, an undefined
    value, a namespace, a loop, a range), which take jinja2's function."""
    values = ["m", "m.content", "m.nope", "loop", "range(2)", "ns", "'<b>' | safe", "1", "1.5", "true", "none", "(1,)"]
    tests = "".join(f"{{{{ X is {name} }}}}{{{{ X is not {name} }}}}" for name in ("mapping", "iterable", "sequence"))
    source = (
        "{% set ns = namespace(a=1) %}{% for m in messages %}"
        + "|".join(tests.replace("X", f"({value})") for value in values)
        + "\n{% endfor %}"
    )
    assert "in tk_plain_values else t_" in _compiled(source)
    _matches_transformers(source)
