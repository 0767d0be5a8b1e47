"""The engine facts the rules rest on, rendered again: each construct a rule calls unportable really differs or
fails in minijinja or @huggingface/jinja, and each Python method the rules call portable renders the same."""

from __future__ import annotations

import pytest

from tests.lint.engines import require_engines
from turnkit.lint._check import (
    PORTABLE_METHODS,
    UNPORTABLE_FILTERS,
    UNPORTABLE_GLOBALS,
    UNPORTABLE_METHODS,
    UNPORTABLE_TESTS,
)
from turnkit.lint._engines import Outcome, _node_runner, _render_minijinja
from turnkit.render._template import render_template_string

CTX = {"s": " a,b ", "l": [1, 2], "d": {"a": 1}, "m": [{"role": "u"}], "n": None}
METHOD_CALLS = {
    "join": "s.join(['x', 'y'])",
    "format": "'{}'.format(1)",
    "count": "s.count('a')",
    "find": "s.find('b')",
    "rfind": "s.rfind('b')",
    "index": "l.index(2)",
    "rindex": "s.rindex('b')",
    "splitlines": "s.splitlines()",
    "rsplit": "s.rsplit(',', 1)",
    "partition": "s.partition(',')",
    "rpartition": "s.rpartition(',')",
    "removeprefix": "s.removeprefix(' ')",
    "removesuffix": "s.removesuffix(' ')",
    "isdigit": "s.isdigit()",
    "isnumeric": "s.isnumeric()",
    "isalpha": "s.isalpha()",
    "isalnum": "s.isalnum()",
    "isspace": "s.isspace()",
    "islower": "s.islower()",
    "isupper": "s.isupper()",
    "isascii": "s.isascii()",
    "isdecimal": "s.isdecimal()",
    "isidentifier": "s.isidentifier()",
    "isprintable": "s.isprintable()",
    "istitle": "s.istitle()",
    "casefold": "s.casefold()",
    "swapcase": "s.swapcase()",
    "center": "s.center(9)",
    "ljust": "s.ljust(9)",
    "rjust": "s.rjust(9)",
    "zfill": "s.zfill(9)",
    "expandtabs": "s.expandtabs()",
    "encode": "s.encode()",
    "copy": "d.copy()",
    "append": "l.append(3)",
    "extend": "l.extend([3])",
    "pop": "l.pop()",
    "update": "d.update({})",
}
PORTABLE_CALLS = {
    "strip": "s.strip()",
    "lstrip": "s.lstrip()",
    "rstrip": "s.rstrip()",
    "upper": "s.upper()",
    "lower": "s.lower()",
    "title": "'ab cd'.title()",
    "capitalize": "s.capitalize()",
    "replace": "s.replace('a', 'z')",
    "split": "s.split(',')|join('+')",
    "startswith": "s.startswith(' a')",
    "endswith": "s.endswith('b ')",
    "items": "d.items()|list|length",
    "keys": "d.keys()|list|length",
    "values": "d.values()|list|length",
    "get": "d.get('a')",
}
FILTER_USES = {
    "center": "s|center(9)",
    "forceescape": "s|forceescape",
    "random": "[1]|random",
    "truncate": "s|truncate(3)",
    "urlize": "s|urlize",
    "wordcount": "s|wordcount",
    "wordwrap": "s|wordwrap(9)",
    "xmlattr": "d|xmlattr",
    "count": "l|count",
    "d": "n|d('x')",
    "escape": "'<'|escape",
    "e": "'<'|e",
    "filesizeformat": "1|filesizeformat",
    "format": "'%s'|format(1)",
    "groupby": "m|groupby('role')|list|length",
    "max": "l|max",
    "min": "l|min",
    "pprint": "s|pprint",
    "round": "1.26|round(1)",
    "striptags": "s|striptags",
    "sum": "l|sum",
    "urlencode": "s|urlencode",
    "batch": "l|batch(1)|list|length",
    "slice": "l|slice(1)|list|length",
    "select": "l|select('odd')|list|length",
    "reject": "l|reject('odd')|list|length",
    "attr": "d|attr('a')",
}
TEST_USES = {
    name: f"'T' if (4 is {name} 2) else 'F'"
    for name in ("divisibleby", "eq", "equalto", "ne", "gt", "ge", "lt", "le", "greaterthan", "lessthan", "sameas")
}
TEST_USES.update(
    {
        "escaped": "'T' if s is escaped else 'F'",
        "filter": "'T' if 'trim' is filter else 'F'",
        "float": "'T' if 1.5 is float else 'F'",
        "in": "'T' if 1 is in l else 'F'",
        "test": "'T' if 'odd' is test else 'F'",
        "callable": "'T' if s is callable else 'F'",
    }
)
MUTATORS = ("append", "extend", "pop", "update")
GLOBAL_USES = {
    "dict": "dict(a=1).a",
    "joiner": "joiner(',')()",
    "lipsum": "lipsum(1)|length > 0",
    "cycler": "cycler(1, 2).next()",
}
OTHER_FACTS = {  # rule code -> a construct it flags
    "TK103": "s.strip(' a')",
    "TK104": "'%s!' % s",
    "TK105": "'-' * 3",
    "TK109-chained": "1 < 2 < 3",
    "TK109-float": "1e3",
    "TK110": "'T' if l == [1, 2] else 'F'",
    "TK201-bool": "l|length > 1",
    "TK201-none": "n",
    "TK202": "d",
    "TK301": "'<a>'|tojson",
    "TK302": "d|tojson(sort_keys=true)",
    "TK111": "s|first",
}


