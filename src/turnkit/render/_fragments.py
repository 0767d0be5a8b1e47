"""Prefix reuse: each iteration of a template's top-level loops remembered, so a grown conversation renders only
what is new.

A serving loop renders the previous conversation plus one or two new messages on every request. In most chat
templates the text one message produces depends only on that message, its position and values fixed before the
loop (the tools, a system prompt kept in a namespace, ``add_generation_prompt``): then that text can be kept,
keyed by exactly those inputs, and the next render of the same prefix takes it instead of running the body.

A loop qualifies (:func:`fragment_loops`, at compile time) when its body cannot carry state from one iteration
to the next or out of the loop: no ``{% break %}``/``{% continue %}`` of its own, no namespace writes, no macro
definitions, no ``{% generation %}`` block, and ``loop`` used only through properties that are part of the key
(``index``/``first``/``cycle`` key the position, ``last``, ``length``/``revindex``, ``previtem``, ``nextitem``
key themselves; ``loop.changed`` and a bare ``loop`` disqualify); and when remembering it can pay and is exact:
not a body that only prints (``{{ tool | tojson }}`` costs less than its key), not one that draws a random item
or tests identity (``random``, ``sameas``: two renders of equal inputs may differ).

At run time the key is a tuple of exact parts (:class:`LoopKeys`): the loop variable, those properties, and every
name the body reads, as it stands when the loop starts (names the body can only read, since a loop body's
assignments stay in the body and namespaces are not written in it). A value that is not plain data (a joiner, a
caller's object, the clock) makes the loop run as usual. Budget use is replayed on a hit (loop iterations and
bytes), and an iteration that needed the input-size allowance of a limit, or failed, is not kept.

A loop over a variable itself (``for message in messages``) is remembered by position instead (:class:`Resume`):
a new run replays the longest prefix of items that matches one of its last runs, matching a dict of strings by
``==`` against a private copy rather than keying it by its pickle.

Only templates compiled to straight Python remember (see _straight): a missed iteration appends to the root's
list like any other, and its slice of the list, joined, is kept; a remembered one appends its text.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import partial
from itertools import compress, count, islice, repeat
from operator import is_, is_not, itemgetter, ne
from typing import Any

import jinja2.nodes as nodes
from jinja2.runtime import Macro, Undefined
from jinja2.utils import Namespace, missing

from turnkit.render._budget import UPFRONT, current_budget
from turnkit.render._inputs import PlainPickler, frozen_json, plain_key
from turnkit.render._loops import loop_properties
from turnkit.render._memo import FifoMemo

__all__ = [
    "FUTURE",
    "UNKEYABLE",
    "Fragment",
    "FragmentEntry",
    "LoopKeys",
    "LoopTraces",
    "Resumable",
    "Resume",
    "TraceEntry",
    "as_fragment",
    "fragment_loops",
    "fragment_memo",
    "key_part",
    "key_pickler",
    "key_size",
    "macro_names",
    "remembers_by_position",
    "wrap_loop",
]

# loop properties -> the key parts they need (``cycle`` and ``index*`` read the position; ``depth`` is constant)
_LOOP_PARTS: dict[str, tuple[str, ...]] = {
    "index": ("index0",),
    "index0": ("index0",),
    "first": ("index0",),
    "cycle": ("index0",),
    "revindex": ("index0", "length"),
    "revindex0": ("index0", "length"),
    "length": ("length",),
    "last": ("last",),
    "previtem": ("previtem",),
    "nextitem": ("nextitem",),
    "depth": (),
    "depth0": (),
}
_PART_ORDER = ("index0", "last", "length", "previtem", "nextitem")
# parts that are always an ``int`` (``index0``, ``length``) or a ``bool`` (``last``): keyed as they are, since a
# part's position in the key fixes its type
_RAW_PARTS = frozenset({"index0", "last", "length"})
_GENERATION = "_generation_support"
# what gives two renders of equal inputs different texts (a random item, an identity test, the clock, random text)
_IMPURE_FILTERS = frozenset({"random"})
_IMPURE_TESTS = frozenset({"sameas"})
_IMPURE_GLOBALS = frozenset({"strftime_now", "lipsum"})


_MARK = "turnkit_fragment"


@dataclass(frozen=True)
class Fragment:
    """A loop body whose output is remembered per key: ``scope`` (the names it reads), ``sequence`` (the loop's
    iterable when it is a variable, else the constant None: see :class:`LoopKeys`), ``parts`` (the loop
    variable and properties; ``raw[i]``: part ``i`` is an ``int`` or ``bool`` property, keyed as it is), the
    original ``body``; ``memo`` and ``state`` name the generated module's memo and the local holding the loop's
    :class:`LoopKeys` (or :class:`Resume`); ``resume``: see :class:`Resumable`."""

    scope: nodes.Tuple
    sequence: nodes.Expr
    parts: nodes.Tuple
    raw: tuple[bool, ...]
    layout: tuple[str, ...] | None
    body: list[nodes.Node]
    memo: str
    state: str
    resume: Resumable | None


@dataclass(frozen=True)
class Resumable:
    """A loop over a variable's list, remembered by position (see :class:`Resume`): ``reads``, the bits of the
    properties that depend on the items after an iteration (:data:`FUTURE`) its body always counts as read (when
    it could read them from a nested Python function, which the generated flag cannot see), ``ordered`` whether
    the body can see the order of an item's keys, and the locals holding the position and the bits read."""

    reads: int
    ordered: bool
    position: str
    flag: str


