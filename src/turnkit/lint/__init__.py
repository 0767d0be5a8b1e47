"""Portability of chat templates: rules over the Jinja AST, and cross-engine renders (minijinja, @huggingface/jinja).

``lint(template)`` returns typed findings (stable code, severity, line and column, a fix hint); every rule is in
:data:`RULES`. The engines are imported only when a cross-engine render is asked for.
"""

from __future__ import annotations

from turnkit.lint._engines import ENGINES, MATRIX
from turnkit.lint._finding import LintFinding, Severity
from turnkit.lint._lint import lint
from turnkit.lint._rules import RULES, Rule

__all__ = ["ENGINES", "LintFinding", "MATRIX", "RULES", "Rule", "Severity", "lint"]
