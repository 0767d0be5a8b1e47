"""Every real chat template x a spread of conversations: turnkit and transformers 5.23 give the same text
or both fail."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.corpora import CORPORA, corpus_path
from tests.render.conversations import cases, function_tool_cases
from tests.render.reference import SPECIAL_TOKENS, reference_render, stop_clocks
from turnkit import ChatTemplate, TemplateError

pytestmark = [pytest.mark.corpus, pytest.mark.reference]


@pytest.fixture(autouse=True)
def _stopped_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    stop_clocks(monkeypatch)


def _template_files() -> list[Any]:
    root = CORPORA / "templates"
    files = sorted(root.rglob("*.jinja")) if root.is_dir() else []
    if not files:
        return [pytest.param(None, id="missing:templates")]
    return [pytest.param(path, id=str(path.relative_to(root))) for path in files]


def _turnkit_render(template: ChatTemplate | TemplateError, conversation: Any, options: dict[str, Any]) -> Any:
    if isinstance(template, TemplateError):
        return "error", template
    try:
        return "ok", template.render(conversation, **options)
    except TemplateError as exc:
        return "error", exc


def _copy_options(options: dict[str, Any]) -> dict[str, Any]:
    # deep copies, except Python-function tools (copying a function gives the same function anyway)
    return {k: (list(v) if k == "tools" else copy.deepcopy(v)) for k, v in options.items()}


def compare_template(source: str) -> list[tuple[str, Any, Any]]:
    """(case, turnkit outcome, transformers outcome) for every case where they disagree."""
    try:
        template: ChatTemplate | TemplateError = ChatTemplate(source, special_tokens=SPECIAL_TOKENS)
    except TemplateError as exc:
        template = exc
    disagreements = []
    for name, conversation, options in cases() + function_tool_cases():
        ours = _turnkit_render(template, copy.deepcopy(conversation), _copy_options(options))
        theirs = reference_render(copy.deepcopy(conversation), source, **_copy_options(options))
        if ours[0] != theirs[0] or (ours[0] == "ok" and ours[1] != theirs[1]):
            disagreements.append((name, ours, theirs))
    return disagreements


@pytest.mark.parametrize("path", _template_files())
def test_same_text_or_same_failure_as_transformers(path: Path | None) -> None:
    corpus_path("templates")
    assert path is not None
    disagreements = compare_template(path.read_text(encoding="utf-8"))
    assert not disagreements, disagreements


def test_bundled_demo_template_matches_transformers() -> None:
    from importlib.resources import files

    source = files("turnkit").joinpath("data", "chatml-tools.jinja").read_text(encoding="utf-8")
    assert not compare_template(source)
