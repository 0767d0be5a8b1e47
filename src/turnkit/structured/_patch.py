"""JSON Patch (RFC 6902) plus ``append``: a pure, validating apply, and coalescing of operation runs.

``append`` is the one extension: ``{"op": "append", "path": P, "value": S}`` appends the string
``S`` to the string at ``P`` (which must exist). Everything else follows RFC 6902 and passes the
json-patch-tests conformance suite.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnkit._args import expect_items
from turnkit._json import json_copy, split_pointer
from turnkit.errors import JsonPatchError

__all__ = ["Op", "apply_patch", "coalesce_ops", "json_equal"]

Op = dict[str, Any]
"""One patch operation: ``{"op": ..., "path": ..., "value": ...}`` (RFC 6902 plus ``append``)."""

_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test", "append"})


def json_equal(a: Any, b: Any) -> bool:
    """Equality in the JSON sense: ``1 == 1.0`` but ``true != 1``, and object key order is ignored.

    Iterative, like :func:`json_copy`, so deep documents compare without hitting the recursion limit.
    """
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, bool) or isinstance(y, bool):
            if not (isinstance(x, bool) and isinstance(y, bool) and x == y):
                return False
        elif isinstance(x, int | float) and isinstance(y, int | float):
            if x != y:
                return False
        elif isinstance(x, str) or isinstance(y, str):
            if not (isinstance(x, str) and isinstance(y, str) and x == y):
                return False
        elif isinstance(x, list):
            if not (isinstance(y, list) and len(x) == len(y)):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, dict):
            if not (isinstance(y, dict) and x.keys() == y.keys()):
                return False
            stack.extend((v, y[k]) for k, v in x.items())
        elif not (x is None and y is None):
            return False
    return True


class _Fail(Exception):
    """An operation failed; carries the reason until the caller adds which operation it was."""


def _index(token: str, length: int, *, allow_end: bool) -> int:
    if token == "-":
        if allow_end:
            return length
        raise _Fail("'-' (the end of the array) names no element here")
    if not token.isdigit() or not token.isascii() or (token[0] == "0" and len(token) > 1):
        raise _Fail(f"{token!r} is not an array index")
    index = int(token)
    if index > length or (index == length and not allow_end):
        raise _Fail(f"array index {index} is out of range (length {length})")
    return index


def _resolve(doc: Any, tokens: list[str]) -> Any:
    """The value at ``tokens`` (which must exist)."""
    node = doc
    for token in tokens:
        if type(node) is dict:
            if token not in node:
                raise _Fail(f"member {token!r} does not exist")
            node = node[token]
        elif type(node) is list:
            node = node[_index(token, len(node), allow_end=False)]
        else:
            raise _Fail(f"cannot descend into a {type(node).__name__} with {token!r}")
    return node


def _parent(doc: Any, tokens: list[str]) -> Any:
    parent = _resolve(doc, tokens[:-1])
    if type(parent) is not dict and type(parent) is not list:
        raise _Fail(f"the parent of the target is a {type(parent).__name__}, not an object or array")
    return parent


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if type(parent) is dict:
        parent[last] = value
    else:
        parent.insert(_index(last, len(parent), allow_end=True), value)
    return doc


def _remove(doc: Any, tokens: list[str]) -> tuple[Any, Any]:
    """``(new_doc, removed_value)``."""
    if not tokens:
        raise _Fail("cannot remove the whole document")
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if type(parent) is dict:
        if last not in parent:
            raise _Fail(f"member {last!r} does not exist")
        return doc, parent.pop(last)
    return doc, parent.pop(_index(last, len(parent), allow_end=False))


def _replace(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if type(parent) is dict:
        if last not in parent:
            raise _Fail(f"member {last!r} does not exist")
        parent[last] = value
    else:
        parent[_index(last, len(parent), allow_end=False)] = value
    return doc


def _append(doc: Any, tokens: list[str], text: Any) -> Any:
    if not isinstance(text, str):
        raise _Fail(f"append needs a string value, not {type(text).__name__}")
    if not tokens:
        if not isinstance(doc, str):
            raise _Fail(f"append target is a {type(doc).__name__}, not a string")
        return doc + text
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if type(parent) is dict:
        if last not in parent:
            raise _Fail(f"member {last!r} does not exist")
        slot: str | int = last
    else:
        slot = _index(last, len(parent), allow_end=False)
    current = parent[slot]
    if not isinstance(current, str):
        raise _Fail(f"append target is a {type(current).__name__}, not a string")
    parent[slot] = current + text
    return doc


def _member(op: Op, name: str) -> Any:
    if name not in op:
        raise _Fail(f"missing {name!r} member")
    return op[name]


def apply_one(doc: Any, op: Any) -> Any:
    """Apply one operation in place where possible; return the (possibly new) document. Raises _Fail."""
    if not isinstance(op, dict):
        raise _Fail(f"an operation must be an object, not {type(op).__name__}")
    name = _member(op, "op")
    if name not in _OPS:
        raise _Fail(f"unknown operation {name!r}")
    tokens = split_pointer(_member(op, "path"))
    if name == "add":
        return _add(doc, tokens, json_copy(_member(op, "value")))
    if name == "append":
        return _append(doc, tokens, _member(op, "value"))
    if name == "replace":
        return _replace(doc, tokens, json_copy(_member(op, "value")))
    if name == "remove":
        return _remove(doc, tokens)[0]
    if name == "test":
        expected = _member(op, "value")
        if not json_equal(_resolve(doc, tokens), expected):
            raise _Fail("test failed: the value differs")
        return doc
    source = split_pointer(_member(op, "from"))
    if name == "copy":
        return _add(doc, tokens, json_copy(_resolve(doc, source)))
    # move
    if tokens == source:
        _resolve(doc, source)
        return doc
    if len(tokens) > len(source) and tokens[: len(source)] == source:
        raise _Fail("cannot move a value into one of its own children")
    doc, moved = _remove(doc, source)
    return _add(doc, tokens, moved)


def _error(index: int, op: Any, reason: str) -> JsonPatchError:
    path = op.get("path") if isinstance(op, dict) else None
    name = op.get("op") if isinstance(op, dict) else None
    where = f"operation {index}" + (f" ({name} {path!r})" if name is not None else "")
    err = JsonPatchError(f"{where}: {reason}", pointer=path if isinstance(path, str) else None)
    err.op_index = index
    return err


def apply_patch(doc: Any, ops: Sequence[Op]) -> Any:
    """Apply ``ops`` to a copy of ``doc`` and return it; ``doc`` is never modified.

    A malformed or inapplicable operation raises :class:`~turnkit.JsonPatchError` naming its index
    and path (``err.op_index``, ``err.pointer``).
    """
    if isinstance(ops, str | bytes) or not isinstance(ops, Sequence):
        raise JsonPatchError(f"a patch (argument 'ops') must be a list of operations, not {type(ops).__name__}")
    work = json_copy(doc)
    for index, op in enumerate(ops):
        try:
            work = apply_one(work, op)
        except _Fail as exc:
            raise _error(index, op, str(exc)) from None
        except JsonPatchError as exc:  # a bad pointer
            raise _error(index, op, exc.message) from None
    return work


def _relative(path: str, base: str) -> str | None:
    """``path`` relative to ``base`` when it lies strictly inside it."""
    if len(path) > len(base) and path.startswith(base) and path[len(base)] == "/":
        return path[len(base) :]
    return None


def coalesce_ops(ops: Sequence[Op]) -> list[Op]:
    """Merge runs of operations into fewer that have the same effect on a valid document.

    Consecutive appends to one path become one append; an add/replace of a string followed by
    appends to it becomes one add/replace; operations inside a value just added or replaced are
    folded into that value; add/replace followed by replace at the same path keeps the later value.
    Input operations are never modified.
    """
    expect_ops(ops, func="coalesce_ops")
    out: list[Op] = []
    cur: Op | None = None  # the operation being built (owned: safe to modify)
    tail: list[str] = []  # text appended to cur's string (cur is a string add/replace/append)
    nested_path = ""  # relative path of pending appends inside cur's container value
    nested: list[str] = []

    def flush_nested() -> None:
        nonlocal nested_path
        if nested and cur is not None:
            cur["value"] = apply_one(cur["value"], {"op": "append", "path": nested_path, "value": "".join(nested)})
            nested.clear()
        nested_path = ""

    def flush() -> None:
        nonlocal cur
        if cur is not None:
            flush_nested()
            if tail:
                cur["value"] = cur["value"] + "".join(tail)
                tail.clear()
            out.append(cur)
        cur = None

    for op in ops:
        if not isinstance(op, dict):
            flush()
            out.append(op)
            continue
        name = op.get("op")
        path = op.get("path")
        if cur is not None and isinstance(path, str) and "value" in op:
            cname = cur["op"]
            cvalue = cur.get("value")
            if path == cur["path"]:
                if name == "append" and isinstance(cvalue, str) and isinstance(op["value"], str):
                    if cname in ("add", "replace", "append"):
                        tail.append(op["value"])
                        continue
                elif name == "replace" and cname in ("add", "replace", "append"):
                    flush_nested()
                    tail.clear()
                    cur["value"] = json_copy(op["value"])
                    if cname == "append":
                        cur["op"] = "replace"
                    continue
            elif cname in ("add", "replace") and type(cvalue) in (dict, list) and name in ("add", "replace", "append"):
                inner = _relative(path, cur["path"])
                if inner is not None:
                    if name == "append" and isinstance(op["value"], str):
                        if nested and inner != nested_path:
                            flush_nested()
                        if not nested:
                            try:  # the target must exist and be a string
                                if not isinstance(_resolve(cvalue, split_pointer(inner)), str):
                                    raise _Fail("not a string")
                            except (_Fail, JsonPatchError):
                                flush()
                                cur = dict(op)
                                continue
                            nested_path = inner
                        nested.append(op["value"])
                        continue
                    flush_nested()
                    try:
                        cur["value"] = apply_one(cvalue, {"op": name, "path": inner, "value": op["value"]})
                        continue
                    except (_Fail, JsonPatchError):
                        pass
        flush()
        cur = dict(op)
        if "value" in cur and type(cur["value"]) in (dict, list):
            cur["value"] = json_copy(cur["value"])
    flush()
    return out


def expect_ops(ops: Any, *, func: str, name: str = "ops") -> None:
    """A list of operations; each operation is checked where it is applied (a ``JsonPatchError`` naming its index)."""
    expect_items(ops, object, name=name, func=func, accepts="a list of operations")
