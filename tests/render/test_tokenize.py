"""Tokenised rendering against transformers 5.23: the same input_ids, attention_mask and assistant_masks.

Tokenizers are trained here, on the text the templates render, so no model is ever downloaded.
"""

from __future__ import annotations

import copy
import functools
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.corpora import CORPORA, corpus_path
from tests.render.conversations import cases

tokenizers = pytest.importorskip("tokenizers")

from turnkit import ChatTemplate, TemplateError, TokenizerError, apply_chat_template  # noqa: E402
from turnkit.limits import DEFAULT_LIMITS  # noqa: E402
from turnkit.render import ChatTokenizer, DoubleBosWarning  # noqa: E402
from turnkit.render._spans import TRACKER, SpanTracker  # noqa: E402
from turnkit.render._tokenize import generation_mask, overlap_mask, transformers_mask  # noqa: E402

SPECIAL = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
GENERATION_TEMPLATES = [
    "huggingface.js/HuggingFaceTB-SmolLM3-3B.jinja",
    "huggingface.js/LiquidAI-LFM2.5-VL-450M.jinja",
    "LFM2.5-8B-A1B.jinja",
]
CHATML = (
    "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.role == 'assistant' %}{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}"
    "{% else %}{{ m.content }}<|im_end|>{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CHAT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "hello world, what is the weather?"},
    {"role": "assistant", "content": "It is sunny in Paris ☀️ today."},
    {"role": "user", "content": "and tomorrow?"},
    {"role": "assistant", "content": "Rain, 12 °C."},
]
_SPECIAL_TEXT = re.compile(r"<\|[^|<>\s]{1,40}\|>|</?think>|</?tool_call>|</?tool_response>")


def _added_tokens(template: str) -> list[str]:
    return sorted(set(_SPECIAL_TEXT.findall(template)) | set(SPECIAL.values()))


def _corpus_text() -> list[str]:
    lines = [m["content"] for m in CHAT] + ['The quick brown fox jumps over the lazy dog. 東京 12345 {"city": "x"}']
    for _, conversation, _ in cases():
        for message in conversation:
            content = message.get("content")
            if isinstance(content, str):
                lines.append(content)
    return lines * 3


