"""Encoding a piece from its pre-tokens: a memo of pre-token -> ids under :class:`~turnkit.render._pieces.PieceEncoder`.

A byte-level BPE tokenizer splits a piece into pre-tokens with a regular expression, maps their bytes to
characters and runs BPE on each pre-token on its own: the ids of a piece are the ids of its pre-tokens joined.
So where turnkit splits a piece exactly as ``tokenizers`` does, a memo of each distinct pre-token's ids (what
tiktoken does) gives the ids ``Tokenizer.encode`` gives, and new pre-tokens go through the tokenizer's own model
(``Model.tokenize``: merges, ``ignore_merges``, unknown tokens as ``tokenizers`` has them).

Exact by construction only for what :func:`plan` recognises: a BPE model without dropout, byte fallback or subword
affixes; no normaliser, or Unicode normal forms; and as pre-tokenizer either ``ByteLevel(use_regex=True)``
(GPT-2's expression) or ``Sequence[Split(Regex(p), "isolated"), ByteLevel(use_regex=False)]`` (Llama 3, Qwen2:
``p`` read from the tokenizer itself), ``add_prefix_space`` either way. ``tokenizers`` runs the expression with
Oniguruma. Only expressions built of constructs both engines read alike are accepted (:data:`_SYNTAX`), and
:func:`plan` checks the tokenizer's own pre-tokenizer against this split on probes in varied company.

- ASCII pieces: an ASCII form of the expression with ``re`` (``\\p{L}`` is ``[A-Za-z]``, ...; ``regex`` runs
  properties without one); they agree on every pair of ASCII characters for GPT-2's, Llama 3's and Qwen2's
  expressions and on each accepted construct (tested), and normal forms leave ASCII alone.
- Other pieces: the expression itself with ``regex`` (or, for text of the Basic Multilingual Plane, with ``re``
  and the classes spelt out as ``regex`` has them), when every character is one on which the two engines agree.
  Given the same constructs, what a character does to a match is its membership of the expression's classes
  (``\\p{L}``, ``\\p{N}``, ``\\s``...) and, in a case-insensitive group, its case folds; Unicode versions
  differ between ``regex``, Oniguruma and ``unicodedata``, so :func:`agreement` lists the characters where any of
  that differs (from both engines, over every code point; shipped as ``_pretokens_unicode.json``, made again at
  load time for other versions and kept in a per-user cache), and a piece holding one goes to tokenizers. With a
  normaliser, a piece must be in its normal form per ``unicodedata`` and free of the characters tokenizers' older
  normalisation tables treat otherwise. Byte-level tokens may cover part of a character;
  :meth:`PreTokenEncoder.locate` gives the character offsets tokenizers gives them.

Anything else -- a piece holding a normalised added token, a split that skips characters -- returns ``None``:
the caller encodes the piece with ``tokenizers``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import unicodedata
from collections.abc import Callable, Iterable
from itertools import accumulate, chain
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["Plan", "PreTokenEncoder", "TokenMemo", "agreement", "component_config", "plan"]

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

_CONTEXT = "a{c}b {c}1{c}23 {c}{c}  '{c}s'{c}S\n{c}\r\n {c}\t"
_PROBES = [_CONTEXT.format(c=c) for c in map(chr, range(128))]
"""Every ASCII character among letters, digits, apostrophes and whitespace runs: :func:`plan` checks that the
tokenizer's own pre-tokenizer splits these as turnkit does (one at a time: tokenizers takes superlinear time
on long texts here)."""
_WIDE_PROBES = [_CONTEXT.format(c=c) for c in "éßЖλ東한٣Ⅻ\xa0\u3000\u2028\x85’“😀👩🏽\u200d💻\u0301ſ\u212a\u0c5c"]
"""Non-ASCII letters, digits, spaces, marks, punctuation and symbols in the same company (those holding a
character :func:`_outside` finds are skipped: U+0C5C, a letter for ``regex`` only, always is): a check at load time
that the split of non-ASCII pieces is the one :func:`agreement` vouches for."""


def _bytes_to_unicode() -> dict[int, str]:
    """ByteLevel's map of bytes to characters (GPT-2's ``bytes_to_unicode``), as a ``str.translate`` table of the
    code points 0-255: a UTF-8 text read as Latin-1 has one such character per byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    shifted = [b for b in range(256) if b not in printable]
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


