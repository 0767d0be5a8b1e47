"""Which output format a model uses: its folder's ``response_template``, else the format its chat template's
markers name (:mod:`turnkit.parse._detect`).

This module joins ``render`` (reading model folders) and ``parse`` (formats), which must not import each other.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from turnkit._args import check_fields, expect, expect_path
from turnkit.errors import NotATemplateError, TemplateNotFoundError
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.parse._detect import Detection, detect_in_template, looks_like_template
from turnkit.parse._registry import OutputFormat, load_format
from turnkit.render._model_folder import ModelFolder, read_model_folder

__all__ = ["ModelFormat", "detect_format", "model_format", "read_template_input"]


def _folder_template(folder: ModelFolder, path: Path) -> str:
    value = folder.chat_template
    if value is None:
        raise TemplateNotFoundError(f"model folder {str(path)!r} has no chat template")
    if isinstance(value, dict):
        return value.get("tool_use") or value.get("default") or next(iter(value.values()))
    return value


def read_template_input(template_or_folder: str | os.PathLike[str]) -> tuple[str, ModelFolder | None]:
    """The template text of a template string, a template file or a model folder (and the folder, if one)."""
    if isinstance(template_or_folder, str) and looks_like_template(template_or_folder):
        return template_or_folder, None
    if not isinstance(template_or_folder, (str, os.PathLike)):
        raise NotATemplateError(
            "detect_format takes template text, a template file or a model folder, "
            f"not {type(template_or_folder).__name__}"
        )
    path = Path(template_or_folder)
    try:
        is_dir, is_file = path.is_dir(), path.is_file()
    except (OSError, ValueError):  # text with NUL bytes, or too long to be a path
        is_dir = is_file = False
    if is_dir:
        folder = read_model_folder(path)
        return _folder_template(folder, path), folder
    if is_file:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise NotATemplateError(f"cannot read {path} as a chat template: {exc}") from exc
        if not looks_like_template(text):
            raise NotATemplateError(f"{path} is not a Jinja chat template (no {{% %}} or {{{{ }}}} in it)")
        return text, None
    if isinstance(template_or_folder, os.PathLike):
        raise NotATemplateError(f"{str(path)!r} is neither a template file nor a model folder (it does not exist)")
    shown = template_or_folder if len(template_or_folder) <= 60 else template_or_folder[:57] + "..."
    raise NotATemplateError(
        f"{shown!r} is not a chat template: no Jinja tags ({{% %}} or {{{{ }}}}), and no file or folder by that name"
    )


def detect_format(template_or_folder: str | os.PathLike[str]) -> Detection:
    """The built-in output format that parses the model outputs of a chat template, found from its markers.

    ``template_or_folder`` is template text, a path to a ``.jinja`` file, or a model folder (read with
    :func:`~turnkit.read_model_folder`; of named templates, ``tool_use`` is preferred, then ``default``).
    Returns a :class:`~turnkit.Detection` (falsy when no format was chosen; ``reason`` says why). Raises
    :class:`~turnkit.NotATemplateError` when the input is not a template, and
    :class:`~turnkit.TemplateNotFoundError` for a model folder without one. A folder's ``response_template``
    is not considered here: :func:`model_format` prefers it.
    """
    expect_path(template_or_folder, name="template_or_folder", func="detect_format")
    text, _ = read_template_input(template_or_folder)
    return detect_in_template(text)


@dataclass(frozen=True)
class ModelFormat:
    """The output format for a model folder, and which source it came from."""

    format: Any
    """An :class:`~turnkit.OutputFormat` (built-in) or a :class:`~turnkit.ResponseTemplateFormat`; ``None``
    when neither source gives one."""
    source: Literal["response_template", "detected", "none"]
    detection: Detection | None
    """What the chat template's markers say (also when the response template was used), ``None`` when the
    folder has no chat template."""

    def __post_init__(self) -> None:
        check_fields(self)

    @property
    def reason(self) -> str:
        if self.source == "response_template":
            also = f"; from the chat template alone: {self.detection.reason}" if self.detection else ""
            return "the folder ships a response_template (tokenizer_config.json), which takes precedence" + also
        return self.detection.reason if self.detection else "the folder has neither a response_template nor a template"


def model_format(path: str | os.PathLike[str], *, limits: Limits = DEFAULT_LIMITS) -> ModelFormat:
    """The output format of a model folder: its ``response_template`` when it ships one, else the detected one."""
    expect_path(path, name="path", func="model_format")
    expect(limits, Limits, name="limits", func="model_format")
    folder = read_model_folder(path, limits=limits)
    detection: Detection | None = None
    if folder.chat_template is not None:
        detection = detect_in_template(_folder_template(folder, Path(path)))
    template = folder.response_template
    if template is not None:
        from turnkit.parse._response_template import ResponseTemplateFormat

        return ModelFormat(ResponseTemplateFormat(template, limits=limits), "response_template", detection)
    if detection is not None and detection.format is not None:
        fmt: OutputFormat = load_format(detection.format)
        return ModelFormat(fmt, "detected", detection)
    return ModelFormat(None, "none", detection)
