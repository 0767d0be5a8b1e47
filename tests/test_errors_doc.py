"""docs/errors.md draws the error hierarchy as a tree; it must equal the classes in turnkit/errors.py.

Regenerate the block with ``python -m tests.test_errors_doc`` after changing errors.py.
"""

from __future__ import annotations

import re
from pathlib import Path

from turnkit import errors

DOC = Path(__file__).resolve().parent.parent / "docs" / "errors.md"
_BLOCK = re.compile(r"<!-- error-tree -->\n```text\n(.*?)```\n<!-- /error-tree -->", re.DOTALL)


def _classes() -> list[type[BaseException]]:
    return [getattr(errors, name) for name in errors.__all__]


def _parent(cls: type) -> type | None:
    """The first turnkit base: where the class hangs in the tree."""
    for base in cls.__bases__:
        if issubclass(base, errors.TurnkitError):
            return base
    return None


def _also(cls: type) -> list[str]:
    """The other bases: further turnkit classes and the builtins it also is."""
    parent = _parent(cls)
    return [base.__name__ for base in cls.__bases__ if base is not parent]


def render_tree() -> str:
    """The hierarchy, one class a line: ``Name [code]  (also: bases)``, children sorted by name."""
    classes = _classes()
    children: dict[type | None, list[type]] = {}
    for cls in classes:
        children.setdefault(_parent(cls), []).append(cls)
    lines: list[str] = []

    def walk(cls: type, prefix: str, last: bool, root: bool) -> None:
        also = _also(cls)
        label = f"{cls.__name__} [{cls.code}]"  # type: ignore[attr-defined]
        if also:
            label += f"  (also {', '.join(also)})"
        lines.append(label if root else f"{prefix}{'└── ' if last else '├── '}{label}")
        kids = sorted(children.get(cls, []), key=lambda c: c.__name__)
        for i, kid in enumerate(kids):
            walk(kid, prefix if root else prefix + ("    " if last else "│   "), i == len(kids) - 1, False)

    roots = children[None]
    assert roots == [errors.TurnkitError]
    walk(errors.TurnkitError, "", True, True)
    return "\n".join(lines) + "\n"


def test_doc_tree_matches_errors_module() -> None:
    match = _BLOCK.search(DOC.read_text(encoding="utf-8"))
    assert match, "docs/errors.md lacks the <!-- error-tree --> block"
    assert match.group(1) == render_tree(), "run: python -m tests.test_errors_doc"


def test_every_class_is_in_the_tree_once() -> None:
    tree = render_tree()
    for cls in _classes():
        assert len(re.findall(rf"\b{cls.__name__} \[", tree)) == 1, cls


def test_every_class_has_a_row_in_the_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    for cls in _classes():
        assert f"| `{cls.__name__}` |" in text, cls


if __name__ == "__main__":
    text = DOC.read_text(encoding="utf-8")
    block = f"<!-- error-tree -->\n```text\n{render_tree()}```\n<!-- /error-tree -->"
    DOC.write_text(_BLOCK.sub(lambda _: block, text), encoding="utf-8")
