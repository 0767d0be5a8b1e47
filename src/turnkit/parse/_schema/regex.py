"""Time-bounded regular expressions with the exact semantics of Python's ``re``.

Response schemas come from model repositories and their regexes run on untrusted model output, so
every match needs a time budget; only the third-party ``regex`` module offers one (``timeout=``).
transformers runs these patterns with ``re``, and the two modules disagree on a few points, so a
pattern is first validated with ``re`` (a pattern ``re`` rejects is rejected here too) and then
rewritten before ``regex`` compiles it:

* ``\\w \\W \\s \\S \\d \\D \\b \\B`` become explicit character sets computed *from ``re`` itself* on
  every code point (the modules use different Unicode versions and ``regex`` counts marks as word
  characters); ``\\B`` also keeps ``re``'s rule that it never matches the empty string;
* ``{`` that ``re`` reads as a literal (``{e<=1}``, ``{x}``) is escaped, because ``regex`` would read
  a fuzzy-matching constraint; ``re``'s quantifier forms (``{,3}``, ``{2,}``) are spelled out;
* ``[`` ``&`` ``~`` ``|`` inside a set are escaped, because ``regex`` reads ``[[:alpha:]]`` as a POSIX
  class where ``re`` reads literal characters.

Replacement templates (``x-regex-substitutions``) are expanded by :class:`Template`, a port of
``re``'s template rules, after ``re`` has validated them.

The same tokenizing pass records the pattern's structure for the worst-case bound
(:mod:`turnkit.parse._schema.cost`) that lets provably safe calls run on ``re`` itself.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import regex

from turnkit.parse._schema.cost import (
    ANCHOR,
    INFINITE,
    LIT,
    UNBOUNDED,
    ZERO_WIDTH,
    Cost,
    Program,
    count_opts,
    flatten,
    paths,
    quantified_atoms,
    steps_on,
)

__all__ = ["Template", "TimedPattern", "translate"]

_ALL_CHARS_LEN = sys.maxunicode + 1


@cache
def _all_chars() -> str:
    return "".join(map(chr, range(_ALL_CHARS_LEN)))


def _escape_cp(cp: int) -> str:
    return f"\\U{cp:08x}" if cp > 0xFFFF else f"\\u{cp:04x}"


@cache
def _re_class_ranges(escape: str, ascii_only: bool) -> str:
    """Set body (no brackets) of exactly the code points ``re`` matches with ``escape`` (``\\w``...)."""
    flags = re.ASCII if ascii_only else 0
    parts = []
    for m in re.finditer(escape + "+", _all_chars(), flags):
        start, end = m.start(), m.end() - 1
        parts.append(_escape_cp(start) if start == end else f"{_escape_cp(start)}-{_escape_cp(end)}")
    return "".join(parts)


_POSITIVE = {"w": "\\w", "W": "\\w", "s": "\\s", "S": "\\s", "d": "\\d", "D": "\\d"}
_ANY_CHAR = "[\\u0000-\\U0010ffff]"
_QUANTIFIER = re.compile(r"\{([0-9]*)(?:(,)([0-9]*))?\}")


@cache
def _short_space_body() -> str | None:
    """``\\s\\x1c-\\x1f`` if that ``regex`` set is exactly ``re``'s ``\\s`` here (it is much faster)."""
    short = "\\s\\x1c-\\x1f"
    ranges = []
    for m in regex.finditer(f"[{short}]+", _all_chars()):
        start, end = m.start(), m.end() - 1
        ranges.append(_escape_cp(start) if start == end else f"{_escape_cp(start)}-{_escape_cp(end)}")
    return short if "".join(ranges) == _re_class_ranges("\\s", False) else None


def _category(letter: str, ascii_only: bool) -> tuple[str, bool]:
    """(set body, negated) for a category escape letter."""
    if letter in "sS" and not ascii_only:
        short = _short_space_body()
        if short is not None:
            return short, letter.isupper()
    return _re_class_ranges(_POSITIVE[letter], ascii_only), letter.isupper()


