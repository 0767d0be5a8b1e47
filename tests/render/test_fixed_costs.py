"""The per-render set-up outside the template's own code (context, budget, inputs) gives what transformers gives.

Each shortcut of the fixed cost has its fast side and its fallback side tested here, each with a case that fails
if the shortcut were taken where it must not be.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.render.reference import reference_render
from turnkit import ChatTemplate, TemplateError
from turnkit.render._inputs import WITH_NONE, adopt, alias_reasoning_fields, plain_messages

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


# -- adopting the caller's messages ------------------------------------------------------------------------------


class _Text(str):
    pass


def _spec_adopt(value: Any, seen: set[int]) -> int:
    """What ``adopt`` is defined to return, written plainly: exact built-in types, a tree, a dict's own ``None``."""
    if type(value) in (str, int, float, bool, type(None)):
        return True
    if type(value) not in (dict, list, tuple) or id(value) in seen:
        return False
    seen.add(id(value))
    if type(value) is not dict:
        return all(_spec_adopt(item, seen) for item in value)
    if not all(type(key) in (str, int, float, bool, type(None)) for key in value):
        return False
    if not all(item is None or _spec_adopt(item, seen) for item in value.values()):
        return False
    return WITH_NONE if any(item is None for item in value.values()) else True


_SHARED = {"shared": ["part"]}
_LEAVES = st.one_of(
    st.text(max_size=3),
    st.integers(-2, 2),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.builds(_Text, st.text(max_size=2)),
    st.just(_SHARED),
)
_KEYS = st.one_of(st.text(max_size=3), st.integers(0, 3), st.builds(_Text, st.text(max_size=2)), st.just(1.5))
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_KEYS, inner, max_size=3),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(_KEYS, _VALUES, max_size=4), max_size=3))
def test_adopt_is_its_plain_definition(values: list[dict[Any, Any]]) -> None:
    # each dict of the list, and the list itself: dicts and lists take their own walks, nested either way
    for value in [*values, values, tuple(values)]:
        trusted: set[int] = set()
        got = adopt(value, trusted)
        want = _spec_adopt(value, set())
        assert got == want and type(got) is type(want)
        if want:
            assert trusted == _container_ids(value)


def _container_ids(value: Any) -> set[int]:
    if type(value) is dict:
        return {id(value)}.union(*map(_container_ids, value.values()))
    if type(value) in (list, tuple):
        return {id(value)}.union(*map(_container_ids, value))
    return set()


REASONING_CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "u", "reasoning": None},
    {"role": "assistant", "content": "a", "reasoning_content": "why"},
    {"role": "assistant", "content": "b", "thinking": "hmm", "reasoning": "first"},
    {"role": "assistant", "content": None, "thinking": "t", "tool_calls": [{"function": {"name": "f"}}]},
]


@pytest.mark.parametrize("copy_messages", [False, True])
def test_messages_have_their_reasoning_aliased_as_they_are_adopted(copy_messages: bool) -> None:
    chat = copy.deepcopy(REASONING_CHAT)
    messages = plain_messages(chat, set(), copy=copy_messages)
    without_none = [{k: v for k, v in message.items() if v is not None} for message in chat]
    assert messages == alias_reasoning_fields(without_none)
    assert messages[0] is (chat[0] if not copy_messages else messages[0])  # nothing to alias: as it is
    assert messages[2]["thinking"] == messages[2]["reasoning_content"] == "why"
    assert list(messages[3]) == ["thinking", "role", "content", "reasoning", "reasoning_content"]
    assert messages[3]["thinking"] == messages[3]["reasoning_content"] == "hmm"  # REASONING_FIELDS order
    assert chat == REASONING_CHAT  # the caller's messages untouched


