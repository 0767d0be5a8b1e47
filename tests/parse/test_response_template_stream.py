"""Response-template streams: deltas given as soon as the template proves them final, joining to ``parse()``.

Every test template (transformers' three, the six its tests re-express, the three written for streaming) over
every corpus output and the hand-written ones, with and without a prompt prefix: fed character by character
and in random pieces with or without tools (hypothesis), the deltas add up to exactly what ``parse()``
returns, or both fail.
"""

from __future__ import annotations

import time
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turnkit
from tests.corpora import read_jsonl
from tests.parse.deltas import join_response_deltas
from tests.parse.response_template_cases import HANDWRITTEN, PREFIXES, REEXPRESSED, STREAMING, TOOLS, shipped
from turnkit.limits import Limits
from turnkit.parse._response_template._deltas import field_modes

_OUTPUT_FILES = ("transformers.jsonl", "llama.cpp.jsonl", "vllm.jsonl", "harmony.jsonl")


@cache
def _templates() -> dict[str, dict[str, Any]]:
    out = {f"shipped:{name}": template for name, template in shipped().items()}
    out.update({f"tests:{name}": template for name, template in REEXPRESSED.items()})
    out.update({f"streaming:{name}": template for name, template in STREAMING.items()})
    return out


@cache
def _outputs() -> tuple[str, ...]:
    found = dict.fromkeys(HANDWRITTEN)
    for name in _OUTPUT_FILES:
        for record in read_jsonl(f"model-outputs/{name}"):
            if record.get("output"):
                found[record["output"]] = None
    return tuple(sorted(found))


def _parse(fmt: turnkit.ResponseTemplateFormat, text: str, prefix: str, tools: Any = None) -> Any:
    try:
        return fmt.parse(text, prefix=prefix, tools=tools)
    except turnkit.TurnkitError:
        return "fail"


def _streamed(fmt: turnkit.ResponseTemplateFormat, pieces: list[str], prefix: str, tools: Any = None) -> Any:
    stream = fmt.stream(prefix=prefix, tools=tools)
    try:
        deltas = [d for piece in pieces for d in stream.feed(piece)]
        deltas += stream.close()
    except turnkit.TurnkitError:
        return "fail"
    joined = join_response_deltas(deltas)
    assert joined == stream.message
    return joined


@pytest.mark.corpus
def test_every_template_every_output_character_by_character() -> None:
    compared = 0
    for name, template in _templates().items():
        fmt = turnkit.ResponseTemplateFormat(template)
        for text in _outputs():
            for prefix in ("", PREFIXES[1]):
                assert _streamed(fmt, list(text), prefix) == _parse(fmt, text, prefix), (name, text[:80], prefix)
                compared += 1
    assert compared == 2 * len(_templates()) * len(_outputs()) > 15_000


@pytest.mark.corpus
@settings(max_examples=1000, deadline=None)
@given(data=st.data())
def test_any_chunking_joins_to_the_parse(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(_templates())), label="template")
    text = data.draw(st.sampled_from(_outputs()), label="output")
    prefix = data.draw(st.sampled_from(PREFIXES), label="prefix")
    tools = data.draw(st.sampled_from([None, TOOLS]), label="tools")
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=20), label="cuts")
    points = sorted({0, len(text), *cuts})
    pieces = [text[a:b] for a, b in zip(points, points[1:], strict=False)]
    fmt = turnkit.ResponseTemplateFormat(_templates()[name])
    assert _streamed(fmt, pieces, prefix, tools) == _parse(fmt, text, prefix, tools)


def _feed_each(stream: turnkit.ResponseTemplateStream, pieces: list[str]) -> list[list[dict[str, Any]]]:
    return [stream.feed(piece) for piece in pieces]


# docs/parse-response.md's table: template -> (parsed chunk by chunk, fields given as text, fields given per region)
STREAMS = {
    "shipped:qwen2": (True, set(), {"tool_calls"}),
    "shipped:qwen3_5": (True, set(), {"tool_calls"}),
    "shipped:gemma4": (True, set(), {"tool_calls"}),
    "tests:cohere": (False, set(), set()),
    "tests:ernie": (True, set(), {"tool_calls"}),
    "tests:gpt_oss": (True, set(), {"tool_calls"}),
    "tests:smollm3": (False, set(), set()),
    "tests:qwen3": (True, set(), {"tool_calls"}),
    "tests:gemma4": (True, set(), {"tool_calls"}),
    "streaming:calls_to_the_end": (True, {"content"}, set()),
    "streaming:joined_reasoning_and_answer": (True, {"reasoning_content", "content"}, {"tool_calls"}),
    "streaming:plain_unstripped": (True, {"content"}, set()),
}


