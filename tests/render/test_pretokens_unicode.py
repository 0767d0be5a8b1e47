"""Non-ASCII pieces split by ``regex``: exactly where it agrees with tokenizers' Oniguruma, else tokenizers.

The shipped table of disagreements (``_pretokens_unicode.json``) is regenerated and compared; every non-ASCII
character it lets through is split in company by both engines for GPT-2's, Llama 3's and Qwen2's expressions;
the normal forms are compared with tokenizers' normalisers; and ids and masks are compared with
``Tokenizer.encode`` on the whole text for every recognised configuration on mixed-script text.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.render.test_pieces import ADDED, _pieces, _whole
from tests.render.test_pretokens import GPT2, INTL, LLAMA3, QWEN2, USED, _NoEncoding, _tokenizer

tokenizers = pytest.importorskip("tokenizers")

from turnkit.render import _pretokens  # noqa: E402
from turnkit.render._pieces import PieceEncoder  # noqa: E402
from turnkit.render._pretokens import plan  # noqa: E402
from turnkit.render._tokenize import generation_mask  # noqa: E402


def test_the_shipped_table_is_what_the_installed_engines_give() -> None:
    """Regenerate with ``PYTHONPATH=src python -m turnkit.render._pretokens`` when tokenizers, regex or Python
    change (turnkit computes it at load time then, so this only keeps the shipped copy current)."""
    shipped = json.loads(_pretokens._AGREEMENT.read_text(encoding="utf-8"))
    assert shipped == json.loads(json.dumps(_pretokens.agreement()))


def test_the_table_is_read_for_its_versions_and_computed_for_others(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The shipped table serves the versions it was made with; other versions of tokenizers, regex or Python get
    one computed at load time (here a stand-in, :func:`agreement` itself being tested above), kept in the cache
    folder for the next process; a corrupt or other-version cache file is computed again."""
    shipped = json.loads(_pretokens._AGREEMENT.read_text(encoding="utf-8"))
    other = {**shipped["versions"], "tokenizers": "0.0.1"}
    calls: list[int] = []

    def computed() -> dict[str, Any]:
        calls.append(1)
        return {"versions": other, "computed": len(calls)}

    monkeypatch.setenv("TURNKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_pretokens, "agreement", computed)
    _pretokens._disagreement.cache_clear()
    try:
        assert _pretokens._disagreement() == shipped
        assert calls == [] and not (tmp_path / "cache").exists()
        _pretokens._disagreement.cache_clear()
        monkeypatch.setattr(_pretokens, "_versions", lambda: other)
        assert _pretokens._disagreement() == {"versions": other, "computed": 1}
        (kept,) = (tmp_path / "cache").iterdir()
        assert "0.0.1" in kept.name and json.loads(kept.read_text(encoding="utf-8"))["computed"] == 1
        _pretokens._disagreement.cache_clear()  # a new process: read from the cache, not computed
        assert _pretokens._disagreement()["computed"] == 1 and calls == [1]
        for corrupt in ('{"versions": {}, "computed": 9}', '{"versions": '):
            kept.write_text(corrupt, encoding="utf-8")
            _pretokens._disagreement.cache_clear()
            assert _pretokens._disagreement()["computed"] == len(calls)
        assert calls == [1, 1, 1]
        monkeypatch.setenv("TURNKIT_CACHE_DIR", str(kept / "not-a-folder"))  # unwritable: computed, no error
        _pretokens._disagreement.cache_clear()
        assert _pretokens._disagreement()["computed"] == 4
    finally:
        _pretokens._disagreement.cache_clear()


def test_the_table_holds_the_known_differences() -> None:
    """Letters newer than Oniguruma's Unicode, the characters folding to ASCII letters, surrogates: outside."""
    data = _pretokens._disagreement()
    letters = {c for first, last in data["classes"][r"\p{L}"] for c in range(first, last + 1)}
    folds = {c for first, last in data["folds"] for c in range(first, last + 1)}
    assert 0x0C5C in letters and 0xA7CE in letters  # Telugu and Latin letters of Unicode 16 (regex has them)
    assert {0x017F, 0x212A, 0x0130, 0x00DF, 0xFB01} <= folds  # long s, Kelvin, dotted I, sharp s, fi ligature
    assert not data["classes"][r"\s"]  # the Unicode spaces are the same in both
    outside = _pretokens._outside(frozenset({r"\p{L}", r"\p{N}", r"\s"}), True, True)
    assert outside("a\u017fb") and outside("\ud800") and outside("\u0c5c") and not outside(" ".join(INTL[:3]))
    assert not _pretokens._outside(frozenset({r"\p{L}"}), False, False)("Straße")  # no case-insensitive group


def _agreed(pattern: str, forms: bool = False) -> tuple[Any, list[str]]:
    wide = _pretokens._wide(pattern, forms)
    assert wide is not None
    split, outside = wide
    chars = [chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF and not outside(chr(c))]
    return split, chars


@pytest.mark.parametrize("pattern", [GPT2, LLAMA3, QWEN2])
def test_every_agreed_character_splits_as_tokenizers_does_in_company(pattern: str) -> None:
    """Every assigned non-ASCII character the table lets through (and every 61st unassigned or private one) next
    to letters, digits, apostrophes (``'s``, ``'S``), spaces, newlines and itself, in long texts: ``regex`` and
    Oniguruma give the same pre-tokens."""
    from tokenizers import Regex, pre_tokenizers

    split, chars = _agreed(pattern)
    theirs = pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False).pre_tokenize_str
    rare = [c for c in chars if unicodedata.category(c) in ("Cn", "Co")]
    chosen = [c for c in chars if unicodedata.category(c) not in ("Cn", "Co")] + rare[::61]
    assert len(chosen) > 140_000
    for at in range(0, len(chosen), 20_000):
        text = "".join(_pretokens._CONTEXT.format(c=c) for c in chosen[at : at + 20_000])
        assert split(text) == [word for word, _ in theirs(text)]