def test_reasoning_aliases_render_as_in_transformers() -> None:
    source = (
        "{% for m in messages %}{{ m.role }}:{{ m.thinking }}/{{ m.reasoning_content }}/{{ m.reasoning }}"
        "|{{ m | tojson }}\n{% endfor %}"
    )
    chat = [message for message in REASONING_CHAT if message.get("content") is not None]
    expected = reference_render(copy.deepcopy(chat), source)[1]
    assert ChatTemplate(source).render(chat) == expected
    assert (
        ChatTemplate(source).render(chat, continue_final_message="reasoning")
        == reference_render(copy.deepcopy(chat), source, continue_final_message="reasoning")[1]
    )


@pytest.mark.parametrize("over", [0, 1])
def test_the_output_allowance_measures_the_render_variables_without_the_globals(over: int) -> None:
    """The context's variables are merged with the sandbox's globals in one step; the input a limit's allowance
    measures is still the render's own variables (special tokens, extra variables, messages, tools...), not the
    globals' names: a prompt of exactly the cap renders, one character more fails."""
    from turnkit import Limits
    from turnkit.render._inputs import input_size

    chat = [{"role": "user", "content": "hello"}]
    tools = [{"type": "function", "function": {"name": "f"}}]
    special = {"bos_token": "<s>", "eos_token": "</s>"}
    variables = {**special, "who": "me", "messages": chat, "tools": tools, "documents": None}
    variables["add_generation_prompt"] = False
    cap = 100 + 2 * input_size(variables)
    source = "{{ 'x' * " + str(cap + over) + " }}"
    template = ChatTemplate(source, special_tokens=special, limits=Limits(max_output_chars=100))
    if over:
        with pytest.raises(TemplateError, match="output"):
            template.render(chat, tools=tools, who="me")
    else:
        assert len(template.render(chat, tools=tools, who="me")) == cap


@pytest.mark.parametrize(
    "bad",
    [
        {"return_dict": "x"},
        {"return_assistant_tokens_mask": 1},
        {"return_tensors": 3},
        {"padding": None},
        {"truncation": 2.0},
        {"max_length": "9"},
        {"add_special_tokens": None},
    ],
)
def test_tokenizer_options_are_checked_unless_all_are_the_defaults(bad: dict[str, Any]) -> None:
    """``render`` calls the tokenizer options' checks only when one differs from its default: any wrong one is
    still refused, by name."""
    from turnkit import ArgumentTypeError

    template = ChatTemplate("{{ messages[0].content }}")
    assert template.render(CHAT) == CHAT[0]["content"]
    ((name, value),) = bad.items()
    with pytest.raises(ArgumentTypeError, match=name):
        template.render(CHAT, **{name: value})


@pytest.mark.parametrize("kwargs", [{}, {"extra": "x", "bos_token": "<B>"}])
@pytest.mark.parametrize("special", [{}, {"bos_token": "<s>", "tools": "shadowed", "range": "shadowed"}])
def test_the_render_variables_are_the_merge_whichever_way_they_are_built(
    special: dict[str, Any], kwargs: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # without extra variables the context's variables are a copy of a dict merged once per template, its render
    # slots filled: the same keys, values and order as the per-render merge that extra variables take
    from turnkit.render import _template

    seen: list[dict[str, Any]] = []
    run_in = _template._run_in

    def spy(sandbox: Any, compiled: Any, parent: dict[str, Any], *rest: Any) -> str:
        seen.append(dict(parent))
        return run_in(sandbox, compiled, parent, *rest)

    monkeypatch.setattr(_template, "_run_in", spy)
    template = ChatTemplate("{{ messages[0].content }}{{ tools }}{{ bos_token }}", special_tokens=special)
    tools = [{"type": "function", "function": {"name": "f"}}]
    for generation in (False, True):
        template.render(CHAT, tools=tools, add_generation_prompt=generation, **kwargs)
        expected = {
            **template._sandbox.globals,
            **special,
            **kwargs,
            "messages": CHAT,
            "tools": tools,
            "documents": None,
            "add_generation_prompt": generation,
        }
        assert list(seen[-1].items()) == list(expected.items())
