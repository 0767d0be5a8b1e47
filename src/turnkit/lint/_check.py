"""The static checks: one walk over the Jinja AST (and the lexer's tokens, for what the AST forgets)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

import jinja2
import jinja2.exceptions
import jinja2.nodes as nodes

from turnkit.lint._finding import LintFinding
from turnkit.lint._rules import RULES

__all__ = ["check_source"]

_N = TypeVar("_N", bound=nodes.Node)

# -- engine facts (each one re-checked by tests/lint/test_engine_facts.py) -------------------------------------

# Python methods both engines run (minijinja through pycompat), with the filter to use instead.
PORTABLE_METHODS: dict[str, str] = {
    "strip": "|trim",
    "lstrip": "|trim (both sides)",
    "rstrip": "|trim (both sides)",
    "upper": "|upper",
    "lower": "|lower",
    "title": "|title",
    "capitalize": "|capitalize",
    "replace": "|replace(a, b)",
    "split": "nothing portable (keep it, or pass the pieces in as data)",
    "startswith": "x[:n] == 'prefix'",
    "endswith": "x[-n:] == 'suffix'",
    "items": "|items",
    "keys": "|list",
    "values": "|map(attribute=...)",
    "get": "x['key'] if 'key' in x else default",
}
# Python methods at least one engine lacks: name -> (engines lacking it, what to use).
UNPORTABLE_METHODS: dict[str, tuple[str, str]] = {
    "join": ("@huggingface/jinja", "|join(sep)"),
    "format": ("@huggingface/jinja", "~ concatenation"),
    "count": ("@huggingface/jinja", "|length, or a loop with a namespace counter"),
    "find": ("@huggingface/jinja", "the 'in' operator"),
    "rfind": ("@huggingface/jinja", "the 'in' operator"),
    "index": ("minijinja and @huggingface/jinja", "the 'in' operator, or a loop"),
    "rindex": ("minijinja and @huggingface/jinja", "the 'in' operator, or a loop"),
    "splitlines": ("@huggingface/jinja", ".split('\\n')"),
    "rsplit": ("minijinja and @huggingface/jinja", ".split(sep) and |last"),
    "partition": ("minijinja and @huggingface/jinja", ".split(sep)"),
    "rpartition": ("minijinja and @huggingface/jinja", ".split(sep)"),
    "removeprefix": ("minijinja and @huggingface/jinja", "slicing: x[n:]"),
    "removesuffix": ("minijinja and @huggingface/jinja", "slicing: x[:-n]"),
    "isdigit": ("@huggingface/jinja", "is number (on data that is a number)"),
    "isnumeric": ("@huggingface/jinja", "is number"),
    "isalpha": ("@huggingface/jinja", "no portable test"),
    "isalnum": ("@huggingface/jinja", "no portable test"),
    "isspace": ("@huggingface/jinja", "x|trim == ''"),
    "islower": ("@huggingface/jinja", "x == x|lower"),
    "isupper": ("@huggingface/jinja", "x == x|upper"),
    "isascii": ("@huggingface/jinja", "no portable test"),
    "isdecimal": ("minijinja and @huggingface/jinja", "is number"),
    "isidentifier": ("minijinja and @huggingface/jinja", "no portable test"),
    "isprintable": ("minijinja and @huggingface/jinja", "no portable test"),
    "istitle": ("minijinja and @huggingface/jinja", "x == x|title"),
    "casefold": ("minijinja and @huggingface/jinja", "|lower"),
    "swapcase": ("minijinja and @huggingface/jinja", "no portable equivalent"),
    "center": ("minijinja and @huggingface/jinja", "write the padding out"),
    "ljust": ("minijinja and @huggingface/jinja", "write the padding out"),
    "rjust": ("minijinja and @huggingface/jinja", "write the padding out"),
    "zfill": ("minijinja and @huggingface/jinja", "write the padding out"),
    "expandtabs": ("minijinja and @huggingface/jinja", "|replace('\\t', '    ')"),
    "encode": ("minijinja and @huggingface/jinja", "nothing: templates work on text"),
    "copy": ("minijinja and @huggingface/jinja", "use the value itself (templates cannot mutate it)"),
    "append": ("every engine (and transformers' sandbox)", "a namespace list: ns.items = ns.items + [x]"),
    "extend": ("every engine (and transformers' sandbox)", "ns.items = ns.items + other"),
    "pop": ("every engine (and transformers' sandbox)", "slicing or |reject"),
    "update": ("every engine (and transformers' sandbox)", "a namespace attribute"),
    "cycle": ("@huggingface/jinja (loop.cycle)", "loop.index0 % 2 to pick one of two values"),
}
# jinja2 filters at least one engine lacks: name -> engines lacking it.
UNPORTABLE_FILTERS: dict[str, str] = {
    **dict.fromkeys(
        ("center", "forceescape", "random", "truncate", "urlize", "wordcount", "wordwrap", "xmlattr"),
        "minijinja and @huggingface/jinja",
    ),
    **dict.fromkeys(
        (
            "count",
            "d",
            "escape",
            "e",
            "filesizeformat",
            "format",
            "groupby",
            "max",
            "min",
            "pprint",
            "round",
            "striptags",
            "sum",
            "urlencode",
            "batch",
            "slice",
            "select",
            "reject",
        ),
        "@huggingface/jinja",
    ),
    "attr": "minijinja (returns the key, not the attribute) and @huggingface/jinja",
}
UNPORTABLE_TESTS: dict[str, str] = {
    **dict.fromkeys(
        (
            "divisibleby",
            "eq",
            "equalto",
            "ne",
            "gt",
            "ge",
            "lt",
            "le",
            "greaterthan",
            "lessthan",
            "escaped",
            "filter",
            "float",
            "in",
            "sameas",
            "test",
        ),
        "@huggingface/jinja",
    ),
    "callable": "minijinja",
}
UNPORTABLE_GLOBALS: dict[str, str] = {
    "dict": "@huggingface/jinja",
    "joiner": "@huggingface/jinja",
    "lipsum": "minijinja and @huggingface/jinja",
    "cycler": "minijinja and @huggingface/jinja",
}
KNOWN_GLOBALS = frozenset(
    {
        "raise_exception",
        "strftime_now",
        "range",
        "namespace",
        "dict",
        "lipsum",
        "cycler",
        "joiner",
        "caller",
        "loop",
        "super",
        "self",
        "varargs",
        "kwargs",
    }
)
# Filters whose result is a list (printing it prints a Python repr in transformers, JSON in @huggingface/jinja).
_LIST_FILTERS = frozenset(
    {
        "list",
        "dictsort",
        "items",
        "map",
        "select",
        "reject",
        "selectattr",
        "rejectattr",
        "unique",
        "sort",
        "batch",
        "slice",
        "groupby",
    }
)
# Names that hold dicts or lists in chat-template inputs.
_STRUCTURED_NAMES = frozenset(
    {
        "messages",
        "message",
        "tools",
        "tool",
        "documents",
        "tool_calls",
        "tool_call",
        "parameters",
        "properties",
        "arguments",
        "function",
        "ns",
    }
)
# Filters that iterate their input; @huggingface/jinja has none of them for strings.
_ITERATING_FILTERS = frozenset(
    {
        "selectattr",
        "rejectattr",
        "map",
        "list",
        "first",
        "last",
        "select",
        "reject",
        "sort",
        "unique",
        "batch",
        "slice",
        "groupby",
    }
)
_TOJSON_KWARGS_MINIJINJA_LACKS = frozenset({"sort_keys", "ensure_ascii", "separators"})


class _Locator:
    """Exact line and column of lexer tokens, found again in the source (the lexer forgets columns)."""

    def __init__(self, source: str, tokens: Iterable[tuple[int, str, str]]) -> None:
        self.tokens: list[tuple[int, int, str, str]] = []  # (line, column, type, value)
        line_starts = [0]
        for at, char in enumerate(source):
            if char == "\n":
                line_starts.append(at + 1)
        pos = 0
        for _, kind, value in tokens:
            if not value:
                continue
            found = source.find(value, pos)
            if found < 0:
                continue
            line = _bisect(line_starts, found)
            self.tokens.append((line + 1, found - line_starts[line] + 1, kind, value))
            pos = found + len(value)
        self._used: dict[tuple[int, str], int] = {}

    def column(self, line: int, value: str | tuple[str, ...]) -> tuple[int, int]:
        """(line, column) of the next not-yet-reported ``value`` token (or one of several) at or after ``line``."""
        values = (value,) if isinstance(value, str) else value
        key = (line, values[0])
        skip = self._used.get(key, 0)
        self._used[key] = skip + 1
        first: tuple[int, int] | None = None
        for tok_line, col, _, tok_value in self.tokens:
            if tok_line < line or tok_value not in values:
                continue
            if first is None:
                first = (tok_line, col)
            if skip == 0:
                return tok_line, col
            skip -= 1
        return first or (line, 1)


def _bisect(starts: list[int], offset: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _Checker:
    def __init__(self, source: str, environment: jinja2.Environment) -> None:
        self.source = source
        self.findings: list[LintFinding] = []
        self.names_read: set[str] = set()
        self.defined: set[str] = set()
        self.assigned: set[str] = set()
        self.lines = source.split("\n")
        # A plain lexer: every token as written (the chat-template environment's lexer trims block whitespace).
        self.locator = _Locator(source, jinja2.Environment().lex(source))
        self.environment = environment

    # -- reporting ----------------------------------------------------------------------------------------

    def report(
        self, code: str, line: int, needle: str | tuple[str, ...] | None, message: str, hint: str | None = None
    ) -> None:
        rule = RULES[code]
        column = 1
        if needle is not None:
            line, column = self.locator.column(line, needle)
        self.findings.append(LintFinding(code, rule.severity, message, hint or rule.hint, line, column))

    # -- the walk -----------------------------------------------------------------------------------------

    def run(self, tree: nodes.Template) -> None:
        for node in tree.find_all((nodes.Macro, nodes.Assign, nodes.AssignBlock, nodes.For, nodes.CallBlock)):
            self._collect_definitions(node)
        self.visit(tree, frozenset())
        self.check_tokens()
        if "add_generation_prompt" not in self.names_read:
            self.report(
                "TK501",
                1,
                None,
                "the template never reads add_generation_prompt: a caller asking for a generation prompt gets none",
            )
        if "tools" not in self.names_read:
            self.report("TK502", 1, None, "the template never reads 'tools': tool schemas passed in are dropped")

    def _collect_definitions(self, node: nodes.Node) -> None:
        if isinstance(node, nodes.Macro):
            self.defined.add(node.name)
            self.defined.update(arg.name for arg in node.args)
        elif isinstance(node, nodes.Assign | nodes.AssignBlock | nodes.For):
            for name in _self_and_all(node.target, nodes.Name):
                self.defined.add(name.name)
                if not isinstance(node, nodes.For):
                    self.assigned.add(name.name)
        elif isinstance(node, nodes.CallBlock):
            self.defined.update(arg.name for arg in node.args)

    def visit(self, node: nodes.Node, strings: frozenset[str]) -> None:
        """Walk ``node``; ``strings`` holds the reprs of expressions known to be strings here (an 'is string' guard)."""
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is not None and method(node, strings):
            return
        for child in node.iter_child_nodes():
            self.visit(child, strings)

    def visit_If(self, node: nodes.If, strings: frozenset[str]) -> bool:
        self.visit(node.test, strings)
        positive, negative = _string_guards(node.test)
        checked = _checked(node.test)
        positive, negative = positive | checked, negative | checked
        for child in node.body:
            self.visit(child, strings | positive)
        for child in node.elif_:
            self.visit(child, strings | negative)
        for child in node.else_:
            self.visit(child, strings | negative)
        return True

    def visit_CondExpr(self, node: nodes.CondExpr, strings: frozenset[str]) -> bool:
        self.visit(node.test, strings)
        positive, negative = _string_guards(node.test)
        checked = _checked(node.test)
        positive, negative = positive | checked, negative | checked
        self.visit(node.expr1, strings | positive)
        if node.expr2 is not None:
            self.visit(node.expr2, strings | negative)
        return True

    def visit_Output(self, node: nodes.Output, strings: frozenset[str]) -> bool:
        for child in node.nodes:
            if isinstance(child, nodes.TemplateData):
                self._check_whitespace(child)
            else:
                self._check_printed(child, strings)
        return False

    def visit_Concat(self, node: nodes.Concat, strings: frozenset[str]) -> bool:
        for child in node.nodes:
            self._check_printed(child, strings)
        return False

    def visit_For(self, node: nodes.For, strings: frozenset[str]) -> bool:
        target = node.iter
        if (
            isinstance(target, nodes.Name)
            and target.name in ("tools", "documents")
            and f"name:{target.name}" not in strings
            and target.name not in self.assigned
        ):
            self.report(
                "TK112",
                node.lineno,
                target.name,
                f"loops over '{target.name}', which is none when the "
                "caller gives none: transformers fails there, minijinja renders nothing",
            )
        if _last_name(target) == "content" and f"checked:{repr(target)}" not in strings:
            self.report(
                "TK111",
                node.lineno,
                "content",
                "loops over message content, which is usually a string: @huggingface/jinja cannot loop over a string",
            )
        if node.test is not None:
            checked = _checked(node.test)
            self.visit(node.iter, strings)
            self.visit(node.test, strings)
            for child in node.body:
                self.visit(child, strings | checked)
            for child in node.else_:
                self.visit(child, strings)
            return True
        return False

    def visit_Macro(self, node: nodes.Macro, strings: frozenset[str]) -> bool:
        params = frozenset(f"name:{arg.name}" for arg in node.args)
        for default in node.defaults:
            self.visit(default, strings)
        for statement in node.body:
            self.visit(statement, strings | params)
        return True

    def visit_Add(self, node: nodes.Add, strings: frozenset[str]) -> bool:
        for operand in (node.left, node.right):
            if _printed_kind(operand, strings) == "structure":
                self.report(
                    "TK202",
                    operand.lineno,
                    _needle(operand),
                    "adds a dict or list to text with '+': transformers fails, @huggingface/jinja writes JSON",
                )
        return False

    def visit_Name(self, node: nodes.Name, strings: frozenset[str]) -> bool:
        self.names_read.add(node.name)
        return True

    def visit_Call(self, node: nodes.Call, strings: frozenset[str]) -> bool:
        callee = node.node
        if isinstance(callee, nodes.Getattr):
            self._check_method(node, callee)
        elif isinstance(callee, nodes.Name):
            name = callee.name
            if name in UNPORTABLE_GLOBALS:
                self.report("TK108", node.lineno, name, f"{name}() is not defined in {UNPORTABLE_GLOBALS[name]}")
            elif name == "strftime_now":
                self.report("TK602", node.lineno, name, "strftime_now() puts today's date into the prompt")
            elif name not in KNOWN_GLOBALS and name not in self.defined:
                self.report(
                    "TK601",
                    node.lineno,
                    name,
                    f"{name}() is not defined: the render fails with an 'undefined' error instead of a message",
                )
        return False

    def visit_Filter(self, node: nodes.Filter, strings: frozenset[str]) -> bool:
        self._check_filter(node.name, node, strings)
        return False

    def visit_FilterBlock(self, node: nodes.FilterBlock, strings: frozenset[str]) -> bool:
        filt: Any = node.filter
        while isinstance(filt, nodes.Filter):
            self._check_filter(filt.name, filt)
            filt = filt.node
        for child in node.body:
            self.visit(child, strings)
        return True

    def visit_Test(self, node: nodes.Test, strings: frozenset[str]) -> bool:
        name = node.name
        if name in UNPORTABLE_TESTS:
            self.report("TK107", node.lineno, name, f"the test '{name}' is not available in {UNPORTABLE_TESTS[name]}")
        elif name not in self.environment.tests:
            self.report(
                "TK107",
                node.lineno,
                name,
                f"'{name}' is not a Jinja test: the template fails everywhere",
                "use a built-in test (defined, none, string, number, mapping, sequence...)",
            )
        return False

    def visit_Mod(self, node: nodes.Mod, strings: frozenset[str]) -> bool:
        if _is_str_const(node.left) or isinstance(node.right, nodes.Tuple):
            self.report("TK104", node.lineno, "%", "'%' formats a string printf-style, which only Python Jinja does")
        return False

    def visit_Mul(self, node: nodes.Mul, strings: frozenset[str]) -> bool:
        if _is_str_const(node.left) or _is_str_const(node.right):
            self.report("TK105", node.lineno, "*", "a string multiplied by a number fails in @huggingface/jinja")
        return False

    def visit_Compare(self, node: nodes.Compare, strings: frozenset[str]) -> bool:
        if len(node.ops) > 1:
            self.report(
                "TK109",
                node.lineno,
                None,
                "a chained comparison (a < b < c) fails in @huggingface/jinja",
                "split it: a < b and b < c",
            )
        operands = [node.expr, *(op.expr for op in node.ops)]
        if any(op.op in ("eq", "ne") for op in node.ops) and any(
            isinstance(o, nodes.List | nodes.Tuple | nodes.Dict) for o in operands
        ):
            self.report(
                "TK110",
                node.lineno,
                "==" if any(op.op == "eq" for op in node.ops) else "!=",
                "== on a list or dict literal is always false in @huggingface/jinja (identity, not value)",
            )
        return False

    def visit_With(self, node: nodes.With, strings: frozenset[str]) -> bool:
        self.report(
            "TK109", node.lineno, "with", "{% with %} fails to parse in @huggingface/jinja", "use {% set %} instead"
        )
        return False

    def visit_CallBlock(self, node: nodes.CallBlock, strings: frozenset[str]) -> bool:
        call = node.call
        if isinstance(call, nodes.Call) and isinstance(call.node, nodes.ExtensionAttribute):
            if call.node.name == "_generation_support":
                self.report(
                    "TK109",
                    node.lineno,
                    "generation",
                    "{% generation %} (transformers' assistant-mask tag) fails to parse in minijinja",
                    "keep a copy without {% generation %} for servers, or accept that minijinja refuses it",
                )
                for child in node.body:
                    self.visit(child, strings)
                return True
        return False

    # -- pieces -------------------------------------------------------------------------------------------

    def _check_method(self, call: nodes.Call, callee: nodes.Getattr) -> None:
        name = callee.attr
        if name in ("strip", "lstrip", "rstrip") and call.args:
            self.report(
                "TK103",
                call.lineno,
                name,
                f".{name}(chars) strips the given characters in Python and minijinja, but all whitespace "
                "in @huggingface/jinja",
            )
        elif name in PORTABLE_METHODS:
            self.report(
                "TK102", call.lineno, name, f".{name}() is a Python method; portable spelling: {PORTABLE_METHODS[name]}"
            )
        elif name in UNPORTABLE_METHODS:
            engines, instead = UNPORTABLE_METHODS[name]
            self.report("TK101", call.lineno, name, f".{name}() is not available in {engines}", f"use {instead}")
        elif isinstance(callee.node, nodes.Name) and callee.node.name in self.defined | KNOWN_GLOBALS:
            return  # a macro or a namespace's callable: not a Python method
        else:
            self.report(
                "TK101",
                call.lineno,
                name,
                f".{name}() is a Python method that minijinja and @huggingface/jinja lack",
                "use a filter, or pass the computed value in as data",
            )

    def _check_filter(self, name: str, node: nodes.Filter, strings: frozenset[str] = frozenset()) -> None:
        if (
            name in _ITERATING_FILTERS
            and node.node is not None
            and _last_name(node.node) == "content"
            and f"checked:{repr(node.node)}" not in strings
        ):
            self.report(
                "TK111",
                node.lineno,
                name,
                f"|{name} on message content, which is usually a string: @huggingface/jinja has no {name} for strings",
            )
        if name in UNPORTABLE_FILTERS:
            self.report(
                "TK106", node.lineno, name, f"the filter '{name}' is not available in {UNPORTABLE_FILTERS[name]}"
            )
        elif name == "map" and node.args and not any(kw.key == "attribute" for kw in node.kwargs):
            self.report(
                "TK106",
                node.lineno,
                name,
                "map('filter') fails in @huggingface/jinja (only map(attribute='x') works)",
                "loop over the items, or map(attribute=...)",
            )
        elif name == "tojson":
            bad = sorted(str(kw.key) for kw in node.kwargs if kw.key in _TOJSON_KWARGS_MINIJINJA_LACKS)
            if bad:
                self.report("TK302", node.lineno, name, f"tojson({', '.join(bad)}=...) fails in minijinja")
            else:
                self.report(
                    "TK301",
                    node.lineno,
                    name,
                    "|tojson: minijinja escapes < > & ' in strings and "
                    "@huggingface/jinja prints 1.0 as 1, so JSON with those differs from transformers",
                )
        elif name not in self.environment.filters:
            self.report(
                "TK106",
                node.lineno,
                name,
                f"'{name}' is not a Jinja filter: the template fails everywhere",
                "use a built-in filter",
            )

    def _check_printed(self, expr: nodes.Expr, strings: frozenset[str]) -> None:
        kind = _printed_kind(expr, strings)
        if kind == "bool":
            self.report(
                "TK201",
                expr.lineno,
                _needle(expr),
                "prints a boolean or none: True/False/None in Python, true/false/'' in @huggingface/jinja",
            )
        elif kind == "structure":
            self.report(
                "TK202",
                expr.lineno,
                _needle(expr),
                "prints a dict or list: Python repr in transformers and minijinja, JSON in @huggingface/jinja",
            )

    def _check_whitespace(self, data: nodes.TemplateData) -> None:
        text = data.data
        if not text or text.strip():
            return
        leak = False
        if "\n" in text and text.rstrip(" \t") != text:
            leak = True  # a newline followed by indentation
        elif "\n" not in text and 0 < data.lineno <= len(self.lines):
            line = self.lines[data.lineno - 1]
            leak = line.startswith(text) and line[len(text) :].startswith("{{")
        if leak:
            self.report("TK401", data.lineno, None, f"{text!r} (layout indentation) is printed into the prompt")

    def check_tokens(self) -> None:
        for line, column, kind, value in self.locator.tokens:
            if kind == "name" and value in ("True", "False", "None"):
                self._token_finding("TK203", line, column, f"'{value}' is Python's spelling: write {value.lower()}")
            elif kind == "raw_begin":
                self._token_finding(
                    "TK109",
                    line,
                    column,
                    "{% raw %} fails to parse in @huggingface/jinja",
                    "write the braces as strings: {{ '{{' }}",
                )
            elif kind in ("block_begin", "variable_begin") and value.endswith("+"):
                self._token_finding(
                    "TK109",
                    line,
                    column,
                    f"'{value}' (keep-whitespace marker) fails to parse in @huggingface/jinja",
                    "remove the '+'",
                )
            elif kind == "float" and ("e" in value or "E" in value):
                self._token_finding(
                    "TK109",
                    line,
                    column,
                    f"the number {value} fails to parse in @huggingface/jinja",
                    "write it out in full",
                )

    def _token_finding(self, code: str, line: int, column: int, message: str, hint: str | None = None) -> None:
        rule = RULES[code]
        self.findings.append(LintFinding(code, rule.severity, message, hint or rule.hint, line, column))


def _needle(expr: nodes.Expr) -> str | tuple[str, ...] | None:
    """A token of ``expr`` to place a finding on."""
    if isinstance(expr, nodes.Const):
        return (str(expr.value), str(expr.value).lower())
    if isinstance(expr, nodes.Test):
        return expr.name
    if isinstance(expr, nodes.Name):
        return expr.name
    if isinstance(expr, nodes.Getattr):
        return expr.attr
    if isinstance(expr, nodes.Filter):
        return expr.name
    if isinstance(expr, nodes.Getitem) and isinstance(expr.arg, nodes.Const):
        return (repr(expr.arg.value), f'"{expr.arg.value}"')
    if isinstance(expr, nodes.Call) and isinstance(expr.node, nodes.Getattr):
        return expr.node.attr
    if isinstance(expr, nodes.Not):
        return "not"
    if isinstance(expr, nodes.List):
        return "["
    if isinstance(expr, nodes.Dict):
        return "{"
    if isinstance(expr, nodes.CondExpr):
        return "if"
    return None


def _last_name(expr: nodes.Node) -> Any:
    if isinstance(expr, nodes.Name):
        return expr.name
    if isinstance(expr, nodes.Getattr):
        return expr.attr
    if isinstance(expr, nodes.Getitem) and isinstance(expr.arg, nodes.Const):
        return expr.arg.value
    return None


def _checked(test: nodes.Node) -> frozenset[str]:
    """What an if-test checks: every expression it applies a test to, every name it reads."""
    found = {f"checked:{repr(t.node)}" for t in _self_and_all(test, nodes.Test)}
    found |= {f"name:{n.name}" for n in _self_and_all(test, nodes.Name)}
    if isinstance(test, nodes.Name | nodes.Getattr | nodes.Getitem):
        found.add(f"checked:{repr(test)}")
    return frozenset(found)


def _self_and_all(node: nodes.Node, kind: type[_N]) -> list[_N]:
    """``node`` itself when it is a ``kind``, and every ``kind`` below it (``find_all`` skips the node itself)."""
    found = [node] if isinstance(node, kind) else []
    return found + list(node.find_all(kind))


def _is_str_const(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Const) and isinstance(node.value, str)


def _string_guards(test: nodes.Node) -> tuple[frozenset[str], frozenset[str]]:
    """Expressions an if-test proves to be strings in its body (``x is string``) and in its else branch."""
    if isinstance(test, nodes.Test) and test.name == "string":
        return frozenset({repr(test.node)}), frozenset()
    if isinstance(test, nodes.Not):
        positive, negative = _string_guards(test.node)
        return negative, positive
    if isinstance(test, nodes.And):
        left, _ = _string_guards(test.left)
        right, _ = _string_guards(test.right)
        return left | right, frozenset()
    return frozenset(), frozenset()


def _printed_kind(expr: nodes.Expr, strings: frozenset[str]) -> str | None:
    if repr(expr) in strings:
        return None
    if isinstance(expr, nodes.Const):
        return "bool" if expr.value is None or isinstance(expr.value, bool) else None
    if isinstance(expr, nodes.Test | nodes.Compare | nodes.Not):
        return "bool"
    if isinstance(expr, nodes.List | nodes.Dict | nodes.Tuple):
        return "structure"
    if isinstance(expr, nodes.CondExpr):
        positive, negative = _string_guards(expr.test)
        return _printed_kind(expr.expr1, strings | positive) or (
            _printed_kind(expr.expr2, strings | negative) if expr.expr2 is not None else None
        )
    if isinstance(expr, nodes.Call) and isinstance(expr.node, nodes.Getattr):
        return "structure" if expr.node.attr in ("items", "keys", "values", "split") else None
    if isinstance(expr, nodes.Filter):
        if expr.name == "string" and expr.node is not None:
            return _printed_kind(expr.node, strings)
        return "structure" if expr.name in _LIST_FILTERS else None
    return "structure" if _last_name(expr) in _STRUCTURED_NAMES else None


def check_source(source: str, environment: jinja2.Environment) -> list[LintFinding]:
    """Every static finding for one template text (``source`` with ``\\n`` newlines)."""
    try:
        tree = environment.parse(source)
    except jinja2.exceptions.TemplateSyntaxError as exc:
        rule = RULES["TK100"]
        return [LintFinding("TK100", "error", f"syntax error: {exc.message}", rule.hint, exc.lineno or 1, 1)]
    checker = _Checker(source, environment)
    checker.run(tree)
    return sorted(checker.findings, key=lambda f: (f.line, f.column, f.code))