@functools.cache
def build_tokenizer(kind: str, added: tuple[str, ...]) -> Any:
    """A small tokenizer: byte-level BPE (GPT-2/Llama-3 style, BOS post-processor), or WordPiece (BERT style)."""
    from tokenizers import decoders, models, pre_tokenizers, processors, trainers

    if kind == "bpe":
        tok = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=600, special_tokens=list(added), initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        )
    else:
        tok = tokenizers.Tokenizer(models.WordPiece(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(vocab_size=600, special_tokens=list(added))
    tok.train_from_iterator(_corpus_text(), trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", bos)])
    return tok


def _reference(tok: Any, template: str) -> Any:
    pytest.importorskip("transformers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from transformers import PreTrainedTokenizerFast
        from transformers.utils import logging
    logging.set_verbosity_error()
    return PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=template, **SPECIAL)


def _theirs(reference: Any, conversation: Any, **options: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = reference.apply_chat_template(copy.deepcopy(conversation), **options)
        except Exception as exc:  # noqa: BLE001 - the reference's answer
            return ("error", type(exc).__name__)
    return dict(out) if hasattr(out, "keys") else out


def _ours(template: ChatTemplate, conversation: Any, **options: Any) -> Any:
    try:
        return template.render(copy.deepcopy(conversation), tokenize=True, **options)
    except (TemplateError, TokenizerError) as exc:
        return ("error", exc)


def _spans_and_encoding(template: ChatTemplate, conversation: Any, **options: Any) -> tuple[Any, list[Any]]:
    tracker = SpanTracker()
    token = TRACKER.set(tracker)
    try:
        text = template.render(copy.deepcopy(conversation), **options)
    finally:
        TRACKER.reset(token)
    encoding = template.tokenizer.encode([text])[0]
    return encoding, tracker.renders[0]


# -- the shapes and options on a hand-written template ---------------------------------------------------------


@pytest.mark.reference
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"return_dict": False},
        {"return_assistant_tokens_mask": True},
        {"return_assistant_tokens_mask": True, "add_generation_prompt": True},
        {"padding": True, "return_assistant_tokens_mask": True},
        {"padding": "max_length", "max_length": 80, "return_assistant_tokens_mask": True},
        {"truncation": True, "max_length": 20, "return_assistant_tokens_mask": True},
        {"truncation": True, "max_length": 20, "padding": "max_length", "return_assistant_tokens_mask": True},
        {"return_tensors": "np", "padding": True, "return_assistant_tokens_mask": True},
        {"return_tensors": "np", "return_dict": False},
    ],
    ids=repr,
)
@pytest.mark.parametrize("batched", [False, True])
def test_same_tokens_as_transformers(options: dict[str, Any], batched: bool) -> None:
    tok = build_tokenizer("bpe", tuple(_added_tokens(CHATML)))
    reference = _reference(tok, CHATML)
    template = ChatTemplate(CHATML, special_tokens=SPECIAL, tokenizer=tok)
    conversation: Any = [CHAT, CHAT[:2], CHAT[:3]] if batched else CHAT
    if options.get("return_tensors") == "np" and not options.get("padding") and batched:
        # Ragged tensors: transformers makes object arrays, turnkit refuses (a documented deviation).
        outcome = _ours(template, conversation, **options)
        assert outcome[0] == "error" and isinstance(outcome[1], TokenizerError), outcome
        assert "padding=True" in str(outcome[1])
        return
    theirs = _theirs(reference, conversation, **options)
    ours = _ours(template, conversation, **options)
    assert repr(ours) == repr(theirs)
    if options.get("return_assistant_tokens_mask") and not options.get("truncation"):
        masks = ours["assistant_masks"]
        assert any(
            1 in (row if batched or options.get("return_tensors") else masks)
            for row in (masks if batched or options.get("return_tensors") else [masks])
        )


def test_apply_chat_template_tokenizes_with_a_tokenizer_json(tmp_path: Path) -> None:
    tok = build_tokenizer("bpe", tuple(_added_tokens(CHATML)))
    tok.save(str(tmp_path / "tokenizer.json"))
    ids = apply_chat_template(
        CHAT, CHATML, tokenize=True, tokenizer=tmp_path / "tokenizer.json", return_dict=False, **SPECIAL
    )
    assert ids[0] == tok.token_to_id("<s>") and ids[1] == tok.token_to_id("<|im_start|>")
    assert ids[:2] != [ids[0], ids[0]]  # one BOS: the template's, not the post-processor's too
    text = apply_chat_template(CHAT, CHATML, **SPECIAL)
    assert ids == tok.encode(text, add_special_tokens=False).ids


def test_model_folder_tokenizer_and_config(tmp_path: Path) -> None:
    import json

    tok = build_tokenizer("bpe", tuple(_added_tokens(CHATML)))
    tok.save(str(tmp_path / "tokenizer.json"))
    config = {"chat_template": CHATML, **SPECIAL, "padding_side": "left", "model_max_length": 16}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    template = ChatTemplate.from_pretrained(tmp_path)
    out = template.render([CHAT, CHAT[:2]], tokenize=True, padding=True, return_assistant_tokens_mask=True)
    pad = tok.token_to_id("<pad>")
    assert out["input_ids"][1][0] == pad and out["attention_mask"][1][0] == 0  # left padding from the config
    truncated = template.render(CHAT, tokenize=True, truncation=True, return_dict=False)
    assert len(truncated) == 16  # model_max_length from the config


def test_errors_are_typed() -> None:
    tok = build_tokenizer("bpe", tuple(_added_tokens(CHATML)))
    with pytest.raises(TokenizerError, match="needs a tokenizer"):
        ChatTemplate(CHATML).render(CHAT, tokenize=True)
    with pytest.raises(TemplateError, match="return_dict"):
        ChatTemplate(CHATML, tokenizer=tok).render(
            CHAT, tokenize=True, return_dict=False, return_assistant_tokens_mask=True
        )
    with pytest.raises(TemplateError, match="requires tokenize"):
        ChatTemplate(CHATML).render(CHAT, return_assistant_tokens_mask=True)
    with pytest.raises(TokenizerError, match="no pad token"):
        ChatTemplate(CHATML, tokenizer=tok).render([CHAT, CHAT[:1]], tokenize=True, padding=True)
    with pytest.raises(TokenizerError, match="padding="):
        ChatTemplate(CHATML, tokenizer=tok).render(CHAT, tokenize=True, padding="sideways")
    with pytest.raises(TokenizerError, match="no tokenizer.json"):
        ChatTokenizer.load("/nonexistent/folder/tokenizer.json")


def test_double_bos_warns_only_when_asked_to_add_special_tokens() -> None:
    tok = build_tokenizer("bpe", tuple(_added_tokens(CHATML)))
    template = ChatTemplate(CHATML, special_tokens=SPECIAL, tokenizer=tok)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ids = template.render(CHAT, tokenize=True, return_dict=False)
    assert ids.count(tok.token_to_id("<s>")) == 1
    with pytest.warns(DoubleBosWarning, match="second '<s>'"):
        doubled = template.render(CHAT, tokenize=True, return_dict=False, add_special_tokens=True)
    assert doubled[:2] == [tok.token_to_id("<s>")] * 2


def test_tokenizer_pickles() -> None:
    import pickle

    tok = build_tokenizer("bpe", tuple(_added_tokens(CHATML)))
    chat_tokenizer = ChatTokenizer.load(tok, special_tokens=SPECIAL)
    clone = pickle.loads(pickle.dumps(chat_tokenizer))
    assert clone.encode(["hello world"])[0].ids == chat_tokenizer.encode(["hello world"])[0].ids
    assert clone.pad_token == "<pad>"


# -- the corpus templates that use {% generation %} -------------------------------------------------------------


def _generation_cases() -> list[tuple[str, Any, dict[str, Any]]]:
    picked = [
        (name, conv, opts)
        for name, conv, opts in cases()
        if any(m.get("role") == "assistant" for m in conv) and not opts.get("continue_final_message")
    ]
    return [("chat", CHAT, {})] + picked


@pytest.mark.corpus
@pytest.mark.reference
@pytest.mark.parametrize("relative", GENERATION_TEMPLATES)
def test_corpus_generation_templates_match_transformers(relative: str) -> None:
    source = corpus_path(f"templates/{relative}").read_text(encoding="utf-8")
    assert re.search(r"\{%-?\s*generation\s*-?%\}", source)
    tok = build_tokenizer("bpe", tuple(_added_tokens(source)))
    reference = _reference(tok, source)
    template = ChatTemplate(source, special_tokens=SPECIAL, tokenizer=tok)
    compared = masked = 0
    for name, conversation, options in _generation_cases():
        opts = {**options, "return_assistant_tokens_mask": True}
        theirs = _theirs(reference, conversation, **opts)
        ours = _ours(template, conversation, **opts)
        if isinstance(theirs, tuple):
            assert isinstance(ours, tuple), (name, ours, theirs)
            continue
        assert ours["input_ids"] == theirs["input_ids"], name
        assert ours["attention_mask"] == theirs["attention_mask"], name
        assert ours["assistant_masks"] == theirs["assistant_masks"], name
        compared += 1
        masked += 1 in ours["assistant_masks"]
    assert compared >= 3 and masked >= 3


# -- where transformers is wrong (issue #47325) --------------------------------------------------------------------


@pytest.mark.reference
def test_transformers_drops_or_spills_masks_at_untokenised_characters() -> None:
    """A WordPiece tokenizer drops whitespace: a span that starts or ends on a space maps to no token.

    transformers then drops that span and every later one (start has no token), or marks every token to the end
    of the sequence (end has no token). turnkit marks the tokens that overlap each span, and nothing else.
    """
    template_text = (
        "{% for m in messages %}{{ m.role }}:{% if m.role == 'assistant' %}{% generation %} {{ m.content }} "
        "{% endgeneration %}{% else %} {{ m.content }} {% endif %}\n{% endfor %}"
    )
    tok = build_tokenizer("wordpiece", tuple(_added_tokens(template_text)))
    reference = _reference(tok, template_text)
    template = ChatTemplate(template_text, special_tokens=SPECIAL, tokenizer=tok)
    theirs = _theirs(reference, CHAT, return_assistant_tokens_mask=True)
    ours = _ours(template, CHAT, return_assistant_tokens_mask=True)
    assert ours["input_ids"] == theirs["input_ids"]
    encoding, spans = _spans_and_encoding(template, CHAT)
    assert theirs["assistant_masks"] == transformers_mask(encoding, spans)  # we know exactly what they do
    assert ours["assistant_masks"] == generation_mask(encoding, spans)
    assert theirs["assistant_masks"] != ours["assistant_masks"]
    assert 1 not in theirs["assistant_masks"]  # the first span starts on a space: no mask at all
    words = [(t, m) for t, m in zip(encoding.tokens, ours["assistant_masks"], strict=True)]
    assert [t for t, m in words if m] == [
        t for t in tok.encode(" It is sunny in Paris ☀️ today. Rain, 12 °C. ", add_special_tokens=False).tokens
    ]

    spill = (
        "{% for m in messages %}{{ m.role }}:{% if m.role == 'assistant' %}{% generation %}{{ m.content }} "
        "{% endgeneration %}{% else %} {{ m.content }} {% endif %}\n{% endfor %}"
    )
    template = ChatTemplate(spill, special_tokens=SPECIAL, tokenizer=tok)
    theirs = _theirs(_reference(tok, spill), CHAT[:3] + [CHAT[3]], return_assistant_tokens_mask=True)
    ours = _ours(template, CHAT[:3] + [CHAT[3]], return_assistant_tokens_mask=True)
    tail = len(tok.encode("\nuser: and tomorrow? \n", add_special_tokens=False).ids)
    assert theirs["assistant_masks"][-tail:] == [1] * tail  # transformers marks the user turn after it
    assert ours["assistant_masks"][-tail:] == [0] * tail


# -- the mask covers exactly the generated characters --------------------------------------------------------------

_text = st.text(alphabet=st.sampled_from(list("ab c.\n東☀é,")), min_size=1, max_size=20)


@settings(max_examples=60, deadline=None)
@given(replies=st.lists(_text, min_size=1, max_size=3), kind=st.sampled_from(["bpe", "wordpiece"]))
def test_mask_marks_exactly_the_tokens_inside_generation_blocks(replies: list[str], kind: str) -> None:
    tok = build_tokenizer(kind, tuple(_added_tokens(CHATML)))
    template = ChatTemplate(CHATML, special_tokens=SPECIAL, tokenizer=tok)
    conversation = []
    for reply in replies:
        conversation += [{"role": "user", "content": "q " + reply}, {"role": "assistant", "content": reply}]
    out = template.render(conversation, tokenize=True, return_assistant_tokens_mask=True)
    encoding, spans = _spans_and_encoding(template, conversation)
    text = template.render(conversation)
    inside = set()
    for start, end in spans:
        inside.update(range(start, end))
    assert [text[s:e] for s, e in spans] == [reply + "<|im_end|>" for reply in replies]
    for flag, (start, end) in zip(out["assistant_masks"], encoding.offsets, strict=True):
        chars = set(range(start, end))
        assert flag == (1 if chars & inside else 0), (text, start, end)


_spans = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab c.\n東☀é,")), min_size=1, max_size=40),
    spans=_spans,
    kind=st.sampled_from(["bpe", "wordpiece"]),
    special=st.booleans(),
    pad=st.sampled_from([None, "left", "right"]),
)
def test_fast_mask_equals_the_mask_from_every_offset(
    text: str, spans: list[tuple[int, int]], kind: str, special: bool, pad: str | None
) -> None:
    """generation_mask (a few char_to_token calls per span) = overlap_mask (every offset), on any span: spans
    starting or ending on dropped whitespace, inside a character split over byte-level tokens, empty, past the
    end; with a BOS post-processor and left or right padding."""
    tok = build_tokenizer(kind, tuple(_added_tokens(CHATML)))
    chat_tokenizer = ChatTokenizer(tok, pad_token="<pad>")
    encoding = chat_tokenizer.encode(
        [text], add_special_tokens=special, padding="max_length" if pad else False, max_length=60, padding_side=pad
    )[0]
    cut = [(start, min(start + width, len(text) + 2)) for start, width in spans]
    assert generation_mask(encoding, cut) == overlap_mask(encoding, cut)


