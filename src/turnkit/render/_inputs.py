"""What a chat template is allowed to see: the caller's inputs rebuilt as plain JSON-like data, as transformers does.

transformers 5.23 drops ``None``-valued message keys, rebuilds everything the template sees out of plain types
(callers put enums, numpy scalars, dataclasses and pydantic models in their inputs; their methods are not safe to
expose), turns Python-function tools into JSON schemas, and copies a message's reasoning under the names templates
read. Each rule below mirrors one of those steps, in the same order, so the template sees identical data.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import itertools
import marshal
import pickle
import sys
import threading
from collections.abc import Mapping
from typing import Any

from turnkit._args import expect, expect_items
from turnkit.errors import TemplateError, TemplateLimitError, ToolSchemaError
from turnkit.limits import DEFAULT_LIMITS
from turnkit.messages import REASONING_FIELDS

__all__ = [
    "REASONING_FIELDS",
    "WITH_NONE",
    "adopt",
    "alias_reasoning_fields",
    "frozen_json",
    "frozen_slot",
    "input_size",
    "PlainPickler",
    "plain_data",
    "plain_key",
    "plain_messages",
    "too_deep",
    "tool_schemas",
    "tool_set_key",
    "tools_key",
]

_SCALARS = frozenset({str, int, float, bool, type(None)})
_MAX_CONTAINERS = DEFAULT_LIMITS.max_sequence_length
"""How many dicts and lists the inputs of one render may copy into: a value that shares its parts (``x = [x, x]``
forty times over) is a tree of 2**40 nodes once copied, and would never finish."""


def _trust(container: Any, trusted: set[int]) -> None:
    trusted.add(id(container))
    if len(trusted) > _MAX_CONTAINERS:
        raise TemplateLimitError(
            f"template inputs hold more than {_MAX_CONTAINERS:,} lists and dicts (values that share their parts "
            "count once per place they appear)",
            code="template_input",
        )


# Names a message's reasoning is passed under (REASONING_FIELDS lists them, the one most templates read first),
# tested one by one: three dict lookups cost less than frozenset.isdisjoint's walk over every key of the message.
_REASONING_1, _REASONING_2, _REASONING_3 = REASONING_FIELDS


def too_deep() -> TemplateError:
    """The error for an input whose copy recursed too deep: nested absurdly, or holding itself."""
    return TemplateError("template input is nested too deeply (or refers to itself)", code="template_input")


def plain_messages(conversation: Any, trusted: set[int], *, copy: bool = False) -> list[Any]:
    """The conversation's messages without ``None``-valued keys, as plain data (see :func:`plain_data`), their
    reasoning copied under the names templates read (:func:`alias_reasoning_fields`).

    A message that already is plain data shaped as a tree (:func:`adopt`) is used as it is: templates cannot
    mutate what they are given. When only its ``None`` values stand in the way (an assistant turn with
    ``content=None`` and tool calls), it is a new dict of its other items, the caller's own (plain, never
    mutated), instead of a deep copy. Anything else is rebuilt. ``copy=True`` rebuilds every message (for callers
    that edit the result).
    """
    messages: list[Any] = []
    try:
        for message in conversation:
            if type(message) is not dict:
                message = {k: v for k, v in message.items()}  # noqa: C416 - Mappings as transformers reads them
                message = _plain_dict(message, trusted, drop_none=True)
            elif copy or not (plain := _adopt_dict(message, trusted)):
                message = _plain_dict(message, trusted, drop_none=True)
            elif plain is WITH_NONE:
                message = {key: item for key, item in message.items() if item is not None}
                _trust(message, trusted)
            # (in this loop: a second loop over the messages costs more than these three lookups)
            if _REASONING_1 in message or _REASONING_2 in message or _REASONING_3 in message:
                message = _aliased(message)
            messages.append(message)
    except (AttributeError, TypeError) as exc:
        raise TemplateError(
            f"a conversation must be a list of message dicts, got {_describe(conversation)}", code="template_input"
        ) from exc
    except RecursionError as exc:
        raise too_deep() from exc
    trusted.add(id(messages))
    return messages


WITH_NONE = 2
"""What :func:`adopt` returns for a plain dict with a ``None`` value among its own items."""


def adopt(value: Any, trusted: set[int]) -> int:
    """Whether ``value`` already is plain data shaped as a tree (a true number: :data:`WITH_NONE` for a dict with a
    ``None`` value among its own items, which spares the caller a search); its containers are then recorded in
    ``trusted``.

    Plain data needs no copy (the sandbox never mutates it); a shared or self-containing part, or any other type,
    means the caller must rebuild it with :func:`plain_data`.
    """
    kind = type(value)
    if kind is dict:
        return _adopt_dict(value, trusted)
    if kind is list or kind is tuple:
        return _adopt_items(value, trusted)
    return kind in _SCALARS


# The walk behind adopt, a function per container kind, each dispatching its items on their exact type itself (a
# call per container and no second type test).


def _adopt_dict(value: dict[Any, Any], trusted: set[int]) -> int:
    ident = id(value)  # (once: id() is a call that allocates the number and raises an audit event)
    if ident in trusted:
        return False
    trusted.add(ident)
    plain: int = True
    for key, item in value.items():
        if type(key) is not str and type(key) not in _SCALARS:
            return False
        if type(item) is not str:
            kind = type(item)
            if item is None:
                plain = WITH_NONE
            elif kind is dict:
                if not _adopt_dict(item, trusted):
                    return False
            elif kind is list or kind is tuple:
                if not _adopt_items(item, trusted):
                    return False
            elif kind not in _SCALARS:
                return False
    return plain


def _adopt_items(value: list[Any] | tuple[Any, ...], trusted: set[int]) -> bool:
    ident = id(value)
    if ident in trusted:
        return False
    trusted.add(ident)
    for item in value:
        kind = type(item)
        if kind is dict:
            if not _adopt_dict(item, trusted):
                return False
        elif kind is list or kind is tuple:
            if not _adopt_items(item, trusted):
                return False
        elif kind not in _SCALARS:
            return False
    return True


def _plain_dict(value: Mapping[Any, Any], trusted: set[int] | None, *, drop_none: bool = False) -> dict[Any, Any]:
    if drop_none:
        out = {
            (k if type(k) is str else plain_data(k, trusted)): (v if type(v) in _SCALARS else plain_data(v, trusted))
            for k, v in value.items()
            if v is not None
        }
    else:
        out = {
            (k if type(k) is str else plain_data(k, trusted)): (v if type(v) in _SCALARS else plain_data(v, trusted))
            for k, v in value.items()
        }
    if trusted is not None:
        _trust(out, trusted)
    return out


def plain_data(value: Any, trusted: set[int] | None = None) -> Any:
    """``value`` rebuilt from plain JSON types; anything else becomes an inert ``"<TypeName>"`` placeholder.

    The ids of the containers built are added to ``trusted``: they form a tree, so printing them is cheap.
    """
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return _plain_dict(value, trusted)
    if kind is list:
        items = [x if type(x) in _SCALARS else plain_data(x, trusted) for x in value]
        if trusted is not None:
            _trust(items, trusted)
        return items
    if isinstance(value, str):
        return str.__str__(value)  # str subclasses (enums...) carry methods; keep the text only
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return _plain_dict(value, trusted)
    if isinstance(value, list):
        return plain_data(list(value), trusted)
    if isinstance(value, tuple):
        result = tuple(plain_data(item, trusted) for item in value)
        if trusted is not None:
            _trust(result, trusted)
        return result
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic):
        return plain_data(value.item(), trusted)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
        return _plain_dict(fields, trusted)
    if callable(getattr(value, "model_dump", None)):
        return plain_data(value.model_dump(), trusted)
    return f"<{type(value).__name__}>"


def alias_reasoning_fields(chat: list[Any]) -> list[Any]:
    """Copy a message's reasoning to ``reasoning_content`` and ``thinking`` (gpt-oss templates read the latter)."""
    for message in chat:  # (a Python loop: cheaper than set operations over map() for a few messages)
        if type(message) is not dict or _REASONING_1 in message or _REASONING_2 in message or _REASONING_3 in message:
            break
    else:
        return chat  # nothing to alias (the usual case): keep the list as it is
    return [_aliased(message) if isinstance(message, dict) else message for message in chat]


