"""Per-field streaming policies: the ``Annotated`` markers and the plan compiled from a model or schema.

A policy says what a client may see of a field while it streams. The markers are plain data placed in
``typing.Annotated``; :func:`compile_plan` turns a Pydantic model (or a JSON schema) into a lazy tree of
:class:`FieldPlan` nodes that :class:`~turnkit.structured.StructuredStream` consults per operation.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import types
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, PydanticUserError, TypeAdapter

from turnkit._args import expect_items, fail_value
from turnkit._json import unescape_token
from turnkit.errors import ResponseSchemaError, UsageError

__all__ = [
    "FieldPlan",
    "ItemsWhenComplete",
    "RequireFields",
    "Stream",
    "WhenComplete",
    "WithState",
    "compile_plan",
]


@dataclass(frozen=True, slots=True)
class Stream:
    """Show the value as it arrives: text grows character by character (the default for ``str``)."""


@dataclass(frozen=True, slots=True)
class WhenComplete:
    """Show the field only once its value is complete (the default for enums, literals, dates...)."""


@dataclass(frozen=True, slots=True)
class ItemsWhenComplete:
    """Show a list at once, but each of its items only when that item is complete."""


@dataclass(frozen=True, slots=True, init=False)
class RequireFields:
    """Hold an object back until each named field is visible (or the object is complete)."""

    names: tuple[str, ...]

    def __init__(self, *names: str) -> None:
        expect_items(names, str, name="names", func="RequireFields", accepts="field names (str)")
        if not names or not all(names):
            raise fail_value("needs at least one non-empty field name", name="names", func="RequireFields")
        object.__setattr__(self, "names", tuple(names))


@dataclass(frozen=True, slots=True)
class WithState:
    """Expose ``{"state": "pending" | "incomplete" | "complete", "value": ...}`` instead of the bare value."""


Marker = Stream | WhenComplete | ItemsWhenComplete | RequireFields | WithState
_MARKERS = (Stream, WhenComplete, ItemsWhenComplete, RequireFields, WithState)

# Types whose partial text would be an invalid value: shown only when complete unless told otherwise.
_STREAMABLE_LEAVES: tuple[type, ...] = (str, int, float, bool, type(None))
_ATOMIC_TYPES: tuple[type, ...] = (
    datetime.datetime,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    decimal.Decimal,
    uuid.UUID,
    enum.Enum,
    bytes,
)

Validation = Literal["model", "list", "leaf", "none"]


def split_annotated(tp: Any) -> tuple[Any, list[Marker], list[Any]]:
    """``Annotated[T, *meta]`` -> ``(T, turnkit markers, other metadata)``; nested ``Annotated`` is flattened."""
    markers: list[Marker] = []
    other: list[Any] = []
    while get_origin(tp) is Annotated:
        base, *meta = get_args(tp)
        for item in meta:
            (markers if isinstance(item, _MARKERS) else other).append(item)
        tp = base
    return tp, markers, other


def union_members(tp: Any) -> list[Any] | None:
    """The members of ``X | Y`` / ``Optional[X]``, or ``None`` when ``tp`` is not a union."""
    if get_origin(tp) in (Union, types.UnionType):
        return list(get_args(tp))
    return None


def is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def list_item_type(tp: Any) -> Any | None:
    """The item type of ``list[X]`` / ``Sequence[X]`` / ``tuple[X, ...]`` / ``set[X]``, else ``None``."""
    origin = get_origin(tp)
    args = get_args(tp)
    if tp in (list, set, frozenset, tuple) or origin in (list, set, frozenset, Sequence):
        return args[0] if args else Any
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return args[0]
    return None


def dict_value_type(tp: Any) -> Any | None:
    """The value type of ``dict[str, X]`` / ``Mapping[str, X]``, else ``None``."""
    if tp is dict:
        return Any
    if get_origin(tp) in (dict, Mapping):
        args = get_args(tp)
        return args[1] if len(args) == 2 else Any
    return None


def shows_partially(tp: Any) -> bool:
    """Whether a partial value of ``tp`` is meaningful (the default policy is then :class:`Stream`)."""
    base, _, _ = split_annotated(tp)
    members = union_members(base)
    if members is not None:
        return all(shows_partially(member) for member in members)
    if base is Any or base is object or is_model(base):
        return True
    if list_item_type(base) is not None:
        # a list grows item by item; a set or tuple is shown whole (a set has no order, a tuple a fixed shape)
        return get_origin(base) not in (set, frozenset, tuple) and base not in (set, frozenset, tuple)
    if dict_value_type(base) is not None:
        return True
    if get_origin(base) is Literal:
        return False
    if isinstance(base, type):
        if issubclass(base, _ATOMIC_TYPES):
            return False
        return issubclass(base, _STREAMABLE_LEAVES)
    return False


class FieldPlan:
    """What the stream does with one value: when it becomes visible, how it is shown, how it is validated."""

    __slots__ = (
        "when_complete",
        "require",
        "with_state",
        "validation",
        "model",
        "annotation",
        "_children",
        "_item",
        "_extra",
        "_keys",
        "_state_keys",
        "_adapter",
        "_source",
        "config",
        "python_mode",
    )

    def __init__(
        self,
        *,
        when_complete: bool = False,
        require: tuple[str, ...] = (),
        with_state: bool = False,
        validation: Validation = "none",
        model: type[BaseModel] | None = None,
        annotation: Any = Any,
        source: _PlanSource | None = None,
        config: ConfigDict | None = None,
    ) -> None:
        self.when_complete = when_complete
        self.require = require
        self.with_state = with_state
        self.validation: Validation = validation
        self.model = model
        self.annotation = annotation
        self._children: dict[str, FieldPlan] = {}
        self._item: FieldPlan | None = None
        self._extra: FieldPlan | None = None
        self._keys: dict[str, str] | None = None
        self._state_keys: tuple[str, ...] | None = None
        self._adapter: TypeAdapter[Any] | None = None
        self._source = source
        self.config = config
        # For a plain str/int/float/bool field, pydantic's python mode on a JSON scalar is exactly its JSON
        # mode, without serialising the value again.
        self.python_mode = split_annotated(annotation)[0] in (str, int, float, bool)

    def child(self, key: str) -> FieldPlan:
        """The plan of property ``key`` of this object (built on first use, so recursive models work)."""
        plan = self._children.get(key)
        if plan is None:
            plan = self._source.child(key) if self._source is not None else _FREE
            self._children[key] = plan
        return plan

    def item(self) -> FieldPlan:
        """The plan shared by every item of this array."""
        if self._item is None:
            self._item = self._source.item() if self._source is not None else _FREE
        return self._item

    @property
    def state_keys(self) -> tuple[str, ...]:
        """Keys of properties shown with their state: they exist (``pending``) as soon as the object does."""
        if self._state_keys is None:
            names = self._source.declared_keys() if self._source is not None else ()
            self._state_keys = tuple(name for name in names if self.child(name).with_state)
        return self._state_keys

    @property
    def field_names(self) -> dict[str, str]:
        """JSON key -> Python field name for a model plan."""
        if self._keys is None:
            self._keys = {}
            if self.model is not None:
                for name, info in self.model.model_fields.items():
                    alias = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
                    self._keys[alias or name] = name
        return self._keys

    def adapter(self) -> TypeAdapter[Any]:
        """The pydantic validator for a whole value of this field (built on first use)."""
        if self._adapter is None:
            self._adapter = _adapter(self.annotation, self.config)
        return self._adapter


_FREE = FieldPlan()
"""The plan of anything no schema describes: streamed as it comes, not validated."""


class _PlanSource:
    """Builds the child plans of one node lazily."""

    def child(self, key: str) -> FieldPlan:
        return _FREE

    def item(self) -> FieldPlan:
        return _FREE

    def declared_keys(self) -> Sequence[str]:
        return ()


def _policy(markers: Sequence[Marker], default_when_complete: bool) -> tuple[bool, bool, tuple[str, ...], bool]:
    """``(when_complete, items_when_complete, require, with_state)`` from the markers on one field."""
    when_complete = default_when_complete
    items = False
    require: tuple[str, ...] = ()
    with_state = False
    for marker in markers:
        if isinstance(marker, WhenComplete):
            when_complete = True
        elif isinstance(marker, Stream):
            when_complete = False
        elif isinstance(marker, ItemsWhenComplete):
            items = True
        elif isinstance(marker, RequireFields):
            require = require + tuple(name for name in marker.names if name not in require)
        elif isinstance(marker, WithState):
            with_state = True
    return when_complete, items, require, with_state


# ----------------------------------------------------------------------------------------------- pydantic


def ensure_complete(model: type[BaseModel]) -> None:
    """A model whose annotations are still forward references cannot be planned: resolve or say so."""
    if model.__pydantic_complete__:
        return
    try:
        model.model_rebuild(raise_errors=True)
    except Exception as exc:
        raise UsageError(
            f"model {model.__name__} is not fully defined ({str(exc).splitlines()[0]}); define the types it refers to "
            f"and call {model.__name__}.model_rebuild()",
            code="model_incomplete",
        ) from exc


def _json_key(name: str, info: Any) -> str:
    alias = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
    return str(alias or name)


class _ModelSource(_PlanSource):
    def __init__(self, model: type[BaseModel], *, validate: bool) -> None:
        ensure_complete(model)
        self.model = model
        self.validate = validate
        self._config = _field_config(model)
        self._by_key: dict[str, tuple[Any, list[Any]]] = {}
        for name, info in model.model_fields.items():
            self._by_key[_json_key(name, info)] = (info.annotation, list(info.metadata))

    def child(self, key: str) -> FieldPlan:
        found = self._by_key.get(key)
        if found is None:
            return _FREE
        annotation, metadata = found
        full = Annotated[(annotation, *metadata)] if metadata else annotation
        return _type_plan(full, validate=self.validate, config=self._config)

    def declared_keys(self) -> Sequence[str]:
        return list(self._by_key)


class _ListSource(_PlanSource):
    def __init__(self, item: Any, *, items_when_complete: bool, validate: bool, config: ConfigDict | None) -> None:
        self._item = item
        self._config = config
        self._items_when_complete = items_when_complete
        self._validate = validate

    def item(self) -> FieldPlan:
        plan = _type_plan(self._item, validate=self._validate, config=self._config)
        if self._items_when_complete and not plan.when_complete:
            plan = _with(plan, when_complete=True)
        return plan


class _DictSource(_PlanSource):
    def __init__(self, value: Any) -> None:
        self._value = value

    def child(self, key: str) -> FieldPlan:
        return _type_plan(self._value, validate=False)


class _UnionSource(_PlanSource):
    """Properties of several object types: the first member declaring a key gives its plan."""

    def __init__(self, members: Sequence[_PlanSource]) -> None:
        self._members = members

    def child(self, key: str) -> FieldPlan:
        for member in self._members:
            if key in member.declared_keys():
                return member.child(key)
        return _FREE

    def declared_keys(self) -> Sequence[str]:
        keys: dict[str, None] = {}
        for member in self._members:
            keys.update(dict.fromkeys(member.declared_keys()))
        return list(keys)

    def item(self) -> FieldPlan:
        for member in self._members:
            plan = member.item()
            if plan is not _FREE:
                return plan
        return _FREE


def _with(plan: FieldPlan, *, when_complete: bool) -> FieldPlan:
    copy = FieldPlan(
        when_complete=when_complete,
        require=plan.require,
        with_state=plan.with_state,
        validation=plan.validation,
        model=plan.model,
        annotation=plan.annotation,
        source=plan._source,
        config=plan.config,
    )
    return copy


def _has_model_decorators(model: type[BaseModel]) -> bool:
    decorators = model.__pydantic_decorators__
    return bool(decorators.field_validators or decorators.model_validators or decorators.root_validators)


def _type_plan(tp: Any, *, validate: bool, config: ConfigDict | None = None) -> FieldPlan:
    """The plan of a value of type ``tp`` (possibly ``Annotated`` with turnkit markers)."""
    base, markers, _ = split_annotated(tp)
    members = union_members(base)
    concrete = [m for m in members if m is not type(None)] if members is not None else [base]
    when_complete, items, require, with_state = _policy(markers, not shows_partially(base))
    # ``Any`` accepts everything: nothing to validate (and no depth limit of pydantic's JSON parser to hit).
    validation: Validation = "leaf" if validate and base not in (Any, object) else "none"
    source: _PlanSource | None = None
    model: type[BaseModel] | None = None
    if len(concrete) == 1:
        inner, inner_markers, _ = split_annotated(concrete[0])
        if inner_markers:
            w, i, r, s = _policy(inner_markers, when_complete)
            when_complete, items, require, with_state = w, items or i, require or r, with_state or s
        item = list_item_type(inner)
        value = dict_value_type(inner)
        if items and item is None:
            raise UsageError(f"ItemsWhenComplete() applies to lists, not to {inner!r}", code="bad_policy")
        if require and is_model(inner):
            ensure_complete(inner)
            keys = {_json_key(name, info) for name, info in inner.model_fields.items()}
            unknown = [name for name in require if name not in keys]
            if unknown:
                raise UsageError(
                    f"RequireFields names unknown field(s) {unknown} of {inner.__name__}", code="bad_policy"
                )
        if is_model(inner):
            model = inner
            own = validate and not _has_model_decorators(inner)
            source = _ModelSource(inner, validate=own)
            if validate:
                # A model with its own validators is validated whole when it closes (they need all fields).
                validation = "model" if own else "leaf"
        elif item is not None:
            item_plan = _type_plan(item, validate=validate, config=config)
            source = _ListSource(
                item, items_when_complete=items, validate=validate and _structural(item_plan), config=config
            )
            if validate and _structural(item_plan) and get_origin(inner) is list:
                validation = "list"
        elif value is not None:
            source = _DictSource(value)
    else:
        sources: list[_PlanSource] = []
        for member in concrete:
            inner = split_annotated(member)[0]
            if is_model(inner):
                sources.append(_ModelSource(inner, validate=False))
            elif list_item_type(inner) is not None:
                sources.append(
                    _ListSource(list_item_type(inner), items_when_complete=items, validate=False, config=None)
                )
        source = _UnionSource(sources) if sources else None
    return FieldPlan(
        when_complete=when_complete,
        require=require,
        with_state=with_state,
        validation=validation,
        model=model,
        annotation=tp,
        source=source,
        config=config,
    )


# Model settings that change how its fields validate; a field validated alone must see them too.
_FIELD_CONFIG_KEYS = (
    "strict",
    "str_strip_whitespace",
    "str_to_lower",
    "str_to_upper",
    "str_min_length",
    "str_max_length",
    "coerce_numbers_to_str",
    "use_enum_values",
    "allow_inf_nan",
    "arbitrary_types_allowed",
    "regex_engine",
    "ser_json_inf_nan",
    "val_json_bytes",
)


def _field_config(model: type[BaseModel]) -> ConfigDict | None:
    settings = {key: model.model_config[key] for key in _FIELD_CONFIG_KEYS if key in model.model_config}  # type: ignore[literal-required]
    return ConfigDict(**settings) if settings else None  # type: ignore[typeddict-item]


def _adapter(annotation: Any, config: ConfigDict | None) -> TypeAdapter[Any]:
    """A validator for one value; the enclosing model's field settings apply unless the type has its own."""
    if config is not None:
        try:
            return TypeAdapter(annotation, config=config)
        except PydanticUserError:  # a model / dataclass / TypedDict type carries its own config
            pass
    return TypeAdapter(annotation)


