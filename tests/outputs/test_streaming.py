"""Streaming previews: any chunking gives the same final parse, and partial values only grow."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turnkit
from tests.chunking import chunkings
from turnkit.outputs import (
    MarkdownJsonDictParser,
    MarkdownJsonObjectParser,
    MultiTaggedContentParser,
    ParseError,
    ParserBase,
    ReplyStream,
    TaggedContent,
)
from turnkit.structured import apply_patch

TAGGED = MultiTaggedContentParser(
    TaggedContent("thought", "[THOUGHT]", "what you thought", "[/THOUGHT]"),
    TaggedContent("speak", "[SPEAK]", "what you speak", "[/SPEAK]"),
    TaggedContent("finish", "[FINISH_DISCUSSION]", "true/false", "[/FINISH_DISCUSSION]", parse_json=True),
)
DICT = MarkdownJsonDictParser()
OBJECT = MarkdownJsonObjectParser()

# (parser, reply, whether the preview is expected to end equal to the final parse)
CASES: list[tuple[ParserBase, str, bool]] = [
    (
        TAGGED,
        "As a werewolf, I should keep pretending to be a villager\n"
        "[THOUGHT]The others didn't realize I was a werewolf.[/THOUGHT]\n"
        "[SPEAK]I agree with you.[/SPEAK]\n[FINISH_DISCUSSION]true[/FINISH_DISCUSSION]\n",
        True,
    ),
    (
        TAGGED,
        "[SPEAK]Speak first[/SPEAK][THOUGHT]I mention [SPEAK] here[/THOUGHT]"
        "[FINISH_DISCUSSION] false [/FINISH_DISCUSSION]",
        True,
    ),
    (
        TAGGED,
        '[THOUGHT]t[/THOUGHT][SPEAK]s[/SPEAK][FINISH_DISCUSSION]{"votes": [1, 2], "who": "Bob"}[/FINISH_DISCUSSION]',
        True,
    ),
    (TAGGED, "[THOUGHT]unclosed[SPEAK]s[/SPEAK][FINISH_DISCUSSION]true", False),
    (
        DICT,
        'Here:\n```json\n{"thought": "a \\"quoted\\" word", "speak": "é ✓ \\u00e9",\n'
        '"n": [1, -2.5e3, null]}\n```\nDone.',
        True,
    ),
    (DICT, 'Sure.\n```python\nx = {1: 2}\n```\nAnd the JSON:\n```json\n{"a": {"b": [true, false]}}\n```', True),
    (DICT, '{"bare": "json", "list": [[], {}]}', True),
    (DICT, "```json\n{'single': 'quotes', 'trailing': [1,],}\n```", False),
    (OBJECT, "The list:\n```json\n[1, 2, 3, 4, 5]\n```", True),
    (OBJECT, '```json\n"just a string with ``` inside"\n```', False),  # previews start at { or [
    (OBJECT, '```\n["untagged"]\n```', True),
]


def grows(before: Any, after: Any) -> bool:
    """``after`` extends ``before``: strings by suffix, lists by items, dicts by keys (recursively)."""
    if before is None:
        return True
    if isinstance(before, str):
        return isinstance(after, str) and after.startswith(before)
    if isinstance(before, list):
        return (
            isinstance(after, list)
            and len(after) >= len(before)
            and all(grows(b, a) for b, a in zip(before, after, strict=False))
            and all(b == a for b, a in zip(before[:-1], after, strict=False))
        )
    if isinstance(before, dict):
        return isinstance(after, dict) and all(k in after and grows(v, after[k]) for k, v in before.items())
    return bool(before == after) and type(before) is type(after)


def run_stream(parser: ParserBase, pieces: list[str]) -> tuple[list[Any], list[dict[str, Any]], Any]:
    stream = parser.stream()  # type: ignore[attr-defined]
    assert isinstance(stream, ReplyStream)
    snapshots: list[Any] = []
    all_ops: list[dict[str, Any]] = []
    for piece in pieces:
        ops = stream.feed(piece)
        if ops:
            all_ops.extend(copy.deepcopy(ops))
            snapshots.append(copy.deepcopy(stream.value))
    return snapshots, all_ops, stream


@pytest.mark.parametrize(("parser", "reply", "preview_matches"), CASES)
def test_any_chunking_same_final_parse(parser: ParserBase, reply: str, preview_matches: bool) -> None:
    whole = parser.parse(reply)
    for name, pieces in chunkings(reply):
        snapshots, ops, stream = run_stream(parser, pieces)
        final = stream.close()
        assert final.parsed == whole.parsed, name
        assert final.repairs_applied == whole.repairs_applied, name
        for before, after in zip(snapshots, snapshots[1:], strict=False):
            assert grows(before, after), (name, before, after)
        assert apply_patch(None, ops) == stream.value, name  # the ops rebuild the preview
        if preview_matches:
            assert snapshots, name
            assert snapshots[-1] == whole.parsed, name


def test_preview_shows_partial_strings_early() -> None:
    stream = TAGGED.stream()
    stream.feed("[THOUGHT]The others didn't")
    assert stream.value == {"thought": "The others didn't"}
    stream.feed(" realize[/THO")  # "[/THO" could be the closing tag: held back
    assert stream.value == {"thought": "The others didn't realize"}
    assert stream.value["thought"] == "The others didn't realize"
    stream.feed("UGHT][FINISH_DISCUSSION]tr")
    assert "finish" not in stream.value  # literals appear only once complete
    stream.feed("ue[/FINISH_DISCUSSION][SPEAK]Hi[/SPEAK]")
    assert stream.value == {"thought": "The others didn't realize", "finish": True, "speak": "Hi"}
    assert stream.close().parsed == {"thought": "The others didn't realize", "speak": "Hi", "finish": True}


def test_json_preview_partial_values() -> None:
    stream = DICT.stream()
    assert stream.feed("Let me think.\n```js") == []
    assert stream.value is None
    stream.feed('on\n{"speak": "I agr')
    assert stream.value == {"speak": "I agr"}
    stream.feed('ee", "votes": [1, 2')
    assert stream.value == {"speak": "I agree", "votes": [1]}
    stream.feed("]}\n```")
    assert stream.done
    assert stream.close().parsed == {"speak": "I agree", "votes": [1, 2]}


def test_stream_errors_match_parse() -> None:
    reply = '```json\n{"thought": "t", "speak": '
    with pytest.raises(ParseError) as whole:
        DICT.parse(reply)
    for _name, pieces in chunkings(reply):
        _, _, stream = run_stream(DICT, pieces)
        with pytest.raises(ParseError) as streamed:
            stream.close()
        assert streamed.value.code == whole.value.code == "truncated"


def test_feed_after_close_is_misuse() -> None:
    stream = OBJECT.stream()
    stream.feed("[1]")
    stream.close()
    with pytest.raises(turnkit.UsageError):
        stream.feed("more")
    with pytest.raises(turnkit.UsageError):
        stream.close()


def test_stream_over_size_limit_reports_on_close() -> None:
    parser = MarkdownJsonObjectParser(limits=turnkit.Limits(max_input_chars=50))
    stream = parser.stream()
    for _ in range(20):
        stream.feed("[1, 2, 3,")
    with pytest.raises(ParseError) as info:
        stream.close()
    assert info.value.code == "input_too_large"


def test_hostile_stream_is_linear() -> None:
    import time

    for parser, unit in ((TAGGED, "[THOUGHT]"), (DICT, "```json\n{"), (OBJECT, "\n[" * 3)):
        stream = parser.stream()
        text = unit * (1_000_000 // len(unit))
        start = time.process_time()  # CPU seconds: other processes' load does not count
        for i in range(0, len(text), 4096):
            stream.feed(text[i : i + 4096])
        with pytest.raises(ParseError):
            stream.close()
        assert time.process_time() - start < 1.0


def test_reading_so_far_after_every_chunk_is_linear() -> None:
    """Reading ``text`` (and a tagged field) after each of 20,000 chunks joins each chunk once, not once per read."""
    count = 20_000
    stream = TAGGED.stream()
    stream.feed("[SPEAK]")
    joined = 0  # pieces joined by all the reads together: linear work means O(count), a rebuild would be O(count**2)
    for i in range(count):
        chunk = f"{i % 10}x"
        stream.feed(chunk)
        joined += len(stream._received._parts) + len(stream._parts["speak"]._parts)
        text = stream.text
        speak = stream.value["speak"]
        if i % 4_999 == 0:
            expected = "".join(f"{j % 10}x" for j in range(i + 1))
            assert text == "[SPEAK]" + expected
            assert speak == expected
    assert joined <= 4 * count  # each read joins the text so far and the one new chunk, per accessor
    assert stream.text == "[SPEAK]" + "".join(f"{j % 10}x" for j in range(count))
    stream.feed("[/SPEAK]")
    assert stream.value["speak"] == "".join(f"{j % 10}x" for j in range(count))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(value=st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4), cuts=st.lists(st.integers(0, 400)))
def test_property_json_preview(value: dict[str, Any], cuts: list[int]) -> None:
    reply = f"Here you go:\n```json\n{json.dumps(value, ensure_ascii=False, indent=1)}\n```\nThanks."
    points = sorted({c % (len(reply) + 1) for c in cuts} | {0, len(reply)})
    pieces = [reply[a:b] for a, b in zip(points, points[1:], strict=False)]
    snapshots, _, stream = run_stream(DICT, pieces)
    assert stream.close().parsed == value
    for before, after in zip(snapshots, snapshots[1:], strict=False):
        assert grows(before, after)
    assert snapshots[-1] == value


@settings(max_examples=60, deadline=None)
@given(
    thought=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30),
    speak=st.text(max_size=30),
    finish=JSON_VALUES,
    cuts=st.lists(st.integers(0, 400)),
)
def test_property_tagged_preview(thought: str, speak: str, finish: Any, cuts: list[int]) -> None:
    reply = (
        f"[THOUGHT]{thought}[/THOUGHT]\n[SPEAK]{speak}[/SPEAK]\n"
        f"[FINISH_DISCUSSION]{json.dumps(finish)}[/FINISH_DISCUSSION]"
    )
    points = sorted({c % (len(reply) + 1) for c in cuts} | {0, len(reply)})
    pieces = [reply[a:b] for a, b in zip(points, points[1:], strict=False)]
    try:
        whole = TAGGED.parse(reply)
    except ParseError as exc:
        _, _, stream = run_stream(TAGGED, pieces)
        with pytest.raises(ParseError) as streamed:
            stream.close()
        assert streamed.value.code == exc.code
        return
    snapshots, _, stream = run_stream(TAGGED, pieces)
    assert stream.close().parsed == whole.parsed
    for before, after in zip(snapshots, snapshots[1:], strict=False):
        assert grows(before, after)


def test_partials_iterators() -> None:
    import asyncio

    reply = '```json\n{"speak": "hello there", "n": [1, 2]}\n```'
    chunks = [reply[i : i + 5] for i in range(0, len(reply), 5)]
    stream = DICT.stream()
    seen = [copy.deepcopy(v) for v in stream.partials(chunks)]
    assert len(seen) > 3
    assert all(grows(a, b) for a, b in zip(seen, seen[1:], strict=False))
    assert seen[-1] == {"speak": "hello there", "n": [1, 2]}
    assert stream.close().parsed == seen[-1]

    async def source():  # type: ignore[no-untyped-def]
        for chunk in chunks:
            await asyncio.sleep(0)
            yield chunk

    async def collect() -> list[Any]:
        astream = DICT.stream()
        out = [copy.deepcopy(v) async for v in astream.apartials(source())]
        assert astream.close().parsed == out[-1]
        return out

    assert asyncio.run(collect()) == seen
