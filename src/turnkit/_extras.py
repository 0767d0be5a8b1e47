"""Importing optional dependencies: a missing one is a :class:`~turnkit.errors.MissingDependencyError` naming
the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from turnkit.errors import MissingDependencyError

__all__ = ["require"]


def require(module: str, extra: str | None, *, purpose: str) -> ModuleType:
    """Import ``module``, or raise a one-line error saying what to ``pip install`` for ``purpose``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = module.split(".")[0]
        install = f"pip install 'turnkit[{extra}]'" if extra else f"pip install {package}"
        raise MissingDependencyError(f"{purpose} needs the {package!r} package: {install}") from exc
