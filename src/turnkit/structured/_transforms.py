"""Transforms: map the model's object to the object a client sees, one operation at a time.

A :class:`Transform` is a list of :class:`PathMap` rules. Each rule rewrites the operations under a
source path pattern (``*`` matches one key or array index) to the target pattern (each ``*`` takes the
matching capture), so ``append /summaryV2/0/text "맛"`` becomes ``append /summary/0 "맛"`` and an old
client follows the new schema live. Missing target containers are created on demand and target array
indices are kept dense. A rule with ``fn`` maps a whole value and fires once, when that value is complete.

For anything a path mapping cannot express, :class:`FunctionTransform` recomputes an arbitrary function
of the whole value after every feed and sends the difference: simple, but O(document) per feed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from turnkit._args import check_fields, expect, expect_items
from turnkit._json import escape_token, json_copy, split_pointer
from turnkit.errors import JsonPatchError, UsageError
from turnkit.structured._live_document import LiveDocument
from turnkit.structured._patch import Op, json_equal
from turnkit.structured._policy_filter import CLOSED

__all__ = ["FunctionTransform", "PathMap", "Transform", "TransformState"]

_WILD = "*"


class TransformState(Protocol):
    """One running transform: turns one feed's operations on the source into operations on the target."""

    def push(self, ops: Sequence[Op]) -> list[Op]: ...


@dataclass(frozen=True, slots=True)
class PathMap:
    """Send what happens under ``source`` to ``target`` (pointer patterns; ``*`` = one key or index).

    Without ``fn`` every operation is rewritten as it comes (text keeps streaming). With ``fn`` the target
    is ``fn(value)``, added once when the source value is complete.
    """

    source: str
    target: str
    fn: Callable[[Any], Any] | None = None
    _src: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _dst: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_fields(self)
        src = tuple(split_pointer(self.source))
        dst = tuple(split_pointer(self.target))
        if src.count(_WILD) != dst.count(_WILD):
            raise UsageError(f"PathMap {self.source!r} -> {self.target!r}: both sides need the same number of '*'")
        object.__setattr__(self, "_src", src)
        object.__setattr__(self, "_dst", dst)


class Transform:
    """Declarative, incremental: path mappings applied to every operation.

    With ``keep=True`` (the default) the source operations pass through too, so the client sees the
    model's object plus the derived fields; with ``keep=False`` it sees only the mapped targets.
    """

    def __init__(self, *maps: PathMap, keep: bool = True) -> None:
        expect_items(maps, PathMap, name="maps", func="Transform", accepts="PathMap rules")
        expect(keep, bool, name="keep", func="Transform")
        self.maps = maps
        self.keep = keep

    def start(self) -> TransformState:
        """A fresh state for one stream."""
        return _MapState(self.maps, keep=self.keep)


class FunctionTransform:
    """Fallback for arbitrary functions: ``fn(value)`` after every feed, sent as the difference.

    ``fn`` sees partial values (missing keys, growing strings) and must tolerate them. Each feed costs
    O(size of the document); strings that only grow are still sent as ``append``.
    """

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def start(self) -> TransformState:
        """A fresh state for one stream."""
        return _FunctionState(self.fn)


def _match(pattern: Sequence[str], tokens: Sequence[str]) -> bool:
    return all(p == _WILD or p == t for p, t in zip(pattern, tokens, strict=False))