def test_fast_encode_gives_the_same_ids() -> None:
    tok = build_tokenizer("bpe", tuple(_added_tokens(CHATML)))
    chat_tokenizer = ChatTokenizer(tok)
    texts = [CHATML, "héllo 東京 ☀️ <|im_start|>user\nhi<|im_end|>", " ", "a" * 300]
    slow = [e.ids for e in chat_tokenizer.encode(texts)]
    assert [e.ids for e in chat_tokenizer.encode(texts, offsets=False)] == slow
    assert [chat_tokenizer.encode([t], offsets=False)[0].ids for t in texts] == slow


def test_generation_block_spans_track_top_level_output() -> None:
    template = ChatTemplate(CHATML, special_tokens=SPECIAL)
    tracker = SpanTracker()
    token = TRACKER.set(tracker)
    try:
        text = template.render(CHAT)
    finally:
        TRACKER.reset(token)
    assert [text[s:e] for s, e in tracker.renders[0]] == [
        CHAT[2]["content"] + "<|im_end|>",
        CHAT[4]["content"] + "<|im_end|>",
    ]


def test_corpus_folder_exists_for_generation_templates() -> None:
    if not CORPORA.is_dir():
        pytest.skip("no corpora")
    for relative in GENERATION_TEMPLATES:
        corpus_path(f"templates/{relative}")