def _structural(plan: FieldPlan) -> bool:
    return plan.validation in ("model", "list")


# ----------------------------------------------------------------------------------------------- JSON schema

_MAX_REF_HOPS = 64


class _SchemaSource(_PlanSource):
    def __init__(self, schema: Mapping[str, Any], root: Mapping[str, Any]) -> None:
        self._schema = schema
        self._root = root

    def child(self, key: str) -> FieldPlan:
        properties = self._schema.get("properties")
        if isinstance(properties, Mapping) and key in properties:
            return _schema_plan(properties[key], self._root)
        extra = self._schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return _schema_plan(extra, self._root)
        return _FREE

    def item(self) -> FieldPlan:
        items = self._schema.get("items")
        if isinstance(items, Mapping):
            items_when_complete = self._schema.get("x-turnkit-items") == "when-complete"
            return _schema_plan(items, self._root, items_when_complete=items_when_complete)
        return _FREE

    def declared_keys(self) -> Sequence[str]:
        properties = self._schema.get("properties")
        return list(properties) if isinstance(properties, Mapping) else []


_MAX_COMBINATOR_DEPTH = 32


def _resolve(schema: Any, root: Mapping[str, Any], depth: int = 0) -> Mapping[str, Any]:
    """Follow local ``$ref``s and merge ``allOf`` / single-member ``anyOf`` into one object schema."""
    if depth > _MAX_COMBINATOR_DEPTH:
        raise ResponseSchemaError("JSON schema allOf/anyOf/oneOf nest too deeply (or refer to themselves)")
    hops = 0
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
        hops += 1
        if hops > _MAX_REF_HOPS:
            raise ResponseSchemaError("JSON schema $ref chain is too long or circular", pointer=str(schema["$ref"]))
        ref = str(schema["$ref"])
        if not ref.startswith("#/"):
            raise ResponseSchemaError(f"only local $ref is supported, got {ref!r}")
        target: Any = root
        for token in ref[2:].split("/"):
            token = unescape_token(token)
            if not isinstance(target, Mapping) or token not in target:
                raise ResponseSchemaError(f"unresolvable $ref {ref!r}")
            target = target[token]
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **extra} if isinstance(target, Mapping) else target
    if not isinstance(schema, Mapping):
        return {}
    merged: dict[str, Any] = dict(schema)
    for keyword in ("allOf", "anyOf", "oneOf"):
        parts = schema.get(keyword)
        if not isinstance(parts, list):
            continue
        resolved = [_resolve(part, root, depth + 1) for part in parts]
        objects = [part for part in resolved if part.get("type") != "null"]
        if keyword != "allOf" and len(objects) != 1:
            props: dict[str, Any] = {}
            for part in objects:
                if isinstance(part.get("properties"), Mapping):
                    for key, value in part["properties"].items():
                        props.setdefault(key, value)
            if props:
                merged.setdefault("properties", props)
            if any(_atomic_schema(part) for part in objects):
                merged.setdefault("x-turnkit-default", "when-complete")
            continue
        for part in objects:
            for key, value in part.items():
                if key == "properties" and isinstance(value, Mapping):
                    merged["properties"] = {**merged.get("properties", {}), **value}
                else:
                    merged.setdefault(key, value)
    return merged