def as_fragment(node: nodes.Node) -> Fragment | None:
    """The :class:`Fragment` a node made by :func:`wrap_loop` carries, or None for any other node.

    jinja2 allows no new node types, so the fragment travels as a scoped eval-context block (the node of
    ``{% autoescape %}``, which the symbol analysis walks generically) whose first option is a marker no
    template can write.
    """
    if not isinstance(node, nodes.ScopedEvalContextModifier) or len(node.options) != 9:
        return None
    mark, scope, sequence, parts, raw, layout, memo, state, resume = node.options
    if mark.key != _MARK:
        return None
    assert isinstance(scope.value, nodes.Tuple) and isinstance(parts.value, nodes.Tuple)
    assert isinstance(raw.value, nodes.Const) and isinstance(layout.value, nodes.Const)
    assert isinstance(memo.value, nodes.Const) and isinstance(state.value, nodes.Const)
    assert isinstance(resume.value, nodes.Const)
    constants = raw.value.value, layout.value.value, node.body, memo.value.value, state.value.value
    return Fragment(scope.value, sequence.value, parts.value, *constants, resume.value.value)


def fragment_loops(template: nodes.Template) -> list[nodes.For]:
    """The ``for`` loops at the template's top level (outside macros, blocks and other loops) that qualify."""
    found: list[nodes.For] = []
    for macro in template.find_all(nodes.Macro):
        # a macro called in a loop could carry state from one iteration to the next, track spans, or be impure
        if (
            macro.find(nodes.NSRef) is not None
            or any(map(_is_generation, macro.find_all(nodes.CallBlock)))
            or _impure(macro)
        ):
            return found

    def walk(node: nodes.Node) -> None:
        if isinstance(node, nodes.For):
            if _qualifies(node):
                found.append(node)
            return
        if isinstance(node, nodes.If):
            for child in (*node.body, *node.elif_, *node.else_):
                walk(child)

    for child in template.body:
        walk(child)
    return found


def macro_names(template: nodes.Template) -> set[str]:
    """Every name read inside the template's macros: a macro called in a loop reads them when it runs."""
    return {
        name.name
        for macro in template.find_all(nodes.Macro)
        for name in macro.find_all(nodes.Name)
        if name.ctx == "load"
    }


def wrap_loop(
    loop: nodes.For, memo: str, state: str, also_read: set[str], new_name: Callable[[], str], guard: str
) -> Resumable | None:
    """Replace the loop's body by a fragment around it; ``also_read``: names the body's macros read, ``new_name``
    makes a local's name, ``guard`` names the filter the sandbox wraps every loop's iterable in. Returns how the
    loop is remembered by position, or None (by key)."""
    if isinstance(loop.target, nodes.Name):
        targets = [loop.target.name]
    else:
        targets = [n.name for n in loop.target.find_all(nodes.Name)]
    used = _loop_properties(loop.body)
    assert used is not None
    parts: list[nodes.Expr] = [nodes.Name(name, "load", lineno=loop.lineno) for name in targets]
    raw = [False] * len(parts)
    needed = {part for prop in used for part in _LOOP_PARTS[prop]}
    layout = tuple(part for part in _PART_ORDER if part in needed)
    for part in layout:
        parts.append(nodes.Getattr(nodes.Name("loop", "load"), part, "load", lineno=loop.lineno))
        raw.append(part in _RAW_PARTS)
    read = {n.name for stmt in loop.body for n in stmt.find_all(nodes.Name) if n.ctx == "load"}
    # a name the body always binds before reading it (a nested loop's variable, a ``set`` at the head of a nested
    # loop's body) needs no key part, and reading it for the key would make jinja2 resolve it at every iteration
    names = sorted((read - _bound_before_read(loop.body, frozenset(), set()) | also_read) - {*targets, "loop"})
    scope = nodes.Tuple([nodes.Name(name, "load", lineno=loop.lineno) for name in names], "load", lineno=loop.lineno)
    line = loop.lineno
    sequence = _source_variable(loop.iter)
    options = [
        nodes.Keyword(_MARK, nodes.Const(True, lineno=line), lineno=line),
        nodes.Keyword("scope", scope, lineno=line),
        nodes.Keyword("sequence", sequence, lineno=line),
        nodes.Keyword("parts", nodes.Tuple(parts, "load", lineno=line), lineno=line),
        nodes.Keyword("raw", nodes.Const(tuple(raw), lineno=line), lineno=line),
        # the key's loop parts, when a key can be built per position (one loop variable, reading ``loop``)
        nodes.Keyword(
            "layout", nodes.Const(layout if layout and len(targets) == 1 else None, lineno=line), lineno=line
        ),
        nodes.Keyword("memo", nodes.Const(memo, lineno=line), lineno=line),
        nodes.Keyword("state", nodes.Const(state, lineno=line), lineno=line),
    ]
    resume = _resumable(loop, used, new_name, guard)
    options.append(nodes.Keyword("resume", nodes.Const(resume, lineno=line), lineno=line))
    loop.body = [nodes.ScopedEvalContextModifier(options, loop.body, lineno=line)]
    return resume


# the loop properties that depend on the items after an iteration: bit 1, the next item (``last`` is "no next
# item"); bit 2, how many there are
FUTURE: dict[str, int] = {"last": 1, "nextitem": 1, "length": 2, "revindex": 2, "revindex0": 2}


