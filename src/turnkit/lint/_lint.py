"""``lint()``: the portability findings for a chat template, a template file or a model folder."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from turnkit._args import expect, expect_items
from turnkit.errors import TemplateError, TemplateNotFoundError, UsageError
from turnkit.limits import DEFAULT_LIMITS
from turnkit.lint._check import check_source
from turnkit.lint._engines import ENGINES, cross_render, engine_unavailable
from turnkit.lint._finding import LintFinding
from turnkit.render._model_folder import read_model_folder
from turnkit.render._sandbox import sandbox_for

__all__ = ["lint", "load_templates"]


def lint(
    template: str | os.PathLike[str] | Mapping[str, str],
    *,
    engines: Sequence[str] = (),
    path: str | None = None,
) -> list[LintFinding]:
    """The portability findings for a chat template, sorted by template, line and column.

    ``template`` is the template text, a mapping of names to texts, or a path (``os.PathLike``, or a one-line
    string naming an existing file or model folder; a folder is read as :func:`turnkit.read_model_folder` reads
    it, every named template linted). ``engines`` (``"minijinja"``, ``"hf-jinja"``) also renders the template in
    those engines on a standard conversation matrix and reports each render that differs from transformers'
    (``TK901``). A template that does not parse is a ``TK100`` finding, not an exception.

    Example::

        >>> from turnkit import lint
        >>> [f.code for f in lint("{{ messages[0].content.strip() }}{% if add_generation_prompt %}A:{% endif %}")]
        ['TK102', 'TK502']
    """
    expect(
        template,
        (str, os.PathLike, Mapping),
        name="template",
        func="lint",
        accepts="str, os.PathLike or a mapping of names to str",
    )
    expect_items(engines, str, name="engines", func="lint", accepts="a list of engine names (str)")
    expect(path, str, name="path", func="lint", none=True)
    for engine in engines:
        reason = engine_unavailable(engine)
        if reason is not None:
            raise UsageError(reason if engine in ENGINES else f"lint: {reason}")
    templates, label = load_templates(template)
    label = path if path is not None else label
    environment = sandbox_for(DEFAULT_LIMITS)
    findings: list[LintFinding] = []
    named = len(templates) > 1 or next(iter(templates)) != "default"
    for name, text in templates.items():
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        found = check_source(text, environment)
        if engines and not any(f.code == "TK100" for f in found):
            found += cross_render(text, engines)
        findings += [dataclasses.replace(f, template=name if named else None, path=label) for f in found]
    return findings


def load_templates(template: str | os.PathLike[str] | Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """The named template texts ``template`` stands for, and the path they were read from (if any)."""
    if isinstance(template, Mapping):
        return dict(template), None
    if isinstance(template, os.PathLike) or _looks_like_path(template):
        path = Path(template)
        if path.is_dir():
            folder = read_model_folder(path)
            if folder.chat_template is None:
                raise TemplateNotFoundError(f"the model folder {os.fspath(path)!r} has no chat template")
            chat = folder.chat_template
            return ({"default": chat} if isinstance(chat, str) else dict(chat)), os.fspath(path)
        try:
            with open(path, encoding="utf-8") as handle:
                return {"default": handle.read()}, os.fspath(path)
        except UnicodeDecodeError as exc:
            raise TemplateError(f"{os.fspath(path)} is not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc
        except OSError as exc:
            raise TemplateError(f"cannot read {os.fspath(path)}: {exc.strerror or exc}") from exc
    if isinstance(template, str):
        return {"default": template}, None
    raise TypeError(
        f"lint() takes a template text, a path or a mapping of names to texts, not {type(template).__name__}"
    )


def _looks_like_path(text: object) -> bool:
    return (
        isinstance(text, str) and 0 < len(text) < 4096 and "\n" not in text and "{" not in text and os.path.exists(text)
    )