# -- generation blocks inside macros and {% set %} blocks ----------------------------------------------------------

_IN_MACRO = (
    "{% macro reply(m) %}<|im_start|>assistant\n{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}\n"
    "{% endmacro %}{% for m in messages %}{% if m.role == 'assistant' %}{{ reply(m) }}{% else %}"
    "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}{% endfor %}"
)
_IN_SET = (
    "{% for m in messages %}{% if m.role == 'assistant' %}{% set body %}{% generation %}{{ m.content }}<|im_end|>"
    "{% endgeneration %}{% endset %}<|im_start|>assistant\n{{ body }}\n{% else %}<|im_start|>{{ m.role }}\n"
    "{{ m.content }}<|im_end|>\n{% endif %}{% endfor %}"
)


@pytest.mark.reference
@pytest.mark.parametrize("template_text", [_IN_MACRO, _IN_SET], ids=["macro", "set-block"])
def test_generation_blocks_in_macros_and_set_blocks_cover_their_own_text(template_text: str) -> None:
    """transformers records a block's span at the length of the top-level output when the block runs; inside a
    macro or a {% set %} block that is before the text the macro or variable outputs later, so its mask covers the
    role header and misses the end of the reply. turnkit finds where the block's text lands (a marked render)."""
    tok = build_tokenizer("bpe", tuple(_added_tokens(template_text)))
    template = ChatTemplate(template_text, special_tokens=SPECIAL, tokenizer=tok)
    theirs = _theirs(_reference(tok, template_text), CHAT, return_assistant_tokens_mask=True)
    ours = _ours(template, CHAT, return_assistant_tokens_mask=True)
    assert ours["input_ids"] == theirs["input_ids"]

    def marked(mask: list[int]) -> str:
        return str(
            tok.decode([i for i, m in zip(ours["input_ids"], mask, strict=True) if m], skip_special_tokens=False)
        )

    assert marked(ours["assistant_masks"]) == "It is sunny in Paris ☀️ today.<|im_end|>Rain, 12 °C.<|im_end|>"
    assert marked(theirs["assistant_masks"]).startswith("<|im_start|>assistant\nIt is sunny")  # shifted left
    encoding, spans = _spans_and_encoding(template, CHAT)
    text = template.render(CHAT)
    assert [text[s:e] for s, e in spans] == [m["content"] + "<|im_end|>" for m in CHAT if m["role"] == "assistant"]


