"""A JSON document kept current by applying patch operations in place (no copies)."""

from __future__ import annotations

from typing import Any

from turnkit._json import escape_token, json_copy, split_pointer
from turnkit.errors import JsonPatchError

__all__ = ["LiveDocument"]

_MAX_GROWING = 8


class LiveDocument:
    """A JSON document mutated in place by ``add``/``replace``/``remove``/``append`` operations.

    Unlike a pure ``apply_patch`` it never copies the document, so following a stream costs only the
    operations. Appends to the same string are collected and joined when the document is next read,
    so a long growing string costs O(its length), not O(length²). The operations are trusted (they
    come from turnkit's own stages).
    """

    __slots__ = ("_value", "exists", "_track_text", "_growing")

    def __init__(self, *, track_text: bool = True) -> None:
        # Without text tracking ``append`` is ignored: only shapes are kept (what exists, of which type).
        self._track_text = track_text
        self._value: Any = None
        self.exists = False
        # pointer -> (container or None for the root, key, parts): strings being appended to, joined lazily
        self._growing: dict[str, tuple[Any, Any, list[str]]] = {}

    @property
    def value(self) -> Any:
        """The document (``None`` before it exists). Live: treat it as read-only."""
        if self._growing:
            self._flush()
        return self._value

    def peek(self) -> Any:
        """The document without joining growing strings (containers and types are current)."""
        return self._value

    def _flush(self, only: str | None = None) -> None:
        for pointer, (parent, key, parts) in self._growing.items():
            if len(parts) > 1 and (only is None or pointer == only or pointer.startswith(only + "/")):
                text = "".join(parts)
                parts[:] = [text]
                if parent is None:
                    self._value = text
                else:
                    parent[key] = text

    def apply(self, op: dict[str, Any]) -> None:
        """Apply one operation; its value is copied, so the document never shares containers with it."""
        kind = op["op"]
        pointer = op["path"]
        if kind == "append":
            if not self._track_text:
                return
            growing = self._growing.get(pointer)
            if growing is not None:
                growing[2].append(op["value"])
                return
        elif self._growing:
            self._flush()
            self._growing.clear()
        value = op.get("value")
        if type(value) is dict or type(value) is list:
            value = json_copy(value)
        path = split_pointer(pointer)
        if not path:
            if kind == "remove":
                self._value, self.exists = None, False
            elif kind == "append":
                if not isinstance(self._value, str) or not isinstance(value, str):
                    raise JsonPatchError("append needs a string target and a string value", pointer=pointer)
                self._value += value
                self._grow(pointer, None, None)
            else:
                self._value, self.exists = value, True
            return
        parent = self._value
        try:
            for part in path[:-1]:
                parent = parent[int(part)] if isinstance(parent, list) else parent[part]
            last: Any = path[-1]
            if isinstance(parent, list):
                last = len(parent) if last == "-" else int(last)
                if kind == "add":
                    parent.insert(last, value)
                    return
            if kind in ("add", "replace"):
                if kind == "replace" and isinstance(parent, dict) and last not in parent:
                    raise KeyError(last)
                parent[last] = value
            elif kind == "remove":
                del parent[last]
            else:
                current = parent[last]
                if not isinstance(current, str) or not isinstance(value, str):
                    raise TypeError("append needs a string target and a string value")
                parent[last] = current + value
                self._grow(pointer, parent, last)
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise JsonPatchError(f"cannot apply {kind!r}: {exc}", pointer=pointer) from exc

    def _grow(self, pointer: str, parent: Any, key: Any) -> None:
        """Remember a string just appended to: further appends to it are joined lazily."""
        if len(self._growing) >= _MAX_GROWING:
            self._flush()
            self._growing.clear()
        self._growing[pointer] = (parent, key, [self._value if parent is None else parent[key]])

    def lookup(self, tokens: list[str], *, fresh: bool = True) -> tuple[bool, Any]:
        """``(True, value)`` at ``tokens`` if it exists, else ``(False, None)``.

        With ``fresh=False`` a string still growing inside the result may be stale (its type is right):
        enough to ask what kind of value is there, without joining the growing string.
        """
        if not self.exists:
            return False, None
        if fresh and self._growing:
            self._flush(only="".join("/" + escape_token(token) for token in tokens))
        node = self._value
        for token in tokens:
            if isinstance(node, dict):
                if token not in node:
                    return False, None
                node = node[token]
            elif isinstance(node, list):
                if not token.isdigit() or int(token) >= len(node):
                    return False, None
                node = node[int(token)]
            else:
                return False, None
        return True, node
