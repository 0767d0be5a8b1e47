"""Dependencies point one way (ARCHITECTURE.md): checked on the source, not by convention."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "turnkit"

# area -> areas it must never import
FORBIDDEN = {
    "messages": {"render", "parse", "serve", "cli", "formats", "outputs", "structured"},
    "render": {"parse", "serve", "cli", "formats", "outputs", "structured", "batch"},
    "batch": {"serve", "cli"},
    "tools": {"render", "parse", "serve", "cli", "formats", "outputs"},
    "parse": {"render", "serve", "cli", "formats", "outputs", "batch"},
    "structured": {"render", "parse", "serve", "cli", "formats", "outputs", "tools"},
    "outputs": {"render", "parse", "serve", "cli", "formats"},
    "formats": {"serve", "cli"},
    "errors": {"render", "parse", "serve", "cli", "formats", "outputs", "structured", "tools", "messages"},
    "limits": {"render", "parse", "serve", "cli", "formats", "outputs", "structured", "tools", "messages"},
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
        "import sys, turnkit; heavy = {'transformers', 'starlette', 'uvicorn', 'httpx', 'rich', 'tokenizers'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