def _aliased(message: dict[Any, Any]) -> dict[Any, Any]:
    """``message`` with its reasoning (if any is not ``None``) under every name of ``REASONING_FIELDS``."""
    reasoning = next((message[key] for key in REASONING_FIELDS if message.get(key) is not None), None)
    return message if reasoning is None else {"thinking": reasoning, **message, "reasoning_content": reasoning}


def tool_schemas(tools: Any, trusted: set[int] | None = None) -> list[Any] | None:
    """Plain JSON schemas for ``tools``: dicts are copied, Python functions and methods are converted (cached).

    A list of JSON-schema dicts seen before (same content, by :func:`tool_set_key`) gets the private copy made the
    first time, so a server passing the same tools on every request pays for one ``marshal`` call, not a walk and
    a copy.
    """
    if tools is None:
        return None
    try:
        if trusted is not None and type(tools) is list:
            for tool in tools:  # (a loop: all() over a generator costs a frame and a generator object more)
                if type(tool) is not dict:
                    break
            else:
                cached = _tool_set(tools)
                if cached is not None:
                    trusted.update(cached[1])
                    return cached[0]
        schemas: list[Any] = []
        for tool in tools:
            if isinstance(tool, dict):
                schemas.append(tool if trusted is not None and adopt(tool, trusted) else plain_data(tool, trusted))
            elif inspect.isfunction(tool) or inspect.ismethod(tool):
                try:
                    schemas.append(_function_schema(tool, trusted))
                except ToolSchemaError as exc:
                    # rendering fails as a TemplateError, like every other render failure; the cause names the argument
                    raise TemplateError(f"tool {getattr(tool, '__name__', tool)!r}: {exc}", code="tool_schema") from exc
            else:
                raise TemplateError(
                    f"tools must be JSON schemas (dicts) or Python functions with type hints and a docstring, "
                    f"got {_describe(tool)}",
                    code="tool_type",
                )
    except RecursionError as exc:
        raise too_deep() from exc
    if trusted is not None:
        trusted.add(id(schemas))
    return schemas