_AGREEMENT = Path(__file__).with_name("_pretokens_unicode.json")
"""Where ``regex`` and tokenizers' Oniguruma read a non-ASCII character differently, for the versions installed
when it was made (:func:`agreement`; ``python -m turnkit.render._pretokens`` writes it again)."""

_PROPERTIES = {**{name: name for name in _ASCII_SETS}, **_ASCII_COMPLEMENTS}
"""The classes whose non-ASCII members :func:`agreement` compares, by the class (or complement) an expression
names: an expression with any other class splits only ASCII pieces."""

_UNASSIGNED = r"\p{Cn}"
_FOLDS = r"(?i:[\x00-\x7f])"
_SURROGATES = [0xD800, 0xDFFF]
"""Not text tokenizers takes (``encode`` refuses them): always outside."""


def _versions() -> dict[str, str]:
    import regex
    import tokenizers

    return {
        "tokenizers": tokenizers.__version__,
        "regex": regex.__version__,
        "unicodedata": unicodedata.unidata_version,
    }


def _ranges(points: Iterable[int]) -> list[list[int]]:
    """Sorted ``[first, last]`` runs of ``points``."""
    out: list[list[int]] = []
    for point in sorted(points):
        if out and out[-1][1] == point - 1:
            out[-1][1] = point
        else:
            out.append([point, point])
    return out


def agreement() -> dict[str, Any]:
    """The non-ASCII characters on which ``regex`` and tokenizers could split or normalise text differently,
    computed from both over every code point: per class of :data:`_PROPERTIES`, those one engine (``regex``,
    tokenizers' Oniguruma) counts in it and the other not; ``folds``, those either engine or ``str.casefold``
    relates to an ASCII character in a case-insensitive match (the Kelvin sign, long s, dotted capital I, ß for
    "ss"...); ``forms``, those whose normal forms differ between tokenizers and ``unicodedata``
    (:func:`_normal_forms`) or that one of Oniguruma, ``regex`` and ``unicodedata`` knows and another does not.
    The Unicode versions of the three differ; everywhere else a class holds the same characters, so the engines
    read text alike."""
    import regex
    from tokenizers import Regex, pre_tokenizers

    points = [c for c in range(0x80, 0x110000) if not _SURROGATES[0] <= c <= _SURROGATES[1]]
    text = "".join(map(chr, points))

    def members(expression: str) -> tuple[set[int], set[int]]:
        outside = bytearray(len(text))
        for _, (start, end) in pre_tokenizers.Split(Regex(expression), "removed").pre_tokenize_str(text):
            outside[start:end] = b"\x01" * (end - start)
        theirs = {c for c, out in zip(points, outside, strict=True) if not out}
        return theirs, {ord(m) for m in regex.findall(expression, text)}

    classes = {}
    for name in dict.fromkeys(_PROPERTIES.values()):
        theirs, ours = members(name)
        classes[name] = _ranges(theirs ^ ours)
    theirs, ours = members(_FOLDS)
    cased = {c for c in points if any(map(str.isascii, chr(c).casefold() + chr(c).lower() + chr(c).upper()))}
    folds = theirs | ours | cased
    theirs, ours = members(_UNASSIGNED)
    python = {c for c in points if unicodedata.category(chr(c)) == "Cn"}
    forms = _normal_forms([c for c in points if c not in python])
    forms |= (theirs | ours | python) - (theirs & ours & python)
    return {"versions": _versions(), "classes": classes, "folds": _ranges(folds), "forms": _ranges(forms)}