def _boundary(letter: str, ascii_only: bool) -> str:
    word = "[" + _re_class_ranges("\\w", ascii_only) + "]"
    if letter == "b":
        return f"(?:(?<={word})(?!{word})|(?<!{word})(?={word}))"
    return f"(?!\\A\\Z)(?:(?<={word})(?={word})|(?<!{word})(?!{word}))"


_FLAG_GROUP = re.compile(r"\(\?([aiLmsux]*)(?:-([imsx]*))?([:)])")
_GROUP_PREFIX = re.compile(r"\((?:\?(?:P<[^>]+>|P=[^)]+\)|[:=!>]|<[=!]|\([^)]*\)))?")


class _Translator:
    """One left-to-right pass over a pattern ``re`` has already accepted."""

    def __init__(self, pattern: str, *, ascii_only: bool, verbose: bool, multiline: bool) -> None:
        self.p = pattern
        self.i = 0
        self.out: list[str] = []
        # Flag state per open group: (ascii, verbose)
        self.stack: list[tuple[bool, bool]] = []
        self.ascii = ascii_only
        self.verbose = verbose
        self.multiline = multiline
        # Worst-case cost model: one frame (alternatives, current sequence) per open group.
        self.frames: list[tuple[list[Cost], list[Cost]]] = [([], [])]
        self.kinds: list[str] = ["top"]
        self.ignorecase = False
        self.scoped_flags = False  # a (?flags:...) group: per-item flags differ from the pattern's
        self.quantified = False  # the previous token was a quantifier (so "?"/"+" modify it)

    def _add(self, node: Cost) -> None:
        self.frames[-1][1].append(node)
        self.quantified = False

    def _quantify(self, low: int, high: int | None) -> None:
        seq = self.frames[-1][1]
        if seq:
            seq[-1] = ("rep", seq[-1], low, high)
        self.quantified = True

    def flat_items(self) -> tuple[Cost, ...] | None:
        """The pattern as one flat sequence for the text-aware bound, or None where it does not apply."""
        if self.ignorecase:
            return None  # literal occurrence counts would be case-sensitive
        out: list[Cost] = []
        tree, _ = self.cost_tree()
        if not flatten(tree, out) or count_opts(tuple(out)) > 6:
            return None
        # Items the occurrence cut cannot see through; if they alone are super-linear the text-aware
        # bound cannot succeed, so do not spend time computing it per call.
        opaque = 1
        for item in out:
            if item[0] not in ("run", "lit", "char", "zw", "anchor", "opt") and not (
                item[0] == "rep" and item[1][0] in ("lit", "char")
            ):
                opaque = min(opaque * paths(item, 1024), INFINITE)
        return tuple(out) if opaque <= 1024 else None

    def cost_tree(self) -> tuple[Cost, bool]:
        """(cost tree of the whole pattern, whether it is anchored at the start of the text)."""
        alts, seq = self.frames[0]
        branches = [*alts, ("seq", tuple(seq))]
        anchored = not alts and bool(seq) and seq[0] == ANCHOR
        return ("alt", tuple(branches)), anchored

    def run(self) -> str:
        p = self.p
        n = len(p)
        while self.i < n:
            c = p[self.i]
            if c == "\\":
                self._escape_outside()
            elif c == "[":
                start = self.i
                self._set()
                self._add(("lit", self.p[start : self.i]))
            elif c == "(":
                self._open_group()
            elif c == ")":
                if self.stack:
                    self.ascii, self.verbose = self.stack.pop()
                if len(self.frames) > 1:
                    alts, seq = self.frames.pop()
                    self._add(("group", self.kinds.pop(), ("alt", (*alts, ("seq", tuple(seq))))))
                self.out.append(c)
                self.i += 1
            elif c == "|":
                alts, seq = self.frames[-1]
                alts.append(("seq", tuple(seq)))
                self.frames[-1] = (alts, [])
                self.out.append(c)
                self.i += 1
            elif c in "*+?":
                if self.quantified:
                    self.quantified = False  # lazy / possessive modifier
                else:
                    self._quantify(1 if c == "+" else 0, 1 if c == "?" else None)
                self.out.append(c)
                self.i += 1
            elif c == "{":
                self._brace()
            elif c == "}":
                self.out.append("\\}")
                self._add(LIT)
                self.i += 1
            elif c == "#" and self.verbose:
                end = p.find("\n", self.i)
                end = n if end < 0 else end
                self.out.append(p[self.i : end])
                self.i = end
            elif self.verbose and c in " \t\n\r\v\f":
                self.out.append(c)
                self.i += 1
            else:
                first = len(self.frames) == 1 and not self.frames[0][0] and not self.frames[0][1]
                if c == "^":
                    self._add(ANCHOR if first and not self.multiline else ZERO_WIDTH)
                elif c == "$":
                    self._add(ZERO_WIDTH)
                elif c == ".":
                    self._add(("lit", "."))
                else:
                    self._add(("char", c))
                self.out.append(c)
                self.i += 1
        return "".join(self.out)

    def _escape_length(self) -> tuple[int, bool]:
        """(length of the escape token at ``self.i``, whether it is a backreference), by re's rules."""
        p, i = self.p, self.i
        letter = p[i + 1] if i + 1 < len(p) else ""
        if letter in ("x", "u", "U"):
            return 2 + {"x": 2, "u": 4, "U": 8}[letter], False
        if letter == "N" and p.startswith("{", i + 2):
            return p.index("}", i + 2) - i + 1, False
        if letter == "0":
            j = i + 2
            while j < i + 4 and j < len(p) and p[j] in "01234567":
                j += 1
            return j - i, False
        if letter in "123456789":
            if i + 2 < len(p) and p[i + 2] in "0123456789":
                octal = letter in "01234567" and p[i + 2] in "01234567"
                if octal and i + 3 < len(p) and p[i + 3] in "01234567":
                    return 4, False
                return 3, True
            return 2, True
        return 2, False

    def _escape_outside(self) -> None:
        p = self.p
        letter = p[self.i + 1] if self.i + 1 < len(p) else ""
        length, backref = self._escape_length()
        token = p[self.i : self.i + length]
        if letter in _POSITIVE:
            body, negated = _category(letter, self.ascii)
            self.out.append(f"[{'^' if negated else ''}{body}]")
        elif letter in ("b", "B"):
            self.out.append(_boundary(letter, self.ascii))
        else:
            self.out.append(token)
        first = len(self.frames) == 1 and not self.frames[0][0] and not self.frames[0][1]
        if backref:
            self._add(UNBOUNDED)  # backreference
        elif letter == "A":
            self._add(ANCHOR if first else ZERO_WIDTH)
        elif letter in "bBZ":
            self._add(ZERO_WIDTH)
        elif letter and not letter.isalnum() and letter.isascii():
            self._add(("char", letter))
        else:
            self._add(("lit", token))
        self.i += length

    def _brace(self) -> None:
        m = _QUANTIFIER.match(self.p, self.i)
        if m is None or m.group(0) == "{}":
            self.out.append("\\{")
            self._add(LIT)
            self.i += 1
            return
        low, comma, high = m.group(1), m.group(2), m.group(3)
        low = low or "0"
        high = (high or "") if comma else low
        self.out.append(f"{{{low},{high}}}")
        if self.quantified:  # re reads "a*{2}" as an error; never reached after validation
            self.quantified = False
        else:
            self._quantify(int(low), int(high) if high else None)
        self.i = m.end()

    def _open_group(self) -> None:
        p = self.p
        self.stack.append((self.ascii, self.verbose))
        if p.startswith("(?#", self.i):
            # A comment runs to the first unescaped ")"; nothing inside is syntax.
            j = self.i + 3
            while j < len(p) and p[j] != ")":
                j += 2 if p[j] == "\\" else 1
            self.out.append(p[self.i : j + 1])
            self.i = j + 1
            self.stack.pop()
            return
        m = _FLAG_GROUP.match(p, self.i)
        if m is not None:
            on, off, end = m.group(1), m.group(2) or "", m.group(3)
            if end == ")":
                # Global flags (only valid at the start): they apply to the whole pattern.
                self.stack.pop()
            if "a" in on:
                self.ascii = True
            if "x" in on:
                self.verbose = True
            if "x" in off:
                self.verbose = False
            if end == ")" and "m" in on:
                self.multiline = True
            if "i" in on:
                self.ignorecase = True
            if end == ":" and (on or off):
                self.scoped_flags = True
            if end == ":":
                self.frames.append(([], []))
                self.kinds.append("plain")
            self.out.append(m.group(0))
            self.i = m.end()
            return
        prefix = _GROUP_PREFIX.match(p, self.i)
        assert prefix is not None  # re accepted the pattern, so "(" starts one of these
        self.out.append(prefix.group(0))
        self.i = prefix.end()
        if prefix.group(0).startswith("(?P="):
            self.stack.pop()
            self._add(UNBOUNDED)  # named backreference, complete with its ")"
            return
        self.frames.append(([], []))
        kind = prefix.group(0)
        conditional = kind.startswith("(?(")
        self.kinds.append("look" if kind[2:3] in ("=", "!", "<") else "other" if conditional else "plain")
        if conditional:
            self._add(UNBOUNDED)  # conditional on a group: treat as unbounded

    def _set(self) -> None:
        """A ``[...]`` set; negated categories inside it need lookarounds, so it may become a group."""
        p = self.p
        j = self.i + 1
        negate = j < len(p) and p[j] == "^"
        if negate:
            j += 1
        items: list[str] = []
        cats: list[str] = []  # set bodies of negated categories (\W, \S, \D)
        first = True
        while j < len(p):
            c = p[j]
            if c == "]" and not first:
                break
            first = False
            if c == "\\":
                letter = p[j + 1]
                if letter in _POSITIVE:
                    body, negated = _category(letter, self.ascii)
                    if negated:
                        cats.append(body)
                    else:
                        items.append(body)
                else:
                    items.append(p[j : j + 2])
                j += 2
            elif c in "[&~|":
                items.append("\\" + c)
                j += 1
            else:
                items.append(c)
                j += 1
        self.i = j + 1
        plain = "".join(items)
        if not cats:
            self.out.append(f"[{'^' if negate else ''}{plain}]")
        elif not negate:
            alternatives = ([f"[{plain}]"] if plain else []) + [f"[^{body}]" for body in cats]
            self.out.append("(?:" + "|".join(alternatives) + ")")
        else:
            # Not (plain or not-A or not-B) == not plain and A and B.
            parts = [f"(?![{plain}])"] if plain else []
            parts += [f"(?=[{body}])" for body in cats]
            self.out.append("(?:" + "".join(parts) + _ANY_CHAR + ")")


