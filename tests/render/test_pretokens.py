"""Encoding pieces from a memo of pre-tokens gives exactly what ``tokenizers`` gives.

Every recognised configuration (GPT-2's ``ByteLevel``, with and without a prefix space; Llama 3's and Qwen2's
``Split`` expression then ``ByteLevel``, Qwen2 with NFC; ``ignore_merges``) is trained here and compared with
``Tokenizer.encode`` on the whole text: the ids, and the assistant masks from the whole encoding's offsets.
Configurations that must not use the layer are shown to fall back, and the expressions are checked against
tokenizers' own split on every pair of ASCII characters.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.render.test_pieces import ADDED, _pieces, _whole
from tests.render.test_tokenize import _corpus_text, build_tokenizer

tokenizers = pytest.importorskip("tokenizers")

from turnkit.render import _pretokens  # noqa: E402
from turnkit.render._pieces import PieceEncoder  # noqa: E402
from turnkit.render._pretokens import PreTokenEncoder, plan  # noqa: E402
from turnkit.render._tokenize import generation_mask  # noqa: E402

GPT2 = _pretokens._GPT2
LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
USED = ["gpt2", "gpt2-prefix", "gpt2-trim", "llama3", "qwen2", "split-prefix"]
"""Configurations the layer handles (for ids; "gpt2-prefix", "split-prefix" and "gpt2-trim" not for offsets)."""
REFUSED = ["metaspace", "lowercase", "dropout", "split-then-digits"]
INTL = [
    "“Café” — naïve façade; São Paulo’s crème brûlée costs 12 €, ½ price… «Très bien», Ærø, Œuvre, Ångström.",
    "Ελληνικά: Καλημέρα κόσμε! Русский: Привет, мир — как дела? Українська: Їжак ґанок. ١٢٣ ٤٥٦ ۷۸۹ १२३",
    "日本語のテキスト、東京は晴れです。中文：你好，世界！한국어 문장입니다。 数字１２３ and　全角スペース",
    "Emoji: 👩🏽\u200d💻 👨\u200d👩\u200d👧 🇫🇷 😀😀 ✔️ — skin 👍🏿, e\u0301 n\u0303 a\u0308\u0301 (combining).",
    "Spaces:\xa0no-break,\u2009thin,\u2028line\u2029para\x85next\u3000ideo; Ⅻ ⅓ ² ³ ① ⓐ; Straße ſ \u212a ﬁ İı.",
]
"""Typographic, accented, Greek, Cyrillic, Arabic, Devanagari, CJK and emoji text (ZWJ, skin tones, flags),
combining marks, non-ASCII spaces and digits, characters folding to ASCII: trained into the tokenizers so they
have non-ASCII merges."""


def _split_then_bytes(pattern: str, prefix: bool = False) -> Any:
    from tokenizers import Regex, pre_tokenizers

    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=prefix, use_regex=False),
        ]
    )


@functools.cache
def _tokenizer(kind: str) -> Any:
    """A byte-level BPE (or a configuration that must fall back) trained on the test suite's text."""
    from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers, processors, trainers

    if kind == "gpt2":
        tok = tokenizers.Tokenizer.from_str(build_tokenizer("bpe", ADDED).to_str())
        tok.add_tokens([AddedToken("weather", normalized=True)])  # matched inside pieces: those fall back
        return tok
    if kind == "metaspace":
        tok = tokenizers.Tokenizer(models.Unigram())
        tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always")
        tok.train_from_iterator(
            _corpus_text(), trainers.UnigramTrainer(vocab_size=300, special_tokens=list(ADDED), unk_token="<unk>")
        )
        return tok
    tok = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
    tok.decoder = decoders.ByteLevel()
    tok.pre_tokenizer = {
        "gpt2-prefix": pre_tokenizers.ByteLevel(add_prefix_space=True),
        "gpt2-trim": pre_tokenizers.ByteLevel(add_prefix_space=False),
        "qwen2": _split_then_bytes(QWEN2),
        "split-prefix": _split_then_bytes(LLAMA3, prefix=True),
        "split-then-digits": pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
        ),
    }.get(kind, _split_then_bytes(LLAMA3))
    if kind == "qwen2":
        tok.normalizer = normalizers.NFC()
    elif kind == "lowercase":
        tok.normalizer = normalizers.Lowercase()
    trainer = trainers.BpeTrainer(
        vocab_size=700, special_tokens=list(ADDED), initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(_corpus_text() + INTL * 3, trainer)
    if kind == "llama3":
        tok.model.ignore_merges = True  # Llama 3: a pre-token in the vocabulary is one token, merges or not
    elif kind == "dropout":
        tok.model.dropout = 0.5
    elif kind == "gpt2-trim":  # RoBERTa-style offsets: pieces a span partly covers take the offsets of tokenizers
        tok.post_processor = processors.ByteLevel(trim_offsets=True, add_prefix_space=False)
    return tok


@pytest.mark.parametrize("kind", USED)
def test_recognised_configurations_use_the_layer(kind: str) -> None:
    tok = _tokenizer(kind)
    assert not isinstance(plan(tok), str), plan(tok)
    assert PieceEncoder(tok, generation_mask).pretokens is not None


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("metaspace", "not BPE"),
        ("lowercase", "Lowercase"),
        ("dropout", "dropout"),
        ("split-then-digits", "unrecognised pre-tokenizer sequence"),
    ],
)
def test_other_configurations_fall_back(kind: str, reason: str) -> None:
    """Configurations whose split turnkit does not make: no layer, and the pieces still encode exactly."""
    tok = _tokenizer(kind)
    found = plan(tok)
    assert isinstance(found, str) and reason in found
    assert PieceEncoder(tok, generation_mask).pretokens is None
    if kind != "dropout":  # random: no reference to compare with
        texts = ["<|im_start|>Hello World's 1234 <|im_end|>\n", "ABC  'LL  x\r\n\r\ny"]
        spans = [[(12, 30)], [(3, 9)]]
        assert _pieces(tok, texts, spans) == _whole(tok, texts, spans)