def _resumable(loop: nodes.For, used: set[str], new_name: Callable[[], str], guard: str) -> Resumable | None:
    """How a loop is remembered by position, when it iterates a variable itself (no slice, filter or test, so
    iteration ``i`` is the variable's item ``i``) that its body does not rebind."""
    iterable: nodes.Node | None = loop.iter
    if isinstance(iterable, nodes.Filter) and iterable.name == guard and not iterable.args and not iterable.kwargs:
        iterable = iterable.node
    if not isinstance(iterable, nodes.Name) or loop.test is not None or not isinstance(loop.target, nodes.Name):
        return None
    name = iterable.name
    if name == loop.target.name or any(
        n.name == name for stmt in loop.body for n in stmt.find_all(nodes.Name) if n.ctx != "load"
    ):
        return None
    # a read of ``loop`` in a nested Python function (a call block, a loop filter, a recursive loop) cannot set
    # the root's flag: such a body counts every property it uses as read
    nested = any(
        isinstance(n, nodes.CallBlock) or (isinstance(n, nodes.For) and (n.test is not None or n.recursive))
        for stmt in loop.body
        for n in [stmt, *stmt.find_all((nodes.CallBlock, nodes.For))]
    )
    reads = 0
    if nested:
        for prop in used:
            reads |= FUTURE.get(prop, 0)
    ordered = _order_visible(loop.body, loop.target.name)
    return Resumable(reads, ordered, new_name(), new_name())


def _order_visible(body: list[nodes.Node], target: str) -> bool:
    """Whether the body can see the order of the loop variable's keys (or ``loop.previtem``'s/``nextitem``'s):
    anything but reading an item (``m.role``, ``m['role']``, ``m.get('role')``) or testing a key (``'x' in m``)."""

    def is_item(node: nodes.Node) -> bool:
        if isinstance(node, nodes.Name):
            return node.name == target
        return (
            isinstance(node, nodes.Getattr)
            and node.attr in ("previtem", "nextitem")
            and isinstance(node.node, nodes.Name)
            and node.node.name == "loop"
        )

    def visible(node: nodes.Node, parent: nodes.Node | None) -> bool:
        if is_item(node):
            if isinstance(parent, nodes.Getattr) and (parent.attr not in _DICT_METHODS or parent.attr == "get"):
                return False
            if isinstance(parent, nodes.Getitem) and isinstance(parent.arg, nodes.Const):
                return False
            return not (isinstance(parent, nodes.Operand) and parent.op in ("in", "notin"))
        return any(visible(child, node) for child in node.iter_child_nodes())

    return any(visible(stmt, None) for stmt in body)


# ``m.name`` for any of these is a method of the dict, not its item
_DICT_METHODS = frozenset(dir(dict))


def _bound_before_read(body: list[nodes.Node], bound: frozenset[str], unbound: set[str]) -> set[str]:
    """The names every read of which in ``body`` sees a binding made in it (conservative: a ``set`` counts from the
    next statement of its own list, and only a plain ``set name = ...``; a nested loop binds its targets in its
    body). ``unbound`` collects the names some read of which does not; ``bound`` holds the names bound so far."""
    bound_here = set(bound)
    seen: set[str] = set()
    for stmt in body:
        if isinstance(stmt, nodes.Assign) and isinstance(stmt.target, nodes.Name):
            _reads(stmt.node, frozenset(bound_here), unbound, seen)
            bound_here.add(stmt.target.name)
        elif isinstance(stmt, nodes.For) and not stmt.recursive and stmt.test is None:
            _reads(stmt.iter, frozenset(bound_here), unbound, seen)
            targets = {n.name for n in stmt.target.find_all(nodes.Name)} | (
                {stmt.target.name} if isinstance(stmt.target, nodes.Name) else set()
            )
            seen |= _bound_before_read(stmt.body, frozenset(bound_here | targets | {"loop"}), unbound)
            seen |= _bound_before_read(stmt.else_, frozenset(bound_here), unbound)
        elif isinstance(stmt, nodes.If):  # each branch on its own: what it binds is not counted after the if
            _reads(stmt.test, frozenset(bound_here), unbound, seen)
            elifs: list[list[nodes.Node]] = [[elif_] for elif_ in stmt.elif_]
            branches = [stmt.body, *elifs, stmt.else_]
            for branch in branches:
                seen |= _bound_before_read(branch, frozenset(bound_here), unbound)
        else:
            _reads(stmt, frozenset(bound_here), unbound, seen)
    return seen - unbound


def _reads(node: nodes.Node, bound: frozenset[str], unbound: set[str], seen: set[str]) -> None:
    for name in [node, *node.find_all(nodes.Name)]:  # (find_all yields the node's descendants only)
        if not isinstance(name, nodes.Name):
            continue
        if name.ctx == "load":
            seen.add(name.name)
            if name.name not in bound:
                unbound.add(name.name)


def _source_variable(iterable: nodes.Node) -> nodes.Expr:
    """The variable the loop's items come from (``messages`` of ``messages[1:]``, of ``messages | reverse``, of the
    loop guard's filter), read again at no cost, or the constant None (a slice or a filter would run twice).

    Any variable is exact: the parts taken from its items are exact for those items, whichever the loop meets.
    """
    while isinstance(iterable, nodes.Filter | nodes.Getitem) and iterable.node is not None:
        iterable = iterable.node
    if isinstance(iterable, nodes.Name):
        return nodes.Name(iterable.name, "load", lineno=iterable.lineno)
    return nodes.Const(None, lineno=iterable.lineno)


