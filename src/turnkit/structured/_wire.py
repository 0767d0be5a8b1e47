"""A compact wire form for operation streams, in the spirit of ChatGPT's delta encoding.

One encoded batch is a JSON array. Each element is either

* an object with the short keys ``o`` (op), ``p`` (path), ``v`` (value), ``f`` (from). ``o`` is a
  one-character code (``a`` add, ``r`` replace, ``x`` remove, ``+`` append, ``m`` move, ``c`` copy,
  ``t`` test; any other name is written out, and a decoder also reads the long names); an
  omitted ``o`` means "the op of the previous object element" and an omitted ``p`` "the path of the
  previous operation"; ``p`` is either a JSON Pointer or a path relative to the previous one,
  ``"<k><suffix>"``: drop the previous path's last ``k`` tokens, then add ``suffix`` (``""`` or
  ``"/..."``), e.g. ``"1/3"`` after ``/items/2`` is ``/items/3`` (a pointer never starts with a digit);
* an array ``[P, V]`` (or ``[P]`` for an operation without a value), shorthand for
  ``{"p": P, "v": V}``: the carried op at a new path — the shape of most operations that add members;
* a bare JSON string ``S``, shorthand for ``{"o": "append", "v": S}`` at the previous path, which
  does not change the carried op — the shape of almost every operation of a streamed string.

Before the first operation the carried op is ``"add"`` and the previous path is ``""``, so the
parser's first operation, ``{"op": "add", "path": "", "value": {}}``, encodes as ``{"v":{}}``.
:class:`OpEncoder` / :class:`OpDecoder` carry that state from batch to batch (one per connection);
``encode_ops`` / ``decode_ops`` start fresh for a single self-contained batch.
"""

from __future__ import annotations

import json
import json.encoder
import re
from collections.abc import Callable, Sequence
from typing import Any

from turnkit._args import expect
from turnkit.errors import JsonPatchError
from turnkit.structured._patch import Op, expect_ops

__all__ = ["OpDecoder", "OpEncoder", "decode_ops", "encode_ops"]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_encode_str: Callable[[str], str] = json.encoder.encode_basestring
"""json's string encoder without ASCII escaping (C): what ``dumps(ensure_ascii=False)`` writes for a str."""
_APPEND = "append"  # interned, like the parser's: an identity test (an equal copy takes the general path)
_ADD = "add"
_DIGITS = "0123456789"
_SHORT = {"o": "op", "p": "path", "v": "value", "f": "from"}
_OP_CODE = {"add": "a", "replace": "r", "remove": "x", "append": "+", "move": "m", "copy": "c", "test": "t"}
_OP_NAME = {code: name for name, code in _OP_CODE.items()}


_Shared = tuple[tuple[str, str], str, tuple[str, str]]