class _MapState:
    def __init__(self, maps: Sequence[PathMap], *, keep: bool) -> None:
        self._maps = maps
        self._keep = keep
        # Text is only needed where a rule's function reads whole values; otherwise shapes suffice.
        self._in = LiveDocument(track_text=any(rule.fn is not None for rule in maps))
        self._out = LiveDocument(track_text=False)
        self._dense: dict[str, dict[str, int]] = {}
        self._fired: set[tuple[int, str]] = set()
        self._result: list[Op] = []
        self._last_append: str | None = None
        self._last_targets: list[str] = []

    def push(self, ops: Sequence[Op]) -> list[Op]:
        result = self._result = []
        for op in ops:
            kind = op["op"]
            if kind == "append" and op["path"] == self._last_append:
                # Fast path: more text for the string appended to last; its targets are known.
                self._in.apply(op)
                if self._keep:
                    result.append(op)
                for target in self._last_targets:
                    result.append({"op": "append", "path": target, "value": op["value"]})
                continue
            self._last_append = None
            tokens = split_pointer(op["path"])
            if kind == CLOSED:
                for index, rule in enumerate(self._maps):
                    if rule.fn is not None:
                        self._fire(index, rule, tokens)
                result.append(op)
                continue
            self._in.apply(op)
            if self._keep:
                self._emit(op)
            mark = len(result)
            for rule in self._maps:
                if rule.fn is None:
                    self._rewrite(rule, op, tokens)
            if kind == "append":
                self._last_append = op["path"]
                self._last_targets = [each["path"] for each in result[mark:] if each["op"] == "append"]
        return result

    # ------------------------------------------------------------------ rules

    def _rewrite(self, rule: PathMap, op: Op, tokens: list[str]) -> None:
        src = rule._src
        kind = op["op"]
        if len(tokens) >= len(src):
            if _match(src, tokens):
                target = self._target(rule, tokens[: len(src)]) + tokens[len(src) :]
                if kind == "append":
                    self._emit({"op": "append", "path": self._spell(target, create=False), "value": op["value"]})
                elif kind == "remove":
                    found, _ = self._out_lookup(target)
                    if found:
                        self._emit({"op": "remove", "path": self._spell(target, create=False)})
                else:
                    self._set(target, json_copy(op["value"]))
        elif kind in ("add", "replace") and _match(src[: len(tokens)], tokens):
            for sub, value in _walk(src[len(tokens) :], op["value"], list(tokens)):
                self._set(self._target(rule, sub), json_copy(value))

    def _fire(self, index: int, rule: PathMap, tokens: list[str]) -> None:
        src = rule._src
        if len(tokens) > len(src) or not _match(src[: len(tokens)], tokens):
            return
        found, value = self._in.lookup(tokens)
        if not found:
            return
        assert rule.fn is not None
        for sub, sub_value in _walk(src[len(tokens) :], value, list(tokens)):
            key = (index, "/".join(escape_token(t) for t in sub))
            if key in self._fired:
                continue
            self._fired.add(key)
            self._set(self._target(rule, sub), json_copy(rule.fn(json_copy(sub_value))))

    def _target(self, rule: PathMap, matched: list[str]) -> list[str]:
        """The target tokens for a source match; a capture from a source array is marked ``[i]``."""
        captures = iter(
            (token, self._is_array(matched[:i]))
            for i, (p, token) in enumerate(zip(rule._src, matched, strict=True))
            if p == _WILD
        )
        out: list[str] = []
        for part in rule._dst:
            if part == _WILD:
                token, from_array = next(captures)
                out.append(f"\x00{token}" if from_array else token)
            else:
                out.append(part)
        return out

    def _is_array(self, tokens: list[str]) -> bool:
        found, value = self._in.lookup(tokens, fresh=False)
        return found and isinstance(value, list)

    # ------------------------------------------------------------------ output

    def _emit(self, op: Op) -> None:
        self._out.apply(op)
        self._result.append(op)

    def _out_lookup(self, target: list[str]) -> tuple[bool, Any]:
        try:
            path = self._spell(target, create=False)
        except JsonPatchError:
            return False, None
        return self._out.lookup(split_pointer(path), fresh=False)

    def _set(self, target: list[str], value: Any) -> None:
        path = self._spell(target, create=True)
        found, _ = self._out.lookup(split_pointer(path), fresh=False)
        self._emit({"op": "replace" if found else "add", "path": path, "value": value})

    def _spell(self, target: list[str], *, create: bool) -> str:
        """The output pointer for ``target``; with ``create`` missing containers are added first."""
        if not self._out.exists:
            if not create:
                raise JsonPatchError("transform target does not exist", pointer="")
            self._emit({"op": "add", "path": "", "value": [] if target and target[0][:1] == "\x00" else {}})
        node = self._out.peek()
        pointer = ""
        for i, raw in enumerate(target):
            token = raw[1:] if raw[:1] == "\x00" else raw
            last = i == len(target) - 1
            if isinstance(node, list):
                dense = self._dense.setdefault(pointer, {})
                index = dense.get(token)
                if index is None:
                    if not create:
                        raise JsonPatchError("transform target does not exist", pointer=pointer + "/" + token)
                    index = dense[token] = len(node)
                token = str(index)
                exists = index < len(node)
            elif isinstance(node, dict):
                exists = token in node
            else:
                raise JsonPatchError("transform target crosses a non-container", pointer=pointer)
            child_pointer = pointer + "/" + escape_token(token)
            if last:
                return child_pointer
            if not exists:
                if not create:
                    raise JsonPatchError("transform target does not exist", pointer=child_pointer)
                container: Any = [] if target[i + 1][:1] == "\x00" else {}
                self._emit({"op": "add", "path": child_pointer, "value": container})
            node = node[int(token)] if isinstance(node, list) else node[token]
            pointer = child_pointer
        return pointer


