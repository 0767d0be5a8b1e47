"""Apply streaming policies to the parser's operations: the client sees only what its policies allow.

Works on operations, never on snapshots. A value's *gate* opens when its policy lets it be shown (at
once, when it is complete, or when its required fields are visible); a value is *shown* when its gate
and every ancestor's gate are open. Operations on shown values pass through (path-mapped for
``WithState`` wrappers); when a hidden value's gate opens under a shown parent it is released as one
``add`` of what its policies allow.

JSON arrives in document order, so at most one path is open: only the open values are kept as nodes
(memory O(depth)); a value that closes is validated once, right then, and folded into its parent as
plain data. Closing is read from the operations (a new path closes the open values it is not inside)
and from the parser's ``incomplete`` paths after each feed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from turnkit._json import escape_token, split_pointer
from turnkit.errors import JsonPatchError, OutputParseError
from turnkit.structured._patch import Op
from turnkit.structured._policies import FieldPlan

__all__ = ["CLOSED", "PolicyFilter"]

CLOSED = "_closed"
"""Internal event between stages: the value at ``path`` (and all inside it) is complete."""

_OBJ, _ARR, _STR = 0, 1, 2
_PENDING = {"state": "pending", "value": None}


class _Open:
    """An open value: an object or array still receiving members, or a string still growing."""

    __slots__ = (
        "parent",
        "key",
        "plan",
        "kind",
        "pointer",
        "vpointer",
        "stateful",
        "shown",
        "data",
        "results",
        "child",
        "count",
    )

    def __init__(self, parent: _Open | None, key: str, plan: FieldPlan, kind: int, pointer: str) -> None:
        self.parent = parent
        self.key = key
        self.plan = plan
        self.kind = kind
        self.pointer = pointer
        # WithState wraps object properties only (an array item or the root is shown bare).
        self.stateful = plan.with_state and parent is not None and parent.kind == _OBJ
        vpointer: str = "" if parent is None else parent.vpointer + "/" + escape_token(key)
        self.vpointer: str = vpointer + "/value" if self.stateful else vpointer
        self.shown = False
        # closed members as plain data (dict / list), or the parts of a string
        self.data: Any = {} if kind == _OBJ else []
        # validated closed members, kept only where this value is assembled from them
        self.results: Any = None
        if plan.validation == "model" and kind == _OBJ:
            self.results = {}
        elif plan.validation == "list" and kind == _ARR:
            self.results = []
        self.child: _Open | None = None
        self.count = 0  # members so far, the open one included


class PolicyFilter:
    """Turns the parser's operations (plus its ``incomplete`` paths) into the client's operations."""

    def __init__(self, plan: FieldPlan, *, validate: bool = True, closed_events: bool = False) -> None:
        self._plan = plan
        self._validate = validate
        self._closed_events = closed_events
        self._started = False
        self._done = False
        self._result: Any = None
        self._open: list[_Open] = []
        self._out: list[Op] = []
        self.validations = 0
        """How many values were validated so far (each exactly once, when it closed)."""

    # ------------------------------------------------------------------ public

    @property
    def complete(self) -> bool:
        """Whether the root value has closed (and, with a model, been validated)."""
        return self._done

    @property
    def result(self) -> Any:
        """The validated root value once complete (a model instance for a model plan)."""
        return self._result if self._done else None

    def push(self, ops: Sequence[Op], incomplete: Sequence[str]) -> list[Op]:
        """Process one feed's operations; ``incomplete`` is the parser's open paths after that feed."""
        stack = self._open
        if len(ops) == 1 and stack and len(incomplete) == len(stack):
            # Fast path: text appended to the open string, nothing closed; the parser's op is reused.
            op = ops[0]
            top = stack[-1]
            if op["op"] == "append" and op["path"] == top.pointer == incomplete[-1] and top.kind == _STR:
                top.data.append(op["value"])
                if not top.shown:
                    return []
                if top.vpointer == top.pointer:
                    return [op]
                return [{"op": "append", "path": top.vpointer, "value": op["value"]}]
        out = self._out = []
        for op in ops:
            self._one(op)
        # ``incomplete`` and the open stack are both chains from the root: pop until they agree.
        depth = len(incomplete)
        while stack and (len(stack) > depth or stack[-1].pointer != incomplete[len(stack) - 1]):
            self._close(stack.pop())
        return out

    # ------------------------------------------------------------------ operations

    def _one(self, op: Op) -> None:
        kind = op["op"]
        path = op["path"]
        self._close_outside(path)
        stack = self._open
        if kind == "append":
            top = stack[-1] if stack else None
            if top is None or top.pointer != path or top.kind != _STR:
                raise JsonPatchError("append to a value that is not the open string", pointer=path)
            text = op["value"]
            top.data.append(text)
            if top.shown:
                self._out.append({"op": "append", "path": top.vpointer, "value": text})
        elif kind in ("add", "replace"):
            if stack and stack[-1].pointer == path:
                self._close(stack.pop())  # a duplicate key: the earlier value is complete
            self._put(path, op["value"])
        elif kind == "remove":
            self._remove(path)
        else:
            raise JsonPatchError(f"unsupported operation {kind!r} in a stream", pointer=path)

    def _close_outside(self, path: str) -> None:
        """Everything open that ``path`` is not inside is complete (JSON arrives in document order)."""
        stack = self._open
        while stack:
            pointer = stack[-1].pointer
            if path == pointer or path.startswith(pointer + "/"):
                return
            self._close(stack.pop())

    def _parent_of(self, path: str) -> tuple[_Open, str]:
        """The open container a new member at ``path`` goes into (always the innermost open value)."""
        cut = path.rfind("/")
        stack = self._open
        if cut < 0 or not stack or stack[-1].pointer != path[:cut] or stack[-1].kind == _STR:
            raise JsonPatchError("a stream adds members only to the innermost open container", pointer=path)
        return stack[-1], split_pointer(path[cut:])[0]

    def _put(self, path: str, value: Any) -> None:
        if path == "":
            if self._started:
                raise JsonPatchError("the document root is set twice", pointer=path)
            self._started = True
            self._place(None, "", self._plan, "", value, replacing=False)
            return
        parent, token = self._parent_of(path)
        if parent.kind == _OBJ:
            key = token
            replacing = key in parent.data
            plan = parent.plan.child(key)
        else:
            if token != "-" and token != str(parent.count):
                raise JsonPatchError("a stream may only add at the end of an array", pointer=path)
            key = str(parent.count)
            replacing = False
            plan = parent.plan.item()
        self._place(parent, key, plan, parent.pointer + "/" + escape_token(key), value, replacing=replacing)

    def _place(
        self, parent: _Open | None, key: str, plan: FieldPlan, pointer: str, value: Any, *, replacing: bool
    ) -> None:
        """A new member: open (string or container, its last descendants open too) or complete (a scalar)."""
        kind = type(value)
        if kind is not dict and kind is not list and kind is not str:
            raw, result = self._seal_value(value, plan, pointer)
            self._closed_member(parent, key, plan, pointer, raw, result, replacing=replacing)
            return
        node = _Open(parent, key, plan, _OBJ if kind is dict else _ARR if kind is list else _STR, pointer)
        if parent is not None:
            if replacing:  # a duplicate key: the member starts over
                del parent.data[key]
                if parent.results is not None:
                    parent.results.pop(key, None)
            else:
                parent.count += 1
            parent.child = node
        self._open.append(node)
        if node.kind == _STR:
            if value:
                node.data.append(value)
        else:
            items = list(value.items()) if node.kind == _OBJ else [(str(i), v) for i, v in enumerate(value)]
            last = len(items) - 1
            for i, (k, v) in enumerate(items):
                child_plan = plan.child(k) if node.kind == _OBJ else plan.item()
                child_pointer = pointer + "/" + escape_token(k)
                if i == last and type(v) in (dict, list, str):
                    # the last member may still be open: announce this value first, in document order
                    self._announce(node, replacing=replacing)
                    self._place(node, k, child_plan, child_pointer, v, replacing=False)
                    return
                raw, result = self._seal_value(v, child_plan, child_pointer)
                self._store(node, k, raw, result)
                node.count += 1
        self._announce(node, replacing=replacing)

    def _announce(self, node: _Open, *, replacing: bool) -> None:
        """Tell the client about a member that just started, as far as the policies allow."""
        parent = node.parent
        if parent is None:
            self._release(node)
            return
        # an open descendant placed together with it may have been released into ``node`` already
        if parent.shown and not node.shown:
            if node.stateful:
                self._emit_state(parent, node.key, "incomplete")
            if self._gate(node):
                self._show(node, replacing=replacing or node.stateful)
        self._release(parent)

    def _remove(self, path: str) -> None:
        parent, key = self._parent_of(path)
        if parent.kind != _OBJ or key not in parent.data:
            raise JsonPatchError("a stream may remove only a complete member of the open object", pointer=path)
        del parent.data[key]
        if parent.results is not None:
            parent.results.pop(key, None)
        if parent.shown:
            if parent.plan.child(key).with_state:
                self._out.append(
                    {"op": "replace", "path": parent.vpointer + "/" + escape_token(key), "value": dict(_PENDING)}
                )
            else:
                self._out.append({"op": "remove", "path": parent.vpointer + "/" + escape_token(key)})

    # ------------------------------------------------------------------ closing and validation

    def _close(self, node: _Open) -> None:
        """``node`` is complete: validate it once and fold it into its parent as data."""
        if node.kind == _STR:
            raw: Any = "".join(node.data)
            results = None
        else:
            raw, results = node.data, node.results
        result = self._validated(node.plan, raw, results, node.pointer)
        parent = node.parent
        if parent is None:
            self._done, self._result = True, result
            if not node.shown:
                self._show_closed(None, "", node.plan, raw)
            elif self._closed_events:
                self._out.append({"op": CLOSED, "path": ""})
            return
        parent.child = None
        self._store(parent, node.key, raw, result)
        if parent.shown:
            if node.stateful:
                self._emit_state(parent, node.key, "complete")
            if not node.shown:
                self._show_closed(parent, node.key, node.plan, raw, replacing=node.stateful)
            elif self._closed_events:
                self._out.append({"op": CLOSED, "path": node.vpointer})
        self._release(parent)

    def _closed_member(
        self, parent: _Open | None, key: str, plan: FieldPlan, pointer: str, raw: Any, result: Any, *, replacing: bool
    ) -> None:
        """A member that arrived complete (a number, ``true``, a whole value): store it and show it."""
        if parent is None:
            self._done, self._result = True, result
            self._show_closed(None, "", plan, raw)
            return
        if not replacing:
            parent.count += 1
        self._store(parent, key, raw, result)
        if parent.shown:
            stateful = plan.with_state and parent.kind == _OBJ
            if stateful:
                self._emit_state(parent, key, "complete")
            self._show_closed(parent, key, plan, raw, replacing=replacing or stateful)
        self._release(parent)

    @staticmethod
    def _store(parent: _Open, key: str, raw: Any, result: Any) -> None:
        if parent.kind == _OBJ:
            parent.data[key] = raw
            if parent.results is not None:
                parent.results[key] = result
        else:
            parent.data.append(raw)
            if parent.results is not None:
                parent.results.append(result)

    def _seal_value(self, value: Any, plan: FieldPlan, pointer: str) -> tuple[Any, Any]:
        """``(raw, validated)`` of a value that arrived complete; its members are validated first."""
        kind = type(value)
        if kind is dict:
            structural = plan.validation == "model"
            raw: Any = {}
            results: Any = {} if structural else None
            for key, item in value.items():
                r, v = self._seal_value(item, plan.child(key), pointer + "/" + escape_token(key))
                raw[key] = r
                if structural:
                    results[key] = v
        elif kind is list:
            structural = plan.validation == "list"
            raw = []
            results = [] if structural else None
            item_plan = plan.item()
            for i, item in enumerate(value):
                r, v = self._seal_value(item, item_plan, f"{pointer}/{i}")
                raw.append(r)
                if structural:
                    results.append(v)
        else:
            raw, results = value, None
        return raw, self._validated(plan, raw, results, pointer)

    def _validated(self, plan: FieldPlan, raw: Any, results: Any, pointer: str) -> Any:
        """Validate one complete value (its members already validated where it is assembled from them)."""
        if not self._validate or plan.validation == "none":
            return raw
        self.validations += 1
        try:
            if plan.validation == "model" and type(raw) is dict and plan.model is not None:
                return self._assemble(plan, results, pointer)
            if plan.validation == "list" and type(raw) is list:
                return plan.adapter().validate_python(results)
            if plan.python_mode and type(raw) in (str, int, float, bool):
                return plan.adapter().validate_python(raw)
            # JSON mode, exactly as ``Model.model_validate_json`` would see this value (strict models
            # accept ISO dates, enum values, arrays for tuples...).
            return plan.adapter().validate_json(json.dumps(raw, ensure_ascii=False))
        except ValidationError as exc:
            raise _validation_error(pointer, exc) from exc

    @staticmethod
    def _assemble(plan: FieldPlan, results: dict[str, Any], pointer: str) -> BaseModel:
        """A model from its already validated fields: required fields checked, nothing validated twice."""
        model = plan.model
        assert model is not None
        names = plan.field_names
        fields = model.model_fields
        extra = model.model_config.get("extra")
        values: dict[str, Any] = {}
        for key, result in results.items():
            name = names.get(key)
            if name is not None:
                values[name] = result
            elif extra == "forbid":
                raise OutputParseError(
                    f"unexpected field {key!r} for {model.__name__}",
                    code="field_validation",
                    pointer=pointer + "/" + escape_token(key),
                    feedback=f"Remove the field {key!r}.",
                )
            elif extra == "allow":
                values[key] = result
        missing = [key for key, name in names.items() if name not in values and fields[name].is_required()]
        if missing:
            listed = ", ".join(repr(key) for key in missing)
            raise OutputParseError(
                f"{model.__name__} is missing required field(s) {listed}",
                code="field_validation",
                pointer=pointer,
                feedback=f"Include the required field(s) {listed}.",
            )
        return model.model_construct(_fields_set=set(values), **values)

    # ------------------------------------------------------------------ visibility

    def _gate(self, node: _Open) -> bool:
        """Whether an open value's own policy lets it be shown now."""
        plan = node.plan
        if plan.when_complete:
            return False
        if plan.require and node.kind == _OBJ:
            child = node.child
            for key in plan.require:
                if key in node.data:
                    continue
                if child is None or child.key != key or not self._gate(child):
                    return False
        return True

    def _release(self, node: _Open | None) -> None:
        """Show ``node`` if its gate just opened under a shown parent; a held parent may follow it."""
        while node is not None and not node.shown:
            if not self._gate(node):
                return
            parent = node.parent
            if parent is None:
                self._show(node, replacing=False)
                return
            if parent.shown:
                self._show(node, replacing=node.stateful)
                return
            node = parent

    def _show(self, node: _Open, *, replacing: bool) -> None:
        closed: list[str] = []
        value = self._project(node, closed)
        self._out.append({"op": "replace" if replacing else "add", "path": node.vpointer, "value": value})
        for pointer in closed:
            self._out.append({"op": CLOSED, "path": pointer})

    def _show_closed(
        self, parent: _Open | None, key: str, plan: FieldPlan, raw: Any, *, replacing: bool = False
    ) -> None:
        if parent is None:
            vpointer = ""
        else:
            vpointer = parent.vpointer + "/" + escape_token(key)
            if plan.with_state and parent.kind == _OBJ:
                vpointer += "/value"
        self._out.append(
            {"op": "replace" if replacing else "add", "path": vpointer, "value": _project_closed(raw, plan)}
        )
        if self._closed_events:
            self._out.append({"op": CLOSED, "path": vpointer})

    def _emit_state(self, parent: _Open, key: str, state: str) -> None:
        path = parent.vpointer + "/" + escape_token(key) + "/state"
        self._out.append({"op": "replace", "path": path, "value": state})

    def _project(self, node: _Open, closed: list[str]) -> Any:
        """The client's copy of what an open value's policies show now; marks the shown values."""
        node.shown = True
        if node.kind == _STR:
            text = "".join(node.data)
            node.data[:] = [text] if text else []
            return text
        plan = node.plan
        child = node.child
        events = self._closed_events
        if node.kind == _ARR:
            item_plan = plan.item()
            items: list[Any] = []
            for i, raw in enumerate(node.data):  # a loop, not a comprehension: one frame per nesting level
                items.append(_project_closed(raw, item_plan))
                if events:
                    closed.append(f"{node.vpointer}/{i}")
            if child is not None and self._gate(child):
                items.append(self._project(child, closed))
            return items
        out: dict[str, Any] = {}
        for key, raw in node.data.items():
            child_plan = plan.child(key)
            value = _project_closed(raw, child_plan)
            if child_plan.with_state:
                out[key] = {"state": "complete", "value": value}
                if events:
                    closed.append(node.vpointer + "/" + escape_token(key) + "/value")
            else:
                out[key] = value
                if events:
                    closed.append(node.vpointer + "/" + escape_token(key))
        if child is not None:
            if child.stateful:
                shown = self._project(child, closed) if self._gate(child) else None
                out[child.key] = {"state": "incomplete", "value": shown}
            elif self._gate(child):
                out[child.key] = self._project(child, closed)
        for key in plan.state_keys:
            if key not in out:
                out[key] = dict(_PENDING)
        return out


def _project_closed(raw: Any, plan: FieldPlan) -> Any:
    """The client's copy of a complete value: fresh containers, ``WithState`` properties wrapped."""
    kind = type(raw)
    if kind is dict:
        out: dict[str, Any] = {}
        for key, value in raw.items():
            child_plan = plan.child(key)
            shown = _project_closed(value, child_plan)
            out[key] = {"state": "complete", "value": shown} if child_plan.with_state else shown
        for key in plan.state_keys:
            if key not in out:
                out[key] = dict(_PENDING)
        return out
    if kind is list:
        item_plan = plan.item()
        items: list[Any] = []
        for value in raw:
            items.append(_project_closed(value, item_plan))
        return items
    return raw


def _validation_error(pointer: str, exc: ValidationError) -> OutputParseError:
    first = exc.errors(include_url=False)[0]
    where = pointer + "".join("/" + escape_token(str(part)) for part in first.get("loc", ()))
    return OutputParseError(
        f"validation failed: {first.get('msg', 'invalid value')}",
        code="field_validation",
        pointer=where,
        feedback=str(exc),
    )