def _normal_forms(points: list[int]) -> set[int]:
    """The characters of ``points`` (those ``unicodedata`` knows) whose normal forms differ between tokenizers
    (its normalisation tables are older than Python's) and ``unicodedata``: alone, after a letter, among combining
    marks of classes 1, 202 and 230 (where a mark's class decides the order), and as a pair that composes."""
    from tokenizers import normalizers

    lines: list[str] = []
    blamed: list[tuple[int, ...]] = []
    for c in points:
        char = chr(c)
        for line in (char, f"a{char}\u0334", f"a\u0301{char}", f"e{char}\u0327"):
            lines.append(line)
            blamed.append((c,))
        parts = unicodedata.decomposition(char).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            lines.append("".join(chr(int(part, 16)) for part in parts))
            blamed.append((c, *(int(part, 16) for part in parts)))
    text = "\n".join(lines)
    out: set[int] = set()
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        theirs = getattr(normalizers, form)().normalize_str(text).split("\n")
        ours = unicodedata.normalize(form, text).split("\n")
        out.update(*(who for who, a, b in zip(blamed, theirs, ours, strict=True) if a != b))
    return out


def _ascii_expression(tokens: list[tuple[str, bool]], sets: dict[str, str] = _ASCII_SETS) -> str | None:
    """The expression for ``re`` that splits ASCII text as ``tokens`` do, or with other ``sets`` the text of their
    characters (``None``: a class it does not know)."""
    out = []
    for token, inside in tokens:
        if token in sets:
            out.append(sets[token] if inside else f"[{sets[token]}]")
        elif token in _ASCII_COMPLEMENTS and not inside:
            out.append(f"[^{sets[_ASCII_COMPLEMENTS[token]]}]")
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


def _cached_table() -> Path:
    """Where a table computed for other versions is kept between processes: ``$TURNKIT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/turnkit``, else ``~/.cache/turnkit``; named by the versions it holds."""
    root = os.environ.get("TURNKIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "turnkit"
    )
    versions = _versions()
    return Path(root) / ("pretokens-unicode-" + "-".join(versions[name] for name in sorted(versions)) + ".json")


def _read_table(path: Path, versions: dict[str, str]) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("versions") == versions else None


@functools.cache
def _disagreement() -> dict[str, Any]:
    """:func:`agreement` as shipped when it was made with the installed versions, else as an earlier process
    computed it (:func:`_cached_table`), else computed here (about seven CPU seconds: only after an upgrade of
    tokenizers, regex or Python) and kept there; an unwritable cache only costs the next process the same."""
    versions = _versions()
    data = _read_table(_AGREEMENT, versions)
    if data is None:
        cached = _cached_table()
        data = _read_table(cached, versions)
        if data is None:
            data = agreement()
            try:
                cached.parent.mkdir(parents=True, exist_ok=True)
                _write_table(cached, data)
            except OSError:
                pass
    return data


def _write_table(path: Path, data: dict[str, Any]) -> None:
    """Write a table of :func:`agreement` whole (a temporary file, then a rename): a reader never sees half."""
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    part.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    os.replace(part, path)


@functools.cache
def _outside(classes: frozenset[str], folds: bool, forms: bool) -> Callable[[str], object]:
    """``search`` for a character on which the engines may differ for an expression using ``classes`` (and a
    case-insensitive group: ``folds``; a normaliser: ``forms``), or a surrogate: a piece holding one goes to
    tokenizers. A class of the other characters, negated: ``re`` finds a character of the Basic Multilingual Plane
    in it at once (a bitmap), where a class of the few outside ones would be a list of ranges tried in turn."""
    data = _disagreement()
    ranges = [_SURROGATES, *(data["folds"] if folds else ()), *(data["forms"] if forms else ())]
    for name in classes:
        ranges += data["classes"][name]
    body, at = ["\\x00-\\x7f"], 0x80
    for first, last in sorted(ranges):
        if first > at:
            body.append(f"{re.escape(chr(at))}-{re.escape(chr(first - 1))}")
        at = max(at, last + 1)
    if at <= 0x10FFFF:
        body.append(f"{re.escape(chr(at))}-\\U0010ffff")
    return re.compile(f"[^{''.join(body)}]").search


class Plan(NamedTuple):
    """How :class:`PreTokenEncoder` splits pieces: ``split`` for ASCII ones; ``wide`` for the others whose
    characters ``outside`` does not find and that the normal forms ``forms`` leave as they are (``None``: they go
    to tokenizers); ``prefix``: ``"piece"`` or ``"word"``, where ``add_prefix_space`` puts a space, or ``None``."""

    split: Callable[[str], list[str]]
    prefix: str | None
    wide: Callable[[str], list[str]] | None = None
    outside: Callable[[str], object] | None = None
    forms: tuple[Any, ...] = ()


