"""Which built-in output format parses a chat template's model outputs, found from the template's own markers.

A chat template writes the assistant's earlier tool calls and reasoning back into the prompt, so it spells
the special tokens the model was trained to emit (``<tool_call>``, ``<|python_tag|>``, ``[TOOL_CALLS]``,
``<|channel|>``...). Every built-in :class:`~turnkit.parse.FormatSpec` declares the markers it parses, as
data. Detection compares the two; it never looks at file or model names.

How a format's declaration becomes *signatures* (:func:`format_markers`, :func:`_signatures`):

* a marker's *atoms* are its special-token spellings (``<|tool_call_start|>``, ``<｜tool▁sep｜>``,
  ``</tool_call>``, ``<function=``, ``[ARGS]``); a marker without any (``functools``, ``Action:``) is its
  own atom; JSON openings (``{"name"``, ``[``), code fences and whitespace are not markers;
* a *group* is a set of alternative markers of which the template must spell one (a region's open marker,
  its close marker, a body marker such as qwen3-coder's ``<parameter=``);
* a *signature* is the groups of one way of writing a tool call (one :class:`~turnkit.parse.ToolRegion`,
  inside its :class:`~turnkit.parse.Section`), of a reasoning block, or of a harmony message.

A format is a candidate when the template satisfies every group of at least one of its tool-call signatures
(or, for a format without tool calls, of its reasoning signature). Candidates are ranked by

1. the number of groups satisfied by its best complete tool signature plus its complete reasoning signatures
   (the most specific explanation of the template wins: qwen3-coder's six markers beat hermes' two);
2. the number of the format's marker atoms the template spells at all (end-of-turn tokens, extra tags);
3. declaration order (``turnkit formats`` lists it), which puts a family's general format before its
   vLLM-specific variants.

Prompt-side markers (:attr:`~turnkit.parse.FormatSpec.prompt_markers`: what a family's templates write around
the tool list and tool results, which the model never emits) are evidence too, ranked below every output
marker. Beside a candidate's output markers they add weight (after the group count); with them, a format whose
reasoning block the template writes is a candidate without a tool call, as a reasoning-only format is. When a
template writes no format's tool-call or reasoning markers at all (LFM2 templates that pass earlier tool calls
through as plain content), the formats whose prompt markers it spells are the candidates, ranked the same way
(a bare JSON call's opening comes only after them).

A template that spells no built-in format's markers gets ``generic`` (llama.cpp's fallback for templates
without a native tool syntax: the model is prompted to answer with one JSON object), flagged as a fallback.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from turnkit._args import check_fields, expect
from turnkit.parse._spec import (
    FormatSpec,
    Harmony,
    JsonArgs,
    JsonCalls,
    KeyedDict,
    Reasoning,
    ToolRegion,
    XmlParams,
)

__all__ = ["Detection", "builtin_specs", "detect_in_template", "format_markers", "looks_like_template"]

FALLBACK_FORMAT = "generic"

_ATOM = re.compile(
    r"""<[|｜][^<>\n]*?[|｜]>                # <|python_tag|>  <｜tool▁sep｜>  <|"|>
    | <\|\w+>  | <\w+\|>                     # Gemma 4: <|tool_call>  <tool_call|>
    | </?[A-Za-z][\w:.\-]*>                  # <tool_call>  </think>  <seed:tool_call>
    | <[^\s<>"=]+\ name="                    # <invoke name="  <｜DSML｜invoke name="
    | <[^\s<>"=]+=                           # <function=  <parameter=
    | \[/?[A-Z][A-Z_ ]*[A-Z]\]               # [TOOL_CALLS]  [/THINK]  [BEGIN FINAL RESPONSE]
    | </?[^\s<>"=]+>                         # <｜DSML｜function_calls>
    """,
    re.VERBOSE,
)
_JINJA = re.compile(r"\{%-?|\{\{-?|\{#")
_SET_LITERAL = re.compile(r"""\{%-?\s*set\s+(\w+)\s*=\s*(?:'([^'\\]*)'|"([^"\\]*)")\s*-?%\}""")


@dataclass(frozen=True, slots=True)
class Detection:
    """The result of :func:`detect_format`.

    ``format`` is the name for :func:`~turnkit.load_format` (``None`` when no format can be chosen),
    ``reason`` says why in one sentence, ``markers`` are the special-token spellings of the chosen format
    that the template writes (the evidence), ``source`` says how the format was chosen: ``"markers"``,
    ``"fallback"`` (no markers at all: ``generic``), ``"ambiguous"`` or ``"none"`` (``format`` is ``None``),
    ``candidates`` lists every other format whose markers the template also satisfies, best first, and
    ``prompt_markers`` are the chosen format's prompt-side markers the template writes (around the tool list
    and tool results: weaker evidence, see the module).
    """

    format: str | None
    reason: str
    markers: tuple[str, ...] = ()
    source: Literal["markers", "fallback", "ambiguous", "none"] = "markers"
    candidates: tuple[str, ...] = ()
    prompt_markers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_fields(self)

    def __bool__(self) -> bool:
        return self.format is not None


# --- markers of a declaration -------------------------------------------------------------------------------


def atoms(marker: str) -> tuple[str, ...]:
    """The spellings a template must contain for it to write ``marker``.

    Special tokens inside the marker are atoms (``function<｜tool▁sep｜>`` -> ``<｜tool▁sep｜>``: the name in
    front is a template variable); so is a marker's plain text when it has no special token, or is not
    glued to one (``function call<|role_sep|>``). JSON openings, bare fences and whitespace are not markers;
    a fence with a language (```` ```json ````) is.
    """
    found = [m.group(0) for m in _ATOM.finditer(marker)]
    rest = [part.strip() for part in _ATOM.split(marker)]
    if found:
        found += [part for part in rest if " " in part and _is_text_marker(part)]
    elif _is_text_marker(marker.strip()):
        found.append(marker.strip())
    return tuple(dict.fromkeys(found))


def _is_text_marker(text: str) -> bool:
    if text.startswith("```"):
        return text[3:].isalpha()
    if text.startswith('{"'):  # a bare JSON call's opening ({"name"), which templates spell in their instructions
        return text.endswith('"') and text[2:-1].isidentifier()
    return len(text) >= 3 and text[0] not in "{[" and any(ch.isalnum() or ch in "<>|" for ch in text)


Group = tuple[str, ...]
"""Alternative markers: the template must spell (every atom of) one of them."""
Signature = tuple[Group, ...]


def _group(*markers: str | None) -> Group:
    return tuple(m for m in markers if m is not None and atoms(m))


def _body_groups(body: object) -> list[list[Group]]:
    """Alternative lists of groups a tool body adds (one list per way of writing the body)."""
    if isinstance(body, XmlParams):
        groups = [
            _group(body.function_open),
            _group(*body.name_ends),
            _group(body.param_open),
            _group(*(key for key, _ in body.key_ends)),
            _group(body.value_open),
            _group(body.param_close),
            _group(body.function_close),
        ]
        return [[g for g in groups if g]]
    if isinstance(body, JsonArgs):
        fence = _group("```json") if body.fence else ()
        return [[g for g in (_group(body.name_prefix), _group(*body.name_ends), fence) if g]]
    if isinstance(body, KeyedDict):
        return [[g for g in (_group(body.quote),) if g]]
    if isinstance(body, JsonCalls):
        out: list[list[Group]] = [[]]
        if body.or_named is not None:
            out += _body_groups(body.or_named)
        return out
    return [[]]


def _region_signatures(region: ToolRegion, outer: list[Group], json_openings: bool) -> list[Signature]:
    head = list(outer)
    if not region.keep_open or (json_openings and region.open.startswith('{"')):
        head.append(_group(region.open))
    if region.close is not None:
        head.append(_group(region.close))
    head = [g for g in head if g]
    sigs = []
    for body in _body_groups(region.body):
        groups = tuple(head + body)
        if groups:
            sigs.append(groups)
    return sigs


def _tool_signatures(spec: FormatSpec, json_openings: bool = False) -> list[Signature]:
    sigs: list[Signature] = []
    for region in spec.tools:
        sigs += _region_signatures(region, [], json_openings)
    for section in spec.sections:
        outer = [g for g in (_group(section.open), _group(section.close)) if g]
        for region in section.calls:
            sigs += _region_signatures(region, outer, json_openings)
    if spec.harmony is not None:
        sigs.append(_harmony_signature(spec.harmony))
    return sigs


def _harmony_signature(harmony: Harmony) -> Signature:
    return tuple(g for g in (_group(*harmony.header_opens), _group(harmony.message), _group(*harmony.ends)) if g)


def _reasoning_signature(reasoning: Reasoning) -> Signature:
    return tuple(g for g in (_group(*reasoning.starts), _group(*reasoning.ends)) if g)


_SKIP_FIELDS = frozenset(
    {
        "name",
        "description",
        "aliases",
        "notes",
        "ids",
        "trim",
        "content_name",
        "raw_args",
        "content_prefix",
        "prompt_markers",  # the prompt side: weaker evidence, kept apart (_prompt_evidence)
    }
)
_JSON_KEY_FIELDS = frozenset({"name_keys", "args_keys", "id_keys", "envelope_keys", "content_keys"})


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _strings(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.name == "wrap_tags":  # tag names, written as <tag>...</tag>
                for tag in getattr(value, f.name):
                    yield f"<{tag}>"
                    yield f"</{tag}>"
            elif f.name not in _SKIP_FIELDS and f.name not in _JSON_KEY_FIELDS:
                yield from _strings(getattr(value, f.name))


@lru_cache(maxsize=256)
def format_markers(spec: FormatSpec) -> tuple[str, ...]:
    """Every special-token spelling a format declaration uses (its markers' atoms), in declaration order."""
    expect(spec, FormatSpec, name="spec", func="format_markers")
    return tuple(dict.fromkeys(atom for text in _strings(spec) for atom in atoms(text)))


def builtin_specs() -> tuple[FormatSpec, ...]:
    """Every built-in and registered format, once each, in declaration order."""
    from turnkit.parse._registry import _index

    return tuple(dict.fromkeys(_index().values()))


# --- matching ---------------------------------------------------------------------------------------------


def _spells(template: str, atom: str) -> bool:
    return atom in template or _json_escaped(atom) in template


def _json_escaped(atom: str) -> str:
    return atom.replace('"', '\\"')


@lru_cache(maxsize=1)
def _declared_by() -> dict[str, int]:
    """How many formats declare each atom (a marker many formats share says little about which one it is)."""
    counts: dict[str, int] = {}
    for spec in builtin_specs():
        for atom in {*format_markers(spec), *(a for m in spec.prompt_markers for a in atoms(m))}:
            counts[atom] = counts.get(atom, 0) + 1
    return counts


def _atom_weight(atom: str) -> float:
    return 1.0 / _declared_by().get(atom, 1)


@dataclass(frozen=True)
class _Score:
    spec: FormatSpec
    groups: int
    weight: float
    spelled: tuple[str, ...]
    order: int
    alternative: int = 0
    """Declaration index of the way of writing a call that matched (a format's first is its own syntax; later
    ones are tolerances, like xLAM's ``<tool_call>``)."""
    prompt: tuple[str, ...] = ()
    """The format's prompt-side markers the template spells."""

    def key(self) -> tuple[int, float, int, int, int, int, int]:
        return (
            -self.groups,
            -round(self.weight, 9),
            -len(self.spelled),
            self.alternative,
            _settings(self.spec),
            len(format_markers(self.spec)),
            self.order,
        )


def _plain(spec: FormatSpec) -> FormatSpec:
    return dataclasses.replace(spec, name="", description="", aliases=(), notes=())


def _settings(spec: FormatSpec) -> int:
    """How many options a declaration sets away from their defaults (a tie goes to the plainest format)."""
    count = 0
    values: tuple[FormatSpec | Reasoning, ...] = (spec, *spec.reasoning)
    for value in values:
        for f in dataclasses.fields(value):
            if f.name in _SKIP_FIELDS or f.name in ("reasoning", "tools", "sections"):
                continue
            default = f.default if f.default is not dataclasses.MISSING else None
            count += getattr(value, f.name) != default
    return count


def _group_weight(template: str, group: Group) -> float | None:
    """The weight of the best marker of ``group`` the template spells, ``None`` when it spells none."""
    best: float | None = None
    for marker in group:
        parts = atoms(marker)
        if parts and all(_spells(template, a) for a in parts):
            weight = sum(map(_atom_weight, parts)) / len(parts)
            best = weight if best is None else max(best, weight)
    return best


def _signature_weight(template: str, sig: Signature) -> float | None:
    total = 0.0
    for group in sig:
        weight = _group_weight(template, group)
        if weight is None:
            return None
        total += weight
    return total


def _score(template: str, spec: FormatSpec, order: int, json_openings: bool) -> _Score | None:
    complete_tools = [
        (len(sig), w, -index)
        for index, sig in enumerate(_tool_signatures(spec, json_openings))
        if (w := _signature_weight(template, sig)) is not None
    ]
    reasoning = [_reasoning_signature(r) for r in spec.reasoning]
    complete_reasoning = [
        (len(sig), w) for sig in reasoning if sig and (w := _signature_weight(template, sig)) is not None
    ]
    prompt = _prompt_evidence(template, spec)
    alternative = 0
    if complete_tools:
        groups_n, weight_n, alternative = max(complete_tools)
        alternative = -alternative
        found = [(groups_n, weight_n), *complete_reasoning]
    elif complete_reasoning and (prompt or (not spec.tools and not spec.sections and spec.harmony is None)):
        # A reasoning block alone names a reasoning-only format, or a format whose family's prompt markers the
        # template writes too (an LFM2 template that writes back <think> but never a tool call).
        found = complete_reasoning
    else:
        return None
    # Markers the model writes around its answer count when the template spells them; end-of-turn markers
    # (shared by whole model families) only add weight.
    extra = [w for marker in spec.discard if (w := _group_weight(template, _group(marker))) is not None]
    ends = [w for marker in spec.ends if (w := _group_weight(template, _group(marker))) is not None]
    groups = sum(n for n, _ in found) + len(extra)
    weight = sum(w for _, w in found) + sum(extra) + sum(ends) + sum(prompt.values())
    return _Score(spec, groups, weight, _spelled(template, spec), order, alternative, tuple(prompt))


def _spelled(template: str, spec: FormatSpec) -> tuple[str, ...]:
    return tuple(a for a in format_markers(spec) if _spells(template, a))


def _prompt_evidence(template: str, spec: FormatSpec) -> dict[str, float]:
    """The format's prompt-side markers the template spells, with their weights."""
    return {m: w for m in spec.prompt_markers if (w := _group_weight(template, _group(m))) is not None}


def _prompt_score(template: str, spec: FormatSpec, order: int) -> _Score | None:
    """A format's score from its prompt-side markers alone (each one spelled is a group)."""
    prompt = _prompt_evidence(template, spec)
    if not prompt:
        return None
    return _Score(spec, len(prompt), sum(prompt.values()), _spelled(template, spec), order, 0, tuple(prompt))


def _template_markers(template: str, specs: Iterable[FormatSpec]) -> tuple[str, ...]:
    every = dict.fromkeys(a for spec in specs for a in format_markers(spec))
    return tuple(a for a in every if _spells(template, a))


def _literal(value: str) -> Callable[[re.Match[str]], str]:
    return lambda _match: value


def fold_constants(template: str) -> str:
    """The template with string constants inlined where it concatenates them into markers.

    ``{% set dsml_token = '｜DSML｜' %}`` ... ``'<' + dsml_token + 'invoke name="'`` becomes
    ``'<｜DSML｜invoke name="'``, so a marker assembled from a constant is spelled as one string.
    """
    folded = template
    for m in _SET_LITERAL.finditer(template):
        name, value = m.group(1), m.group(2) if m.group(2) is not None else m.group(3)
        for quote in ("'", '"'):
            folded = re.sub(rf"{quote}\s*\+\s*{name}\s*\+\s*{quote}", _literal(value), folded)
    return folded


def detect_in_template(template: str) -> Detection:
    """:func:`detect_format` for template text that is already read."""
    template = fold_constants(template)
    specs = builtin_specs()
    # Evidence from the strongest kind down, the first kind any format matches deciding: the model's own
    # markers; the markers a family's templates write around the tool list and tool results; and only when
    # no format's special tokens are there, a bare JSON call's opening the template spells in its instructions
    # ('Respond in the format {"name": ...}', Llama 3.x).
    tiers: tuple[Callable[[int, FormatSpec], _Score | None], ...] = (
        lambda i, spec: _score(template, spec, i, False),
        lambda i, spec: _prompt_score(template, spec, i),
        lambda i, spec: _score(template, spec, i, True),
    )
    scores: list[_Score] = []
    for tier in tiers:
        scores = [s for i, spec in enumerate(specs) if (s := tier(i, spec)) is not None]
        if scores:
            break
    scores.sort(key=_Score.key)
    if not scores:
        seen = _template_markers(template, specs)
        stray = f" (it spells only stray markers: {', '.join(seen)})" if seen else ""
        return Detection(
            FALLBACK_FORMAT,
            "the template writes no built-in format's tool-call or reasoning markers"
            + stray
            + ": generic is llama.cpp's fallback (the model is asked to answer with one JSON object)",
            (),
            "fallback",
        )
    # Declarations identical but for their names (vLLM's per-model reasoning parsers, all plain <think>): the
    # one more parsers share (most aliases) names the family best.
    same = [s for s in scores if s.key()[:-1] == scores[0].key()[:-1] and _plain(s.spec) == _plain(scores[0].spec)]
    best = max(same, key=lambda s: len(s.spec.aliases))
    rest = [s for s in scores if s is not best]
    others = tuple(s.spec.name for s in rest)
    tied = [s for s in rest if s.key()[:-1] == best.key()[:-1]]
    if any(_tool_signatures(s.spec) != _tool_signatures(best.spec) for s in tied):
        names = [best.spec.name, *(s.spec.name for s in tied)]
        return Detection(
            None,
            "the template fits several formats with different markers equally well: " + ", ".join(names),
            best.spelled,
            "ambiguous",
            others,
            best.prompt,
        )
    reason = _reason(best, tier is tiers[1])
    if rest:
        reason += f"; also fits, less specifically: {', '.join(others[:4])}"
    return Detection(best.spec.name, reason, best.spelled, "markers", others, best.prompt)


def _reason(best: _Score, prompt_only: bool) -> str:
    name = best.spec.name
    prompt = f"{len(best.prompt)} of {name}'s prompt-side markers (" + ", ".join(best.prompt) + ")"
    if prompt_only:
        stray = f" (it spells {', '.join(best.spelled)}, not a whole call or reasoning block)" if best.spelled else ""
        return (
            f"the template writes no format's tool-call or reasoning markers{stray}, but it spells {prompt}, "
            "which its family's templates write around the tool list and tool results"
        )
    reason = (
        f"the template spells {len(best.spelled)} of {name}'s markers ("
        + ", ".join(best.spelled)
        + f"), writing {best.groups} of its tool-call/reasoning markers"
    )
    if best.prompt:
        reason += f", and {prompt}"
    return reason + f" (specificity {best.weight:.2f})"


def looks_like_template(text: str) -> bool:
    return bool(_JINJA.search(text))