def _walk(pattern: Sequence[str], value: Any, prefix: list[str]) -> Iterator[tuple[list[str], Any]]:
    """Every ``(tokens, sub_value)`` inside ``value`` matching ``pattern`` (in document order)."""
    if not pattern:
        yield prefix, value
        return
    head, rest = pattern[0], pattern[1:]
    if isinstance(value, dict):
        keys = list(value) if head == _WILD else [head] if head in value else []
        for key in keys:
            yield from _walk(rest, value[key], [*prefix, key])
    elif isinstance(value, list):
        if head == _WILD:
            indices = range(len(value))
        else:
            indices = range(int(head), int(head) + 1) if head.isdigit() and int(head) < len(value) else range(0)
        for i in indices:
            yield from _walk(rest, value[i], [*prefix, str(i)])


class _FunctionState:
    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self._fn = fn
        self._in = LiveDocument()
        self._shown: Any = None
        self._exists = False

    def push(self, ops: Sequence[Op]) -> list[Op]:
        for op in ops:
            if op["op"] != CLOSED:
                self._in.apply(op)
        if not self._in.exists:
            return []
        new = json_copy(self._fn(json_copy(self._in.value)))
        out: list[Op] = []
        if not self._exists:
            out.append({"op": "add", "path": "", "value": json_copy(new)})
            self._exists = True
        else:
            _diff(self._shown, new, "", out)
        self._shown = new
        return out


def _diff(old: Any, new: Any, path: str, out: list[Op]) -> None:
    """Operations turning ``old`` into ``new`` (strings that grow become ``append``)."""
    if type(old) is dict and type(new) is dict:
        for key in old:
            if key not in new:
                out.append({"op": "remove", "path": path + "/" + escape_token(key)})
        for key, value in new.items():
            child = path + "/" + escape_token(key)
            if key in old:
                _diff(old[key], value, child, out)
            else:
                out.append({"op": "add", "path": child, "value": json_copy(value)})
    elif type(old) is list and type(new) is list:
        common = min(len(old), len(new))
        for i in range(common):
            _diff(old[i], new[i], f"{path}/{i}", out)
        for i in range(common, len(new)):
            out.append({"op": "add", "path": f"{path}/{i}", "value": json_copy(new[i])})
        for i in range(len(old) - 1, common - 1, -1):
            out.append({"op": "remove", "path": f"{path}/{i}"})
    elif type(old) is str and type(new) is str and new.startswith(old):
        if len(new) > len(old):
            out.append({"op": "append", "path": path, "value": new[len(old) :]})
    elif not json_equal(old, new) or type(old) is not type(new):
        out.append({"op": "replace", "path": path, "value": json_copy(new)})