@pytest.mark.reference
def test_a_filter_over_a_marked_block_keeps_the_top_level_spans() -> None:
    """When the block's text goes through a filter that the marks would change (``length``, ``trim``...), the
    marked render is not the same text: the spans stay transformers' (top-level) ones."""
    template_text = (
        "{% for m in messages %}{% set body %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}"
        "{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endset %}"
        "<|im_start|>{{ m.role }} {{ body | length }}\n{{ body | trim }}<|im_end|>\n{% endfor %}"
    )
    tok = build_tokenizer("bpe", tuple(_added_tokens(template_text)))
    template = ChatTemplate(template_text, special_tokens=SPECIAL, tokenizer=tok)
    theirs = _theirs(_reference(tok, template_text), CHAT, return_assistant_tokens_mask=True)
    ours = _ours(template, CHAT, return_assistant_tokens_mask=True)
    assert ours["input_ids"] == theirs["input_ids"] and ours["assistant_masks"] == theirs["assistant_masks"]


def test_nested_generation_is_found_in_buffers_only() -> None:
    from turnkit.render._sandbox import nested_generation, sandbox_for
    from turnkit.render._spans import marked_spans

    sandbox = sandbox_for(DEFAULT_LIMITS)
    assert not nested_generation(sandbox.parse(CHATML))
    assert nested_generation(sandbox.parse(_IN_MACRO)) and nested_generation(sandbox.parse(_IN_SET))
    call = (
        "{% macro box() %}[{{ caller() }}]{% endmacro %}"
        "{% call box() %}{% generation %}x{% endgeneration %}{% endcall %}"
    )
    assert nested_generation(sandbox.parse(call))
    assert marked_spans("a\ufdd0b\ufdd0c\ufdd1\ufdd1", "abc") == [(2, 3), (1, 3)]  # inner first, as blocks end
    assert marked_spans("a\ufdd0b", "ab") is None and marked_spans("a\ufdd1b", "ab") is None
    assert marked_spans("a\ufdd0b\ufdd1", "a b") is None and marked_spans("ab", "a\ufdd0b") is None