@functools.cache
def _bmp_sets() -> dict[str, str]:
    """Each class of :data:`_ASCII_SETS` on the Basic Multilingual Plane as ``regex`` has it, spelt out as ranges
    for ``re`` (which has no ``\\p{L}``): ``re`` looks them up in a bitmap and splits such text about twice as
    fast as ``regex``, the same way (same constructs, same members). Not beyond the plane: ``re`` would try the
    ranges there one by one for every character."""
    import regex

    text = "".join(map(chr, range(0x10000)))
    return {
        name: "".join(
            f"{re.escape(chr(m.start()))}-{re.escape(chr(m.end() - 1))}" for m in regex.finditer(f"{name}+", text)
        )
        for name in _ASCII_SETS
    }


def _folded_classes(tokens: list[tuple[str, bool]]) -> bool:
    """Whether a class sits in a case-insensitive group, where ``re`` and ``regex`` might fold a character into or
    out of it differently (U+0345, a mark, upper-cases to a letter)."""
    groups: list[bool] = []  # per open group: case-insensitive
    for token, inside in tokens:
        if token[0] == "(" and not inside:
            groups.append(token == "(?i:" or any(groups))
        elif token == ")" and not inside and groups:
            groups.pop()
        elif any(groups) and (inside or token[0] == "\\"):
            return True
    return False


_ASTRAL = re.compile("[^\\x00-\\uffff]").search