def _qualifies(loop: nodes.For) -> bool:
    if loop.recursive or not isinstance(loop.target, nodes.Name | nodes.Tuple) or _prints_only(loop.body):
        return False
    if any(_impure(stmt) for stmt in loop.body):
        return False
    for stmt in loop.body:
        if isinstance(stmt, nodes.Macro) or stmt.find(nodes.NSRef) is not None or stmt.find(nodes.Macro) is not None:
            return False
        blocks = [*stmt.find_all(nodes.CallBlock), *([stmt] if isinstance(stmt, nodes.CallBlock) else [])]
        if any(_is_generation(block) for block in blocks):
            return False
    if _own_loop_controls(loop.body):
        return False
    return _loop_properties(loop.body) is not None


def _prints_only(body: list[nodes.Node]) -> bool:
    """Whether the body only prints expressions without calls (``{{ tool | tojson }}``): that costs less than
    keying it."""
    return all(isinstance(stmt, nodes.Output) and stmt.find(nodes.Call) is None for stmt in body)


def _impure(node: nodes.Node) -> bool:
    """Whether ``node`` draws a random item or tests identity: its text may differ between two renders of equal
    inputs. (The clock and ``lipsum`` are globals, which the key refuses: see :func:`key_pickler`.)"""
    return any(f.name in _IMPURE_FILTERS for f in node.find_all(nodes.Filter)) or any(
        t.name in _IMPURE_TESTS for t in node.find_all(nodes.Test)
    )


def _is_generation(block: nodes.CallBlock) -> bool:
    call = block.call.node
    return isinstance(call, nodes.ExtensionAttribute) and call.name == _GENERATION


def _own_loop_controls(body: Iterable[nodes.Node]) -> bool:
    """Whether a ``break``/``continue`` in ``body`` belongs to this loop (not to a loop nested in it)."""
    for node in body:
        if isinstance(node, nodes.Break | nodes.Continue):
            return True
        if isinstance(node, nodes.For):
            if _own_loop_controls(node.else_):
                return True
            continue
        if _own_loop_controls(node.iter_child_nodes()):
            return True
    return False


def _loop_properties(body: Iterable[nodes.Node]) -> set[str] | None:
    """The ``loop`` properties the body reads, or None when it uses ``loop`` in a way the key cannot cover."""
    used = loop_properties(body)
    return used if used is not None and used <= _LOOP_PARTS.keys() else None


# -- run time -----------------------------------------------------------------------------------------------


def _namespace(attrs: dict[str, Any]) -> None:  # pragma: no cover - never called: names a namespace in keys
    pass


def _undefined() -> None:  # pragma: no cover - never called: names an undefined value in keys
    pass


def _macro(name: str, line: int) -> None:  # pragma: no cover - never called: names a macro in keys
    pass


def _global(name: str) -> None:  # pragma: no cover - never called: names a template global in keys
    pass


class _KeyPickler(PlainPickler):
    """Exact built-in data, plus namespaces (by content), undefined values and the sandbox's own globals
    (``globals_by_id``, set per sandbox on a subclass: see :func:`key_pickler`)."""

    globals_by_id: dict[int, tuple[str, Any]] = {}

    def reducer_override(self, obj: Any) -> Any:
        if obj is _namespace or obj is _undefined or obj is _global or obj is _macro:
            return NotImplemented  # the markers themselves: pickled by name
        if isinstance(obj, Namespace):
            return _namespace, (dict(object.__getattribute__(obj, "_Namespace__attrs")),)
        if type(obj) is Macro:
            # a macro of this template (inputs are plain data): its code, named by where it is defined
            return _macro, (obj.name, obj._func.__code__.co_firstlineno)
        if isinstance(obj, Undefined):
            return _undefined, ()  # prints as nothing; only error messages (never kept) name it
        known = self.globals_by_id.get(id(obj))
        if known is not None and known[1] is obj:
            return _global, (known[0],)
        return super().reducer_override(obj)


def key_pickler(globals_by_id: dict[int, tuple[str, Any]]) -> type[_KeyPickler]:
    """The key pickler for a sandbox whose globals are ``globals_by_id`` (id -> (name, value)); the clock and
    ``lipsum`` are left out (unkeyable: a loop whose body reads them runs every time)."""
    pure = {key: entry for key, entry in globals_by_id.items() if entry[0] not in _IMPURE_GLOBALS}
    return type("KeyPickler", (_KeyPickler,), {"globals_by_id": pure})


_MAX_KEY = 1 << 20
_SCALARS = frozenset({int, bool, float, type(None)})
UNKEYABLE: Any = object()
"""The key part of a value that cannot be keyed: a key holding it is never kept, so it never matches."""
_UNDEFINED: Any = object()
"""The key part of every undefined value (it prints as nothing; only error messages, never kept, name it)."""


