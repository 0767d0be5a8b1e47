"""Format detection measured on the corpus: ``python -m tests.parse.detect_report``.

Every model-output record that names its chat template (``context.template``, llama.cpp records) is a case
(once per template when it names several):
the template (``templates/<name>``) goes through :func:`turnkit.detect_format`, and the case passes when the
detected format is the record's format (``corpus_cases`` label mapping), or parses the record's output to
the very same message as that format does (the Mistral variants differ only in streaming order). Prints the
per-family table that docs/formats.md shows.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import defaultdict
from dataclasses import dataclass
from functools import cache

from tests.corpora import CORPORA
from tests.parse.corpus_cases import Case, cases
from tests.parse.test_corpus import run_case
from turnkit import Detection, detect_format

# Templates whose detection does not parse their records, with the reason (none since the LFM2 templates that
# never write a tool call back are recognised by their prompt-side markers, "List of tools:").
KNOWN_MISSES: dict[str, str] = {}


@dataclass
class Outcome:
    case: Case
    template: str
    detection: Detection
    same_format: bool
    same_parse: bool

    @property
    def ok(self) -> bool:
        return self.same_format or self.same_parse


@cache
def _detect(template: str) -> Detection:
    return detect_format(CORPORA / "templates" / template)


def templates_of(case: Case) -> list[str]:
    """The templates a record names (llama.cpp runs some outputs under several: each is a case)."""
    template = case.record.get("context", {}).get("template")
    names = template if isinstance(template, list) else [template]
    return [name for name in names if isinstance(name, str)]


def outcomes() -> list[Outcome]:
    out = []
    for case, template in ((c, t) for c in cases() for t in templates_of(c)):
        detection = _detect(template)
        same_format = detection.format == case.format
        same_parse = False
        if not same_format and detection.format is not None and case.record.get("output") is not None:
            want, _ = run_case(case)
            got, _ = run_case(dataclasses.replace(case, format=detection.format))
            same_parse = want == got
        out.append(Outcome(case, template, detection, same_format, same_parse))
    return out


def table(results: list[Outcome]) -> str:
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    templates: dict[str, set[str]] = defaultdict(set)
    for o in results:
        row = rows[o.case.record["format"]]
        row[0] += o.same_format
        row[1] += o.ok
        row[2] += 1
        templates[o.case.record["format"]].add(o.template)
    lines = [
        "| family (record label) | templates | cases detected as the label | detected to a format that parses them |",
        "|---|---|---|---|",
    ]
    for family in sorted(rows):
        same, ok, total = rows[family]
        lines.append(f"| {family} | {len(templates[family])} | {same}/{total} | {ok}/{total} |")
    ok = sum(r[1] for r in rows.values())
    total = sum(r[2] for r in rows.values())
    families_ok = sum(1 for r in rows.values() if r[1] == r[2])
    lines.append("")
    lines.append(
        f"**{ok} / {total} cases ({100 * ok / total:.1f} %), {families_ok} / {len(rows)} families "
        f"({100 * families_ok / len(rows):.1f} %) fully detected.**"
    )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    results = outcomes()
    print(table(results))
    misses = sorted({(o.template, o.case.record["format"], o.detection.format) for o in results if not o.ok})
    if misses:
        print("\nMisses:")
        for template, label, got in misses:
            print(f"- {template} ({label}): detected {got}; {KNOWN_MISSES.get(template, 'no reason recorded')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
