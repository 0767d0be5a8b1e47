"""The linter over the 163 corpus templates: every reported divergence is re-rendered and reproduced, every
template without an error finding renders identically under every engine that ran, and docs/portability.md's
table is these numbers (regenerate it with ``TURNKIT_WRITE_PORTABILITY_TABLE=1 pytest tests/lint/test_corpus.py``).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.corpora import REPO_ROOT, corpus_path
from turnkit import lint
from turnkit.lint import ENGINES, MATRIX, RULES
from turnkit.lint._engines import compare, engine_renders, engine_unavailable, render_case

DOC = REPO_ROOT / "docs" / "portability.md"
START, END = "<!-- corpus-table:start -->", "<!-- corpus-table:end -->"


def _engines() -> list[str]:
    available = [engine for engine in ENGINES if engine_unavailable(engine) is None]
    if os.environ.get("CI", "").lower() == "true" and len(available) < len(ENGINES):
        pytest.fail(f"CI=true but engines are missing: {[engine_unavailable(e) for e in ENGINES]}")
    return available


@pytest.mark.corpus
def test_corpus_divergences_are_real_and_predicted():
    root = corpus_path("templates")
    engines = _engines()
    started = time.perf_counter()
    paths = sorted(root.rglob("*.jinja"))
    flagged: Counter[str] = Counter()
    diverging: Counter[str] = Counter()
    unpredicted = []
    cases = {case.name: case for case in MATRIX}
    for path in paths:
        findings = lint(path, engines=engines)
        source = path.read_text(encoding="utf-8")
        for code in {f.code for f in findings}:
            flagged[code] += 1
        for engine in {f.engine for f in findings if f.engine is not None}:
            diverging[engine] += 1
        divergences = [f for f in findings if f.code == "TK901"]
        for engine in {f.engine for f in divergences}:  # reproduce: render both again, compare again
            assert engine is not None
            reported = [f for f in divergences if f.engine == engine]
            again_cases = [cases[str(f.case)] for f in reported]
            outcomes = engine_renders(engine, source, again_cases)
            for finding, case, outcome in zip(reported, again_cases, outcomes, strict=True):
                reference = render_case(source, case)
                assert reference is not None
                again = compare(engine, case.name, reference, outcome)
                assert again is not None and again.message == finding.message, (path.name, finding.message)
        if divergences and not any(f.severity == "error" and f.code != "TK901" for f in findings):
            unpredicted.append((path.relative_to(root).as_posix(), divergences[0].message))
    elapsed = time.perf_counter() - started
    assert not unpredicted, unpredicted
    if engines == list(ENGINES):
        table = _table(len(paths), flagged, diverging)
        _check_doc(table)
    print(f"{len(paths)} templates linted with {engines} in {elapsed:.1f} s")


def _table(total: int, flagged: Counter[str], diverging: Counter[str]) -> str:
    lines = [
        f"Templates: {total}; conversations per template and engine: {len(MATRIX)}.",
        "",
        "| rule | severity | what | templates flagged |",
        "|---|---|---|---|",
    ]
    for code, rule in RULES.items():
        if code != "TK901":
            title = rule.title.replace("|", "\\|")
            lines.append(f"| {code} | {rule.severity} | {title} | {flagged[code]} |")
    lines += ["", "| engine | templates whose render differs from transformers (any conversation) |", "|---|---|"]
    lines += [f"| {engine} | {diverging[engine]} |" for engine in ENGINES]
    return "\n".join(lines)


def _check_doc(table: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    before, _, rest = text.partition(START)
    _, _, after = rest.partition(END)
    expected = f"{before}{START}\n{table}\n{END}{after}"
    if os.environ.get("TURNKIT_WRITE_PORTABILITY_TABLE") == "1":
        Path(DOC).write_text(expected, encoding="utf-8")
        return
    assert text == expected, "docs/portability.md's corpus table is stale: rerun with TURNKIT_WRITE_PORTABILITY_TABLE=1"