class _NoEncoding:
    """A backend that refuses to encode: a piece the layer did not take would fail the test."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def __getattr__(self, name: str) -> Any:
        if name.startswith("encode"):
            raise AssertionError(f"the piece went to tokenizers ({name})")
        return getattr(self._backend, name)


_ASCII_TEXTS = [
    "<|im_start|>user\nWhat's the time in Paris? It's 12:30, isn't it?<|im_end|>\n",
    "<|im_start|>assistant\nI'LL say 1234567 -- ok!!  \n\n  Done.\r\n\tTabs\t\tand  spaces   <|im_end|>",
    "  leading spaces, 'S 'T 'Re and    trailing   ",
]


@pytest.mark.parametrize("kind", USED)
def test_ascii_pieces_never_reach_tokenizers(kind: str) -> None:
    """The layer takes every ASCII piece (ids; and the token offsets where the configuration allows): if it
    silently fell back, the backend here would refuse."""
    tok = _tokenizer(kind)
    pieces = PieceEncoder(tok, generation_mask)
    assert pieces.pretokens is not None
    spans = [[(20, 40)], [(25, 60)], [(3, 8)]]
    expected = _whole(tok, _ASCII_TEXTS, spans)
    pieces._backend = _NoEncoding(tok)
    assert pieces.encode(_ASCII_TEXTS) == [(ids, None) for ids, _ in expected]
    if pieces.pretokens.offsets:
        assert pieces.encode(_ASCII_TEXTS, spans) == expected
    else:  # masks of pieces a span partly covers need tokenizers' offsets
        assert kind in ("gpt2-prefix", "gpt2-trim", "split-prefix")
        with pytest.raises(AssertionError, match="went to tokenizers"):
            pieces.encode(_ASCII_TEXTS, spans)


_fragment = st.one_of(
    st.sampled_from(
        [*ADDED, "weather", " ", "   ", "\n", "\n\n", "\r\n", "\t", "'s", "'S", "'t", "'ll", "'LL", "'re", "'ve", "'m"]
        + ["'d", "123", "4567", "1", "<s> ", "<|im_start|>assistant\n", "东京", "é"]
    ),
    st.text(
        alphabet=st.sampled_from(list("aZ sS'tl1234 \n\r\t.,!?-_()\"{}:;\x0b\x0c\x1c\x7f")), min_size=1, max_size=14
    ),
)
_span_list = st.lists(st.tuples(st.integers(0, 80), st.integers(0, 30)), max_size=4)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(st.lists(_fragment, max_size=14), _span_list), min_size=1, max_size=4),
    kind=st.sampled_from(USED + ["qwen2", "llama3"]),
)
def test_pretokens_give_the_ids_and_masks_of_the_whole_text(
    rows: list[tuple[list[str], list[tuple[int, int]]]], kind: str
) -> None:
    """ASCII text heavy in whitespace runs, apostrophes (upper case too), digit runs, newlines and punctuation,
    special tokens anywhere, a few non-ASCII pieces; any spans; the same rows twice so the second batch hits the
    memos."""
    tok = _tokenizer(kind)
    texts = ["".join(fragments) for fragments, _ in rows]
    spans = [[(start, start + width) for start, width in row_spans] for _, row_spans in rows]
    expected = _whole(tok, texts, spans)
    assert _pieces(tok, texts + texts, spans + spans) == expected + expected


@pytest.mark.parametrize("pattern", [GPT2, LLAMA3, QWEN2])
def test_regex_splits_every_ascii_pair_as_tokenizers_does(pattern: str) -> None:
    """Every string of two ASCII characters, of three over one character of each class the expressions tell
    apart, and of six over letter, digit, space, newline and apostrophe, splits the same with the ASCII expression
    turnkit runs with ``re``, and with the pattern itself run by ``regex``, as with tokenizers' Oniguruma."""
    import regex
    from tokenizers import Regex, pre_tokenizers

    theirs = pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False).pre_tokenize_str
    used = _pretokens._splitter(pattern)
    assert not isinstance(used, str) and used.__self__.__class__.__module__ == "re"  # type: ignore[attr-defined]
    ascii_ = [chr(c) for c in range(128)]
    classes = list("aAsStTdDlLrRvVmMe1 \t\n\r\x0b\x0c\x1c\x7f'.")
    texts = ["".join(p) for p in itertools.product(ascii_, repeat=2)]
    texts += ["".join(p) for p in itertools.product(classes, repeat=3)]
    texts += ["".join(p) for p in itertools.product("a1 \n'", repeat=6)]
    for ours in (used, regex.compile(pattern).findall):  # the ASCII expression for re, and the pattern itself
        differ = [text for text in texts if ours(text) != [word for word, _ in theirs(text)]]
        assert not differ, differ[:5]


