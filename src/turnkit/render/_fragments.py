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
key themselves; ``loop.changed`` and a bare ``loop`` disqualify). At run time the key is the pickled content of
the loop variable, of those properties, and of every name the body reads, as it stands when the loop starts
(names the body can only read, since a loop body's assignments stay in the body and namespaces are not written
in it). A value that is not plain data (a macro, a joiner, a caller's object) makes the loop run as usual.
Budget use is replayed on a hit (loop iterations and bytes), and a fragment that needed the input-size allowance
of a limit, or failed, is not kept.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import jinja2.nodes as nodes
from jinja2.runtime import Macro, Undefined
from jinja2.utils import Namespace

from turnkit.render._inputs import PlainPickler, plain_key
from turnkit.render._loops import loop_properties
from turnkit.render._memo import FifoMemo

__all__ = [
    "Fragment",
    "FragmentEntry",
    "LoopKeys",
    "as_fragment",
    "fragment_loops",
    "fragment_memo",
    "key_pickler",
    "macro_names",
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
_GENERATION = "_generation_support"


_MARK = "turnkit_fragment"


@dataclass(frozen=True)
class Fragment:
    """A loop body whose output is remembered per key: ``scope`` (the names it reads), ``parts`` (the loop
    variable and properties), the original ``body``; ``memo`` and ``state`` name the generated module's memo
    and the local holding the loop's scope key."""

    scope: nodes.Tuple
    parts: nodes.Tuple
    body: list[nodes.Node]
    memo: str
    state: str


def as_fragment(node: nodes.Node) -> Fragment | None:
    """The :class:`Fragment` a node made by :func:`wrap_loop` carries, or None for any other node.

    jinja2 allows no new node types, so the fragment travels as a scoped eval-context block (the node of
    ``{% autoescape %}``, which the symbol analysis walks generically) whose first option is a marker no
    template can write.
    """
    if not isinstance(node, nodes.ScopedEvalContextModifier) or len(node.options) != 5:
        return None
    mark, scope, parts, memo, state = node.options
    if mark.key != _MARK:
        return None
    assert isinstance(scope.value, nodes.Tuple) and isinstance(parts.value, nodes.Tuple)
    assert isinstance(memo.value, nodes.Const) and isinstance(state.value, nodes.Const)
    return Fragment(scope.value, parts.value, node.body, memo.value.value, state.value.value)


def fragment_loops(template: nodes.Template) -> list[nodes.For]:
    """The ``for`` loops at the template's top level (outside macros, blocks and other loops) that qualify."""
    found: list[nodes.For] = []
    for macro in template.find_all(nodes.Macro):
        # a macro called in a loop could carry state from one iteration to the next, or track spans
        if macro.find(nodes.NSRef) is not None or any(map(_is_generation, macro.find_all(nodes.CallBlock))):
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


def wrap_loop(loop: nodes.For, memo: str, state: str, also_read: set[str]) -> None:
    """Replace the loop's body by a fragment around it; ``also_read``: names the body's macros read."""
    if isinstance(loop.target, nodes.Name):
        targets = [loop.target.name]
    else:
        targets = [n.name for n in loop.target.find_all(nodes.Name)]
    used = _loop_properties(loop.body)
    assert used is not None
    parts: list[nodes.Expr] = [nodes.Name(name, "load", lineno=loop.lineno) for name in targets]
    needed = {part for prop in used for part in _LOOP_PARTS[prop]}
    for part in _PART_ORDER:
        if part in needed:
            parts.append(nodes.Getattr(nodes.Name("loop", "load"), part, "load", lineno=loop.lineno))
    read = {n.name for stmt in loop.body for n in stmt.find_all(nodes.Name) if n.ctx == "load"}
    names = sorted((read | also_read) - {*targets, "loop"})
    scope = nodes.Tuple([nodes.Name(name, "load", lineno=loop.lineno) for name in names], "load", lineno=loop.lineno)
    line = loop.lineno
    options = [
        nodes.Keyword(_MARK, nodes.Const(True, lineno=line), lineno=line),
        nodes.Keyword("scope", scope, lineno=line),
        nodes.Keyword("parts", nodes.Tuple(parts, "load", lineno=line), lineno=line),
        nodes.Keyword("memo", nodes.Const(memo, lineno=line), lineno=line),
        nodes.Keyword("state", nodes.Const(state, lineno=line), lineno=line),
    ]
    loop.body = [nodes.ScopedEvalContextModifier(options, loop.body, lineno=line)]


def _qualifies(loop: nodes.For) -> bool:
    if loop.recursive or not isinstance(loop.target, nodes.Name | nodes.Tuple):
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
    """The key pickler for a sandbox whose globals are ``globals_by_id`` (id -> (name, value))."""
    return type("KeyPickler", (_KeyPickler,), {"globals_by_id": globals_by_id})


_MAX_KEY = 1 << 20
_SCALARS = frozenset({int, bool, float, str, type(None)})


def _pickle(value: Any, pickler: type[_KeyPickler]) -> bytes | None:
    return plain_key(value, _MAX_KEY, pickler)


class LoopKeys:
    """One run of a remembered loop: the key part of the names its body reads (None: some value cannot be
    keyed, nothing is remembered), and the pickles of the values met so far (id -> (value, pickle); the entry
    keeps the value alive, so its id stays its own), so each message is pickled once per render.

    ``trusted`` are the render's containers known to be plain trees (the caller's input as adopted or rebuilt,
    see ``render._inputs``): those are pickled by the plain C pickler, exact types being already checked.
    """

    __slots__ = ("scope", "pieces", "pickler", "trusted")

    def __init__(self, values: tuple[Any, ...], pickler: type[_KeyPickler], trusted: AbstractSet[int]) -> None:
        self.pickler = pickler
        self.trusted = trusted
        self.scope = _pickle(values, pickler)
        self.pieces: dict[int, tuple[Any, bytes]] = {}

    def key(self, parts: tuple[Any, ...]) -> bytes | None:
        """The key of one iteration: the scope's pickle, then each part's (pickles are self-delimiting)."""
        if self.scope is None:
            return None
        out = [self.scope]
        pieces = self.pieces
        for value in parts:
            if type(value) in _SCALARS:
                out.append(pickle.dumps(value, 5))
                continue
            entry = pieces.get(id(value))
            if entry is None or entry[0] is not value:
                piece = pickle.dumps(value, 5) if id(value) in self.trusted else _pickle(value, self.pickler)
                if piece is None:
                    return None
                entry = pieces[id(value)] = (value, piece)
            out.append(entry[1])
        return b"".join(out)


_MEMO_ENTRIES = 4096
_MEMO_BYTES = 16 << 20
_MAX_TEXT = 1 << 20

FragmentEntry = tuple[str, int, int]
"""A remembered iteration: its text, the loop iterations and the bytes it charged to the budget."""


def fragment_memo() -> FifoMemo[FragmentEntry]:
    """One loop's remembered iterations (FIFO, bounded)."""
    return FifoMemo(max_entries=_MEMO_ENTRIES, max_bytes=_MEMO_BYTES, max_text=_MAX_TEXT)