class _NotPlain(Exception):
    pass


class PlainPickler(pickle.Pickler):
    """A pickler for exact built-in data only: the C pickler handles those itself, anything else lands here
    (a subclass may key more types: return a reduction for them, defer to this method for the rest)."""

    def __init__(self, file: io.BytesIO, protocol: int) -> None:
        super().__init__(file, protocol)
        self.file = file

    def reducer_override(self, obj: Any) -> Any:
        raise _NotPlain


def plain_key(value: Any, max_bytes: int, pickler: type[PlainPickler] | None = None) -> bytes | None:
    """The exact content of ``value`` as bytes, or None when some of it is not exact built-in data (or too big).

    Pickled by :class:`PlainPickler` (or ``pickler``, a subclass), which takes only exact built-in types (a str
    subclass, a Mapping, a dataclass, a function make it refuse), keeps dict order, float bits and ``True`` vs
    ``1``, and writes a back-reference for an object met twice: equal bytes mean values of the same types,
    content, order and sharing.
    """
    if pickler is not None:
        return _dump(pickler(io.BytesIO(), 5), value, max_bytes)[0]
    # A PlainPickler costs a fifth of a key to build: each thread reuses one (taken out while in use, so a
    # reentrant call builds its own; one whose dump failed is dropped).
    idle = _IDLE.__dict__
    reused = idle.pop("pickler", None) or PlainPickler(io.BytesIO(), 5)
    key, done = _dump(reused, value, max_bytes)
    if done:
        idle["pickler"] = reused
    return key


_IDLE = threading.local()


def _dump(pickler: PlainPickler, value: Any, max_bytes: int) -> tuple[bytes | None, bool]:
    """(the pickle of ``value`` or None, whether the dump completed and left ``pickler`` ready for another)."""
    buffer = pickler.file
    try:
        pickler.dump(value)
    except (_NotPlain, pickle.PicklingError, ValueError, TypeError, RecursionError):
        return None, False
    pickler.clear_memo()
    key = buffer.getvalue() if buffer.tell() <= max_bytes else None
    buffer.seek(0)
    buffer.truncate()
    return key, True


# Private plain copies of tool schemas that every render with those tools is handed: templates cannot mutate
# them and no caller ever sees them, so what is computed from one stays true. id -> [the object, its
# ``tojson`` texts once printed (by arguments: (text, size estimate)), a serial number never given twice]; the
# entry keeps the object alive, so the id cannot be reused meanwhile.
_FROZEN: dict[int, list[Any]] = {}
_FROZEN_MAX = 4096
_SERIALS = itertools.count()


def _freeze(value: Any) -> None:
    if len(_FROZEN) >= _FROZEN_MAX:
        _FROZEN.clear()  # only a cost: cleared objects print through the encoder again, and key by content
    _FROZEN[id(value)] = [value, {}, next(_SERIALS)]


