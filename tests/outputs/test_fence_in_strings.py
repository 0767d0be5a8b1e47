"""Fence- and tag-looking text inside JSON strings is content, never a fence or a tag (issue #16, class 2).

The rule (docs/outputs.md, "Where a fence counts"): a fence or a parse_json field's closing tag counts
only outside double-quoted strings; a string runs to its closing quote or to the end of its line, so a
fence at the start of a line always counts. Checked whole, one character at a time and in random pieces.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.chunking import chunkings
from turnkit.outputs import (
    MarkdownCodeBlockParser,
    MarkdownJsonDictParser,
    MarkdownJsonObjectParser,
    MultiTaggedContentParser,
    TaggedContent,
)

TRICKY = [
    "```json{}```",
    "Use ```json{}``` here",
    "```",
    "```json\n{}\n```",
    "``` ```python x ```",
    "[/DONE] and [DONE]",
    "</answer><answer>",
    'a \\" ``` b',
    "```json",
]


def _tagged() -> MultiTaggedContentParser:
    return MultiTaggedContentParser(
        TaggedContent("thought", "<think>", "...", "</think>"),
        TaggedContent("done", "[DONE]", "JSON", "[/DONE]", parse_json=True),
        TaggedContent("answer", "<answer>", "JSON", "</answer>", parse_json=True),
    )


def _stream_close(parser: Any, pieces: list[str]) -> Any:
    stream = parser.stream()
    for piece in pieces:
        stream.feed(piece)
    value = json.loads(json.dumps(stream.value))
    return value, stream.close().parsed


def _check_json_reply(reply: str, expected: Any, *, dict_only: bool = True) -> None:
    parsers: list[Any] = [MarkdownJsonObjectParser()]
    if isinstance(expected, dict) or not dict_only:
        parsers.append(MarkdownJsonDictParser())
    for parser in parsers:
        if isinstance(parser, MarkdownJsonDictParser) and not isinstance(expected, dict):
            continue
        assert parser.parse(reply).parsed == expected, (type(parser).__name__, reply)
        for cut, pieces in chunkings(reply, seed=len(reply)):
            preview, final = _stream_close(parser, pieces)
            assert final == expected, (cut, reply)
            if reply.lstrip().startswith(("{", "[")) or "\n```json\n" in reply:
                assert preview == expected, (cut, reply, preview)


@pytest.mark.parametrize("inner", TRICKY)
@pytest.mark.parametrize("framing", ["bare", "prose", "fenced", "fenced-prose", "indented"])
def test_json_with_fence_text_in_strings(inner: str, framing: str) -> None:
    value = {"answer": inner, "list": [inner, {"k": inner}], "n": 1}
    body = json.dumps(value)
    reply = {
        "bare": body,
        "prose": f"Sure, here it is: {body} Hope it helps.",
        "fenced": f"```json\n{body}\n```",
        "fenced-prose": f'I said "hi" first.\n```json\n{body}\n```\nDone.',
        "indented": json.dumps(value, indent=2),
    }[framing]
    _check_json_reply(reply, value)


def test_issue_example() -> None:
    reply = '{"answer": "Use ```json{}``` here"}'
    assert MarkdownJsonDictParser().parse(reply).parsed == {"answer": "Use ```json{}``` here"}
    assert MarkdownJsonObjectParser().parse(reply).parsed == {"answer": "Use ```json{}``` here"}


def test_a_fence_outside_strings_still_counts() -> None:
    # inline fences keep working when they are not inside a string
    res = MarkdownJsonDictParser().parse('He said "hi". ```json {"a": 1}``` ok')
    assert res.parsed == {"a": 1}
    # a fence at a line start counts even after an unbalanced quote on an earlier line
    res = MarkdownJsonDictParser().parse('It is 5" tall.\n```json\n{"a": 2}\n```')
    assert res.parsed == {"a": 2} and res.repairs_applied == []


@pytest.mark.parametrize("inner", TRICKY)
def test_code_block_with_fence_text_in_strings(inner: str) -> None:
    code = f"x = {json.dumps(inner)}\nprint(x)"
    reply = f"Here:\n```python\n{code}\n```\nThat's it."
    assert MarkdownCodeBlockParser("python").parse(reply).parsed == code
    inline = f"Run `y = {json.dumps(inner)}` first, then:\n```python\n{code}\n```"
    assert MarkdownCodeBlockParser("python").parse(inline).parsed == code


@pytest.mark.parametrize("inner", TRICKY)
def test_tagged_json_field_with_tags_in_strings(inner: str) -> None:
    answer = {"text": inner, "items": [inner]}
    reply = f"<think>ok</think>\n[DONE]{json.dumps(inner)}[/DONE]\n<answer>{json.dumps(answer)}</answer>"
    expected = {"thought": "ok", "done": inner, "answer": answer}
    parser = _tagged()
    assert parser.parse(reply).parsed == expected
    for cut, pieces in chunkings(reply, seed=len(reply)):
        preview, final = _stream_close(parser, pieces)
        assert final == expected, cut
        assert preview == expected, (cut, preview)


_TEXT = st.text(alphabet=st.sampled_from(list('`json[]/DONE<>answer"\\\n {}x')), max_size=20)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_TEXT, _VALUES, min_size=1, max_size=3), st.booleans())
def test_any_valid_json_reply_parses_as_that_json(value: dict[str, Any], indent: bool) -> None:
    reply = json.dumps(value, indent=2 if indent else None)
    assert MarkdownJsonDictParser().parse(reply).parsed == value
    assert MarkdownJsonObjectParser().parse(reply).parsed == value
    stream = MarkdownJsonDictParser().stream()
    for c in reply:
        stream.feed(c)
    assert stream.value == value and stream.close().parsed == value
    tagged = _tagged().parse(f"<think>t</think>[DONE]true[/DONE]<answer>{reply}</answer>")
    assert tagged.parsed["answer"] == value