class LoopKeys:
    """One run of a remembered loop: ``scope``, the key part of the names its body reads (read once, when the
    loop starts), and :meth:`piece`, the key part of one value, remembered per value for the run (``pieces``:
    id -> (value, part); the entry keeps the value alive, so its id stays its own): each message is serialised
    once per render, though it is the loop variable of one iteration and ``previtem``/``nextitem`` of others.

    A part is exact: a ``str`` is itself; other scalars and the render's containers known to be plain trees
    (``trusted``: the caller's input as adopted or rebuilt, see ``render._inputs``) are their pickle by the C
    pickler, exact types being already checked; a private tool schema is its serial number (its content never
    changes); anything else is pickled by the key pickler, or is :data:`UNKEYABLE`. Parts of different kinds
    never compare equal (``str``, ``bytes``, a tuple, a marker), so equal keys mean equal content.

    ``sequence`` is what the loop iterates over when the compiler could read it again without running anything
    (a variable). When it is a list or tuple, its items' parts are taken at once (at C speed for plain trees, the
    messages), and, for a loop over one variable whose body reads ``loop`` (``layout``: the loop parts of the key,
    in order), the key of every position is built in columns (``keys``): an iteration of a plain loop (see
    _loops) over that very sequence takes ``keys[index0]``, which is the tuple the generated code would build.
    """

    __slots__ = ("scope", "scope_size", "pieces", "pickler", "trusted", "keys", "sequence")

    def __init__(
        self,
        values: tuple[Any, ...],
        pickler: type[_KeyPickler],
        trusted: AbstractSet[int],
        sequence: Any = None,
        layout: tuple[str, ...] | None = None,
    ) -> None:
        self.pickler = pickler
        self.trusted = trusted
        self.pieces: dict[int, tuple[Any, Any]] = {}
        self.keys: list[tuple[Any, ...]] = []
        self.sequence: Any = None
        scope = tuple(map(self.piece, values))
        self.scope: Any = UNKEYABLE if UNKEYABLE in scope else scope
        self.scope_size = key_size(scope)
        kind = type(sequence)
        if not (kind is list or kind is tuple) or not sequence or len(sequence) > UPFRONT:
            return
        if all(map(trusted.__contains__, map(id, sequence))) and frozen_json(sequence[0]) is None:
            # plain trees (tool schemas key by their serial numbers instead: see piece)
            parts = list(map(pickle.dumps, sequence, repeat(5)))
            self.pieces.update(zip(map(id, sequence), zip(sequence, parts, strict=True), strict=True))
        else:
            parts = list(map(self.piece, sequence))
        if layout is not None:
            length = len(sequence)
            columns = (_COLUMNS[part](parts, length) for part in layout)
            self.keys = list(zip(repeat(self.scope, length), parts, *columns, strict=True))
            self.sequence = sequence

    def size_of(self, key: tuple[Any, ...]) -> int:
        """About how many bytes an iteration's ``key`` (this run's :attr:`scope`, then its parts) holds, for the
        memo's size bound (:func:`key_size`, with the scope measured once per run)."""
        return self.scope_size + 8 + key_size(key[1:])

    def piece(self, value: Any) -> Any:
        """The key part of ``value`` (the generated code looks ``pieces`` up inline first)."""
        part = key_part(value, self.trusted, self.pickler)
        if type(part) is bytes and type(value) not in _SCALARS or type(part) is tuple:
            self.pieces[id(value)] = (value, part)
        return part


def key_part(value: Any, trusted: AbstractSet[int], pickler: type[_KeyPickler]) -> Any:
    """The exact key part of ``value`` (see :class:`LoopKeys`), or :data:`UNKEYABLE`."""
    kind = type(value)
    if kind is str:
        return value
    if kind in _SCALARS:
        return pickle.dumps(value, 5)
    if value is missing or isinstance(value, Undefined):  # (``missing``: an undefined name of a scope)
        return _UNDEFINED
    slot = frozen_json(value)
    if slot is not None:
        return ("tool schema", slot[2])
    if id(value) in trusted:
        return pickle.dumps(value, 5)
    known = pickler.globals_by_id.get(id(value))
    if known is not None and known[1] is value:
        return ("global", known[0])  # (what the key pickler writes for it, without a pickler)
    part = plain_key(value, _MAX_KEY, pickler)
    return UNKEYABLE if part is None else part


# a loop part for every position of a sequence of ``length`` items whose parts are ``parts`` (what the loop
# properties are for a list or tuple, see _loops; an undefined ``previtem``/``nextitem`` keys as one marker)
_COLUMNS: dict[str, Callable[[list[Any], int], Iterable[Any]]] = {
    "index0": lambda parts, length: range(length),
    "last": lambda parts, length: [*repeat(False, length - 1), True],
    "length": lambda parts, length: repeat(length, length),
    "previtem": lambda parts, length: [_UNDEFINED, *parts[:-1]],
    "nextitem": lambda parts, length: [*parts[1:], _UNDEFINED],
}


def key_size(parts: tuple[Any, ...]) -> int:
    """About how many bytes key parts hold (their serialised values, and a pointer's worth for each part)."""
    size = 8 * len(parts)
    for part in parts:
        kind = type(part)
        if kind is bytes or kind is str:
            size += len(part)
        elif kind is tuple:
            size += key_size(part)
    return size


_MEMO_ENTRIES = 4096
_MEMO_BYTES = 16 << 20
_MAX_TEXT = 1 << 20

FragmentEntry = tuple[str, int, int]
"""A remembered iteration: its text, the loop iterations and the bytes it charged to the budget."""


def fragment_memo() -> FifoMemo[FragmentEntry]:
    """One loop's remembered iterations (FIFO, bounded)."""
    return FifoMemo(max_entries=_MEMO_ENTRIES, max_bytes=_MEMO_BYTES, max_text=_MAX_TEXT)


# -- remembered by position ------------------------------------------------------------------------------------

_MAX_TRACES = 4
_TRACE_BYTES = _MEMO_BYTES // _MAX_TRACES
_SIZE = itemgetter(4)

TraceEntry = tuple[str, int, int, int, int]
"""A remembered iteration of a resumable loop: its text, the loop iterations and bytes it charged, the
:data:`FUTURE` bits of the properties it read, and about how many bytes it and its item's copy hold."""