def modes(template: dict[str, Any]) -> dict[str, str]:
    return dict(field_modes(turnkit.ResponseTemplateFormat(template).template))


def test_the_documented_table() -> None:
    assert set(STREAMS) == set(_templates())
    for name, (incremental, text, items) in STREAMS.items():
        template = _templates()[name]
        assert turnkit.ResponseTemplateFormat(template).stream().incremental == incremental, name
        found = modes(template)
        if incremental:
            assert {k for k, v in found.items() if v == "text"} == text, name
            assert {k for k, v in found.items() if v == "items"} == items, name


def test_what_streams_is_decided_from_the_template() -> None:
    # content and reasoning can be replaced by a later region: final; tool calls are appended: items.
    assert modes(shipped()["qwen2"]) == {"reasoning_content": "final", "tool_calls": "items", "content": "final"}
    # A field in defaults is replaced by its first region: final, whatever else holds.
    with_default = {**STREAMING["calls_to_the_end"], "defaults": {"content": ""}}
    assert modes(with_default)["content"] == "final"
    # The implicit field streams only when no explicit field closes (else it resumes, replacing its value).
    closing = {"start_anchor": "A", "fields": {"content": {}, "x": {"open": "<x>", "close": "</x>"}}}
    assert modes(closing) == {"content": "final", "x": "final"}


def test_tool_calls_come_when_complete() -> None:
    stream = turnkit.ResponseTemplateFormat(shipped()["qwen2"]).stream()
    first = '<think>plan</think>Hi<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_'
    assert stream.feed(first) == [{"role": "assistant"}]
    call = {"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
    assert stream.feed("call>") == [{"tool_calls": [call]}]
    assert stream.feed('<tool_call>{"name": "g", "arguments": {}}</tool_call>')[0]["tool_calls"][0]["function"] == {
        "name": "g",
        "arguments": {},
    }
    assert stream.close() == [{"reasoning_content": "plan", "content": "Hi"}]


def test_text_streams_as_it_arrives_without_the_whitespace_strip_removes() -> None:
    fmt = turnkit.ResponseTemplateFormat(STREAMING["joined_reasoning_and_answer"])
    stream = fmt.stream()
    pieces = ["<think> a", " b ", "</think><think>", "c</think>", "<answer>  Hello", " there ", " world \n"]
    deltas = _feed_each(stream, pieces)
    assert deltas == [
        [{"role": "assistant"}, {"reasoning_content": "a"}],
        [{"reasoning_content": " b"}],  # the space after "b" waits: strip drops it if the region ends here
        [{"reasoning_content": "\n\n"}],  # a second region opened: the join comes first
        [{"reasoning_content": "c"}],
        [{"content": "Hello"}],
        [{"content": " there"}],
        [{"content": "  world"}],
    ]
    assert stream.close() == []
    assert (
        stream.message
        == fmt.parse("".join(pieces))
        == {
            "role": "assistant",
            "reasoning_content": "a b\n\nc",
            "content": "Hello there  world",
        }
    )


def test_content_before_a_call_that_runs_to_the_end() -> None:
    fmt = turnkit.ResponseTemplateFormat(STREAMING["calls_to_the_end"])
    stream = fmt.stream()
    deltas = _feed_each(stream, ["Let me ", "check.[TOOL", '_CALLS][{"name": "f"}]'])
    assert deltas == [[{"role": "assistant"}, {"content": "Let me"}], [{"content": " check."}], []]
    assert stream.close() == [{"tool_calls": [{"name": "f"}]}]


def test_unstripped_text_and_prefix_text() -> None:
    fmt = turnkit.ResponseTemplateFormat(STREAMING["plain_unstripped"])
    stream = fmt.stream(prefix="<|im_start|>assistant\n  Sure")
    assert stream.feed(", ") == [{"content": "  Sure, "}]  # the prefix's text, merged with the first piece
    assert stream.close() == [] and stream.message == {"content": "  Sure, "}
    assert fmt.parse(", ", prefix="<|im_start|>assistant\n  Sure") == stream.message


def test_templates_that_read_ahead_are_parsed_whole_at_close() -> None:
    smollm3 = turnkit.ResponseTemplateFormat(REEXPRESSED["smollm3"])
    stream = smollm3.stream()
    assert not stream.incremental
    text = "first line\nsecond line<|im_end|>"
    assert [stream.feed(ch) for ch in text][0] == [{"role": "assistant"}]
    assert stream.close() == [{"content": "first line\nsecond line"}]
    # transformers' own ResponseParser, fed one character at a time, ends with the last line only.
    assert smollm3.parse(text)["content"] == "first line\nsecond line"


@pytest.mark.parametrize(
    ("anchor", "incremental"),
    [
        ({"close": ["<|end|>", "</s>"]}, True),
        ({"close": ["<|end|>", "end"]}, True),  # a literal inside another: the parser waits for the longer one
        ({"close_pattern": r"\s*<\|end\|>"}, True),
        ({"close_pattern": r"(?:<\|end\|>|$)"}, False),  # $ matches before a newline that ends the text
        ({"close_pattern": r"<\|end\|>(?!x)"}, False),
        ({"close_pattern": r"end\b"}, False),
        ({"close_pattern": r"[$^]"}, True),  # $ and ^ inside a class are literal
        ({"close_pattern": r"\$"}, True),
    ],
)
def test_which_markers_are_parsed_whole(anchor: dict[str, Any], incremental: bool) -> None:
    template = {"start_anchor": "A", "fields": {"content": anchor}}
    assert turnkit.ResponseTemplateFormat(template).stream().incremental == incremental


# Marker shapes that trip a partial-match parser (a marker inside another, alternatives that nest, empty
# matches, lazy spans, $), over text made of their pieces.
SHAPES = {
    "literal_inside": {"start_anchor": "A", "fields": {"content": {"close": ["<|end|>", "end"]}}},
    "literals_both_sides": {
        "start_anchor": "A",
        "fields": {"r": {"open": ["<think>", "think"], "close": ["</think>", "ink"]}, "content": {}},
    },
    "nested_alternatives": {
        "start_anchor": "A",
        "fields": {"content": {}, "t": {"open_pattern": r"abcd|c", "close": "</t>", "repeats": True}},
    },
    "lazy_span": {
        "start_anchor": "A",
        "fields": {"content": {}, "t": {"open_pattern": r"<a>.*?<b>|b", "close": "</a>", "repeats": True}},
    },
    "empty_match": {"start_anchor": "A", "fields": {"content": {"close_pattern": r"x*"}}},
    "dollar": {"start_anchor": "A", "fields": {"content": {"close_pattern": r"(?:<e>|$)"}}},
}
PIECES = ["<|end|>", "<|en", "end", "e", "nd", "<think>", "think", "</think>", "ink", "abcd", "ab", "c", "x", "<a>"]
PIECES += ["<b>", "b", "</a>", "</t>", "<e>", " ", "\n", "hi", "<", "|", ">"]


@settings(max_examples=600, deadline=None)
@given(
    name=st.sampled_from(sorted(SHAPES)),
    text=st.lists(st.sampled_from(PIECES), max_size=14).map("".join),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=8),
)
def test_marker_shapes_under_any_chunking(name: str, text: str, cuts: list[int]) -> None:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    fmt = turnkit.ResponseTemplateFormat(SHAPES[name])
    want = _parse(fmt, text, "")
    assert _streamed(fmt, [text[a:b] for a, b in zip(points, points[1:], strict=False)], "") == want
    assert _streamed(fmt, list(text), "") == want


