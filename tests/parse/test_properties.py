"""Hypothesis: any chunking of any output gives the same message, for every built-in format.

Outputs are generated from each declaration's own markers mixed with JSON-ish and plain text, so they
are often malformed on purpose: the contract (deltas add up to ``parse()``, never an exception) must hold
for well-formed and broken output alike.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.parse.deltas import accumulate, without_flags
from tests.parse.strategies import format_outputs
from turnkit.parse import FormatSpec, OutputFormat, list_formats, load_format


def _cut(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]


@pytest.mark.parametrize("name", list_formats())
def test_any_chunking_gives_the_same_message(name: str) -> None:
    _check_any_chunking(load_format(name), max_examples=60)


def _needs_end_variants() -> list[FormatSpec]:
    """The held-reasoning options on a format with tool calls too (a call marker settles a held block)."""
    base = load_format("hermes").spec
    out = []
    for changes in ({"needs_end": True}, {"implicit_needs_end": True, "open_by_default": True}):
        reasoning = tuple(dataclasses.replace(r, **changes) for r in base.reasoning)
        out.append(dataclasses.replace(base, name=f"hermes+{'+'.join(changes)}", reasoning=reasoning))
    return out


@pytest.mark.parametrize("spec", _needs_end_variants(), ids=lambda s: s.name)
def test_held_reasoning_options_any_chunking(spec: FormatSpec) -> None:
    _check_any_chunking(load_format(spec), max_examples=80)


def test_held_reasoning_is_released_once_settled() -> None:
    fmt = load_format("think_complete")
    parser = fmt.stream()
    assert parser.feed("<think>plan") == []  # held: reasoning only if </think> follows
    assert parser.feed(" more</think>ok") == [{"reasoning_content": "plan more"}, {"content": "ok"}]
    parser = fmt.stream()
    assert parser.feed("<think>never closed") == []
    assert parser.close() == [{"content": "<think>never closed"}]
    gemma = load_format("gemma4_reasoning_complete")
    assert gemma.parse("why<channel|>what")["reasoning_content"] == "why"
    assert gemma.parse("just text")["content"] == "just text"
    assert gemma.parse("<|channel>unclosed")["reasoning_content"] == "unclosed"


@pytest.mark.parametrize("name", list_formats())
def test_whole_calls_option_any_chunking(name: str) -> None:
    """``whole_calls`` holds a region's deltas back until it is finished; the contract still holds."""
    spec = dataclasses.replace(load_format(name).spec, whole_calls=True)
    fmt = load_format(spec)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(text=format_outputs(spec), cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12))
    def check(text: str, cuts: list[int]) -> None:
        whole = dict(fmt.parse(text))
        parser = fmt.stream()
        deltas = []
        for piece in _cut(text, cuts):
            deltas.extend(parser.feed(piece))
            assert accumulate(deltas) == without_flags(dict(parser.message))  # message = deltas so far
        deltas.extend(parser.close())
        assert accumulate(deltas) == without_flags(whole)
        assert dict(parser.message) == whole

    check()


def test_whole_calls_unfinished_region_is_content() -> None:
    spec = dataclasses.replace(load_format("hermes").spec, whole_calls=True)
    parser = load_format(spec).stream()
    assert parser.feed('ok <tool_call>{"name": "f", "arguments": {"a": 1}}') == [{"content": "ok"}]
    assert parser.close() == [{"content": ' <tool_call>{"name": "f", "arguments": {"a": 1}}'}]
    done = load_format(spec).parse('<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>')
    assert done["tool_calls"][0]["function"] == {"name": "f", "arguments": {"a": 1}}


def _check_any_chunking(fmt: OutputFormat, *, max_examples: int) -> None:
    """Any chunking of any generated output (with or without an open-thinking prefix) gives ``parse()``'s message."""

    @settings(max_examples=max_examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        text=format_outputs(fmt.spec),
        cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
        prefixed=st.booleans(),
    )
    def check(text: str, cuts: list[int], prefixed: bool) -> None:
        prefix = "<think>\n" if prefixed else None
        whole = dict(fmt.parse(text, prefix=prefix))
        parser = fmt.stream(prefix=prefix)
        deltas = []
        for piece in _cut(text, cuts):
            deltas.extend(parser.feed(piece))
        deltas.extend(parser.close())
        assert accumulate(deltas) == without_flags(whole)
        assert dict(parser.message) == whole

    check()
