import __future__

import importlib
import types

import pytest

import turnkit

PUBLIC_NAMESPACES = [
    "turnkit",
    "turnkit.batch",
    "turnkit.lint",
    "turnkit.outputs",
    "turnkit.parse",
    "turnkit.render",
    "turnkit.serve",
    "turnkit.structured",
    "turnkit.tools",
]

# Names in an __all__ that are not public non-module names: the version, and the subpackage that
# ``turnkit`` exports as a name (``from turnkit import outputs``).
EXPORTED_EXTRAS = {"turnkit": {"__version__", "outputs"}}


@pytest.mark.parametrize("name", PUBLIC_NAMESPACES)
def test_all_is_exactly_the_public_names(name: str) -> None:
    """``__all__`` lists every public name the namespace defines, and nothing else (httpx's exported-members test)."""
    module = importlib.import_module(name)
    public = {  # dir(), not vars(): ``turnkit`` imports most of its names on first use
        member
        for member in dir(module)
        if not member.startswith("_")
        and not isinstance(value := getattr(module, member), types.ModuleType)
        and value is not __future__.annotations
    }
    assert module.__all__ == sorted(public | EXPORTED_EXTRAS.get(name, set()))
    for member in module.__all__:
        assert hasattr(module, member), member


def test_every_public_namespace_is_tested() -> None:
    import pkgutil

    packages = {f"turnkit.{info.name}" for info in pkgutil.iter_modules(turnkit.__path__) if info.ispkg}
    assert packages - {"turnkit.cli"} <= set(PUBLIC_NAMESPACES)


def test_every_error_derives_from_root():
    from turnkit import errors

    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, turnkit.TurnkitError), name
    assert issubclass(turnkit.TemplateError, ValueError)
    assert issubclass(turnkit.ParseError, ValueError)
    assert not issubclass(turnkit.IncompleteInputError, turnkit.ParseError)
    assert not issubclass(turnkit.UsageError, ValueError)


def test_error_message_names_location():
    err = turnkit.ParseError("unexpected character", position=12, snippet='{"a": x}')
    text = str(err)
    assert "position 12" in text and '{"a": x}' in text
    assert err.code == "parse"


def test_py_typed_marker_ships():
    from importlib.resources import files

    assert files("turnkit").joinpath("py.typed").is_file()