def test_values_given_are_copies() -> None:
    stream = turnkit.ResponseTemplateFormat(shipped()["qwen2"]).stream()
    (delta,) = stream.feed('<tool_call>{"name": "f", "arguments": {"a": [1]}}</tool_call>')[1:]
    delta["tool_calls"][0]["function"]["arguments"]["a"].append(2)
    stream.close()
    assert stream.message["tool_calls"][0]["function"]["arguments"] == {"a": [1]}


def test_pauses_between_chunks_do_not_count_against_the_parse_budget() -> None:
    fmt = turnkit.ResponseTemplateFormat(shipped()["qwen2"], limits=Limits(parse_timeout_s=0.05))
    stream = fmt.stream()
    stream.feed("<think>a")
    time.sleep(0.1)  # the model is slow: not the parser's time
    stream.feed("</think>b")
    stream.close()
    assert stream.message == {"role": "assistant", "reasoning_content": "a", "content": "b"}


def test_regex_budget_applies_while_streaming() -> None:
    slow = {"start_anchor": "A", "fields": {"content": {"open_pattern": r"(a|aa)+c"}}}
    stream = turnkit.ResponseTemplateFormat(slow, limits=Limits(regex_timeout_s=0.05, parse_timeout_s=0.2)).stream()
    with pytest.raises(turnkit.RegexTimeoutError):
        for _ in range(8):
            stream.feed("a" * 5)
        stream.feed("!")
        stream.close()
