"""Encoding piece by piece (the memo of text between special tokens) gives exactly what encoding the whole does.

Every check compares ``ChatTokenizer.encode_plain`` (pieces, memo) with ``Tokenizer.encode`` on the whole text:
the ids, and the assistant mask from the whole encoding's offsets (``generation_mask``), on hypothesis-made texts
and on every corpus template's renders, for byte-level BPE (plain, with a prefix space, with offsets trimmed to
zero-width tokens), WordPiece and Unigram/Metaspace tokenizers. Where the configuration makes pieces depend on
their place, the memo is off.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.corpora import CORPORA
from tests.render.conversations import cases
from tests.render.test_tokenize import SPECIAL, _corpus_text, build_tokenizer

tokenizers = pytest.importorskip("tokenizers")

from turnkit import ChatTemplate  # noqa: E402
from turnkit.render import ChatTokenizer  # noqa: E402
from turnkit.render._pieces import PieceEncoder, inexact_reason  # noqa: E402
from turnkit.render._spans import TRACKER, SpanTracker  # noqa: E402
from turnkit.render._tokenize import generation_mask  # noqa: E402

_SPECIAL_TEXT = re.compile(r"<\|[^|<>\s]{1,40}\|>|</?think>|</?tool_call>|</?tool_response>|\[/?[A-Z_]{3,20}\]")
ADDED = ("<s>", "</s>", "<pad>", "<unk>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|im_", "im_end|>")
KINDS = ["bpe", "bpe-prefix", "bpe-trim", "wordpiece", "unigram"]


@functools.cache
def _tokenizer(kind: str, added: tuple[str, ...] = ADDED) -> Any:
    """A trained tokenizer of ``kind``; ``added`` are special tokens, plus a non-special normalised one."""
    from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers, processors, trainers

    if kind in ("bpe", "wordpiece"):
        tok = build_tokenizer(kind, added)
    elif kind == "bpe-trim":  # RoBERTa-style offsets: a token of spaces is trimmed to zero width at its end
        tok = tokenizers.Tokenizer.from_str(build_tokenizer("bpe", added).to_str())
        tok.post_processor = processors.ByteLevel(trim_offsets=True, add_prefix_space=False)
    elif kind == "bpe-prefix":  # GPT-2 style: a space in front of every piece
        tok = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=700, special_tokens=list(added), initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        )
        tok.train_from_iterator(_corpus_text(), trainer)
    else:  # T5/Llama-2 style: NFKC, Metaspace prepending to every piece
        tok = tokenizers.Tokenizer(models.Unigram())
        tok.normalizer = normalizers.NFKC()
        tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always")
        tok.decoder = decoders.Metaspace(prepend_scheme="always")
        trainer = trainers.UnigramTrainer(vocab_size=400, special_tokens=list(added), unk_token="<unk>")
        tok.train_from_iterator(_corpus_text(), trainer)
    tok.add_tokens([AddedToken("weather", normalized=True)])  # matched inside pieces, after normalisation
    return tok


def _whole(tok: Any, texts: list[str], spans: list[list[tuple[int, int]]]) -> list[tuple[list[int], list[int]]]:
    out = []
    for text, text_spans in zip(texts, spans, strict=True):
        encoding = tok.encode(text, add_special_tokens=False)
        out.append((encoding.ids, generation_mask(encoding, text_spans)))
    return out


def _pieces(tok: Any, texts: list[str], spans: list[list[tuple[int, int]]]) -> Any:
    chat_tokenizer = ChatTokenizer(tok)
    got = chat_tokenizer.encode_plain(texts, spans)
    assert chat_tokenizer._pieces[True] is not None  # the memo was used, not the whole-text fallback
    ids_only = chat_tokenizer.encode_plain(texts)
    assert [ids for ids, _ in ids_only] == [ids for ids, _ in got]
    as_bytes = chat_tokenizer.encode_plain(texts, spans, mask_bytes=True)  # what batch workers take
    assert as_bytes == [(ids, bytes(mask)) for ids, mask in got]
    return got


@pytest.mark.parametrize("kind", KINDS)
def test_the_memo_is_on_for_these_tokenizers(kind: str) -> None:
    assert inexact_reason(_tokenizer(kind), offsets=True) is None


_fragment = st.one_of(
    st.sampled_from([*ADDED, "weather", " ", "  ", "\n", "\n\n", "\t", " <s>", "<s> ", "<|im_start|>user\n"]),
    st.text(alphabet=st.sampled_from(list("ab c.\n東☀é,'sS1ﬁ")), min_size=1, max_size=12),
)
_span_list = st.lists(st.tuples(st.integers(0, 80), st.integers(0, 30)), max_size=4)


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(st.tuples(st.lists(_fragment, max_size=12), _span_list), min_size=1, max_size=4),
    kind=st.sampled_from(KINDS),
)
def test_pieces_give_the_ids_and_masks_of_the_whole_text(
    rows: list[tuple[list[str], list[tuple[int, int]]]], kind: str
) -> None:
    """Any text (special tokens anywhere: first, last, adjacent, overlapping candidates like ``<|im_``), any
    spans (empty, touching piece edges, past the end); the same rows twice so the second batch hits the memo."""
    tok = _tokenizer(kind)
    texts = ["".join(fragments) for fragments, _ in rows]
    spans = [[(start, start + width) for start, width in row_spans] for _, row_spans in rows]
    expected = _whole(tok, texts, spans)
    assert _pieces(tok, texts + texts, spans + spans) == expected + expected


_EDGES = [
    ("hello  <|im_end|>x", [(7, 17)]),  # a span starting where the piece ends: its zero-width end token is inside
    ("hello  <|im_end|>x", [(0, 7)]),  # a span ending where the piece ends: that token is outside
    ("hello  <|im_end|>x", [(2, 17)]),
    ("<s>a  b  </s>  ", [(3, 9), (13, 15)]),
    ("  ", [(0, 2)]),
]


@pytest.mark.parametrize("kind", KINDS)
def test_spans_on_piece_edges(kind: str) -> None:
    """Spans that start or end exactly on a piece's edges, where byte-level offsets trimming leaves zero-width
    tokens (a token of spaces at the end of a piece)."""
    tok = _tokenizer(kind)
    texts = [text for text, _ in _EDGES]
    spans = [spans for _, spans in _EDGES]
    assert _pieces(tok, texts, spans) == _whole(tok, texts, spans)


def _renders(path: Any) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """The template's renders of the shared conversations, with spans: its generation blocks, and the assistant
    replies' characters (so pieces are covered fully, partly and not at all)."""
    template = ChatTemplate(path.read_text(encoding="utf-8"), special_tokens=SPECIAL)
    texts, spans = [], []
    for _, conversation, options in cases():
        tracker = SpanTracker()
        token = TRACKER.set(tracker)
        try:
            text = template.render(conversation, **options)
        except Exception:  # noqa: BLE001 - templates that refuse a case are other tests' business
            continue
        finally:
            TRACKER.reset(token)
        text_spans = list(tracker.renders[0]) if tracker.renders else []
        for message in conversation:
            content = message.get("content")
            if message.get("role") == "assistant" and isinstance(content, str) and content in text:
                start = text.index(content)
                text_spans.append((start, start + len(content)))
        texts.append(text)
        spans.append(text_spans)
    return texts, spans