def test_re_splits_text_of_the_basic_plane_and_regex_the_rest() -> None:
    """``re`` with the classes spelt out for characters up to U+FFFF (the test above covers both halves: its texts
    run through the code points in order); ``regex`` alone when a class sits in a case-insensitive group."""
    split = _pretokens._wide(LLAMA3, False)
    assert split is not None and split[0].__qualname__ == "_either.<locals>.split"
    assert split[0]("東京 Ⅻ 😀😀 and") == ["東京", " ", "Ⅻ", " 😀😀", " and"]
    folded = _pretokens._wide(r"(?i:\p{L}+)|\s", False)
    assert folded is not None and type(folded[0].__self__).__module__ == "_regex"  # type: ignore[attr-defined]


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_normal_forms_agree_on_the_agreed_characters(form: str) -> None:
    """Python's normal forms equal tokenizers' on every agreed assigned character, alone and after a letter and a
    combining mark (where composition and reordering happen), so a piece ``unicodedata`` finds normalised is one
    tokenizers' normaliser leaves alone."""
    from tokenizers import normalizers

    normalizer = getattr(normalizers, form)()
    _, chars = _agreed(LLAMA3, forms=True)
    chars = [c for c in chars if unicodedata.category(c) not in ("Cn", "Co")]
    for at in range(0, len(chars), 20_000):
        for text in (
            "|".join(chars[at : at + 20_000]),
            "".join(f"|a\u0301{c}e{c}\u0327" for c in chars[at : at + 20_000]),
        ):
            assert normalizer.normalize_str(text) == unicodedata.normalize(form, text)


def test_non_ascii_pieces_in_the_agreed_set_never_reach_tokenizers() -> None:
    """Every recognised configuration takes the non-ASCII pieces (ids, and offsets where it gives them): a silent
    fall-back would reach the refusing backend."""
    texts = [f"<|im_start|>user\n{line}<|im_end|>\n<|im_start|>assistant\n{line[::-1]}<|im_end|>" for line in INTL]
    for folded, plain in {"ſ": "s", "\u212a": "K", "ß": "ss", "ﬁ": "fi", "İ": "I", "ı": "i"}.items():
        texts = [text.replace(folded, plain) for text in texts]  # Llama 3's case-insensitive group: outside
    texts = [unicodedata.normalize("NFC", text) for text in texts]  # Qwen2's normaliser would change the rest
    spans = [[(30, 70), (len(text) - 40, len(text) - 3)] for text in texts]
    for kind in USED:
        tok = _tokenizer(kind)
        pieces = PieceEncoder(tok, generation_mask)
        assert pieces.pretokens is not None
        expected = _whole(tok, texts, spans)
        pieces._backend = _NoEncoding(tok)
        assert pieces.encode(texts) == [(ids, None) for ids, _ in expected], kind
        if pieces.pretokens.offsets:
            assert pieces.encode(texts, spans) == expected, kind