class _Part:
    """The trace's copy of an item that is not a dict of strings: its exact key part (:func:`key_part`).

    The hit test compares the render's items with the copies in C (``item != copy``); for this copy Python
    reflects the comparison here, with an item known to be one of the render's plain inputs (a container of exact
    built-in types, see render._inputs), whose key part is its pickle, or a private tool schema's serial number.
    An item that matched its pickle once and is made of strings (a tool call) is matched as a :class:`_Tree` from
    then on (the copy becomes one: its class is swapped, so the C compare calls the tree's ``!=`` directly):
    building one costs several pickles, so an item never met again (a new conversation) pays none."""

    __slots__ = ("part", "tried", "copy", "path", "order")

    def __init__(self, part: Any) -> None:
        self.part = part
        self.tried = False  # whether the item was tried as a tree (it then became one, or is not made of strings)

    def __ne__(self, item: object) -> bool:
        part = self.part
        if type(part) is bytes:
            if pickle.dumps(item, 5) != part:
                return True
            if not self.tried:  # (the tree of the same item: any thread may build it, all alike)
                self.tried = True
                tree = _tree(item) if type(item) is dict else None
                if tree is not None:
                    self.copy, self.path, self.order = tree[1:]
                    self.__class__ = tree[0]
            return False
        slot = frozen_json(item)
        return slot is None or ("tool schema", slot[2]) != part

    def __eq__(self, item: object) -> bool:
        return not self.__ne__(item)

    __hash__ = None  # type: ignore[assignment]


class _Tree(_Part):
    """A :class:`_Part` of a nested item of strings (a message with tool calls) once it matched: a private deep
    copy, matched by ``==`` and the key order of its nested dicts.

    For an item known to be one of the render's plain inputs, ``item == copy`` proves the same values and types
    (only a ``str`` equals a ``str``, only ``None`` equals ``None``, a list never equals a tuple) but not the order
    of a dict's keys, which ``tojson`` and ``items()`` show: the keys of the nested dicts that have several are
    compared too, concatenated in one tuple (each dict's keys are the same set, so equal tuples mean the same
    order). Reaching those dicts takes one expression per shape (:func:`_tree_class`), cheaper than the pickle of
    :class:`_Part`; ``path`` holds the keys and indices it steps through, ``order`` the keys."""

    __slots__ = ()


_TREE_NODES = 64  # containers in a copy (more: kept as its key part, as a copy bigger than a key may be)
_TREE_SHAPES = 256  # distinct shapes with a class (more: kept as their key part)
_TREE_CLASSES: dict[tuple[tuple[int, ...], tuple[int, ...]], type[_Tree]] = {}


def _tree(item: dict[str, Any]) -> tuple[type[_Tree], dict[str, Any], tuple[Any, ...], tuple[str, ...]] | None:
    """The :class:`_Tree` class, copy, path and order of a plain item of dicts, lists, strings and None; None for
    any other item, or one too big (the pickle it matched bounds it already: its strings are counted against the
    key's bound again)."""
    path: list[Any] = []
    steps: list[int] = []  # per step, the node it starts from (node 0 is the item, node i + 1 is step i's end)
    ordered: list[int] = []  # the nested dicts whose order is compared (those with two keys or more)
    order: list[str] = []
    size = 0

    def copy(value: Any, node: int) -> Any:
        nonlocal size
        kind = type(value)
        if kind is str:
            size += 4 * len(value)
            if size > _MAX_KEY:
                raise _TooBig
            return value
        if value is None:
            return None
        if kind is not dict and kind is not list or len(steps) >= _TREE_NODES:
            raise _TooBig
        if kind is list:
            return [copy(child, step(node, index, child)) for index, child in enumerate(value)]
        if node and len(value) > 1:
            ordered.append(node)
            order.extend(value)
        private = {}
        for key, child in value.items():
            if type(key) is not str:
                raise _TooBig
            size += 4 * len(key)
            private[key] = copy(child, step(node, key, child))
        return private

    def step(node: int, key: Any, child: Any) -> int:
        """The number of ``child``'s node (a step from ``node`` by ``key``; -1 for a leaf, which needs none)."""
        if type(child) is str or child is None:
            return -1
        path.append(key)
        steps.append(node)
        return len(steps)

    try:
        private = copy(item, 0)
    except _TooBig:
        return None
    # (only the steps that lead to a compared dict)
    needed: set[int] = set()
    for node in ordered:
        while node and node not in needed:
            needed.add(node)
            node = steps[node - 1]
    kept = sorted(needed)
    renumber = {0: 0, **{node: i + 1 for i, node in enumerate(kept)}}
    shape = (tuple(renumber[steps[node - 1]] for node in kept), tuple(renumber[node] for node in ordered))
    cls = _TREE_CLASSES.get(shape)
    if cls is None:
        if len(_TREE_CLASSES) >= _TREE_SHAPES:
            return None
        cls = _TREE_CLASSES.setdefault(shape, _tree_class(*shape))
    return cls, private, tuple(path[node - 1] for node in kept), tuple(order)


class _TooBig(Exception):
    """An item :func:`_tree` does not copy."""