class OpEncoder:
    """Encodes successive batches of operations, carrying op and path over between batches."""

    __slots__ = ("_depth", "_op", "_path")

    def __init__(self) -> None:
        self._op = "add"
        self._path = ""
        self._depth = 0  # tokens in _path, kept by _encode_parsed only

    def encode(self, ops: Sequence[Op]) -> str:
        """One batch as a compact JSON array (UTF-8 friendly: non-ASCII text is not escaped)."""
        # Fast path: the batch of nearly every chunk of a streamed string, one plain append to the
        # previous path (the parser reuses the path object, so identity is the cheap first test), is a
        # bare JSON string, written by json's C string encoder exactly as dumps would (it refuses a
        # non-string value with TypeError: the general path below then reports it).
        # The next commonest, one value added at a new path with the carried op, is ``[[P,V]]``.
        # (Exactly the three members, so no "from"; anything unusual goes the general way below.)
        if len(ops) == 1:
            op = ops[0]
            try:
                path = op["path"]
                if path is self._path and op["op"] is _APPEND and len(op) == 3:
                    return f"[{_encode_str(op['value'])}]"
                previous = self._path
                if path != previous and op["op"] == self._op and len(op) == 3 and "value" in op:
                    if type(path) is str and path.startswith("/"):
                        # _relative's usual answers inline: a sibling of the previous path, or a child
                        cut = previous.rfind("/")
                        if cut > 0 and path.startswith(previous[: cut + 1]) and path.find("/", cut + 1) < 0:
                            relative = "1" + path[cut:]
                        elif path.startswith(previous) and path[len(previous)] == "/":
                            relative = "0" + path[len(previous) :]
                        else:
                            relative = _relative(previous, path)
                        if len(relative) >= len(path):
                            relative = path
                        value = op["value"]
                        value_json = _encode_str(value) if type(value) is str else _value_json(value)
                        self._path = path
                        return f"[[{_encode_str(relative)},{value_json}]]"
            except (KeyError, TypeError, IndexError):
                pass
        elif not ops:
            return "[]"
        # Each element is written on its own and joined: no intermediate list of items for dumps to walk.
        items: list[str] = []
        last_op = self._op
        last_path = self._path
        for index, op in enumerate(ops):
            try:
                name = op["op"]
                path = op["path"]
            except (KeyError, TypeError):
                raise JsonPatchError(f"operation {index} needs 'op' and 'path' members") from None
            if type(path) is not str or (path and path[0] != "/"):
                raise JsonPatchError(f"operation {index}: 'path' must be a JSON Pointer, not {path!r}")
            has_from = "from" in op
            if path == last_path and name == "append" and not has_from:
                value = op.get("value")
                if type(value) is str or isinstance(value, str) and "value" in op:
                    items.append(_encode_str(value))
                    continue
            if name == last_op and path != last_path and not has_from:
                # the short form of a new path with the carried op: [path, value] or [path]
                relative = _encode_str(_relative(last_path, path))
                items.append(f"[{relative},{_value_json(op['value'])}]" if "value" in op else f"[{relative}]")
                last_path = path
                continue
            item: list[str] = []
            if name != last_op:
                if isinstance(name, str):
                    if name in _OP_NAME:  # a code as a name would not round-trip
                        raise JsonPatchError(f"operation {index}: op {name!r} is not a JSON Patch operation")
                    item.append('"o":' + _encode_str(_OP_CODE.get(name, name)))
                else:
                    item.append('"o":' + _value_json(name))
                last_op = name
            if path != last_path:
                item.append('"p":' + _encode_str(_relative(last_path, path)))
                last_path = path
            if "value" in op:
                item.append('"v":' + _value_json(op["value"]))
            if has_from:
                item.append('"f":' + _value_json(op["from"]))
            items.append("{" + ",".join(item) + "}")
        self._op = last_op
        self._path = last_path
        return "[" + ",".join(items) + "]"

    def _encode_shared(self, ops: Sequence[Op], shared: _Shared | None) -> tuple[str, _Shared]:
        """:meth:`encode` through ``shared``, what the last call (by any encoder) for the same ``ops``
        returned: (state before, text, state after). The text depends on nothing but the operations and
        the state, so encoders in the same state (subscribers that received the same events) share it."""
        before = (self._op, self._path)
        if shared is not None and shared[0] == before:
            self._op, self._path = shared[2]
            return shared[1], shared
        text = self.encode(ops)
        return text, (before, text, (self._op, self._path))

    def _encode_parsed(self, ops: Sequence[Op], frames: list[tuple[Any, ...] | None]) -> str:
        """A batch of JsonStream's operations, written as :meth:`encode` would, from what the parser
        recorded: the parent frame of each add (its path + "/" at [3], its depth at [6]); ``frames`` is
        emptied. The parser emits in document order, so the previous path lies under the new member's
        parent: the relative path drops ``depth - parent depth`` tokens, and an append is at the
        previous path. A replace (a duplicate key) or the root goes the general way."""
        items: list[str] = []
        path = self._path
        depth = self._depth
        i = 0
        if self._op == "add":
            for op in ops:
                name = op["op"]
                if name is _APPEND:
                    items.append(_encode_str(op["value"]))
                    continue
                frame = frames[i]
                i += 1
                if name is not _ADD or frame is None:
                    break
                path = op["path"]
                cut = len(frame[3]) - 1  # where "/token" starts
                parent = frame[6]
                if depth - parent < 10 and cut > 1:  # "<k>/token" is shorter than the path
                    relative = _DIGITS[depth - parent] + path[cut:]
                else:
                    relative = f"{depth - parent}{path[cut:]}"
                    if len(relative) >= len(path):
                        relative = path
                depth = parent + 1
                value = op["value"]
                kind = type(value)
                if kind is str:
                    items.append(f"[{_encode_str(relative)},{_encode_str(value)}]")
                elif kind is int:  # (formatted as repr: an int, not a bool)
                    items.append(f"[{_encode_str(relative)},{value}]")
                else:
                    items.append(f"[{_encode_str(relative)},{_value_json(value)}]")
            else:
                frames.clear()
                self._path = path
                self._depth = depth
                return f"[{items[0]}]" if len(items) == 1 else f"[{','.join(items)}]"
        frames.clear()
        text = self.encode(ops)
        self._depth = self._path.count("/")
        return text


def _value_json(value: Any) -> str:
    """``value`` as compact JSON (``dumps(ensure_ascii=False)``), infinity as ``1e999``; NaN refused."""
    kind = type(value)
    if kind is str:
        return _encode_str(value)
    if kind is dict or kind is list:
        if not value:
            return "{}" if kind is dict else "[]"
    elif kind is int:
        return int.__repr__(value)
    elif kind is float:
        if value - value == 0.0:  # finite
            return float.__repr__(value)
    elif value is None:
        return "null"
    elif value is True:
        return "true"
    elif value is False:
        return "false"
    try:
        return _dumps(value)
    except ValueError:
        return _OUT_OF_RANGE.sub(_finite, json.dumps(value, ensure_ascii=False, separators=(",", ":")))


