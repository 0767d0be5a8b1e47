"""Worst-case cost of a backtracking regex match, to decide when no timer is needed.

The ``regex`` module's ``timeout`` reads a CPU clock several times per call, and ``regex`` is slower
than ``re`` on some patterns; a call whose worst case provably fits the time budget can run on ``re``
itself, untimed, with transformers' exact semantics. The bound counts backtracking paths over a
structure tree built by the tokenizer in :mod:`turnkit.parse._schema.regex`:
nested quantifiers are unbounded, each quantifier multiplies the paths by its number of choices,
and, per input text, a required literal cuts the paths to the literal's occurrence count. It is
deliberately conservative; tests cross-check the tree against ``re``'s own parser.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "ANCHOR",
    "INFINITE",
    "LIT",
    "UNBOUNDED",
    "ZERO_WIDTH",
    "Cost",
    "Program",
    "count_opts",
    "flatten",
    "paths",
    "quantified_atoms",
    "steps_on",
]

# Worst-case cost model of a backtracking match: a tree of ("lit",), ("anchor",), ("unbounded",),
# ("seq", children), ("alt", children), ("rep", child, low, high-or-None).
Cost = tuple[Any, ...]
LIT: Cost = ("lit",)  # one character of any kind (set, ".", category)
ZERO_WIDTH: Cost = ("zw",)  # "$", "\\b", "\\Z"...
ANCHOR: Cost = ("anchor",)  # "^" or "\\A" first in the pattern
UNBOUNDED: Cost = ("unbounded",)
INFINITE = 1 << 200


def _has_border(literal: str) -> bool:
    return any(literal[:k] == literal[-k:] for k in range(1, len(literal)))


def _is_plain_group(node: Cost) -> bool:
    return node[0] == "group" and node[1] == "plain" and len(node[2][1]) == 1


def flatten(node: Cost, out: list[Cost]) -> bool:
    """Items of a single-branch pattern: plain groups inlined, optional plain groups as ("opt", items),
    consecutive characters merged into ("run", text, can-overlap-itself); False if the top branches."""
    kind = node[0]
    if kind == "alt":
        return len(node[1]) == 1 and flatten(node[1][0], out)
    if kind == "seq":
        return all(flatten(child, out) for child in node[1])
    if _is_plain_group(node):
        return flatten(node[2], out)
    if kind == "rep" and node[2] == 0 and node[3] == 1 and _is_plain_group(node[1]):
        inner: list[Cost] = []
        flatten(node[1][2], inner)
        out.append(("opt", tuple(inner)))
        return True
    if kind == "char" and out and out[-1][0] == "run":
        text = out[-1][1] + node[1]
        out[-1] = ("run", text, _has_border(text))
    elif kind == "char":
        out.append(("run", node[1], False))
    else:
        out.append(node)
    return True


def count_opts(items: tuple[Cost, ...]) -> int:
    return sum(1 + count_opts(item[1]) for item in items if item[0] == "opt")


def quantified_atoms(items: tuple[Cost, ...], out: set[str]) -> set[str]:
    """Sources of the single-character atoms that carry a quantifier (for longest-run scans)."""
    for item in items:
        if item[0] == "opt":
            quantified_atoms(item[1], out)
        elif item[0] == "rep" and item[1][0] in ("lit", "char") and len(item[1]) > 1:
            out.add(item[1][1] if item[1][0] == "lit" else re.escape(item[1][1]))
    return out


_RUN, _REP, _OPAQUE, _OPT = 0, 1, 2, 3
# Whitespace count (re's \s is str.isspace): bounds the longest \s run at a tenth of a findall's cost.
_WHITESPACE_COUNT = 'n - len("".join(text.split()))'

_Op = tuple[Any, ...]


class Program:
    """The flat items compiled for :func:`steps_on`: opcodes plus one value slot per run/quantifier."""

    __slots__ = ("ops", "slots", "unrolled", "bound_of", "keys")

    def __init__(self, items: tuple[Cost, ...], scanners: dict[str, re.Pattern[str]] | None) -> None:
        # slot: (_RUN, literal, can-overlap) or (_REP, longest-run key or None, low, high)
        self.slots: list[tuple[Any, ...]] = []
        self.ops = self._compile(items, scanners)
        # bound_of(n, start, *features); key(text, n): bit lengths of n and the features (see rounded_bound)
        self.bound_of: Callable[..., int] | None = None
        self.keys: tuple[Callable[[str, int], tuple[int, ...]], ...] = ()
        self.unrolled = self._unroll(scanners)

    def _value_lines(self, scanners: dict[str, re.Pattern[str]] | None) -> tuple[list[str], list[str], dict[str, Any]]:
        """(expressions of the text features ``f0, f1...`` the bound depends on besides ``n``: literal
        counts and longest runs; code computing every slot's value ``v0, v1...`` from ``n`` and them).
        The bound is non-decreasing in ``n`` and in every feature, which :meth:`rounded_bound` relies on."""
        features: list[str] = []
        cheap: dict[int, str] = {}  # feature index -> a cheaper upper bound for the verdict key
        lines: list[str] = []
        literals: list[str] = []
        scans: list[re.Pattern[str]] = []
        run_vars: dict[str, str] = {}
        for index, slot in enumerate(self.slots):
            if slot[0] == _RUN:
                if slot[2]:
                    lines.append(f"    v{index} = n + 1")
                else:
                    lines.append(f"    v{index} = f{len(features)}")
                    features.append(f"text.count(lits[{len(literals)}])")
                    literals.append(slot[1])
                continue
            key, low, high = slot[1], int(slot[2]), slot[3]
            lines.append("    t = n" if high is None else f"    t = {int(high)} if {int(high)} < n else n")
            if key is not None:
                var = run_vars.get(key)
                if var is None:
                    var = run_vars[key] = f"f{len(features)}"
                    scanner = None if scanners is None else scanners.get(key)
                    if scanner is None:  # re's \s is str.isspace: the whitespace count bounds the run
                        features.append(_WHITESPACE_COUNT)
                    else:
                        features.append(f"max(map(len, scans[{len(scans)}].findall(text)), default=0)")
                        if key == "\\s":  # the key only needs an upper bound: the cheaper count
                            cheap[len(features) - 1] = _WHITESPACE_COUNT
                        scans.append(scanner)
                lines.append(f"    if {var} < t:")
                lines.append(f"        t = {var}")
            lines.append(f"    v{index} = t - {low} + 1 if t > {low} else 1")
        return features, lines, {"lits": literals, "scans": scans, "cheap": cheap}

    def rounded_bound(self, key: tuple[int, ...], anchored: bool) -> int:
        """The unrolled bound (without the pattern-width factor) at the largest ``n`` and features
        with the bit lengths in ``key`` (from one of :attr:`keys`): an upper bound for every text with that key."""
        assert self.bound_of is not None
        n, *features = ((1 << bits) - 1 for bits in key)
        return self.bound_of(n, 1 if anchored else n + 1, *features)

    def _unroll(self, scanners: dict[str, re.Pattern[str]] | None) -> Callable[[str, int, int], int] | None:
        """:func:`steps_on` as straight-line code: the slot values, then one block per branch of the
        optional groups (it runs on every long input, so interpretation overhead matters). The
        generated source holds only identifiers and integers; literal text is passed as data."""
        sequences: list[tuple[_Op, ...]] = []

        def expand(seq: tuple[_Op, ...]) -> None:
            for index, op in enumerate(seq):
                if op[0] == _OPT:
                    before, rest = seq[:index], seq[index + 1 :]
                    expand(before + op[1] + rest)
                    expand(before + rest)
                    return
            sequences.append(seq)

        expand(self.ops)
        if len(sequences) > 64:
            return None
        opaque: list[Cost] = []
        features, value_lines, data = self._value_lines(scanners)
        cheap: dict[int, str] = data.pop("cheap")
        params = "".join(f", f{i}" for i in range(len(features)))
        lines = [
            "def key(text, n):",
            "    return (n.bit_length(),"
            + "".join(f" ({cheap.get(i, f)}).bit_length()," for i, f in enumerate(features))
            + ")",
            "def key_exact(text, n):",
            "    return (n.bit_length()," + "".join(f" ({f}).bit_length()," for f in features) + ")",
            "def bound(text, n, start):",
            "    return bound_of(n, start" + "".join(f", {f}" for f in features) + ")",
            f"def bound_of(n, start{params}):",
            *value_lines,
            "    total = 0",
        ]
        for seq in sequences:
            lines += ["    live = 1", "    seg = start", "    mx = start", "    work = 0"]
            exact = True
            for op in seq:
                if op[0] == _REP:
                    lines += [f"    c = v{int(op[1])}", "    seg *= c", "    if c > mx:", "        mx = c"]
                elif op[0] == _RUN:
                    lines.append("    work += live * seg")
                    if exact:
                        lines += [
                            "    if seg > 1:",
                            f"        s = v{int(op[1])} * (seg // mx)",
                            "        live *= s if s < seg else seg",
                        ]
                    else:
                        lines.append("    live *= seg")
                    lines += ["    seg = 1", "    mx = 1"]
                    exact = True
                else:
                    if op[2] is not None:
                        lines.append(f"    seg *= {int(op[2])}")
                    else:
                        lines.append(f"    seg *= paths(opaque[{len(opaque)}], n)")
                        opaque.append(op[1])
                    exact = False
            lines.append("    total += work + live * seg")
        lines.append("    return total")
        namespace: dict[str, Any] = {"paths": paths, "opaque": opaque, **data}
        exec(compile("\n".join(lines), "<turnkit regex bound>", "exec"), namespace)  # noqa: S102 - integers only
        bound: Callable[[str, int, int], int] = namespace["bound"]
        self.bound_of = namespace["bound_of"]
        # Cheap key first; when its verdict is "no", the key of the exact features may still say "yes".
        self.keys = (namespace["key"], namespace["key_exact"]) if cheap else (namespace["key"],)
        return bound

    def _compile(self, items: tuple[Cost, ...], scanners: dict[str, re.Pattern[str]] | None) -> tuple[_Op, ...]:
        ops: list[_Op] = []
        for item in items:
            kind = item[0]
            if kind == "opt":
                ops.append((_OPT, self._compile(item[1], scanners)))
            elif kind == "run":
                ops.append((_RUN, len(self.slots)))
                self.slots.append((_RUN, item[1], item[2]))
            elif kind == "rep" and item[1][0] in ("lit", "char"):
                child = item[1]
                key = None
                if scanners is not None and len(child) > 1:
                    key = child[1] if child[0] == "lit" else re.escape(child[1])
                    if key != "\\s" and key not in scanners:
                        key = None
                ops.append((_REP, len(self.slots)))
                self.slots.append((_REP, key, item[2], item[3]))
            elif kind in ("lit", "char", "zw", "anchor"):
                continue
            else:
                # Paths of a sub-pattern without repetition do not depend on the length: count them once.
                fixed = paths(item, 0) if paths(item, 0) == paths(item, 1 << 20) else None
                ops.append((_OPAQUE, item, fixed))
        return tuple(ops)


def steps_on(
    program: Program,
    text: str,
    anchored: bool,
    width: int,
    scanners: dict[str, re.Pattern[str]] | None,
    *,
    unrolled: bool = True,
) -> int:
    """Worst-case work on this very text, cutting paths at required literals by their occurrence count.

    Between two literal runs, each live path explores the product of its quantifiers' choices (a
    quantifier over one character class repeats at most as often as the longest run of that class
    in the text); a path survives the next literal run only by ending where the literal occurs, and
    when every quantifier repeats one character, the last one is fixed by that end position, so at
    most ``occurrences x product(other choices)`` continue. An optional group is both branches.
    """
    n = len(text)
    start = 1 if anchored else n + 1
    if program.unrolled is not None and unrolled:
        return min(program.unrolled(text, n, start) * width, INFINITE)
    longest_runs: dict[str, int] = {}
    values: list[int] = []
    for slot in program.slots:
        if slot[0] == _RUN:
            values.append(n + 1 if slot[2] else text.count(slot[1]))
            continue
        key, low, high = slot[1], slot[2], slot[3]
        top = n if high is None or high > n else high
        if key is not None:
            run = longest_runs.get(key)
            if run is None:
                assert scanners is not None
                scanner = scanners.get(key)
                if scanner is None:  # re's \s is str.isspace: the whitespace count bounds the longest run
                    run = n - len("".join(text.split()))
                else:
                    run = max(map(len, scanner.findall(text)), default=0)
                longest_runs[key] = run
            top = run if run < top else top
        values.append(top - low + 1 if top > low else 1)

    def walk(seq: tuple[_Op, ...], live: int, seg: int, max_choice: int, exact: bool) -> int:
        work = 0
        for index, op in enumerate(seq):
            code = op[0]
            if code == _REP:
                count = values[op[1]]
                seg *= count
                if count > max_choice:
                    max_choice = count
            elif code == _RUN:
                work += live * seg
                if exact and seg > 1:
                    survivors = values[op[1]] * (seg // max_choice)
                    live *= survivors if survivors < seg else seg
                else:
                    live *= seg
                seg = max_choice = 1
                exact = True
                if live == 0:
                    return work  # no path gets past this literal
            elif code == _OPT:
                rest = seq[index + 1 :]
                taken = walk(op[1] + rest, live, seg, max_choice, exact)
                return min(work + taken + walk(rest, live, seg, max_choice, exact), INFINITE)
            else:
                seg *= paths(op[1], n) if op[2] is None else op[2]
                exact = False
            if live >= INFINITE or seg >= INFINITE:
                return INFINITE
        return min(work + live * seg, INFINITE)

    return min(walk(program.ops, 1, start, start, True) * width, INFINITE)


def paths(node: Cost, n: int) -> int:
    """Upper bound on the backtracking paths of ``node`` over ``n`` characters (``INFINITE`` if unbounded)."""
    kind = node[0]
    if kind in ("lit", "anchor", "char", "zw"):
        return 1
    if kind == "group":
        return paths(node[2], n)
    total: int
    if kind == "seq":
        total = 1
        for child in node[1]:
            total = min(total * paths(child, n), INFINITE)
        return total
    if kind == "alt":
        total = min(sum(paths(child, n) for child in node[1]), INFINITE)
        return total
    if kind == "rep":
        inner = paths(node[1], n)
        low: int = node[2]
        high: int | None = node[3]
        top = n if high is None else min(high, n)
        choices = max(top - low, 0) + 1
        if choices == 1:
            total = min(inner ** min(low, 64), INFINITE) if inner > 1 else 1
            return total
        if inner == 1:
            total = choices
            return total
        if high is not None and high <= 3:
            total = min(sum(inner**k for k in range(low, high + 1)), INFINITE)
            return total
        return INFINITE  # a repeated sub-pattern with choices inside: exponential in the worst case
    return INFINITE