@pytest.mark.parametrize(
    ("kind", "piece"),
    [
        ("llama3", "it'ſ"),  # long s: Oniguruma's case-insensitive 's matches it
        ("llama3", "\u212a m"),  # the Kelvin sign folds to k
        ("gpt2-trim", "a\u0c5cb"),  # a Telugu letter of Unicode 16: regex knows it, Oniguruma here not
        ("qwen2", "cafe\u0301"),  # not NFC: the normaliser composes it
        ("llama3", "a\ud800b"),  # a surrogate: tokenizers refuses it
    ],
)
def test_pieces_with_a_character_outside_go_to_tokenizers(kind: str, piece: str) -> None:
    tok = _tokenizer(kind)
    encoder = PieceEncoder(tok, generation_mask).pretokens
    assert encoder is not None and encoder.encode(piece) is None and encoder.encode("café") is not None
    if "\ud800" not in piece:
        texts, spans = [f"<|im_start|>{piece} {piece}<|im_end|>"], [[(14, 17)]]
        assert _pieces(tok, texts, spans) == _whole(tok, texts, spans)


def test_a_split_the_table_does_not_vouch_for_keeps_to_ascii(monkeypatch: pytest.MonkeyPatch) -> None:
    """Were the non-ASCII split not tokenizers' (here: a table that lets every character through, U+0C5C among
    them, a letter only for ``regex``), the load-time probe would catch it and only ASCII pieces would be split
    here."""
    found = plan(_tokenizer("llama3"))
    assert not isinstance(found, str) and found.wide is not None
    monkeypatch.setattr(_pretokens, "_outside", lambda classes, folds, forms: lambda text: None)
    found = plan(_tokenizer("llama3"))
    assert not isinstance(found, str) and found.wide is None


_SCRIPTS = st.sampled_from(
    [
        *"éèçñüößØÆœ",
        *"αβγΩλ",
        *"жЖщЁї",
        *"東京日本語中文한국",
        *"٣١٢۷१２",
        *"Ⅻⅷ½²①",
        "\u0301",
        "\u0308",
        "\u200d",
        "\U0001f3fd",
        *"😀👩💻🇫🇷✔",
        "\ufe0f",
        *"“”‘’«»—…€",
        "\xa0",
        "\u2009",
        "\u3000",
        "\u2028",
        "\u2029",
        "\x85",
        "\u0c5c",
        "ſ",
        "\u212a",
    ]
)
_fragment = st.one_of(
    st.sampled_from([*ADDED, " ", "  ", "\n", "\r\n", "'s", "'S", "'ll", "123", "Café", "naïve", "ſt"] + INTL),
    st.text(alphabet=st.one_of(_SCRIPTS, st.sampled_from(list("aZ s'l1 \n\t.,-"))), min_size=1, max_size=12),
)


@settings(max_examples=250, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.lists(_fragment, max_size=12), st.lists(st.tuples(st.integers(0, 90), st.integers(0, 30)), max_size=4)
        ),
        min_size=1,
        max_size=4,
    ),
    kind=st.sampled_from(USED),
)
def test_mixed_scripts_give_the_ids_and_masks_of_the_whole_text(
    rows: list[tuple[list[str], list[tuple[int, int]]]], kind: str
) -> None:
    """Mixed-script text (Latin-1, Greek, Cyrillic, CJK, Arabic and Devanagari digits, emoji with ZWJ, skin
    tones and flags, combining marks, curly quotes, non-ASCII spaces, characters outside the table) with special
    tokens anywhere and any spans, twice so the second batch hits the memos: the ids and masks of
    ``Tokenizer.encode`` on the whole text. Spans cut tokens that cover part of a multi-byte character."""
    tok = _tokenizer(kind)
    texts = ["".join(fragments) for fragments, _ in rows]
    spans = [[(start, start + width) for start, width in row_spans] for _, row_spans in rows]
    expected = _whole(tok, texts, spans)
    assert _pieces(tok, texts + texts, spans + spans) == expected + expected
