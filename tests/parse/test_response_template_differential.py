"""Response templates against transformers 5.23's ``parse_response``, run for real on the same inputs.

Agreement means: the same result (compared by ``repr``: key order, ``1`` vs ``1.0`` and ``True`` vs ``1`` all
count), or both fail — transformers with any exception, turnkit with a turnkit error. Every template
transformers 5.23 ships and the six its tests re-express, over every corpus model output (each family's own
outputs among them), hand-written outputs, several prompt prefixes, and with tools for argument typing.
"""

from __future__ import annotations

from typing import Any

import pytest

import turnkit
from tests.corpora import read_jsonl
from tests.parse.deltas import join_response_deltas
from tests.parse.response_template_cases import FAMILIES, HANDWRITTEN, PREFIXES, REEXPRESSED, STREAMING, TOOLS, shipped

pytestmark = pytest.mark.reference

_OUTPUT_FILES = ("transformers.jsonl", "llama.cpp.jsonl", "vllm.jsonl", "harmony.jsonl")


def _reference() -> Any:
    chat_parsing = pytest.importorskip("transformers.utils.chat_parsing")
    return chat_parsing.parse_response


def _templates() -> dict[str, dict[str, Any]]:
    templates = {f"shipped:{name}": template for name, template in shipped().items()}
    templates.update({f"tests:{name}": template for name, template in REEXPRESSED.items()})
    assert len(templates) == 9
    return templates


def _ours(text: str, template: Any, prefix: str, tools: Any) -> tuple[str, str]:
    try:
        return "ok", repr(turnkit.parse_response(text, template, prefix=prefix, tools=tools))
    except turnkit.TurnkitError as exc:
        return "fail", f"{type(exc).__name__}: {exc}"


def _theirs(ref: Any, text: str, template: Any, prefix: str, tools: Any) -> tuple[str, str]:
    try:
        return "ok", repr(ref(text, template, prefix=prefix, tools=tools))
    except Exception as exc:  # transformers fails with assorted builtin exceptions
        return "fail", f"{type(exc).__name__}: {exc}"


def _agree(ours: tuple[str, str], theirs: tuple[str, str]) -> bool:
    return ours[0] == theirs[0] == "fail" or ours == theirs


def _outputs() -> list[tuple[str, str]]:
    found: dict[str, str] = {}
    for name in _OUTPUT_FILES:
        for record in read_jsonl(f"model-outputs/{name}"):
            if record.get("output"):
                found.setdefault(record["output"], record["format"])
    return sorted(found.items())


def test_templates_load_in_both() -> None:
    _reference()
    assert len(shipped()) == 3
    for name, template in _templates().items():
        turnkit.ResponseTemplateFormat(template)
        from transformers.utils.chat_parsing.response_templates import load_response_template

        load_response_template(template), name


def test_every_template_on_every_corpus_output() -> None:
    ref = _reference()
    outputs = _outputs()
    assert len(outputs) > 500
    disagreements, compared, family_hits = [], 0, dict.fromkeys(FAMILIES, 0)
    for name, template in _templates().items():
        for text, label in outputs:
            for prefix in ("", PREFIXES[1]):
                ours, theirs = _ours(text, template, prefix, None), _theirs(ref, text, template, prefix, None)
                compared += 1
                if not _agree(ours, theirs):
                    disagreements.append((name, text[:80], prefix[-12:], ours, theirs))
                family = name.partition(":")[2]
                if label in FAMILIES.get(family, ()) and ours[0] == "ok":
                    family_hits[family] += 1
    assert compared == 2 * len(outputs) * len(_templates())
    assert disagreements == []
    assert all(family_hits[name] > 0 for name in ("qwen2", "qwen3_5", "gemma4", "gpt_oss", "qwen3")), family_hits


def test_handwritten_outputs_prefixes_and_tools() -> None:
    ref = _reference()
    disagreements, compared = [], 0
    for name, template in _templates().items():
        for text in HANDWRITTEN:
            for prefix in PREFIXES:
                for tools in (None, TOOLS):
                    ours, theirs = _ours(text, template, prefix, tools), _theirs(ref, text, template, prefix, tools)
                    compared += 1
                    if not _agree(ours, theirs):
                        disagreements.append((name, text[:60], prefix[-12:], bool(tools), ours, theirs))
    assert compared == len(_templates()) * len(HANDWRITTEN) * len(PREFIXES) * 2
    assert disagreements == []


