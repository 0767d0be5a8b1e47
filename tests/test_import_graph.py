"""Dependencies point one way (ARCHITECTURE.md): checked on the source, not by convention."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "turnkit"

# area -> areas it must never import
FORBIDDEN = {
    "messages": {"render", "parse", "serve", "cli", "outputs", "structured"},
    "render": {"parse", "serve", "cli", "outputs", "structured", "batch"},
    "batch": {"serve", "cli"},
    "tools": {"render", "parse", "serve", "cli", "outputs"},
    "agent": {"serve", "cli"},
    "parse": {"render", "serve", "cli", "outputs", "batch"},
    "structured": {"render", "parse", "serve", "cli", "outputs", "tools"},
    "outputs": {"render", "parse", "serve", "cli"},
    "lint": {"parse", "serve", "cli", "outputs", "structured", "batch"},
    "errors": {"render", "parse", "serve", "cli", "outputs", "structured", "tools", "messages"},
    "limits": {"render", "parse", "serve", "cli", "outputs", "structured", "tools", "messages"},
}

# leaf area -> the only areas it may import
LEAVES = {
    "_json": {"errors"},
    "_held": {"errors"},
}


def _area(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _imported_areas(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "turnkit" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_imports_point_one_way():
    violations = []
    for path in PACKAGE.rglob("*.py"):
        area = _area(path)
        for imported in _imported_areas(path) & FORBIDDEN.get(area, set()):
            violations.append(f"{path.relative_to(PACKAGE)} imports turnkit.{imported}")
    assert not violations, violations


def test_leaf_modules_import_only_errors():
    violations = []
    for area, allowed in LEAVES.items():
        path = PACKAGE / f"{area}.py"
        assert path.is_file(), path
        for imported in _imported_areas(path) - allowed:
            violations.append(f"{area}.py imports turnkit.{imported}")
    assert not violations, violations


def test_nothing_imports_the_cli_or_server():
    for path in PACKAGE.rglob("*.py"):
        area = _area(path)
        if area in {"cli", "serve"}:
            continue
        assert not _imported_areas(path) & {"cli", "serve"}, path


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
