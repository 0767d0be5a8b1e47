"""Encoding a piece from its pre-tokens: a memo of pre-token -> ids under :class:`~turnkit.render._pieces.PieceEncoder`.

A byte-level BPE tokenizer splits a piece into pre-tokens with a regular expression, maps their bytes to
characters and runs BPE on each pre-token on its own: the ids of a piece are the ids of its pre-tokens joined.
So where turnkit splits a piece exactly as ``tokenizers`` does, a memo of each distinct pre-token's ids (what
tiktoken does) gives the ids ``Tokenizer.encode`` gives, and new pre-tokens go through the tokenizer's own model
(``Model.tokenize``: merges, ``ignore_merges``, unknown tokens as ``tokenizers`` has them).

Exact by construction only for what :func:`plan` recognises: a BPE model without dropout, byte fallback or subword
affixes; no normaliser, or Unicode normal forms (the identity on ASCII); and as pre-tokenizer either
``ByteLevel(use_regex=True)`` (GPT-2's expression) or ``Sequence[Split(Regex(p), "isolated"),
ByteLevel(use_regex=False)]`` (Llama 3, Qwen2: ``p`` read from the tokenizer itself), ``add_prefix_space`` either
way. ``tokenizers`` runs the expression with Oniguruma, turnkit an ASCII form of it with ``re`` (``\\p{L}`` is
``[A-Za-z]``, ...; ``regex`` runs properties without one). They agree on ASCII text for the expressions tokenizers
are built with (tested on every pair of ASCII characters for GPT-2's, Llama 3's and Qwen2's, and on each accepted
construct), so only pieces made of ASCII characters are split here, only expressions built of constructs both
engines read alike are accepted (:data:`_SYNTAX`), and :func:`plan` checks the tokenizer's own pre-tokenizer
against this split on a probe of every ASCII character in varied company. Anything else -- a non-ASCII piece, one
holding a normalised added token, a split that skips characters -- returns ``None``: the caller encodes the piece
with ``tokenizers``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from itertools import accumulate, chain
from typing import Any

__all__ = ["PreTokenEncoder", "TokenMemo", "component_config", "plan"]

_MEMO_TOKENS = 1 << 18
"""Token ids the memo of pre-tokens holds at most before it starts over: memory stays flat on any input."""

_GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
"""The expression of ``ByteLevel(use_regex=True)`` (tokenizers' ``pre_tokenizers/byte_level.rs``)."""

_SAME_ON_ASCII = frozenset({"NFC", "NFD", "NFKC", "NFKD"})
"""Normalisers that leave ASCII text as it is (and so its offsets)."""

_OFFSET_KEEPERS = {"TemplateProcessing": None, "BertProcessing": None, "ByteLevel": False, "RobertaProcessing": False}
"""Post-processors that leave token offsets alone without special tokens: always (``None``), or when their
``trim_offsets`` is the value given."""

_SYNTAX = re.compile(
    r"""
    \\[pP]\{[A-Za-z_]+\}          # a Unicode property
    | \\[sSdDwWrntfv]             # a class escape or a control character
    | \\[^A-Za-z0-9]              # an escaped punctuation character
    | \(\?(?:i:|:|!|=|<!|<=)      # a group: plain, case-insensitive, lookaround
    | \((?!\?) | [)|]
    | [?*+][?+]? | \{\d+(?:,\d*)?\}\??     # quantifiers (lazy; possessive but for {n,m}+: a repeat in Oniguruma)
    | \[\^? | \]                  # a character class (no nesting, no set operations: checked below)
    | -
    | [^\\()\[\]{}|?*+.^$&]       # a literal character
    """,
    re.VERBOSE,
)
"""The constructs an accepted split expression may use: both engines read them alike on ASCII text (no ``.``,
anchors, inline flags other than ``(?i:``, nested classes or class set operations, or a quantifier after a
quantifier, whose meaning differs)."""

_QUANTIFIER = re.compile(r"[?*+{]")
_ONE_CHARACTER = re.compile(r"[^\\\[\]\-]|\\[^A-Za-z0-9]|\\[rntfv]")

_PROBES = [f"a{c}b {c}1{c}23 {c}{c}  '{c}s'{c}S\n{c}\r\n {c}\t" for c in map(chr, range(128))]
"""Every ASCII character among letters, digits, apostrophes and whitespace runs: :func:`plan` checks that the
tokenizer's own pre-tokenizer splits these as turnkit does (one at a time: tokenizers takes superlinear time
on long texts here)."""


def _bytes_to_unicode() -> dict[int, str]:
    """ByteLevel's map of the ASCII bytes to characters (GPT-2's ``bytes_to_unicode``, its first 128 entries)."""
    printable = [*range(ord("!"), ord("~") + 1)]
    shifted = [b for b in range(128) if b not in printable]
    table = {b: chr(b) for b in printable}
    table.update({b: chr(256 + n) for n, b in enumerate(shifted)})
    return table


_BYTE_LEVEL = _bytes_to_unicode()


def component_config(component: Any) -> Any:
    """A tokenizer component's own JSON (a normaliser, pre-tokenizer or post-processor; not the whole tokenizer's:
    its vocabulary can be megabytes, and every worker process asks once)."""
    return json.loads(component.__getstate__()) if component is not None else None


class TokenMemo:
    """Ids by text (``entries``), holding at most ``limit`` token ids (past that it starts over): memory stays flat
    on any input."""

    __slots__ = ("entries", "limit", "held")

    def __init__(self, limit: int) -> None:
        self.entries: dict[str, list[int]] = {}
        self.limit = limit
        self.held = 0

    def remember(self, text: str, ids: list[int]) -> None:
        if self.held + len(ids) > self.limit:
            self.entries.clear()
            self.held = 0
        self.entries[text] = ids
        self.held += len(ids)


def _members(node: Any, key: str) -> list[Any]:
    return list(node.get(key) or ()) if isinstance(node, dict) and node.get("type") == "Sequence" else [node]


def _scan(pattern: str) -> list[tuple[str, bool]] | str:
    """The constructs of ``pattern``, each with whether it sits in a character class; or why ``pattern`` might
    mean something else to ``regex`` than to Oniguruma."""
    at, inside = 0, False
    out: list[tuple[str, bool]] = []
    while at < len(pattern):
        match = _SYNTAX.match(pattern, at)
        if match is None:
            return f"the split expression uses {pattern[at : at + 8]!r}"
        token = match.group()
        if out and not inside and _QUANTIFIER.match(token) and _QUANTIFIER.match(out[-1][0]):
            return f"the split expression has a quantifier after a quantifier at {at}"
        if token in ("[", "[^"):
            if inside:
                return "the split expression nests character classes"
            inside = True
        elif token == "]":
            if out[-1][0] in ("[", "[^"):
                return "the split expression has an empty class or a ']' first in one"
            inside = False
        elif token == "-" and inside:
            after = _SYNTAX.match(pattern, match.end())
            if not (_ONE_CHARACTER.fullmatch(out[-1][0]) and after and _ONE_CHARACTER.fullmatch(after.group())):
                return "the split expression has a '-' in a class that is not a range of two characters"
        out.append((token, inside and token[0] != "["))
        at = match.end()
    return out


_ASCII_SETS = {r"\p{L}": "A-Za-z", r"\p{N}": "0-9", r"\s": r"\t-\r ", r"\d": "0-9", r"\w": "A-Za-z0-9_"}
"""The ASCII characters of each class, as Unicode (and Oniguruma) define them: ``re``, faster than ``regex``, then
splits ASCII text the same (tested on every pair of ASCII characters)."""
_ASCII_COMPLEMENTS = {r"\P{L}": r"\p{L}", r"\P{N}": r"\p{N}", r"\S": r"\s", r"\D": r"\d", r"\W": r"\w"}


def _ascii_expression(tokens: list[tuple[str, bool]]) -> str | None:
    """The expression for ``re`` that splits ASCII text as ``tokens`` do (``None``: a class it does not know)."""
    out = []
    for token, inside in tokens:
        if token in _ASCII_SETS:
            out.append(_ASCII_SETS[token] if inside else f"[{_ASCII_SETS[token]}]")
        elif token in _ASCII_COMPLEMENTS and not inside:
            out.append(f"[^{_ASCII_SETS[_ASCII_COMPLEMENTS[token]]}]")
        elif token[:2] in (r"\p", r"\P") or token in _ASCII_COMPLEMENTS:
            return None
        else:
            out.append(token)
    return "".join(out)


def _splitter(expression: str) -> Callable[[str], list[str]] | str:
    """``findall`` of ``expression`` on ASCII text (``re`` where it can, else ``regex``), or why not."""
    tokens = _scan(expression)
    if isinstance(tokens, str):
        return tokens
    ascii_expression = _ascii_expression(tokens)
    if ascii_expression is not None:
        try:
            return re.compile(ascii_expression).findall
        except re.error:
            pass  # e.g. a look-behind of varying width: regex takes it
    import regex  # only for Unicode properties with no ASCII form here (``import turnkit`` stays without it)

    try:
        return regex.compile(expression).findall
    except regex.error as exc:
        return f"the split expression does not compile with regex: {exc}"


def plan(backend: Any) -> tuple[Callable[[str], list[str]], str | None] | str:
    """``(split, prefix)`` when pieces of ``backend``'s text can be encoded from pre-tokens (``prefix``:
    ``"piece"`` or ``"word"``, where ``add_prefix_space`` puts a space, or ``None``), else why not."""
    model = backend.model
    if type(model).__name__ != "BPE":
        return "the model is not BPE"
    if model.dropout or model.byte_fallback:
        return "BPE dropout or byte fallback"
    if model.continuing_subword_prefix or model.end_of_word_suffix:
        return "BPE subword prefixes or suffixes"
    for node in _members(component_config(backend.normalizer), "normalizers"):
        if node is not None and node.get("type") not in _SAME_ON_ASCII:
            return f"the normaliser {node.get('type')} may change ASCII text"
    steps = _members(component_config(backend.pre_tokenizer), "pretokenizers")
    last = steps[-1] if steps else None
    if not isinstance(last, dict) or last.get("type") != "ByteLevel":
        return "the pre-tokenizer does not end with ByteLevel"
    prefix = "piece" if last.get("add_prefix_space") else None
    if len(steps) == 1 and last.get("use_regex", True):
        expression = _GPT2
    elif len(steps) == 2 and not last.get("use_regex", True):
        split = steps[0]
        pattern = split.get("pattern") if isinstance(split, dict) else None
        if split.get("type") != "Split" or split.get("behavior") != "Isolated" or split.get("invert"):
            return "the pre-tokenizer is not Split(Regex, isolated) then ByteLevel"
        if not isinstance(pattern, dict) or not isinstance(pattern.get("Regex"), str):
            return "the split is not by a regular expression"
        expression = pattern["Regex"]
        prefix = "word" if prefix else None
    else:
        return "an unrecognised pre-tokenizer sequence"
    split_here = _splitter(expression)
    if isinstance(split_here, str):
        return split_here
    for probe in _PROBES:
        theirs = [word for word, _ in backend.pre_tokenizer.pre_tokenize_str(probe)]
        ours = [word.translate(_BYTE_LEVEL) for word in split_here(" " + probe if prefix == "piece" else probe)]
        if prefix == "word":
            ours = [word if word.startswith("Ġ") else "Ġ" + word for word in ours]
        if ours != theirs:
            return "the tokenizer's pre-tokenizer splits ASCII text differently"
    return split_here, prefix


class PreTokenEncoder:
    """Ids of ASCII pieces from a bounded memo of pre-token -> ids (see the module's docstring for when).

    ``offsets``: whether :meth:`locate` can give token offsets (no prefix space moved into the first token, and a
    post-processor that keeps offsets as the pre-tokenizer made them).
    """

    def __init__(self, backend: Any, split: Callable[[str], list[str]], prefix: str | None, stops: list[str]) -> None:
        self._split = split
        self._prefix = prefix
        self._stops = re.compile("|".join(map(re.escape, stops))).search if stops else None
        self._tokenize = backend.model.tokenize
        unknown = backend.model.unk_token
        self._unknown = backend.model.token_to_id(unknown) if unknown else None
        processors = _members(component_config(backend.post_processor), "processors")
        processors = [node for node in processors if node is not None]
        self.offsets = prefix is None and all(
            node.get("type") in _OFFSET_KEEPERS
            and _OFFSET_KEEPERS[node["type"]] in (None, bool(node.get("trim_offsets", True)))
            for node in processors
        )
        self._memo = TokenMemo(_MEMO_TOKENS)
        self._width: dict[int, int] = {}  # characters of ASCII text a token id covers

    def _words(self, piece: str) -> list[str] | None:
        if not piece.isascii() or (self._stops is not None and self._stops(piece)):
            return None  # a normalised added token inside: tokenizers matches it within the piece
        if self._prefix == "piece" and not piece.startswith(" "):
            piece = " " + piece
        words = self._split(piece)
        if sum(map(len, words)) != len(piece) or "" in words:
            return None  # the expression skips characters, or matches empty text: not the split made here
        return words

    def _new(self, word: str) -> list[int]:
        text = word.translate(_BYTE_LEVEL)
        if self._prefix == "word" and not word.startswith(" "):
            text = "Ġ" + text
        tokens = self._tokenize(text)
        ids = [token.id for token in tokens]
        for token in tokens:
            self._width[token.id] = len(token.value)
        self._memo.remember(word, ids)
        return ids

    def encode(self, piece: str) -> list[int] | None:
        """The ids ``tokenizers`` gives ``piece`` (no added tokens in it), or ``None``: encode it there."""
        words = self._words(piece)
        if words is None:
            return None
        memo = self._memo.entries
        found = list(map(memo.get, words))
        if None in found:
            found = [memo.get(word) or self._new(word) for word in words]
        return list(chain.from_iterable(found))  # type: ignore[arg-type]  # no None left

    def locate(self, piece: str) -> tuple[list[int], list[int]] | None:
        """The ids and each token's end (a character offset in ``piece``; it starts where the one before ends),
        or ``None``: encode it with ``tokenizers`` for the offsets."""
        if not self.offsets:
            return None
        ids = self.encode(piece)
        if ids is None or (self._unknown is not None and self._unknown in ids):
            return None  # an unknown token's value is not the text it covers
        ends = list(accumulate(map(self._width.__getitem__, ids)))
        return (ids, ends) if ends and ends[-1] == len(piece) else None