_CONSTRUCTS = [
    *(rf"\{p}" for p in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ "),
    *(rf"\{e}+" for e in "sSdDwWrntfv"),
    r"\p{L}+|\P{L}+",
    r"\p{N}{1,3}|\P{N}",
    r"a++|\s*+|b?+",
    r"a??b|c{1,2}?|d*?e",
    r"(?i:ab|'s)",
    r"(?=a)\w|(?<!a)b|(?<=\s)\S|\s+(?!\S)",
    r"[^\s\p{L}\p{N}]+|[\r\n]+",
    r"[\--z]+|[^a-c]",
]


@pytest.mark.parametrize("pattern", _CONSTRUCTS)
def test_every_accepted_construct_splits_ascii_as_oniguruma(pattern: str) -> None:
    """Each construct the syntax check lets through, run as turnkit runs it, splits every ASCII character and
    every pair of the characters that tell the constructs apart as tokenizers does."""
    from tokenizers import Regex, pre_tokenizers

    theirs = pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False).pre_tokenize_str
    ours = _pretokens._splitter(pattern)
    assert not isinstance(ours, str), ours
    every = "".join(map(chr, range(128)))
    texts = [every, every[::-1], *("".join(p) for p in itertools.product("aAbcdez1 \t\n\r'sS-.\\", repeat=2))]
    for text in texts:
        words = ours(text)
        gaps = sum(map(len, words)) != len(text) or "" in words  # skipped or empty matches: turnkit falls back
        assert gaps or words == [word for word, _ in theirs(text)], text


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"\w+|.", "uses '.'"),
        (r"^\s+|\S+", "uses '^"),
        (r"(?m)\s+|\S+", "uses '(?m)"),
        (r"[a[b]]+|\s+", "nests"),
        (r"\h+|\S+", "uses '\\\\h"),
        (r"a{1,3}+|\s", "quantifier after a quantifier"),  # Oniguruma: (a{1,3})+; re and regex: possessive
        (r"[]a]|\s", "']' first"),
    ],
)
def test_expressions_the_engines_may_read_differently_are_refused(pattern: str, reason: str) -> None:
    tok = tokenizers.Tokenizer.from_str(_tokenizer("llama3").to_str())
    tok.pre_tokenizer = _split_then_bytes(pattern)
    assert reason in str(plan(tok))


def test_a_pre_tokenizer_splitting_differently_is_caught_by_the_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Were turnkit's expression not the one tokenizers runs, the probe of ASCII text would tell."""
    monkeypatch.setattr(_pretokens, "_GPT2", r"\S+|\s+")
    assert plan(_tokenizer("gpt2")) == "the tokenizer's pre-tokenizer splits ASCII text differently"


def test_unknown_tokens_give_ids_but_not_offsets() -> None:
    """A vocabulary without some bytes: the unknown token's value is not the text it covers, so offsets come from
    tokenizers (the ids still come from the memo)."""
    from tokenizers import models, pre_tokenizers

    vocab = {"<unk>": 0, "a": 1, "b": 2, "Ġ": 3, "Ġa": 4}
    tok = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=[("Ġ", "a")], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    encoder = PieceEncoder(tok, generation_mask).pretokens
    assert encoder is not None
    assert encoder.encode("ab a zz") == tok.encode("ab a zz").ids == [1, 2, 4, 3, 0, 0]
    assert encoder.locate("ab a zz") is None and encoder.locate("ab a") == ([1, 2, 4], [0, 1, 2], [1, 2, 4])
    texts, spans = ["ab a zz", "zab a"], [[(1, 5)], [(0, 2)]]
    assert _pieces(tok, texts, spans) == _whole(tok, texts, spans)


def test_the_memo_of_pre_tokens_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pretokens, "_MEMO_TOKENS", 64)
    tok = _tokenizer("llama3")
    found = plan(tok)
    assert not isinstance(found, str)
    encoder = PreTokenEncoder(tok, found, [])
    for n in range(300):
        text = f"word{n} and {n * 7919} more"
        assert encoder.encode(text) == tok.encode(text).ids
        assert encoder._memo.held <= 64 and sum(map(len, encoder._memo.entries.values())) == encoder._memo.held