def _tree_class(steps: tuple[int, ...], ordered: tuple[int, ...]) -> type[_Tree]:
    """The :class:`_Tree` whose ``!=`` and ``==`` step through the nodes as ``steps`` say (step ``i`` goes from node
    ``steps[i]`` by ``path[i]`` to node ``i + 1``; node 0 is the item) and compare the keys of the ``ordered``
    nodes. Its source holds node numbers only, never a key: the keys are read from the instance."""
    lines: list[str] = []
    for name, op, differs in (("__ne__", "!=", "True"), ("__eq__", "==", "False")):
        lines += [f"def {name}(self, n0):", "    if n0 != self.copy:", f"        return {differs}"]
        if ordered:
            lines.append("    p = self.path")
            lines.extend(f"    n{i + 1} = n{start}[p[{i}]]" for i, start in enumerate(steps))
            lines.append(f"    return ({', '.join(f'*n{node}' for node in ordered)},) {op} self.order")
        else:
            lines.append(f"    return not {differs}")
    namespace: dict[str, Any] = {}
    exec(compile("\n".join(lines), "<turnkit tree copy>", "exec"), namespace)  # node numbers only, no input
    methods = {"__ne__": namespace["__ne__"], "__eq__": namespace["__eq__"]}
    return type("_Tree", (_Tree,), {"__slots__": (), **methods})


class LoopTraces:
    """A resumable loop's memo: the traces (:class:`Resume`) of its last few runs, most recent first, each
    replaced by the run that continued it, so that a few conversations served in turn each find theirs.

    Published without a lock: a run builds a new list and assigns it (one atomic store), and a published trace is
    only ever extended by its own run, each list in an order that keeps it consistent for a reader (see
    :meth:`Resume.keep`). Two runs publishing at once may drop one of their traces (the last store wins): a
    later run then misses and runs its iterations, never replays a wrong text.

    ``last_scope`` holds the values of the last scope whose key parts follow from their identity alone (strings,
    numbers, undefined names, sandbox globals, private tool schemas: objects that never change) with those parts,
    in one tuple (one atomic store): a run whose scope values are the same objects takes the parts without keying
    them (:meth:`scope`)."""

    __slots__ = ("traces", "pickler", "last_scope")

    def __init__(self, pickler: type[_KeyPickler]) -> None:
        self.traces: list[Resume] = []
        self.pickler = pickler
        self.last_scope: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None

    def scope(self, values: tuple[Any, ...], trusted: AbstractSet[int]) -> tuple[Any, ...] | None:
        """The key parts of a run's scope values (:func:`key_part`), or None when one is unkeyable."""
        last = self.last_scope
        if last is not None and all(map(is_, values, last[0])):  # (each value the same object: the same part)
            return last[1]
        parts = tuple([key_part(value, trusted, self.pickler) for value in values])
        if UNKEYABLE in parts:
            return None
        if all(map(_by_identity, values, parts)):
            self.last_scope = values, parts
        return parts

    @property
    def entries(self) -> list[TraceEntry]:
        """The remembered iterations (each once)."""
        seen = {id(entry): entry for trace in self.traces for entry in trace.entries if entry is not None}
        return list(seen.values())


def _by_identity(value: Any, part: Any) -> bool:
    """Whether ``part``, the key part of ``value``, follows from the object alone, which never changes: a string,
    a number, an undefined value, a sandbox global or a private tool schema (the tuple parts), not a container's
    pickle."""
    return type(part) is str or type(part) is tuple or part is _UNDEFINED or type(value) in _SCALARS


def remembers_by_position(template: Any) -> bool:
    """Whether a compiled template has a loop remembered by position (its module holds the loop's traces)."""
    return any(type(value) is LoopTraces for value in template.root_render_func.__globals__.values())


