"""Partial-JSON corpora from other libraries, where their semantics and ours meet.

Those libraries *complete* a truncated document (``12.`` becomes ``12``, ``nul`` becomes
``null``); turnkit shows only what the final document cannot take back. So the check is one-way:
our partial value must be *contained in* their completion (strings as prefixes, objects as subsets
of members, arrays as prefixes, scalars equal) — we never show anything they do not. llama.cpp's
``every_prefix_must_parse`` rows: every prefix is accepted (no error) and consistent with the
complete document.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.corpora import corpus_params, corpus_path
from tests.structured.json_prefix import viable_length
from turnkit.errors import IncompleteInputError, ParseError
from turnkit.structured import JsonStream, loads, loads_partial


def _contained(ours: Any, theirs: Any) -> bool:
    if ours is None:
        return True  # nothing shown yet (or a real null, checked by equality below when theirs is null)
    if isinstance(ours, str):
        return isinstance(theirs, str) and theirs.startswith(ours)
    if isinstance(ours, list):
        return (
            isinstance(theirs, list)
            and len(ours) <= len(theirs)
            and all(_contained(a, b) for a, b in zip(ours, theirs, strict=False))
        )
    if isinstance(ours, dict):
        return isinstance(theirs, dict) and all(k in theirs and _contained(v, theirs[k]) for k, v in ours.items())
    return type(ours) is type(theirs) and bool(ours == theirs)


_NOT_JSON = object()


def _parse(text: str) -> Any:
    """``json.loads(text)``, or ``_NOT_JSON`` (``null`` is a real completion, so ``None`` cannot mean failure)."""
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


def _without_open_string(stream: JsonStream) -> Any:
    """The stream's value without the string still open, as a mode that allows no partial strings shows it."""
    value = stream.value
    if not stream.incomplete or not isinstance(_resolve(value, stream.incomplete[-1]), str):
        return value
    if len(stream.incomplete) == 1:
        return None
    copy = json.loads(json.dumps(value))
    *parents, last = stream.incomplete[-1].split("/")[1:]
    holder = _resolve(copy, "/" + "/".join(parents)) if parents else copy
    if isinstance(holder, list):
        del holder[int(last)]
    else:
        del holder[last.replace("~1", "/").replace("~0", "~")]
    return copy


def _resolve(value: Any, pointer: str) -> Any:
    for token in pointer.split("/")[1:]:
        value = value[int(token)] if isinstance(value, list) else value[token.replace("~1", "/").replace("~0", "~")]
    return value


@pytest.mark.corpus
@pytest.mark.parametrize("record", corpus_params("partial-json/vercel-ai-fix-json.jsonl"))
def test_vercel_fix_json(record: dict[str, Any] | None) -> None:
    corpus_path("partial-json/vercel-ai-fix-json.jsonl")
    assert record is not None
    completed = _parse(record["expected"])
    viable = viable_length(record["input"])
    if viable < len(record["input"]):  # fixJson drops what can never be JSON ("12.e"); turnkit rejects it there
        with pytest.raises(ParseError) as info:
            loads_partial(record["input"])
        assert info.value.position == viable
    elif completed is _NOT_JSON:  # fixJson gives up ("" for "" and for "-"): nothing is shown by us either
        assert not record["expected"].strip()
        assert loads_partial(record["input"]) is None
    else:
        assert _contained(loads_partial(record["input"]), completed)


# partial-json-parser's ``Allow`` modes name the types that may be completed when truncated
# (``~X`` = all but X). Modes that still allow partial strings (and modes restricted to
# NULL / BOOL / NUM, which only change what *they* complete) are compared as they are; modes
# without STR drop a string still open, so ours is compared with that string dropped too.
_STRINGS_KEPT = {None, "ALL", "STR", "ARR | STR", "OBJ | STR", "~NUM", "NUM", "BOOL", "NULL"}
_STRINGS_DROPPED = {"ARR", "OBJ", "~STR"}


@pytest.mark.corpus
@pytest.mark.parametrize("record", corpus_params("partial-json/promplate-partial-json-parser.jsonl"))
def test_promplate_partial_json_parser(record: dict[str, Any] | None) -> None:
    corpus_path("partial-json/promplate-partial-json-parser.jsonl")
    assert record is not None
    text = record["input"]
    if "expected" not in record:
        # The library raises (MalformedJSON, or PartialJSON when its mode forbids completing):
        # turnkit never completes, so the input fed and closed is an error too — Infinity / NaN
        # (not JSON) and malformed input as a ParseError, a truncated document at close().
        not_json = "I" in text or "N" in text
        if record["expected_error"] == "MalformedJSON" or not_json:
            with pytest.raises(ParseError):
                loads(text)
            if not_json:  # rejected as soon as it arrives, not only at close()
                with pytest.raises(ParseError):
                    loads_partial(text)
        else:
            assert record["expected_error"] == "PartialJSON"
            loads_partial(text)  # a valid prefix: accepted
            with pytest.raises(IncompleteInputError):
                loads(text)  # unfinished (a lone '-' too: a number may still follow)
        return
    if record["allow"] == "INF":  # their Infinity extension: not JSON, rejected
        with pytest.raises(ParseError):
            loads_partial(text)
        return
    expected = record["expected"]
    if record["function"] != "parse_json":  # fix / fix_fast: [kept text, completion]
        expected = _parse("".join(expected))
    stream = JsonStream()
    stream.feed(text)
    if record["allow"] in _STRINGS_DROPPED:
        assert _contained(_without_open_string(stream), expected)
    else:
        assert record["allow"] in _STRINGS_KEPT, record["allow"]
        assert _contained(stream.value, expected)


@pytest.mark.corpus
@pytest.mark.parametrize("record", corpus_params("partial-json/llama.cpp-json-healing.jsonl"))
def test_llama_cpp_every_prefix(record: dict[str, Any] | None) -> None:
    corpus_path("partial-json/llama.cpp-json-healing.jsonl")
    assert record is not None
    text = record["input"]
    try:
        final = json.loads(text)
    except ValueError:
        final = None
    if record.get("every_prefix_must_parse"):
        assert final is not None
    for end in range(len(text) + 1):
        try:
            partial = loads_partial(text[:end])
        except ParseError:
            assert not record.get("every_prefix_must_parse"), text[:end]
            assert final is None  # only prefixes of invalid documents may fail
            continue
        if final is not None:
            assert _contained(partial, final), text[:end]
    if final is not None:
        s = JsonStream()
        s.feed(text)
        s.close()
        assert s.value == final
