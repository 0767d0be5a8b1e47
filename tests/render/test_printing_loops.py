"""Printing loops remembered per tool set (render/_loops.py): a loop that only prints its variable through
``tojson`` and constants, over the private list a tool set is cached as, appends the chunks its first run kept.

Each test renders the same input through a template that remembers (a second render takes the kept chunks) and
compares it with a fresh template and with transformers; the ones that must not remember assert the memo empty.
"""

from __future__ import annotations

import copy
from typing import Any

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tests.render.reference import reference_render
from turnkit import ChatTemplate, Limits, TemplateError
from turnkit.render._inputs import tool_schemas
from turnkit.render._loops import printing_loop
from turnkit.render._sandbox import _CHAINS, _GuardRewriter, sandbox_for

CHAT = [{"role": "user", "content": "hi"}]
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": f"f{n}", "description": f"tool {n}", "parameters": {}}} for n in range(3)
]
TOOLS_LOOP = "{% for t in tools %}{{ (t | tojson) + '\\n' }}{% endfor %}"


def _memos(template: ChatTemplate) -> list[dict[int, Any]]:
    compiled = template._compile("default")
    namespace = compiled.root_render_func.__globals__  # type: ignore[union-attr]
    return [value for name, value in namespace.items() if name.startswith("tk_printed_")]


def _loop(source: str) -> jinja2.nodes.For:
    """The template's first loop as the code generator sees it (chains rewritten to the sized filters)."""
    tree = ImmutableSandboxedEnvironment().parse(source)
    _GuardRewriter().visit(tree)
    found = tree.find(jinja2.nodes.For)
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("body", "printing"),
    [
        ("{{ t | tojson }}", True),
        ("{{ t | tojson(indent=4) }}\n\n", True),
        ("{{ '\\n' }}{{ t | tojson }}", True),
        ("{{ t }}|{{ 'a' ~ t ~ 'b' }}", True),
        ("{{ t | tojson(indent=n) }}", False),  # a variable argument
        ("{{ t | tojson }}{{ loop.index }}", False),  # the loop's position
        ("{{ t | tojson }}{{ messages }}", False),  # another variable
        ("{% if t %}{{ t | tojson }}{% endif %}", False),  # not only prints
        ("{{ t.function | tojson }}", False),  # an item of the variable
        ("{{ t | upper }}", False),  # another filter
        ("{{ f(t) }}", False),  # a call
    ],
)
def test_which_loops_print_their_variable_only(body: str, printing: bool) -> None:
    assert printing_loop(_loop(f"{{% for t in tools %}}{body}{{% endfor %}}"), _CHAINS) is printing


def test_filtered_recursive_and_else_loops_are_not_printing_loops() -> None:
    for source in (
        "{% for t in tools if t %}{{ t | tojson }}{% endfor %}",
        "{% for t in tools recursive %}{{ t | tojson }}{% endfor %}",
        "{% for t in tools %}{{ t | tojson }}{% else %}none{% endfor %}",
    ):
        assert not printing_loop(_loop(source), _CHAINS)


@pytest.mark.reference
@pytest.mark.parametrize(
    "source",
    [
        TOOLS_LOOP,
        "{%- for t in tools %}{{- t | tojson(indent=4) }}{{- '\\n\\n' }}{%- endfor %}",
        "<tools>{% for tool in tools %}{{ '\\n' }}{{ tool | tojson }}{% endfor %}</tools>",
        "{% for t in tools %}[{{ t }}]{% endfor %}{% for t in tools %}{{ t | tojson }}{% endfor %}",
    ],
)
def test_a_tool_set_loop_is_remembered_and_prints_the_same(source: str) -> None:
    assert "tk_remember_printed(" in sandbox_for(Limits()).compile(source, raw=True)
    template = ChatTemplate(source)
    template._memos["default"] = None  # every render cold: the second takes the remembered chunks
    expected = reference_render(copy.deepcopy(CHAT), source, tools=copy.deepcopy(TOOLS))[1]
    first = template.render(CHAT, tools=copy.deepcopy(TOOLS))
    memos = _memos(template)
    assert memos and all(len(memo) == 1 for memo in memos)
    (entry,) = memos[0].values()
    assert entry[0] is tool_schemas(copy.deepcopy(TOOLS), set())  # the tool set's private list, and what it printed
    assert template.render(CHAT, tools=copy.deepcopy(TOOLS)) == first == expected
    # another tool set: another list, another entry; a tool set changed in place, another again
    tools = copy.deepcopy(TOOLS)
    tools[1]["function"]["name"] = "g"
    assert template.render(CHAT, tools=tools) == reference_render(CHAT, source, tools=tools)[1]
    tools[1]["function"]["name"] = "h"
    assert template.render(CHAT, tools=tools) == reference_render(CHAT, source, tools=tools)[1]
    assert all(len(memo) == 3 for memo in memos)


@pytest.mark.reference
def test_a_loop_over_anything_else_runs_every_time() -> None:
    """Python-function tools (a new list per render), a list given as a variable, a loop nested in another, and a
    template with an autoescape block remember nothing, and print what transformers prints."""

    def f(x: int) -> str:
        """F.

        Args:
            x: the x.
        """
        return str(x)

    for source, kwargs in (
        (TOOLS_LOOP, {"tools": [f]}),
        ("{% for t in extra %}{{ t | tojson }}{% endfor %}", {"extra": copy.deepcopy(TOOLS)}),
        ("{% for m in messages %}{% for t in tools %}{{ t | tojson }}{% endfor %}{% endfor %}", {"tools": TOOLS}),
        ("{% autoescape false %}x{% endautoescape %}" + TOOLS_LOOP, {"tools": TOOLS}),
    ):
        template = ChatTemplate(source)
        template._memos["default"] = None
        for _ in range(2):
            assert template.render(CHAT, **kwargs) == reference_render(CHAT, source, **kwargs)[1]
        assert not any(_memos(template)), source


def test_a_loop_that_charged_its_budget_is_not_remembered() -> None:
    """A schema whose text is long enough to be charged: the loop runs (and charges) on every render."""
    tools = [{"type": "function", "function": {"name": "f", "description": "d" * 5000}}]
    template = ChatTemplate(TOOLS_LOOP)
    template._memos["default"] = None
    first = template.render(CHAT, tools=tools)
    assert template.render(CHAT, tools=tools) == first
    assert not any(_memos(template))


def test_output_checks_fall_where_the_loop_would_make_them() -> None:
    """With 63 chunks before it, the loop's second iteration measures the output (every 64 chunks): a render past
    the output limit fails there (its line), whether the loop's chunks were kept or not."""
    source = (
        "{% for m in messages %}" + "Z" * 100 + "{% endfor %}\n" + TOOLS_LOOP + "\n{% for m in messages %}x{% endfor %}"
    )
    limits = Limits(max_output_chars=2000)
    long_chat = [{"role": "u"}] * 62

    def failure(template: ChatTemplate) -> str:
        with pytest.raises(TemplateError) as caught:
            template.render(long_chat, tools=TOOLS)
        return str(caught.value)

    warm = ChatTemplate(source, limits=limits)
    warm._memos["default"] = None
    warm.render(CHAT, tools=TOOLS)  # keeps the loop's chunks
    assert any(_memos(warm))
    fresh = ChatTemplate(source, limits=limits)
    assert failure(warm) == failure(fresh)
    assert "(template line 2)" in failure(fresh)