def _atomic_schema(schema: Mapping[str, Any]) -> bool:
    return "enum" in schema or "const" in schema or (schema.get("type") == "string" and "format" in schema)


def _schema_plan(schema: Any, root: Mapping[str, Any], *, items_when_complete: bool = False) -> FieldPlan:
    resolved = _resolve(schema, root)
    stream = resolved.get("x-turnkit-stream")
    default = _atomic_schema(resolved) or resolved.get("x-turnkit-default") == "when-complete"
    if stream not in (None, "stream", "when-complete"):
        raise ResponseSchemaError(f"x-turnkit-stream must be 'stream' or 'when-complete', got {stream!r}")
    require = resolved.get("x-turnkit-require", [])
    if not isinstance(require, list) or not all(isinstance(name, str) for name in require):
        raise ResponseSchemaError("x-turnkit-require must be a list of property names")
    properties = resolved.get("properties")
    unknown = [name for name in require if not isinstance(properties, Mapping) or name not in properties]
    if unknown:
        raise ResponseSchemaError(f"x-turnkit-require names unknown properties {unknown}")
    return FieldPlan(
        when_complete=items_when_complete or stream == "when-complete" or (stream is None and default),
        require=tuple(require),
        with_state=resolved.get("x-turnkit-state") is True,
        source=_SchemaSource(resolved, root),
    )