@pytest.mark.corpus
@pytest.mark.parametrize("kind", KINDS)
def test_every_corpus_template_render_encodes_the_same_by_pieces(kind: str) -> None:
    if not CORPORA.is_dir():
        pytest.skip("no corpora")
    paths = sorted((CORPORA / "templates").rglob("*.jinja"))
    added = sorted({t for p in paths for t in _SPECIAL_TEXT.findall(p.read_text(encoding="utf-8"))} | set(ADDED))
    tok = _tokenizer(kind, tuple(added))
    compared = 0
    for path in paths:
        texts, spans = _renders(path)
        if texts:
            assert _pieces(tok, texts, spans) == _whole(tok, texts, spans), path.name
            compared += len(texts)
    assert len(paths) > 100 and compared > 1000


def _metaspace_first() -> Any:
    from tokenizers import models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first")
    tok.train_from_iterator(_corpus_text(), trainers.UnigramTrainer(vocab_size=300, special_tokens=list(ADDED)))
    return tok


def test_place_dependent_configurations_turn_the_memo_off() -> None:
    """Metaspace ``prepend_scheme="first"`` marks only the piece at the start of the text: encoding pieces alone
    would differ (shown), so the memo is off and the whole text is encoded. Likewise added tokens that strip
    whitespace, BPE dropout, and (for masks) a post-processor trimming the first token's offsets."""
    from tokenizers import AddedToken, pre_tokenizers, processors

    tok = _metaspace_first()
    assert "prepend_scheme='first'" in (inexact_reason(tok, offsets=False) or "")
    nested = tokenizers.Tokenizer.from_str(tok.to_str())
    nested.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(), tok.pre_tokenizer])
    assert "prepend_scheme='first'" in (inexact_reason(nested, offsets=False) or "")
    text = "<s>hello world<|im_end|>hello world"
    naive = PieceEncoder(tok, generation_mask).encode([text])[0]
    whole = tok.encode(text, add_special_tokens=False).ids
    assert naive is not None and naive[0] != whole  # why it must be off
    chat_tokenizer = ChatTokenizer(tok)
    assert chat_tokenizer.encode_plain([text]) == [(whole, None)] and chat_tokenizer._pieces[False] is None
    encoding = tok.encode(text, add_special_tokens=False)
    masked = chat_tokenizer.encode_plain([text], [[(3, 9)]], mask_bytes=True)  # the whole-text path, as bytes
    assert chat_tokenizer._pieces[True] is None
    assert masked == [(whole, bytes(generation_mask(encoding, [(3, 9)])))] and 1 in masked[0][1]

    stripping = tokenizers.Tokenizer.from_str(_tokenizer("bpe").to_str())
    stripping.add_special_tokens([AddedToken("<mask>", lstrip=True)])
    assert "strips whitespace" in (inexact_reason(stripping, offsets=False) or "")
    dropout = tokenizers.Tokenizer.from_str(_tokenizer("bpe").to_str())
    dropout.model.dropout = 0.1
    assert "dropout" in (inexact_reason(dropout, offsets=False) or "")
    trimming = tokenizers.Tokenizer.from_str(_tokenizer("bpe").to_str())
    trimming.post_processor = processors.Sequence(
        [processors.ByteLevel(trim_offsets=True, add_prefix_space=True), trimming.post_processor]
    )
    assert inexact_reason(trimming, offsets=False) is None  # the ids do not depend on offsets
    assert "post-processor" in (inexact_reason(trimming, offsets=True) or "")


def test_the_memo_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from turnkit.render import _pieces

    monkeypatch.setattr(_pieces, "_MEMO_TOKENS", 50)
    tok = _tokenizer("bpe")
    encoder = PieceEncoder(tok, generation_mask)
    texts = [f"<|im_start|>user\nquestion number {i} about the weather<|im_end|>\n" for i in range(40)]
    assert encoder.encode(texts) == [(tok.encode(t, add_special_tokens=False).ids, None) for t in texts]
    assert encoder._memo.held <= 50 and sum(map(len, encoder._memo.entries.values())) == encoder._memo.held
