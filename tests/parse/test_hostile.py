"""Hostile model output: bounded time and memory, a clean result or a clean turnkit error."""

from __future__ import annotations

import random
import time

import pytest

from tests.parse.deltas import accumulate, without_flags
from turnkit import LimitExceededError, Limits
from turnkit.limits import DEFAULT_LIMITS
from turnkit.parse import list_formats, load_format

FORMATS = list_formats()


def _garbage(size: int, seed: int) -> str:
    rng = random.Random(seed)
    alphabet = "abc <>{}[]\"':,=|\\/\n\t｜▁" + "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(40))
    return "".join(rng.choice(alphabet) for _ in range(size))


def _stream(
    name: str, text: str, size: int, limits: Limits = DEFAULT_LIMITS
) -> tuple[list[dict[str, object]], dict[str, object]]:
    parser = load_format(name).stream(limits=limits)
    deltas = []
    for start in range(0, len(text), size):
        deltas.extend(parser.feed(text[start : start + size]))
    deltas.extend(parser.close())
    return deltas, dict(parser.message)


@pytest.mark.parametrize("name", FORMATS)
def test_one_megabyte_of_garbage_is_linear(name: str) -> None:
    text = _garbage(1_000_000, seed=len(name))
    started = time.perf_counter()
    deltas, message = _stream(name, text, 4096)
    elapsed = time.perf_counter() - started
    assert elapsed < 20, f"{name}: {elapsed:.1f}s for 1 MB"
    assert accumulate(deltas) == without_flags(message)


@pytest.mark.parametrize(
    "name",
    [
        "hermes",
        "qwen3_coder_xml",
        "kimi_k2",
        "gpt_oss",
        "gemma4",
        "lfm2_pythonic",
        "mistral_nemo",
        "minimax_m2",
        "glm45",
        "deepseek_v3_2_dsml",
    ],
)
def test_marker_soup_with_realmarkers_of(name: str) -> None:
    from tests.parse.strategies import markers_of

    markers = sorted(markers_of(load_format(name).spec))
    rng = random.Random(7)
    text = "".join(rng.choice(markers + ["x", "{", '"', "\n"]) for _ in range(50_000))
    started = time.perf_counter()
    # Random brackets nest past the default depth limit (a clean error, tested below): lifted here so the
    # whole soup is parsed.
    deltas, message = _stream(name, text, 7, Limits(max_json_depth=100_000))
    assert time.perf_counter() - started < 20
    assert accumulate(deltas) == without_flags(message)


def test_unclosed_markers_degrade_to_incomplete() -> None:
    for name, text in [
        ("hermes", '<tool_call>{"name": "f", "arguments": {"a": "unterminated'),
        ("qwen3_coder_xml", "<tool_call>\n<function=f>\n<parameter=a>\nvalue without end"),
        ("kimi_k2", "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"),
        ("gpt_oss", '<|channel|>commentary to=functions.f<|message|>{"a": '),
        ("lfm2_pythonic", "<|tool_call_start|>[f(a='x"),
    ]:
        message = load_format(name).parse(text)
        assert message.get("incomplete") is True, name
        assert len(message["tool_calls"]) == 1, name


def test_marker_text_inside_argument_strings_stays_in_the_argument() -> None:
    text = '<tool_call>{"name": "f", "arguments": {"code": "x = \'</tool_call><think>\'"}}</tool_call>after'
    message = load_format("hermes").parse(text)
    assert message["tool_calls"][0]["function"]["arguments"] == {"code": "x = '</tool_call><think>'"}
    assert message["content"] == "after"


def test_lone_surrogates_do_not_break_parsing() -> None:
    text = 'a\ud800b<tool_call>{"name": "f", "arguments": {"s": "\udfff"}}</tool_call>'
    message = load_format("hermes").parse(text)
    assert message["content"] == "a\ud800b"
    assert message["tool_calls"][0]["function"]["arguments"] == {"s": "\udfff"}
    xml = "<tool_call>\n<function=f>\n<parameter=s>\n\ud800\n</parameter>\n</function>\n</tool_call>"
    assert load_format("qwen3_coder_xml").parse(xml)["tool_calls"][0]["function"]["arguments"] == {"s": "\ud800"}


@pytest.mark.parametrize("depth", [10_000, 200_000])
def test_deeply_nested_arguments_are_bounded(depth: int) -> None:
    text = '<tool_call>{"name": "f", "arguments": ' + "[" * depth + "]" * depth + "}}</tool_call>"
    started = time.perf_counter()
    with pytest.raises(LimitExceededError, match="max_json_depth=512") as raised:
        load_format("hermes").parse(text)
    assert raised.value.code == "json_too_deep"
    # With the limit lifted: too deep for JSON decoding, kept as raw text and flagged, never a RecursionError.
    message = load_format("hermes").parse(text, limits=Limits(max_json_depth=depth))
    assert time.perf_counter() - started < 10
    call = message["tool_calls"][0]
    assert call["function"]["name"] == "f"
    assert message.get("incomplete") is True or isinstance(call["function"]["arguments"], list)


def test_gemma_deep_nesting_is_bounded() -> None:
    text = "<|tool_call>call:f{" + "{a:" * 5000 + "1" + "}" * 5000 + "}<tool_call|>"
    with pytest.raises(LimitExceededError, match="max_json_depth=100"):
        load_format("gemma4").parse(text, limits=Limits(max_json_depth=100))


def test_input_limit_is_a_clean_error() -> None:
    parser = load_format("hermes").stream(limits=Limits(max_input_chars=10))
    parser.feed("0123456789")
    with pytest.raises(LimitExceededError):
        parser.feed("x")


def test_work_per_feed_is_proportional_to_new_text() -> None:
    """Feeding 4-char chunks into a long argument: late chunks cost what early chunks cost."""
    fmt = load_format("hermes")
    body = '"' + "x" * 400_000 + '"'
    parser = fmt.stream()
    parser.feed('<tool_call>{"name": "f", "arguments": {"a": ')
    chunks = [body[i : i + 4] for i in range(0, len(body), 4)]

    def cost(part: list[str]) -> float:
        started = time.perf_counter()
        for chunk in part:
            parser.feed(chunk)
        return time.perf_counter() - started

    early = cost(chunks[:5000])
    cost(chunks[5000:-5000])
    late = cost(chunks[-5000:])
    assert late < early * 3 + 0.05


def test_watching_the_stream_costs_only_the_new_part() -> None:
    """Reading ``incomplete`` and ``message`` after every feed: late looks cost what early looks cost."""
    parser = load_format("hermes").stream()
    parser.feed('<tool_call>{"name": "f", "arguments": {"a": "')
    chunks = ["xxxx"] * 60_000

    def cost(part: list[str]) -> float:
        started = time.perf_counter()
        for chunk in part:
            parser.feed(chunk)
            assert parser.incomplete
        return time.perf_counter() - started

    early = cost(chunks[:5000])
    cost(chunks[5000:-5000])
    late = cost(chunks[-5000:])
    assert late < early * 3 + 0.05
    assert parser.message["tool_calls"][0]["function"]["arguments"] == '{"a": "' + "x" * 240_000