def test_streaming_test_templates_agree_too() -> None:
    """The templates written for the streaming tests parse as in transformers (every corpus output, prefixes)."""
    ref = _reference()
    disagreements, compared = [], 0
    for name, template in STREAMING.items():
        for text in [*HANDWRITTEN, *(text for text, _ in _outputs())]:
            for prefix in ("", PREFIXES[1]):
                ours, theirs = _ours(text, template, prefix, None), _theirs(ref, text, template, prefix, None)
                compared += 1
                if not _agree(ours, theirs):
                    disagreements.append((name, text[:60], prefix[-12:], ours, theirs))
    assert compared > 4000 and disagreements == []


def test_streaming_events_match_reference_chunk_by_chunk() -> None:
    """transformers' ``ResponseParser`` fed the same pieces emits the same events as ours.

    A template whose markers could match differently once more text follows (``$``) is parsed whole at close
    (its result would depend on the chunking in transformers' own ``ResponseParser``): its events are those of
    the whole output fed at once.
    """
    from transformers.utils.chat_parsing import ResponseParser

    for name, template in {**_templates(), **STREAMING}.items():
        incremental = turnkit.ResponseTemplateFormat(template).stream().incremental
        assert incremental == (name not in ("tests:cohere", "tests:smollm3")), name
        for text in HANDWRITTEN:
            for size in (1, 3, 7):
                pieces = [text[i : i + size] for i in range(0, len(text), size)]
                reference_pieces = pieces if incremental else [text]
                try:
                    theirs_parser = ResponseParser(template, prefix="")
                    theirs = [e for p in reference_pieces for e in theirs_parser.feed(p)]
                    final, events = theirs_parser.finalize()
                    theirs_out: Any = (theirs + events, final)
                except Exception:  # noqa: BLE001
                    theirs_out = "fail"
                stream = turnkit.ResponseTemplateFormat(template).stream()
                try:
                    deltas = [d for p in pieces for d in stream.feed(p)]
                    deltas += stream.close()
                    ours_out: Any = (stream.events, stream.message)
                    assert join_response_deltas(deltas) == stream.message
                except turnkit.TurnkitError:
                    ours_out = "fail"
                assert repr(ours_out) == repr(theirs_out) or ours_out == theirs_out == "fail", (name, text, size)


# Marker shapes where transformers' own ResponseParser ends chunk-dependently (fed one character at a time it
# disagrees with its parse_response). A literal inside another (regex reports the later complete "end" rather
# than the "<|end" the text ends in): turnkit's parser waits for the longer marker. ``$`` (it also matches before
# a newline that ends the text): turnkit parses the template whole at close (``incremental`` False).
CHUNK_DEPENDENT = [
    ({"start_anchor": "A", "fields": {"content": {"close": ["<|end|>", "end"]}}}, "Hello<|end|>", True),
    (
        {"start_anchor": "A", "fields": {"content": {"close_pattern": r"(?:<\|im_end\|>|$)"}}},
        "one\ntwo<|im_end|>",
        False,
    ),
]


@pytest.mark.parametrize(("template", "text", "incremental"), CHUNK_DEPENDENT)
def test_where_the_reference_stream_is_chunk_dependent_ours_is_not(template: Any, text: str, incremental: bool) -> None:
    from transformers.utils.chat_parsing import ResponseParser

    expected = _reference()(text, template, prefix="")
    parser = ResponseParser(template, prefix="")
    for ch in text:
        parser.feed(ch)
    assert parser.finalize()[0] != expected  # the reference's stream is chunk-dependent here
    stream = turnkit.ResponseTemplateFormat(template).stream()
    assert stream.incremental == incremental
    deltas = [d for ch in text for d in stream.feed(ch)] + stream.close()
    assert join_response_deltas(deltas) == stream.message == expected
