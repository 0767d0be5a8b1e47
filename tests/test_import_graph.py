"""Dependencies point one way: the package table of ARCHITECTURE.md, read and enforced here, and no import cycles."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import turnkit

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "turnkit"

ARCHITECTURE = PACKAGE.parent.parent / "ARCHITECTURE.md"


def _rules() -> dict[str, tuple[str, set[str]]]:
    """The package table of ARCHITECTURE.md: ``{module: ("only" | "deny", modules)}`` (dotted, without turnkit)."""
    rules: dict[str, tuple[str, set[str]]] = {}
    lines = iter(ARCHITECTURE.read_text(encoding="utf-8").splitlines())
    for line in lines:
        if line.startswith("| module |"):
            break
    for line in lines:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if set(cells[0]) <= set("-"):
            continue
        rule = cells[-1]
        listed = {name.replace("/", ".") for name in re.findall(r"`([^`]+)`", rule)}
        if rule.startswith("nothing"):
            kind, listed = "only", set()
        elif rule.startswith("only"):
            kind = "only"
        elif rule.startswith("anything but"):
            kind = "deny"
        else:
            raise AssertionError(f"ARCHITECTURE.md: cannot read the import rule {rule!r}")
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rules[name.replace("/", ".")] = (kind, listed)
    return rules


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _all_imports(path: Path) -> set[str]:
    """Every turnkit module ``path`` imports, anywhere (a lazy import is a dependency too), without ``turnkit.``.

    The root package itself (``from turnkit import X``) is ``""``.
    """
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from package import name` may import the submodule `name`: count both.
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        found.update(name.removeprefix("turnkit").removeprefix(".") for name in names if _within(name, "turnkit"))
    return found


def test_architecture_table_is_read():
    rules = _rules()
    assert rules["errors"] == ("only", set()) and rules["_json"] == ("only", {"errors"})
    assert rules["parse._schema"][0] == "deny" and "parse._engine" in rules["parse._schema"][1]
    assert {"render", "parse", "structured", "outputs", "serve", "batch", "lint", "agent"} <= set(rules)


def test_imports_follow_the_architecture_table():
    """Each module obeys its own row of ARCHITECTURE.md and every row above it (its enclosing packages)."""
    rules = _rules()
    violations = []
    for path in PACKAGE.rglob("*.py"):
        module = _module_name(path).removeprefix("turnkit").removeprefix(".")
        for row, (kind, listed) in rules.items():
            if not _within(module, row):
                continue
            for imported in _all_imports(path):
                if imported == "" or imported.count(".") == 0 and imported not in rules and kind == "deny":
                    # the root package (`from turnkit import X`), or a public name read from it
                    if kind == "only":
                        violations.append(f"{module} imports the turnkit root package (row {row!r}: only {listed})")
                    continue
                if _within(imported, row):
                    continue
                allowed = any(_within(imported, name) for name in listed)
                if (kind == "only") != allowed:
                    violations.append(f"{module} imports turnkit.{imported} (ARCHITECTURE.md row {row!r})")
    assert not violations, violations


def test_every_module_has_a_row():
    rules = _rules()
    uncovered = []
    for path in PACKAGE.rglob("*.py"):
        module = _module_name(path).removeprefix("turnkit").removeprefix(".")
        if module and not _within(module, "cli") and not any(_within(module, row) for row in rules):
            uncovered.append(module)
    assert not uncovered, f"add these to the package table of ARCHITECTURE.md: {sorted(uncovered)}"


def test_nothing_imports_the_cli_or_server():
    for path in PACKAGE.rglob("*.py"):
        module = _module_name(path).removeprefix("turnkit").removeprefix(".")
        if _within(module, "cli") or _within(module, "serve"):
            continue
        imported = _all_imports(path)
        assert not {name for name in imported if _within(name, "cli") or _within(name, "serve")}, path


def test_import_turnkit_stays_light():
    import subprocess
    import sys

    code = (
        "import sys, turnkit; heavy = {'transformers', 'starlette', 'uvicorn', 'httpx', 'rich', 'tokenizers', "
        "'minijinja'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_import_turnkit_defers_what_rendering_does_not_need():
    import subprocess
    import sys

    code = (
        "import sys, turnkit; deferred = {'turnkit.outputs', 'turnkit.parse', 'turnkit.tools'};"
        "print(sorted(deferred & set(sys.modules)));"
        "import turnkit.lint._rules; print(callable(turnkit.lint));"
        "print(turnkit.parse_response.__module__, turnkit.outputs.__name__, turnkit.get_json_schema.__module__);"
        "from turnkit import *; print(load_format.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:4] == [
        "[]",
        "True",
        "turnkit.parse._parse_response turnkit.outputs turnkit.tools._schema",
        "load_format",
    ]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        turnkit.nope  # noqa: B018


def _module_name(path: Path) -> str:
    parts = ("turnkit", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports run when the module is imported (or type-checked): not those inside functions or classes."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    pending.append(child)
                elif isinstance(child, ast.excepthandler | ast.match_case):
                    pending.extend(child.body)
    return found


def _import_graph() -> dict[str, set[str]]:
    """``{module: turnkit modules it imports at module level}``, for every module of the package."""
    paths = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in _module_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from package import name` imports the submodule `name` when there is one, else reads `package`.
                candidates = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base for alias in node.names
                ]
            for candidate in candidates:
                while candidate and candidate not in paths:
                    candidate = candidate.rpartition(".")[0]
                if candidate:
                    targets.add(candidate)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}
    assert sorted(_cycles(graph)) == [["a", "b", "c"], ["d"]]
    source = "\n".join(
        ["import x", "if T:", "    from y import z", "try:", "    import w", "except E:", "    import v"]
        + ["def f():", "    import u", "class C:", "    import t"]
    )
    names = {a.name for n in _module_level_imports(ast.parse(source)) for a in n.names}
    assert names == {"x", "z", "w", "v"}


def test_no_import_cycles():
    """No module of turnkit imports itself back, counting ``if TYPE_CHECKING:`` imports, not function-local ones."""
    graph = _import_graph()
    assert "turnkit.outputs._streaming" in graph and graph["turnkit.errors"] is not None
    cycles = _cycles(graph)
    assert not cycles, cycles