def translate(pattern: str, flags: int = 0) -> str:
    """Rewrite a pattern ``re`` accepts so that ``regex`` (V0) matches exactly what ``re`` matches."""
    return _translator(pattern, flags).run()


def _translator(pattern: str, flags: int) -> _Translator:
    return _Translator(
        pattern,
        ascii_only=bool(flags & re.ASCII),
        verbose=bool(flags & re.VERBOSE),
        multiline=bool(flags & re.MULTILINE),
    )


def validate_with_re(pattern: str, flags: int) -> re.Pattern[str]:
    """Compile with ``re`` (raising ``re.error`` as ``re`` would); ``re``'s FutureWarnings are not errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return re.compile(pattern, flags)


FAST_PATH_STEPS_PER_SECOND = 1_000_000_000
"""Model steps per second assumed when deciding that a match cannot outlive its budget.

The model over-counts: on adversarial inputs (nested/adjacent quantifiers over overlapping sets,
unclosed lazy scans) CPython's ``re`` was measured at 1.5e10-6e10 model steps per second, so an
untimed call stays below ~7 % of its budget on such a machine.
"""

_Replacement = str | Callable[[Any], str]
_VERDICTS_KEPT = 4096  # rounded-bound verdicts cached per pattern (keys are small tuples of ints)


class TimedPattern:
    """A pattern with ``re`` semantics whose every call is bounded in time.

    Two engines, one semantics: when the pattern's worst case on the given input provably fits the
    time budget (:meth:`untimed_limit`, from a conservative count of backtracking paths), the call
    runs on ``re`` itself, exactly as transformers does; otherwise it runs on ``regex`` with a
    ``timeout`` (whose clock reads cost ~10 µs per call, hence the untimed path).
    """

    __slots__ = (
        "source",
        "groups",
        "groupindex",
        "checked",
        "_compiled",
        "_cost",
        "_anchored",
        "_limits",
        "_flat",
        "_scanners",
        "_verdicts",
    )

    def __init__(self, source: str, flags: int = re.DOTALL) -> None:
        checked = validate_with_re(source, flags)
        self.source = source
        self.checked = checked
        self.groups = checked.groups
        self.groupindex = dict(checked.groupindex)
        translator = _translator(source, checked.flags)
        rflags = regex.DOTALL if flags & re.DOTALL else 0
        self._compiled = regex.compile(translator.run(), rflags | regex.VERSION0)
        self._cost, self._anchored = translator.cost_tree()
        self._scanners: dict[str, re.Pattern[str]] | None = None
        flat = translator.flat_items()
        if flat is not None and not translator.scoped_flags:
            self._scanners = {}
            for atom in quantified_atoms(flat, set()):
                if atom == ".":
                    continue  # matches (almost) everything: the longest run is the length
                try:
                    self._scanners[atom] = validate_with_re(f"{atom}+", checked.flags)  # atom: one token
                except re.error:
                    continue  # no scanner: that quantifier counts as the whole length
        self._flat = None if flat is None or checked.flags & re.IGNORECASE else Program(flat, self._scanners)
        self._limits: dict[int, int] = {}
        self._verdicts: dict[tuple[float, tuple[int, ...]], bool] = {}

    def worst_case_steps(self, n: int) -> int:
        """Upper bound on backtracking work for one search/finditer/sub over ``n`` characters."""
        per_start = paths(self._cost, n) * (len(self.source) + 1)
        return per_start + n if self._anchored else per_start * (n + 1)

    def worst_case_steps_on(self, text: str) -> int:
        """Upper bound on backtracking work on this text (uses literal occurrence counts when it can)."""
        if self._flat is None:
            return self.worst_case_steps(len(text))
        width = len(self.source) + 1
        return steps_on(self._flat, text, self._anchored, width, self._scanners)

    def untimed_ok(self, text: str, budget_s: float) -> bool:
        """Whether a match on ``text`` provably fits ``budget_s`` without a timer."""
        return len(text) <= self.untimed_limit(budget_s) or self.text_fits(text, budget_s)

    def text_fits(self, text: str, budget_s: float) -> bool:
        """The text-aware half of :meth:`untimed_ok` (for callers that checked the length limit)."""
        program = self._flat
        if program is None:
            return False
        budget = budget_s * FAST_PATH_STEPS_PER_SECOND
        width = len(self.source) + 1
        # The bound only depends on the length and a few text features (literal counts, longest runs)
        # and never decreases when they grow: the verdict for the largest values with the same bit
        # lengths holds for this text, and is computed once per key (~1 µs per call instead of ~8 µs).
        n = len(text)
        verdicts = self._verdicts
        for key_of in program.keys:
            bits = key_of(text, n)
            key = (budget_s, bits)
            verdict = verdicts.get(key)
            if verdict is None:
                if len(verdicts) >= _VERDICTS_KEPT:
                    verdicts.clear()
                verdict = verdicts[key] = program.rounded_bound(bits, self._anchored) * width <= budget
            if verdict:
                return True
        return steps_on(program, text, self._anchored, width, self._scanners) <= budget

    def untimed_limit(self, budget_s: float) -> int:
        """Longest input (characters) whose worst case fits ``budget_s``; -1 if none does."""
        steps = int(budget_s * FAST_PATH_STEPS_PER_SECOND)
        known = self._limits.get(steps)
        if known is not None:
            return known
        low, high = -1, 1 << 24
        while low < high:
            mid = (low + high + 1) // 2
            if self.worst_case_steps(mid) <= steps:
                low = mid
            else:
                high = mid - 1
        self._limits[steps] = low
        return low

    def search(self, text: str, timeout: float, *, untimed: bool = False) -> Any:
        if untimed:
            return self.checked.search(text)
        return self._compiled.search(text, timeout=timeout)

    def finditer(self, text: str, timeout: float, *, untimed: bool = False) -> Iterator[Any]:
        if untimed:
            return self.checked.finditer(text)
        return self._compiled.finditer(text, timeout=timeout)

    def sub(
        self,
        repl: Callable[[Any], str],
        text: str,
        timeout: float,
        *,
        untimed: bool = False,
        re_repl: _Replacement | None = None,
    ) -> str:
        """``re.sub``; ``re_repl`` (e.g. the original template string) is used on the untimed path."""
        if untimed:
            return self.checked.sub(repl if re_repl is None else re_repl, text)
        return self._compiled.sub(repl, text, timeout=timeout)


_OCT = "01234567"
_DIGITS = "0123456789"
_TEMPLATE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


class Template:
    """A ``re.sub`` replacement template: literal pieces and group references, expanded per match.

    The template is validated by ``re`` itself first (so exactly the templates ``re`` rejects are
    rejected); the expansion rules below are ``re``'s (Python 3.11 ``parse_template``).
    """

    __slots__ = ("_pieces",)

    def __init__(self, template: str, pattern: TimedPattern, checked: re.Pattern[str]) -> None:
        checked.sub(template, "")  # re parses the template up front: raises re.error / IndexError
        pieces: list[str | int] = []
        literal: list[str] = []

        def group(index: int) -> None:
            if literal:
                pieces.append("".join(literal))
                literal.clear()
            pieces.append(index)

        i, n = 0, len(template)
        while i < n:
            c = template[i]
            if c != "\\":
                literal.append(c)
                i += 1
                continue
            e = template[i + 1]
            i += 2
            if e == "g":
                end = template.index(">", i)
                name = template[i + 1 : end]
                i = end + 1
                group(pattern.groupindex[name] if name.isidentifier() else int(name))
            elif e == "0":
                digits = e
                while len(digits) < 3 and i < n and template[i] in _OCT:
                    digits += template[i]
                    i += 1
                literal.append(chr(int(digits, 8) & 0xFF))
            elif e in _DIGITS:
                digits = e
                if i < n and template[i] in _DIGITS:
                    digits += template[i]
                    i += 1
                    if e in _OCT and digits[1] in _OCT and i < n and template[i] in _OCT:
                        literal.append(chr(int(digits + template[i], 8)))
                        i += 1
                        continue
                group(int(digits))
            else:
                literal.append(_TEMPLATE_ESCAPES.get(e, "\\" + e))
        if literal:
            pieces.append("".join(literal))
        self._pieces = tuple(pieces)

    def expand(self, match: regex.Match[str]) -> str:
        out = []
        for piece in self._pieces:
            if isinstance(piece, str):
                out.append(piece)
            else:
                out.append(match.group(piece) or "")
        return "".join(out)
