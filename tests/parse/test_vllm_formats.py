"""The vLLM-only formats, round trip: generated well-formed output, cut anywhere, gives back what was generated.

``test_properties.py`` fuzzes every format with its own markers (the stream must agree with ``parse()``);
here each row renders known calls, content and reasoning in one format's syntax, so the test also checks
that the parse is *right*: names, argument values, content and reasoning equal what was rendered, under any
chunking.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.parse.deltas import accumulate, without_flags
from turnkit.parse import load_format

Call = tuple[str, dict[str, Any]]
Render = Callable[[str, list[Call]], str]

_names = st.from_regex(r"[a-z][a-z_0-9]{0,8}", fullmatch=True)
_keys = st.from_regex(r"[a-z][a-z_]{0,6}", fullmatch=True)
_text = st.text(alphabet="abcdefghij XYZ.,!?0123456789", max_size=30)
_str_values = st.text(alphabet="abc XYZ-_/:.'\"\\\n", max_size=12)
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _str_values,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=6,
)


def _calls(values: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Call]]:
    return st.lists(st.tuples(_names, st.dictionaries(_keys, values, max_size=3)), min_size=1, max_size=3)


def _json_list(calls: list[Call], key: str = "arguments") -> str:
    return json.dumps([{"name": n, key: a} for n, a in calls], ensure_ascii=False)


def _xml(calls: list[Call], open_call: str, close_call: str, invoke: str, param: str) -> str:
    out = []
    for name, args in calls:
        params = "".join(param.format(k=k, v=v) for k, v in args.items())
        out.append(open_call + invoke.format(name=name, params=params) + close_call)
    return "".join(out)


def _keyed(value: Any) -> str:
    if isinstance(value, str):
        return f"<escape>{value}<escape>"
    return json.dumps(value)


ROWS: dict[str, tuple[st.SearchStrategy[Any], Render]] = {
    "xlam": (_json_values, lambda text, calls: f"{text}<tool_call>{_json_list(calls)}</tool_call>"),
    "phi4_mini_json": (_json_values, lambda text, calls: f"{text} functools{_json_list(calls)}"),
    "longcat": (
        _json_values,
        lambda text, calls: (
            text
            + "".join(
                f"<longcat_tool_call>{json.dumps({'name': n, 'arguments': a})}</longcat_tool_call>\n" for n, a in calls
            )
        ),
    ),
    "internlm": (
        _json_values,
        lambda text, calls: (
            text
            + "".join(
                f"<|action_start|><|plugin|>{json.dumps({'name': n, 'parameters': a})}<|action_end|>" for n, a in calls
            )
        ),
    ),
    "granite-20b-fc": (
        _json_values,
        lambda text, calls: (
            text + "".join(f"<function_call> {json.dumps({'name': n, 'arguments': a})}\n" for n, a in calls)
        ),
    ),
    "step3": (
        _str_values,
        lambda text, calls: (
            text
            + "<｜tool_calls_begin｜>"
            + _xml(
                calls,
                "<｜tool_call_begin｜>",
                "<｜tool_call_end｜><｜tool_sep｜>",
                '<steptml:invoke name="{name}">{params}</steptml:invoke>',
                '<steptml:parameter name="{k}">{v}</steptml:parameter>',
            )
            + "<｜tool_calls_end｜>"
        ),
    ),
    "hy_v3": (
        _str_values,
        lambda text, calls: (
            text
            + "<tool_calls>\n"
            + _xml(
                calls,
                "<tool_call>",
                "</tool_call>\n",
                "{name}<tool_sep>\n{params}",
                "<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n",
            )
            + "</tool_calls>"
        ),
    ),
    "olmo3": (
        st.none() | st.booleans() | st.integers(-1000, 1000) | _str_values | st.lists(st.integers(0, 9), max_size=3),
        lambda text, calls: (
            text
            + "<function_calls>"
            + "\n".join(f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})" for n, a in calls)
            + "</function_calls>"
        ),
    ),
    "functiongemma": (
        st.integers(-1000, 1000) | st.text(alphabet="abc XYZ-_/:.'\"\n", max_size=12),
        lambda text, calls: (
            text
            + "".join(
                "<start_function_call>call:"
                + f"{n}{{{','.join(f'{k}:{_keyed(v)}' for k, v in a.items())}}}<end_function_call>"
                for n, a in calls
            )
        ),
    ),
}


def _string_tools(calls: list[Call]) -> list[dict[str, Any]]:
    """Schemas typing every parameter as a string (XML formats keep raw text only when told so)."""
    tools = {}
    for name, args in calls:
        props = {k: {"type": "string"} for k in args}
        tools.setdefault(name, {"type": "object", "properties": {}})["properties"].update(props)
    return [{"type": "function", "function": {"name": n, "parameters": p}} for n, p in tools.items()]


def _cut(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]


def _streamed(name: str, text: str, cuts: list[int], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    fmt = load_format(name)
    whole = dict(fmt.parse(text, tools=tools))
    parser = fmt.stream(tools=tools)
    deltas = []
    for piece in _cut(text, cuts):
        deltas.extend(parser.feed(piece))
    deltas.extend(parser.close())
    assert accumulate(deltas) == without_flags(whole)
    return whole


@pytest.mark.parametrize("name", sorted(ROWS))
def test_rendered_calls_come_back_under_any_chunking(name: str) -> None:
    values, render = ROWS[name]

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(text=_text, calls=_calls(values), cuts=st.lists(st.integers(0, 600), max_size=10))
    def check(text: str, calls: list[Call], cuts: list[int]) -> None:
        xml = name in ("step3", "hy_v3")
        tools = _string_tools(calls) if xml else None
        output = render(text, calls)
        if xml:  # XML parameter text is trimmed at its edges (vLLM and llama.cpp do the same)
            calls = [(n, {k: v.strip() for k, v in a.items()}) for n, a in calls]
        message = _streamed(name, output, cuts, tools)
        assert not message.get("incomplete"), output
        assert (message["content"] or "") == text.strip()
        got = [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]
        assert got == calls, output

    check()


REASONING_ROWS: dict[str, Callable[[str, str], str]] = {
    # name -> render(reasoning, content); every one of these starts in reasoning or opens it explicitly
    "base_thinking": lambda r, c: f"{r}</test:think>{c}",
    "seed_oss_reasoning": lambda r, c: f"{r}</seed:think>{c}",
    "qwen3_reasoning": lambda r, c: f"<think>{r}</think>{c}",
    "kimi_k2_reasoning": lambda r, c: f"{r}</think>{c}",
    "mistral_nemo": lambda r, c: f"[THINK]{r}[/THINK]{c}",
    "granite_reasoning": lambda r, c: f"Here is my thought process:{r}Here is my response:{c}",
    "gemma4_reasoning": lambda r, c: f"<|channel>thought\n{r}<channel|>{c}",
}


@pytest.mark.parametrize("name", sorted(REASONING_ROWS))
def test_reasoning_split_under_any_chunking(name: str) -> None:
    render = REASONING_ROWS[name]
    words = st.text(alphabet="abcdefghij XYZ.,!?", max_size=30)

    @settings(max_examples=40, deadline=None)
    @given(reasoning=words, content=words, cuts=st.lists(st.integers(0, 200), max_size=8))
    def check(reasoning: str, content: str, cuts: list[int]) -> None:
        message = _streamed(name, render(reasoning, content), cuts, None)
        strip = load_format(name).spec.strip
        want_r = reasoning.strip() if strip else reasoning
        want_c = content.strip() if strip else content
        assert (message["reasoning_content"] or "") == want_r
        assert (message["content"] or "") == want_c

    check()


@given(text=st.text(alphabet="abc </think>\n", max_size=40), cuts=st.lists(st.integers(0, 100), max_size=6))
@settings(max_examples=60, deadline=None)
def test_minimax_append_think_is_the_output_after_think(text: str, cuts: list[int]) -> None:
    message = _streamed("minimax_m2_append_think", text, cuts, None)
    assert message["reasoning_content"] is None
    assert message["content"] == ("<think>" + text).strip()


def test_qwen3_reasoning_tool_call_ends_reasoning_and_stays_content() -> None:
    text = "Let me look.\n<tool_call>\n<function=f>\n</function>\n</tool_call>"
    message = load_format("qwen3_reasoning").parse(text)
    assert message["reasoning_content"] == "Let me look."
    assert message["content"] == "<tool_call>\n<function=f>\n</function>\n</tool_call>"


def test_pythonic_call_keeps_text_after_it() -> None:
    message = load_format("olmo3").parse("<function_calls>f(a=1)\ng(b='x')</function_calls> done")
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["f", "g"]
    assert message["content"] == "done"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("xlam", "[see docs] text"),
        ("xlam", "[1, 2] are numbers"),
        ("xlam", '[{"a": 1}] data'),
        ("xlam", '```json\n{"a": 1}\n``` ok'),
        ("hermes", '<tool_call>{"x": 1}</tool_call> hi'),
    ],
)
def test_json_without_a_call_is_kept_as_content(name: str, text: str) -> None:
    for cuts in ([], [1], [3, 7], list(range(len(text)))):
        message = _streamed(name, text, cuts, None)
        assert message["tool_calls"] == []
        assert message["content"] == text.strip()