frozen_slot = _FROZEN.get
"""The ``[value, JSON texts, serial]`` slot kept under an object's id, if any: the slot of a private tool schema
when ``slot[0]`` is that object (what :func:`frozen_json` checks; the code generator inlines the check)."""


def frozen_json(value: Any) -> list[Any] | None:
    """The ``[value, JSON texts, serial]`` slot of a private tool schema, or None for any other object."""
    entry = _FROZEN.get(id(value))
    return entry if entry is not None and entry[0] is value else None


def tools_key(schemas: list[Any] | None) -> Any:
    """What identifies ``schemas`` (from :func:`tool_schemas`) in a render memo key: the serial numbers of their
    private copies (equal serials, equal content: the copies never change), else the schemas themselves."""
    if schemas is None:
        return None
    serials = []
    for schema in schemas:
        entry = frozen_json(schema)
        if entry is None:
            return schemas
        serials.append(entry[2])
    return ("frozen tools", *serials)


# marshalled list of JSON-schema dicts -> (the private copy, ids of its containers); FIFO, bounded.
_TOOL_SETS: dict[bytes, tuple[list[Any], frozenset[int]]] = {}
_TOOL_SETS_MAX = 64
_TOOL_SETS_LOCK = threading.Lock()
_TOOL_SET_MAX_KEY = 1 << 18
# the tool set met last (its key, its entry): a server passes the same tools on every request
_LAST_TOOL_SET: tuple[bytes, tuple[list[Any], frozenset[int]] | None] = (b"", None)
_JSON_TYPES = frozenset({str, int, float, bool, type(None), dict, list, tuple})


def tool_set_key(tools: list[Any]) -> bytes | None:
    """The content of ``tools`` as bytes (``marshal``, version 4), or None when marshal refuses it or it is big.

    marshal is one C call with no hook into the caller's code (a pickler calls back per frame and per foreign
    object): it writes exact ``str``, ``int``, ``float`` (its bits), ``bool``, ``None``, ``dict`` (in order),
    ``list`` and ``tuple`` each under its own code, refuses their subclasses, and writes a part met twice (a
    shared part, a cycle) as a back-reference, so a huge expansion costs nothing. Its one inexactness, any
    buffer (a ``bytearray``, a numpy value) written as ``bytes``, cannot reach a hit: only a key made from JSON
    types alone is cached (:func:`_json_types_only`), and equal bytes decode to the same types at the same places.
    A key also depends on which strings are interned and which objects the caller refers to twice: an equal tool
    set keyed otherwise is only a miss.
    """
    try:
        key = marshal.dumps(tools, 4)
    except ValueError:  # a type marshal does not write (a subclass, a function), or nested too deeply
        return None
    return key if len(key) <= _TOOL_SET_MAX_KEY else None


