"""The public door of ``turnkit.outputs``: sorted ``__all__``, every name resolves and says why it exists."""

from __future__ import annotations

import inspect

import turnkit
import turnkit.outputs as outputs


def test_all_sorted_and_resolves() -> None:
    assert list(outputs.__all__) == sorted(outputs.__all__)
    for name in outputs.__all__:
        assert hasattr(outputs, name), name


def test_public_classes_and_functions_have_docstrings() -> None:
    for name in outputs.__all__:
        obj = getattr(outputs, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), name


def test_one_parse_error_and_its_output_subclass() -> None:
    """One ParseError (turnkit's, re-exported); parsers raise its subclass OutputParseError (#16 class 7)."""
    assert outputs.ParseError is turnkit.ParseError
    assert outputs.OutputParseError is turnkit.OutputParseError
    assert issubclass(outputs.OutputParseError, turnkit.ParseError)
    assert issubclass(outputs.OutputParseError, turnkit.TurnkitError)
    names = {name for name in dir(turnkit) + dir(outputs) if name.endswith("ParseError")}
    assert names == {"ParseError", "OutputParseError"}
    assert turnkit.outputs is outputs