class Resume:
    """One run of a loop remembered by position (a plain variable's list, see :class:`Resumable`), and its trace.

    An iteration's text depends on its item, the items before it (``previtem``, and its position: ``index``,
    ``first``, ``cycle``), the names its body reads (``scope``, as for :class:`LoopKeys`), and, only when its body
    read them (the generated code sets the :data:`FUTURE` bits it reads), the next item (``last``, ``nextitem``)
    and the number of items (``length``, ``revindex``). So the run finds the remembered run with the same scope
    whose items match the longest prefix of its own (``k`` items), and position ``i < k`` replays that run's
    entry when the entry read nothing after it, or the next item also matches (or both runs end there) and, for
    the count, both runs have as many items. ``entries[i]`` is that entry or None; ``future`` lists the positions
    whose entry read a :data:`FUTURE` property.

    An item matches exactly: a dict of strings was kept as a copy, and the new item matches when it is one of the
    render's plain inputs (adopted or rebuilt: exact types, so only a ``str`` equals a ``str``, and ``==`` cannot
    take 1 for 1.0 or True, nor 0.0 for -0.0, nor a tuple for a list) equal to the copy, with its keys in the same
    order when the body can see their order; any other item was kept as its key part (:class:`_Part`). When all
    the items are plain inputs, the prefix is compared in C: as one list up to the trace's last item (where a grown
    or retried conversation differs), else item by item up to the first that differs. The
    copy is the trace's own: a caller's dict changed in place after the render no longer matches it.

    The run is its own trace: published when it starts (the matched entries), then extended by each iteration it
    runs (:meth:`keep`).
    """

    __slots__ = ("scope", "length", "entries", "copies", "keys", "future", "size", "k", "pickler")

    def __init__(self, memo: LoopTraces, values: tuple[Any, ...], sequence: Any, ordered: bool) -> None:
        self.k = self.size = 0
        self.entries: list[TraceEntry | None] = []
        self.scope: tuple[Any, ...] | None = None  # None: this run keeps nothing
        kind = type(sequence)
        budget = current_budget()
        if not (kind is list or kind is tuple) or not sequence or budget is None:
            return
        trusted, self.pickler = budget.trusted, memo.pickler
        scope = memo.scope(values, trusted) if values else ()
        if scope is None:
            return
        self.scope, self.length = scope, length = scope, len(sequence)
        # (the render's own list holds plain inputs only: one lookup instead of one per item)
        plain = id(sequence) in trusted
        if not plain:  # (a loop: set.issuperset of an iterable builds a set first)
            for item in sequence:
                if id(item) not in trusted:
                    break
            else:
                plain = True
        traces = memo.traces
        best, k = None, 0
        for trace in traces:
            if trace.scope != scope:
                continue
            copies = trace.copies
            if plain:  # in C: the items before the last one the trace can match, as a list (the usual miss is there)
                last = min(length, len(copies)) - 1
                if last < 0:
                    matched = 0
                elif sequence[:last] == copies[:last]:
                    matched = last if sequence[last] != copies[last] else last + 1
                else:  # each item != its copy, up to the first that differs (a tuple never equals the list)
                    matched = next(compress(count(), map(ne, sequence, copies)), last + 1)
                if ordered and matched:
                    reordered = next(compress(count(), map(ne, map(_keys, sequence[:matched]), trace.keys or ())), None)
                    matched = matched if reordered is None else reordered
            else:  # not all the render's plain inputs (== could call a caller's method): key parts only
                matched = self._by_parts(sequence, trace.copies, trusted)
            if best is None or matched > k:
                best, k = trace, matched
            if matched >= len(trace.entries) - 1:  # this run continues that one
                break
        if best is None:
            self.copies: list[Any] = []
            self.keys: list[Any] | None = [] if ordered else None
            self.future: list[int] = []
            memo.traces = [self, *traces[: _MAX_TRACES - 1]]
            return
        # (the entries before the future positions, the copies last: the order their owner extends them in, reversed)
        self.entries = hits = best.entries[:k]
        self.future = future = best.future[:]
        if future and max(future) >= k:
            self.future = future = [i for i in future if i < k]
        self.copies, self.keys = best.copies[:k], best.keys[:k] if ordered else None  # type: ignore[index]
        continued = k >= len(best.entries) - 1  # this run continues that one
        # (continuing it, the trace's size counts at most one entry this run does not hold: a bound reached early)
        self.size = best.size if continued else sum(map(_SIZE, filter(None, hits)))
        if future:
            same_count = length == best.length
            for i in future:
                entry = hits[i]
                if entry is None:
                    continue
                reads = entry[3]
                if reads & 1 and not (i + 1 < k or i + 1 == length and same_count) or reads & 2 and not same_count:
                    hits[i] = None
        self.k = k
        if continued and traces[0] is best:  # it takes that one's place
            memo.traces = [self, *traces[1:_MAX_TRACES]]
        elif continued:
            memo.traces = [self, *islice(filter(partial(is_not, best), traces), _MAX_TRACES - 1)]
        else:
            memo.traces = [self, *traces[: _MAX_TRACES - 1]]

    def _by_parts(self, sequence: Any, copies: list[Any], trusted: AbstractSet[int]) -> int:
        """How many leading items match the trace's copies by their key parts (:class:`_Part` copies only)."""
        for i, (item, copy) in enumerate(zip(sequence, copies, strict=False)):
            if type(copy) is not _Part or key_part(item, trusted, self.pickler) != copy.part:
                return i
        return min(len(sequence), len(copies))

    def keep(self, position: int, reads: int, out: list[str], mark: tuple[int, int, int, Any]) -> None:
        """Remember the iteration just run at ``position``, unless it needed the input-size allowance of a limit,
        or its item cannot be keyed, or the trace is full. ``mark``: where the iteration started (the budget's loop
        iterations and bytes, the output's length) and its item, noted by the generated code.

        A reader in another thread may be matching this trace: each list grows in an order that keeps it
        consistent (the future positions, then the entries, the keys and the copies, which bound the match)."""
        budget = current_budget()
        hits = self.entries
        if self.scope is None or budget is None or budget.input_measured:
            return
        if position > len(hits) or position >= _MEMO_ENTRIES:  # (first: past the bound, no text nor copy to drop)
            return
        loops, allocated, start, item = mark
        text = "".join(out[start:])
        chars = -1  # a dict of strings' characters (a loop: for a few items, cheaper than any C call chain)
        if type(item) is dict and id(item) in budget.trusted:
            chars = 0
            for key, value in item.items():
                if type(key) is not str or type(value) is not str:
                    chars = -1
                    break
                chars += len(key) + len(value)
        if chars >= 0:
            copy: Any = dict(item)  # a dict of strings: kept as a copy, matched by == (see Resume)
            size = 64 + 4 * (len(text) + chars)
        else:
            part = key_part(item, budget.trusted, self.pickler)
            if part is UNKEYABLE:
                return
            copy = _Part(part)
            size = 64 + 4 * len(text) + key_size((part,))
        if self.size + size > _TRACE_BYTES or len(text) > _MAX_TEXT:
            return
        self.size += size
        entry = (text, budget.loops - loops, budget.allocated - allocated, reads, size)
        if position < len(hits):  # an entry this run could not replay (its item matched: the copy stays)
            if reads and position not in self.future:
                self.future.append(position)
            hits[position] = entry
            return
        if reads:
            self.future.append(position)
        hits.append(entry)
        if self.keys is not None:
            self.keys.append(_keys(item))
        self.copies.append(copy)


def _keys(item: Any) -> list[Any] | None:
    """What shows the order of a dict's keys (a list or tuple's order is its content, matched already)."""
    return [*item] if type(item) is dict else None