def _json_types_only(value: Any) -> bool:
    """Whether every object in ``value``, keys included, is of an exact type of :data:`_JSON_TYPES` (a part met
    twice is looked at once: shared parts and cycles cost no more than the value's size)."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind not in _JSON_TYPES:
            return False
        if kind is dict or kind is list or kind is tuple:
            if id(item) in seen:
                continue
            seen.add(id(item))
            if kind is dict:
                stack += item.keys()
                stack += item.values()
            else:
                stack += item
    return True


def _tool_set(tools: list[dict[Any, Any]]) -> tuple[list[Any], frozenset[int]] | None:
    # the private copy is a tree (plain_data writes a shared part out where it appears), so the content alone
    # decides it: sharing needs no key
    global _LAST_TOOL_SET
    key = tool_set_key(tools)
    if key is None:
        return None
    last = _LAST_TOOL_SET
    if key == last[0]:  # (a comparison: looking the key up would hash its bytes first)
        return last[1]
    entry = _TOOL_SETS.get(key)
    if entry is None:
        if not _json_types_only(tools):
            return None
        ids: set[int] = set()
        schemas = _private_copy(key, ids)
        for schema in schemas:
            _freeze(schema)
        _freeze(schemas)  # the list is as private as its schemas: a template's printing loop over it is remembered
        entry = (schemas, frozenset(ids))
        # A string of the caller's that the copy still shares (an interned one, a one-character one) may now have
        # a second reference, which marshal's reference flag shows. The entry is filed under both keys: the one
        # these objects give from now on, and the one equal tools made afresh (parsed from each request) give.
        again = tool_set_key(tools) or key
        with _TOOL_SETS_LOCK:  # renders in several threads evict from the same cache
            while len(_TOOL_SETS) >= _TOOL_SETS_MAX - 1:
                del _TOOL_SETS[next(iter(_TOOL_SETS))]
            entry = _TOOL_SETS.setdefault(key, entry)
            _TOOL_SETS.setdefault(again, entry)
        key = again
    _LAST_TOOL_SET = (key, entry)
    return entry


def _private_copy(key: bytes, ids: set[int]) -> list[Any]:
    """The tool set marshalled as ``key``, rebuilt as a tree (see :func:`plain_data`) of its own objects, strings
    included: a string of the caller's referred to once stays so, so marshal keys it without an entry in its
    reference table on every later render (marshal interns what it read interned, as the caller's was)."""
    schemas = [plain_data(tool, ids) for tool in marshal.loads(key)]
    ids.add(id(schemas))
    return schemas


# shared schema object (from the tools package's cache) -> (that object, its plain copy, ids of the copy's
# containers). Templates cannot mutate what they are given, so one plain copy serves every render.
_PLAIN_SCHEMAS: dict[int, tuple[Any, Any, frozenset[int]]] = {}


def _function_schema(func: Any, trusted: set[int] | None) -> Any:
    try:
        from turnkit.tools._schema import _cached as shared_schema
    except ImportError:  # pragma: no cover - the tools package changed its internals: take the public, copying way
        from turnkit.tools import get_json_schema as shared_schema

    schema = shared_schema(func)
    entry = _PLAIN_SCHEMAS.get(id(schema))
    if entry is None or entry[0] is not schema:
        ids: set[int] = set()
        plain = plain_data(schema, ids)
        if len(_PLAIN_SCHEMAS) > 1024:
            _PLAIN_SCHEMAS.clear()
        entry = (schema, plain, frozenset(ids))
        _freeze(plain)
        _PLAIN_SCHEMAS[id(schema)] = entry
    if trusted is not None:
        trusted.update(entry[2])
    return entry[1]


def input_size(*values: Any) -> int:
    """Approximate bytes of the strings in ``values``: renders may allocate a multiple of their input."""
    total = 0
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            total += len(value) if value.isascii() else 4 * len(value)
        elif isinstance(value, Mapping):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return total


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def check_render_args(
    func: str,
    conversation: Any,
    tools: Any,
    documents: Any,
    add_generation_prompt: Any,
    continue_final_message: Any,
    template_name: Any,
    tokenize: Any,
) -> None:
    """The argument checks ``apply_chat_template`` and ``ChatTemplate.render`` share (``func`` names the caller).

    Every render runs them, so the usual arguments (lists, bools, ``None``) pass on a type test alone.
    """
    if type(conversation) is not list:
        expect_items(
            conversation, object, name="conversation", func=func, accepts="a list of messages (or of conversations)"
        )
    if tools is not None and type(tools) is not list:
        expect_items(tools, object, name="tools", func=func, accepts="a list of tool schemas or functions, or None")
    if documents is not None and type(documents) is not list:
        expect_items(documents, object, name="documents", func=func, accepts="a list of mappings, or None")
    if type(add_generation_prompt) is not bool:
        expect(add_generation_prompt, bool, name="add_generation_prompt", func=func)
    if type(continue_final_message) is not bool:
        expect(continue_final_message, (bool, str), name="continue_final_message", func=func)
    if template_name is not None:
        expect(template_name, str, name="template_name", func=func)
    if type(tokenize) is not bool:
        expect(tokenize, bool, name="tokenize", func=func)


def check_tokenize_args(
    func: str,
    return_dict: Any,
    return_assistant_tokens_mask: Any,
    return_tensors: Any,
    padding: Any,
    truncation: Any,
    max_length: Any,
    add_special_tokens: Any,
) -> None:
    """The checks of ``ChatTemplate.render``'s tokenizer options (``func`` names the caller; it skips the call for
    the defaults)."""
    expect(return_dict, bool, name="return_dict", func=func)
    expect(return_assistant_tokens_mask, bool, name="return_assistant_tokens_mask", func=func)
    expect(return_tensors, str, name="return_tensors", func=func, none=True)
    expect(padding, (bool, str), name="padding", func=func)
    expect(truncation, (bool, str), name="truncation", func=func)
    expect(max_length, int, name="max_length", func=func, none=True)
    expect(add_special_tokens, bool, name="add_special_tokens", func=func)