class OpDecoder:
    """Decodes successive batches written by one :class:`OpEncoder`."""

    __slots__ = ("_op", "_path")

    def __init__(self) -> None:
        self._op = "add"
        self._path = ""

    def decode(self, text: str) -> list[Op]:
        """The operations of one encoded batch; malformed input raises JsonPatchError."""
        try:
            items = json.loads(text, parse_constant=_reject_constant)
        except ValueError as exc:
            raise JsonPatchError(f"encoded operations are not valid JSON: {exc}") from exc
        if not isinstance(items, list):
            raise JsonPatchError("encoded operations must be a JSON array")
        ops: list[Op] = []
        last_op = self._op
        last_path = self._path
        for index, item in enumerate(items):
            if isinstance(item, str):
                ops.append({"op": "append", "path": last_path, "value": item})
                continue
            if isinstance(item, list):
                if not 1 <= len(item) <= 2 or not isinstance(item[0], str):
                    raise JsonPatchError(f"encoded operation {index}: an array is [path] or [path, value]")
                path = item[0]
                if path and path[0] != "/":
                    path = _absolute(last_path, path, index)
                last_path = path
                short_op: Op = {"op": last_op, "path": path}
                if len(item) == 2:
                    short_op["value"] = item[1]
                ops.append(short_op)
                continue
            if not isinstance(item, dict):
                raise JsonPatchError(f"encoded operation {index} must be an object, an array or a string")
            op: Op = {}
            for key, value in item.items():
                long = _SHORT.get(key)
                if long is None:
                    raise JsonPatchError(f"encoded operation {index} has an unknown member {key!r}")
                op[long] = value
            name = op.setdefault("op", last_op)
            path = op.setdefault("path", last_path)
            if not isinstance(name, str) or not isinstance(path, str):
                raise JsonPatchError(f"encoded operation {index}: 'o' and 'p' must be strings")
            name = _OP_NAME.get(name, name)
            if path and path[0] != "/":
                path = op["path"] = _absolute(last_path, path, index)
            last_op = name
            last_path = path
            ops.append({"op": name, "path": path, **{k: v for k, v in op.items() if k not in ("op", "path")}})
        self._op = last_op
        self._path = last_path
        return ops


_RELATIVE = re.compile(r"([0-9]+)((?:/.*)?)", re.DOTALL)


def _relative(previous: str, path: str) -> str:
    """``path`` relative to ``previous`` (``"<k><suffix>"``) when that is shorter, else ``path`` itself.

    ``k`` is the fewest tokens to drop from ``previous`` to reach an ancestor of (or equal to) ``path``.
    The usual cases, a child (``k = 0``) and a sibling (``k = 1``), are tested first; otherwise walk up.
    """
    n = len(previous)
    if path.startswith(previous) and (len(path) == n or path[n] == "/"):
        relative = "0" + path[n:]
    else:
        cut = previous.rfind("/")
        if cut >= 0 and path.startswith(previous[:cut]) and (len(path) == cut or path[cut] == "/"):
            relative = "1" + path[cut:]
        else:
            base = previous[:cut]
            drop = 1
            while True:  # every pointer starts with "" followed by "/": base "" always matches
                cut = base.rfind("/")
                base = base[:cut] if cut >= 0 else ""
                drop += 1
                n = len(base)
                if path.startswith(base) and (len(path) == n or path[n] == "/"):
                    relative = f"{drop}{path[n:]}"
                    break
    return relative if len(relative) < len(path) else path


def _absolute(previous: str, relative: str, index: int) -> str:
    m = _RELATIVE.fullmatch(relative)
    if m is None:
        raise JsonPatchError(f"encoded operation {index}: 'p' {relative!r} is neither a pointer nor relative")
    drop = int(m.group(1))
    tokens = previous.split("/") if previous else [""]
    if drop >= len(tokens):
        raise JsonPatchError(f"encoded operation {index}: 'p' {relative!r} goes above the root from {previous!r}")
    return "/".join(tokens[: len(tokens) - drop]) + m.group(2)


# A number too large for a float (``1e400``) decodes to infinity, as with json.loads; on the wire
# it is written back as ``1e999``, which decodes to the same infinity. NaN has no JSON form.
_OUT_OF_RANGE = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity)|(NaN)')


def _finite(m: re.Match[str]) -> str:
    if m.group(1):
        return m.group(1).replace("Infinity", "1e999")
    if m.group(2):
        raise JsonPatchError("NaN cannot be encoded as JSON")
    return m.group(0)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def encode_ops(ops: Sequence[Op]) -> str:
    """A self-contained batch of operations in the compact wire form."""
    expect_ops(ops, func="encode_ops")
    return OpEncoder().encode(ops)


def decode_ops(text: str) -> list[Op]:
    """The operations of a self-contained batch written by :func:`encode_ops`."""
    expect(text, str, name="text", func="decode_ops")
    return OpDecoder().decode(text)
