"""The examples of docs/sync.md and the module doctests of the sync pieces run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

from tests.corpora import REPO_ROOT


def test_sync_doc_examples() -> None:
    result = doctest.testfile(str(REPO_ROOT / "docs" / "sync.md"), module_relative=False)
    assert result.attempted > 10 and result.failed == 0


@pytest.mark.parametrize(
    "module", ["turnkit.structured._partial_ops", "turnkit.structured._downgrade", "turnkit.serve._sync"]
)
def test_module_doctests(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0
