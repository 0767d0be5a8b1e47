"""Separators and tool-call framing never leak into content, and no text is lost (issue #16, class 3):
whole, per character and in random chunks (tests/chunking.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chunking import chunkings
from tests.parse.deltas import accumulate, without_flags
from turnkit.parse import load_format

A = '{"name": "a", "parameters": {"x": 1}}'
B = '{"name": "b", "parameters": {}}'
CALLS_AB = [("a", {"x": 1}), ("b", {})]
QWEN = "<tool_call>\n<function=f>\n<parameter=code>\n{}\n</parameter>\n</function>\n</tool_call>"
MINIMAX = '<minimax:tool_call><invoke name="f"><parameter name="code">{}</parameter></invoke></minimax:tool_call>'
OSS = "<|channel|>commentary to=functions.get <|constrain|>json<|message|>"

# (format, output, content, calls)
CASES: list[tuple[str, str, str | None, list[tuple[str, Any]]]] = [
    # Llama 3: ";" between JSON calls (and right after one) is framing.
    ("llama3_json", f"{A}; {B}", None, CALLS_AB),
    ("llama3_json", f"{A};{B}", None, CALLS_AB),
    ("llama3_json", f"{A} ;\n {B};", None, CALLS_AB),
    ("llama3_json", f"<|python_tag|>{A}; {B}", None, CALLS_AB),
    ("llama3_json", f"Sure. {A}; {B}", "Sure.", CALLS_AB),
    ("llama3_json", f"{A}; Done.", "Done.", [("a", {"x": 1})]),
    ("llama3_json", f"{A} and {B}", "and", CALLS_AB),
    ("llama3_json", '{"name": "a", "parameters": {"s": "x; y"}}', None, [("a", {"s": "x; y"})]),
    ("llama3_builtin", f"{A}; {B}", None, CALLS_AB),
    # gpt-oss: the call's arguments end with their JSON object; text after it in the message is content.
    ("gpt_oss", OSS + '{"a": 1} and more text<|call|>', "and more text", [("get", {"a": 1})]),
    ("gpt_oss", OSS + '{"a": "}"}\n<|call|>', None, [("get", {"a": "}"})]),
    ("gpt_oss", OSS + '{"a": [1, {"b": 2}]} tail', "tail", [("get", {"a": [1, {"b": 2}]})]),
    (
        "gpt_oss",
        "<|channel|>commentary<|message|>Checking.<|end|>" + OSS + '{"a": 1}<|call|>',
        "Checking.",
        [("get", {"a": 1})],
    ),
    # Text between a call list and its region's close marker is content; the close marker is not.
    (
        "lfm2_pythonic",
        "Before <|tool_call_start|>[f(a=1)] note<|tool_call_end|> after",
        "Before  note after",
        [("f", {"a": 1})],
    ),
    ("lfm2_pythonic", "<|tool_call_start|>[f(a=1)]  <|tool_call_end|>after", "after", [("f", {"a": 1})]),
    ("pythonic", "Hi <|python_start|>[f(a=1)] x<|python_end|> bye", "Hi  x bye", [("f", {"a": 1})]),
    ("pythonic", "[f(a=1)] and then more", "and then more", [("f", {"a": 1})]),
    ("pythonic", "Let me call [f(a=1)] now", "Let me call [f(a=1)] now", []),
    # Qwen3-Coder / MiniMax-M2: a value's close marker inside the value does not cut it.
    ("qwen3_coder_xml", QWEN.format('print("</parameter>")'), None, [("f", {"code": 'print("</parameter>")'})]),
    ("qwen3_coder_xml", QWEN.format("a </parameter> b\nc"), None, [("f", {"code": "a </parameter> b\nc"})]),
    ("qwen3_coder_xml", QWEN.format("x</parameter>\n<parameter=y>\n2"), None, [("f", {"code": "x", "y": 2})]),
    ("minimax_m2", MINIMAX.format("a</parameter>b"), None, [("f", {"code": "a</parameter>b"})]),
    ("minimax_m2", MINIMAX.format("s = '</parameter>' + t"), None, [("f", {"code": "s = '</parameter>' + t"})]),
    (
        "seed_oss",
        "<seed:tool_call><function=f><parameter=code>a</parameter>b</parameter></function></seed:tool_call>",
        None,
        [("f", {"code": "a</parameter>b"})],
    ),
]


@pytest.mark.parametrize(("fmt", "text", "content", "calls"), CASES)
def test_framing_whole_and_streamed(fmt: str, text: str, content: str | None, calls: list[tuple[str, Any]]) -> None:
    message = load_format(fmt).parse(text)
    assert message["content"] == content
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]] == calls
    assert not message.get("incomplete")
    for name, pieces in chunkings(text):
        parser = load_format(fmt).stream()
        deltas = [d for piece in pieces for d in parser.feed(piece)] + parser.close()
        assert parser.message == message, name
        assert accumulate(deltas) == without_flags(message), name


def test_value_close_at_end_of_output_closes_the_value() -> None:
    text = "<tool_call>\n<function=f>\n<parameter=code>\nx\n</parameter>\n"
    for name, pieces in chunkings(text):
        parser = load_format("qwen3_coder_xml").stream()
        for piece in pieces:
            parser.feed(piece)
        parser.close()
        call = parser.message["tool_calls"][0]
        assert call["function"]["arguments"] == '{"code": "x"', name  # the function never closed
        assert call["error"]["code"] == "incomplete", name
