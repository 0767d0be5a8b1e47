"""Per-call errors (issue #16, class 4): a call that cannot be right carries ``error`` in the message and one
``{"index", "error"}`` fragment in the deltas, for every chunking; ``strict=True`` raises ToolCallError."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chunking import chunkings
from tests.parse.deltas import accumulate, without_flags
from turnkit import ParseError, ToolCallError
from turnkit.parse import load_format

TOOLS = [
    {"type": "function", "function": {"name": "get", "parameters": {"type": "object", "properties": {}}}},
    {"name": "put", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}},
]

# (format, output, tools given?, [(call name, error code or None)])
CASES: list[tuple[str, str, bool, list[tuple[str, str | None]]]] = [
    ("hermes", '<tool_call>{"name": "nope", "arguments": {}}</tool_call>', True, [("nope", "unknown_tool")]),
    ("hermes", '<tool_call>{"name": "nope", "arguments": {}}</tool_call>', False, [("nope", None)]),
    ("hermes", '<tool_call>{"name": "get", "arguments": {}}</tool_call>', True, [("get", None)]),
    (
        "hermes",
        '<tool_call>{"name": "get", "arguments": "{not json"}</tool_call>',
        False,
        [("get", "invalid_arguments")],
    ),
    ("hermes", '<tool_call>{"name": "get", "arguments": "[1, 2]"}</tool_call>', True, [("get", "invalid_arguments")]),
    ("hermes", '<tool_call>{"name": "get", "arguments": {"a": ', True, [("get", "incomplete")]),
    (
        "hermes",
        '<tool_call>{"name": "get", "arguments": {}}</tool_call><tool_call>{"name": "x", "arguments": {}}</tool_call>',
        True,
        [("get", None), ("x", "unknown_tool")],
    ),
    (
        "qwen3_coder_xml",
        "<tool_call>\n<function=zap>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>",
        True,
        [("zap", "unknown_tool")],
    ),
    (
        "qwen3_coder_xml",
        "<tool_call>\n<function=put>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>",
        True,
        [("put", None)],
    ),
    ("pythonic", "[get(), other(a=1)]", True, [("get", None), ("other", "unknown_tool")]),
    (
        "gpt_oss",
        "<|channel|>commentary to=functions.get <|constrain|>json<|message|>{oops}<|call|>",
        True,
        [("get", "invalid_arguments")],
    ),
    (
        "gpt_oss",
        '<|channel|>commentary to=functions.get <|constrain|>json<|message|>{"a": [1',
        True,
        [("get", "incomplete")],
    ),
    ("gpt_oss", "<|channel|>commentary to=functions.zz<|message|>{}<|call|>", True, [("zz", "unknown_tool")]),
    ("mistral_args", '[TOOL_CALLS]nope[ARGS]{"a": 1}', True, [("nope", "unknown_tool")]),
    ("llama3_json", '{"name": "get", "parameters": {}}', True, [("get", None)]),
]


def _run(fmt: str, pieces: list[str], tools: list[dict[str, Any]] | None) -> tuple[list[dict[str, Any]], Any]:
    parser = load_format(fmt).stream(tools=tools)
    deltas = [d for piece in pieces for d in parser.feed(piece)] + parser.close()
    return deltas, parser.message


@pytest.mark.parametrize(("fmt", "text", "with_tools", "want"), CASES)
def test_per_call_error_whole_and_streamed(
    fmt: str, text: str, with_tools: bool, want: list[tuple[str, str | None]]
) -> None:
    tools = TOOLS if with_tools else None
    message = load_format(fmt).parse(text, tools=tools)
    got = [(c["function"]["name"], c.get("error", {}).get("code")) for c in message["tool_calls"]]
    assert got == want
    for call in message["tool_calls"]:
        if "error" in call:
            assert set(call["error"]) == {"code", "message"} and call["error"]["message"]
    for name, pieces in chunkings(text):
        deltas, streamed = _run(fmt, pieces, tools)
        assert streamed == message, name
        assert accumulate(deltas) == without_flags(message), name
        error_fragments = [f for d in deltas for f in d.get("tool_calls", []) if "error" in f]
        assert [(f["index"], f["error"]["code"]) for f in error_fragments] == [
            (i, code) for i, (_n, code) in enumerate(want) if code is not None
        ], name


@pytest.mark.parametrize(("fmt", "text", "with_tools", "want"), [c for c in CASES if any(code for _n, code in c[3])])
def test_strict_raises_typed_error(fmt: str, text: str, with_tools: bool, want: list[tuple[str, str | None]]) -> None:
    tools = TOOLS if with_tools else None
    index, code = next((i, code) for i, (_n, code) in enumerate(want) if code is not None)
    with pytest.raises(ToolCallError) as caught:
        load_format(fmt).parse(text, tools=tools, strict=True)
    err = caught.value
    assert isinstance(err, ParseError)
    assert (err.index, err.code, err.pointer) == (index, code, f"/tool_calls/{index}")
    for name, pieces in chunkings(text):
        parser = load_format(fmt).stream(tools=tools, strict=True)
        with pytest.raises(ToolCallError) as caught:
            for piece in pieces:
                parser.feed(piece)
            parser.close()
        assert (caught.value.index, caught.value.code) == (index, code), name


def test_strict_passes_good_calls() -> None:
    text = '<tool_call>{"name": "get", "arguments": {}}</tool_call>'
    message = load_format("hermes").parse(text, tools=TOOLS, strict=True)
    assert "error" not in message["tool_calls"][0]


def test_to_openai_keeps_wire_shape() -> None:
    from turnkit.messages import to_openai

    message = load_format("hermes").parse('<tool_call>{"name": "nope", "arguments": {}}</tool_call>', tools=TOOLS)
    assert message["tool_calls"][0]["error"]["code"] == "unknown_tool"
    assert set(to_openai(message)["tool_calls"][0]) == {"id", "type", "function"}