def _either(bmp: Callable[[str], list[str]], full: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """``bmp`` for a piece within the Basic Multilingual Plane, else ``full``."""

    def split(piece: str) -> list[str]:
        return full(piece) if _ASTRAL(piece) else bmp(piece)

    return split


def _wide(expression: str, forms: bool) -> tuple[Callable[[str], list[str]], Callable[[str], object]] | None:
    """The ``findall`` of ``expression`` for non-ASCII pieces (``re`` with the classes of :func:`_bmp_sets` for
    text of the Basic Multilingual Plane, ``regex`` beyond it or for classes in a case-insensitive group) and the
    ``search`` of :func:`_outside` for it (after a normaliser: ``forms``), when it names only classes
    :func:`agreement` compares and no character outside ASCII."""
    tokens = _scan(expression)
    if isinstance(tokens, str) or not expression.isascii():
        return None
    classes = set()
    for token, _ in tokens:
        if token in _PROPERTIES:
            classes.add(_PROPERTIES[token])
        elif token[:2] in (r"\p", r"\P"):
            return None
    import regex

    split = regex.compile(expression).findall
    outside = _outside(frozenset(classes), "(?i:" in expression, forms)
    spelt = None if _folded_classes(tokens) else _ascii_expression(tokens, _bmp_sets())
    if spelt is not None:
        try:
            return _either(re.compile(spelt).findall, split), outside
        except re.error:
            pass  # e.g. a look-behind of varying width: regex takes it
    return split, outside


def _probe(backend: Any, split: Callable[[str], list[str]], prefix: str | None, probes: Iterable[str]) -> bool:
    """Whether the tokenizer's own pre-tokenizer splits every probe as ``split`` does."""
    for probe in probes:
        theirs = [word for word, _ in backend.pre_tokenizer.pre_tokenize_str(probe)]
        words = split(" " + probe if prefix == "piece" else probe)
        ours = [word.encode().decode("latin-1").translate(_BYTE_LEVEL) for word in words]
        if prefix == "word":
            ours = [word if word.startswith("Ġ") else "Ġ" + word for word in ours]
        if ours != theirs:
            return False
    return True


def plan(backend: Any) -> Plan | str:
    """How pieces of ``backend``'s text can be encoded from pre-tokens, or why they cannot."""
    model = backend.model
    if type(model).__name__ != "BPE":
        return "the model is not BPE"
    if model.dropout or model.byte_fallback:
        return "BPE dropout or byte fallback"
    if model.continuing_subword_prefix or model.end_of_word_suffix:
        return "BPE subword prefixes or suffixes"
    forms = []
    for node in _members(component_config(backend.normalizer), "normalizers"):
        if node is not None and node.get("type") not in _SAME_ON_ASCII:
            return f"the normaliser {node.get('type')} may change ASCII text"
        if node is not None:
            forms.append(node["type"])
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
    if not _probe(backend, split_here, prefix, _PROBES):
        return "the tokenizer's pre-tokenizer splits ASCII text differently"
    wide = _wide(expression, bool(forms))
    if wide is None:
        return Plan(split_here, prefix)
    probes = [probe for probe in _WIDE_PROBES if not wide[1](probe)]
    if not _probe(backend, wide[0], prefix, probes):
        return Plan(split_here, prefix)  # not the split agreement() vouches for: ASCII pieces only
    return Plan(split_here, prefix, *wide, tuple(forms))


class PreTokenEncoder:
    """Ids of pieces from a bounded memo of pre-token -> ids (see the module's docstring for when).

    ``offsets``: whether :meth:`locate` can give token offsets (no prefix space moved into the first token, and a
    post-processor that keeps offsets as the pre-tokenizer made them).
    """

    def __init__(self, backend: Any, how: Plan, stops: list[str]) -> None:
        self._plan = how
        self._stops = re.compile("|".join(map(re.escape, stops))).search if stops else None
        self._tokenize = backend.model.tokenize
        unknown = backend.model.unk_token
        self._unknown = backend.model.token_to_id(unknown) if unknown else None
        processors = _members(component_config(backend.post_processor), "processors")
        processors = [node for node in processors if node is not None]
        self.offsets = how.prefix is None and all(
            node.get("type") in _OFFSET_KEEPERS
            and _OFFSET_KEEPERS[node["type"]] in (None, bool(node.get("trim_offsets", True)))
            for node in processors
        )
        self._memo = TokenMemo(_MEMO_TOKENS)
        self._width: dict[int, int] = {}  # bytes of text a token id covers

    def _words(self, piece: str) -> list[str] | None:
        how = self._plan
        if piece.isascii():
            split = how.split
        elif how.wide is None or how.outside is None or how.outside(piece):
            return None  # a character the engines may read differently
        elif not all(unicodedata.is_normalized(form, piece) for form in how.forms):
            return None  # the normaliser changes the piece
        else:
            split = how.wide
        if self._stops is not None and self._stops(piece):
            return None  # a normalised added token inside: tokenizers matches it within the piece
        if how.prefix == "piece" and not piece.startswith(" "):
            piece = " " + piece
        words = split(piece)
        if sum(map(len, words)) != len(piece) or "" in words:
            return None  # the expression skips characters, or matches empty text: not the split made here
        return words

    def _new(self, word: str) -> list[int]:
        text = word.encode().decode("latin-1").translate(_BYTE_LEVEL)
        if self._plan.prefix == "word" and not word.startswith(" "):
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
        try:  # one pass in C when every pre-token is known (English words repeat)
            return list(chain.from_iterable(map(memo.__getitem__, words)))
        except KeyError:
            return list(chain.from_iterable([memo.get(word) or self._new(word) for word in words]))

    def locate(self, piece: str) -> tuple[list[int], list[int], list[int]] | None:
        """The ids and each token's start and end in the UTF-8 bytes of ``piece`` (characters when it is ASCII),
        or ``None``: encode it with ``tokenizers`` for the offsets.

        A byte-level token covers bytes; tokenizers counts a token from the character holding its first byte to
        the one holding its last, so tokens sharing a character both cover it: a token overlaps the characters
        ``[s, e)`` exactly when its bytes overlap those of the characters (see
        :func:`~turnkit.render._pieces._overlaps`), so no per-token character offset is needed."""
        if not self.offsets:
            return None
        ids = self.encode(piece)
        if ids is None or (self._unknown is not None and self._unknown in ids):
            return None  # an unknown token's value is not the text it covers
        ends = list(accumulate(map(self._width.__getitem__, ids)))
        size = len(piece) if piece.isascii() else len(piece.encode())
        return (ids, [0, *ends[:-1]], ends) if ends and ends[-1] == size else None


if __name__ == "__main__":  # python -m turnkit.render._pretokens: the data file again, for the installed versions
    _write_table(_AGREEMENT, agreement())