def compile_plan(schema: type[BaseModel] | Mapping[str, Any] | Any, *, validate: bool = True) -> FieldPlan:
    """The root plan of a Pydantic model / any type pydantic validates, or of a JSON schema (a mapping).

    JSON schemas declare policies with ``"x-turnkit-stream": "when-complete"``, ``"x-turnkit-items":
    "when-complete"``, ``"x-turnkit-require": [...]`` and ``"x-turnkit-state": true``; they are not validated.
    """
    if isinstance(schema, Mapping):
        plan = _schema_plan(schema, schema)
        _warm(plan)
        return plan
    key = (schema, validate)
    try:
        cached = _PLANS.get(key)
    except TypeError:  # an unhashable annotation: no caching
        plan = _type_plan(schema, validate=validate)
        _warm(plan)
        return plan
    if cached is None:
        cached = _type_plan(schema, validate=validate)
        _warm(cached)
        if len(_PLANS) >= _MAX_CACHED_PLANS:
            _PLANS.pop(next(iter(_PLANS)))
        _PLANS[key] = cached
    return cached


# Plans (and the pydantic validators they build lazily) are shared by every stream of the same type.
_PLANS: dict[tuple[Any, bool], FieldPlan] = {}
_MAX_CACHED_PLANS = 256


_WARM_BUDGET = 2_000


def _warm(root: FieldPlan) -> None:
    """Build the declared part of the plan now, so a policy mistake is reported before streaming starts.

    Breadth first; each model is visited once, and a fixed budget bounds recursive or huge schemas
    (the rest stays lazy).
    """
    seen: set[type[BaseModel]] = set()
    queue = deque([root])
    budget = _WARM_BUDGET
    while queue and budget > 0:
        plan = queue.popleft()
        budget -= 1
        if plan.model is not None:
            if plan.model in seen:
                continue
            seen.add(plan.model)
        source = plan._source
        if source is None:
            continue
        queue.extend(plan.child(key) for key in source.declared_keys())
        item = plan.item()
        if item is not _FREE:
            queue.append(item)
