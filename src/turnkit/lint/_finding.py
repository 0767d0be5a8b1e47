"""What the linter reports: one typed finding per problem, with a stable code, a place and a fix hint."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from turnkit._args import check_fields

__all__ = ["LintFinding", "Severity"]

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True, slots=True)
class LintFinding:
    """One portability problem in a chat template.

    ``code`` is stable (``TK101``...); ``line`` and ``column`` are 1-based in the template text. Findings from a
    cross-engine render (``TK901``) also name the ``engine``, the conversation ``case``, the first differing
    ``position`` in the rendered prompt, and the ``expected`` (turnkit, equal to transformers) and ``actual``
    snippets there.
    """

    code: str
    severity: Severity
    message: str
    hint: str
    line: int = 1
    column: int = 1
    template: str | None = None
    """The template's name when the input had several named templates (a model folder), else ``None``."""
    path: str | None = None
    engine: str | None = None
    case: str | None = None
    position: int | None = None
    expected: str | None = None
    actual: str | None = None

    def __post_init__(self) -> None:
        check_fields(self)

    def to_dict(self) -> dict[str, Any]:
        """The finding as a JSON-ready dict (``None`` fields left out)."""
        return {key: value for key, value in asdict(self).items() if value is not None}

    def format(self) -> str:
        """``file:line:col: CODE severity: message (hint: ...)``, as a compiler prints it."""
        where = self.path or "<template>"
        if self.template is not None:
            where += f"[{self.template}]"
        return f"{where}:{self.line}:{self.column}: {self.code} {self.severity}: {self.message} (hint: {self.hint})"