def _outcomes(expression: str) -> tuple[Outcome, Outcome, Outcome]:
    source = "{{ " + expression + " }}"
    try:
        python = Outcome(True, render_template_string(source, CTX))
    except Exception as exc:  # noqa: BLE001
        python = Outcome(False, str(exc))
    (mini,) = _render_minijinja(source, [CTX])
    (hf,) = _node_runner().render([(source, CTX)])
    return python, mini, hf


def _same(a: Outcome, b: Outcome) -> bool:
    return (not a.ok and not b.ok) or a == b


@pytest.fixture(autouse=True)
def _engines():
    require_engines("minijinja", "hf-jinja")


UNPORTABLE = (
    [
        pytest.param(METHOD_CALLS[name], id=f"method-{name}")
        for name in UNPORTABLE_METHODS
        if name not in MUTATORS and name != "cycle"
    ]
    + [pytest.param(FILTER_USES[name], id=f"filter-{name}") for name in UNPORTABLE_FILTERS]
    + [pytest.param(TEST_USES[name], id=f"test-{name}") for name in UNPORTABLE_TESTS]
    + [pytest.param(GLOBAL_USES[name], id=f"global-{name}") for name in UNPORTABLE_GLOBALS]
    + [pytest.param(expr, id=code) for code, expr in OTHER_FACTS.items()]
)


@pytest.mark.parametrize("expression", UNPORTABLE)
def test_unportable_construct_differs_somewhere(expression):
    python, mini, hf = _outcomes(expression)
    assert not (_same(python, mini) and _same(python, hf)), (python, mini, hf)


@pytest.mark.parametrize("name", sorted(MUTATORS))
def test_mutating_method_fails_in_transformers_too(name):
    python, _, _ = _outcomes(METHOD_CALLS[name])
    assert not python.ok


@pytest.mark.parametrize("name", sorted(PORTABLE_METHODS))
def test_portable_method_renders_the_same_everywhere(name):
    python, mini, hf = _outcomes(PORTABLE_CALLS[name] + "|string if false else " + PORTABLE_CALLS[name] + "|tojson")
    assert python.ok and python == mini == hf, (python, mini, hf)


def test_loop_cycle_fails_in_hf_jinja():
    source = "{% for i in l %}{{ loop.cycle('a', 'b') }}{% endfor %}"
    (hf,) = _node_runner().render([(source, CTX)])
    assert not hf.ok
