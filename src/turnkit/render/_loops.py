"""``for`` loops over a list or tuple without jinja2's ``LoopContext``, where the body's use of ``loop`` allows.

jinja2 wraps every loop whose body reads ``loop`` in a ``LoopContext``: a Python ``__next__`` per iteration and a
Python property per ``loop.first``. For a list or tuple every property it offers but ``cycle``/``changed`` (and
being called, for recursive loops) is arithmetic on the position, the length and the sequence, so a loop
qualifies (:func:`plain_loop_body`, at compile time) when its body reads ``loop`` only as ``loop.<one of those>``,
nowhere inside a macro or call block (which could keep it past the iteration), and the loop is neither
``recursive`` nor filtered (``for x in y if ...``). At run time :func:`plain_loop` hands such a loop, for each
item of a list or tuple, its position ``index0`` (an ``int``) instead of the ``LoopContext``; the loop header keeps
the sequence in a local, and the code generator computes each property from the two (:data:`LOOP_EXPRESSIONS`);
any other iterable (a string, a dict, a generator, a list longer than the loops counted up front) still gets a
``LoopContext``, and the generated code reads its property (one ``type(loop) is int`` test tells them apart).

Why this is exact: templates cannot mutate a list (the immutable sandbox refuses it) nor rebind ``loop`` (jinja2
refuses to compile that), so the sequence, its length and the position are what ``LoopContext`` would read;
``previtem``/``nextitem`` past the ends are the same ``environment.undefined(hint)`` call ``LoopContext`` makes.

Item reuse: a loop body often reads the same item of a variable again and again (``message['role']`` in every
``elif``). :func:`repeated_items` finds those reads; the code generator keeps, per variable and key, the last dict
read and its item, and answers a read of the same dict object with that item (whatever the variable holds by then:
the test is on the object). That is exact because a dict cannot change during a render (the immutable sandbox
refuses every mutating method, and the fast paths call only ``get``/``items``/``keys``/``values``), and the kept
reference keeps the dict alive, so no other object can take its identity. Only reads compiled into the loop's own
Python function count (not inside a macro, call block, ``{% block %}``, a nested loop's filter or a recursive loop's
body, which run as functions of their own).

A body for dicts: a loop whose variable is read as a dict (``message['role']``, ``message.content``,
``message.get(...)``) and never rebound in the body is compiled twice (:func:`dict_loop_target`), and each
iteration picks its copy with one ``type(message) is dict``: in the dict copy every such read is the dict's own
operation (the item, or the undefined value the sandbox gives for a missing key) without the exact-type test the
generic copy makes per read. The messages a template loops over are plain dicts (render/_inputs.py adopts or
rebuilds them), so the generic copy runs only for other values (strings, namespaces, lists).

Printing loops remembered per tool set: a loop of the root whose body only prints its variable through ``tojson``
with constant arguments, constants, and ``+``/``~`` of those (``{% for tool in tools %}{{ tool | tojson }}\n``,
:func:`printing_loop`) prints the same chunks every time it runs over the same private tool-set list (the copy
render/_inputs.py keeps per tool set: never mutated, never seen by a caller). The first run over one keeps its
chunks when it charged nothing to the budget (:func:`remember_printed`); later runs count the loop (the same
``guard_iterable`` call) and append those chunks, when no output check would have fallen inside the loop (the chunks
before its last iteration stay under the next check), so the checks and their failures fall where they fell.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from typing import Any

import jinja2.nodes as nodes
from jinja2.runtime import LoopContext

from turnkit.render._budget import UPFRONT, current_budget, guard_iterable
from turnkit.render._inputs import frozen_json

__all__ = [
    "LOOP_EXPRESSIONS",
    "dict_loop_target",
    "loop_allocated",
    "loop_properties",
    "plain_loop",
    "plain_loop_body",
    "printing_loop",
    "remember_printed",
    "repeated_items",
]

# ``loop.<name>`` from the position ``index0`` held in ``{0}`` and the sequence held in ``{1}``: what the LoopContext
# property returns for a list or tuple (``last`` is "no item after this one", ``revindex`` is ``length - index0``,
# ``depth`` of a loop that is not recursive is 1).
LOOP_EXPRESSIONS: dict[str, str] = {
    "index0": "{0}",
    "index": "{0} + 1",
    "first": "{0} == 0",
    "last": "{0} == len({1}) - 1",
    "length": "len({1})",
    "revindex": "len({1}) - {0}",
    "revindex0": "len({1}) - {0} - 1",
    "previtem": "{1}[{0} - 1] if {0} else environment.undefined('there is no previous item')",
    "nextitem": "{1}[{0} + 1] if {0} + 1 < len({1}) else environment.undefined('there is no next item')",
    "depth": "1",
    "depth0": "0",
}


def plain_loop(iterable: Iterable[Any], undefined: Any) -> Iterator[tuple[Any, Any]]:
    """``(item, index0)`` per item of a list or tuple counted up front; a ``LoopContext`` for anything else. Either
    way the loop is counted against the render's budget (see guard_iterable)."""
    kind = type(iterable)
    if kind is list or kind is tuple:
        length = len(iterable)  # type: ignore[arg-type]
        if not length:
            return iterable  # type: ignore[return-value]  # (no item: nothing to count, no pair to make)
        if length <= UPFRONT:
            budget = current_budget()
            if budget is not None:
                budget.reserve_iterations(length)
            # (a zip without keywords: one reused pair per item, small ints for the positions, no tuple per item)
            return zip(iterable, range(length))  # noqa: B905
    return LoopContext(guard_iterable(iterable), undefined)


def plain_loop_body(node: nodes.For) -> bool:
    """Whether every use of this loop's ``loop`` in its body is a property :data:`LOOP_EXPRESSIONS` computes,
    none inside a macro or call block."""
    if node.recursive or node.test is not None or node.find(nodes.Block) is not None:
        return False
    used = loop_properties(node.body)
    if used is None or not used <= LOOP_EXPRESSIONS.keys():
        return False
    for stmt in node.body:
        # a macro or call block may run after the iteration (a ``caller`` kept, a macro called later): no ``loop``
        # inside one takes the plain path, whichever loop it names
        scopes = [*([stmt] if isinstance(stmt, _FUNCTIONS) else []), *stmt.find_all(_FUNCTIONS)]
        if any(_is_loop(name) for scope in scopes for name in scope.find_all(nodes.Name)):
            return False
    return True


def loop_properties(body: Iterable[nodes.Node]) -> set[str] | None:
    """The ``loop.<name>`` properties a loop's body reads, or None when it uses ``loop`` otherwise (bare: passed
    on, subscripted, called)."""
    used: set[str] = set()

    def walk(node: nodes.Node, parent: nodes.Node | None) -> bool:
        if _is_loop(node):
            if node.ctx != "load" or not isinstance(parent, nodes.Getattr):  # type: ignore[attr-defined]
                return False
            used.add(parent.attr)
            return True
        if isinstance(node, nodes.For):
            # a nested loop's own ``loop`` is another object; its iterable, filter and else branch still see this one
            own = [node.iter, *node.else_, *([node.test] if node.test is not None else [])]
            return all(walk(child, node) for child in own)
        return all(walk(child, node) for child in node.iter_child_nodes())

    if all(walk(stmt, None) for stmt in body):
        return used
    return None


def _is_loop(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Name) and node.name == "loop"


def repeated_items(node: nodes.For, skip: AbstractSet[str]) -> list[list[nodes.Getattr | nodes.Getitem]]:
    """The reads ``x.key`` / ``x['key']`` of a variable in the loop's body, grouped by variable and key, for the
    pairs read more than once (``skip``: keys never read as items, such as dict method names)."""
    if node.recursive:
        return []
    reads: dict[tuple[str, str], list[nodes.Getattr | nodes.Getitem]] = {}

    def walk(child: nodes.Node) -> None:
        if isinstance(child, _FUNCTIONS):
            return
        if isinstance(child, nodes.For):
            for part in (child.iter, *child.else_, *([] if child.recursive else child.body)):
                walk(part)
            return
        key: Any = None
        if isinstance(child, nodes.Getattr):
            key = child.attr
        elif isinstance(child, nodes.Getitem) and isinstance(child.arg, nodes.Const):
            key = child.arg.value
        target = getattr(child, "node", None)
        if type(key) is str and key not in skip and isinstance(target, nodes.Name) and target.name != "loop":
            reads.setdefault((target.name, key), []).append(child)  # type: ignore[arg-type]
            return
        for grandchild in child.iter_child_nodes():
            walk(grandchild)

    for stmt in node.body:
        walk(stmt)
    return [found for found in reads.values() if len(found) > 1]


def dict_loop_target(node: nodes.For, *, least: int = 2) -> str | None:
    """The loop variable's name when the body is worth compiling a second time for an exact ``dict`` in it.

    That copy of the body is chosen per iteration (``type(x) is dict``) and reads ``x['key']``, ``x.key`` and
    ``x.get(...)`` straight off the dict, with no test per read. It needs the variable to hold the same object for
    the whole iteration: the target is one name, the body never assigns that name (not even a nested loop's
    target), and no macro, call block or ``{% block %}`` in it could run later with the variable rebound. Worth it
    when the body reads the variable's items or methods at least ``least`` times.
    """
    target = node.target
    if node.recursive or not isinstance(target, nodes.Name) or next(node.find_all(_FUNCTIONS), None) is not None:
        return None
    reads = 0
    for stmt in node.body:
        for name in stmt.find_all(nodes.Name):
            if name.name == target.name and name.ctx != "load":
                return None
        for read in stmt.find_all((nodes.Getattr, nodes.Getitem)):
            assert isinstance(read, nodes.Getattr | nodes.Getitem)
            key = read.attr if isinstance(read, nodes.Getattr) else getattr(read.arg, "value", None)
            owner = read.node
            reads += isinstance(owner, nodes.Name) and owner.name == target.name and type(key) is str
    return target.name if reads >= least else None


_FUNCTIONS = (nodes.Macro, nodes.CallBlock, nodes.Block)
"""Nodes compiled as Python functions of their own: a read inside one cannot use the loop function's locals."""


def printing_loop(node: nodes.For, chains: AbstractSet[str]) -> bool:
    """Whether the loop's body only prints its variable through ``tojson`` with constant arguments (or bare),
    constants, and ``+`` or sized chains (the filters named in ``chains``) of those: a function of the item alone.
    Not a recursive, filtered or ``else`` loop."""
    target = node.target
    if node.recursive or node.test is not None or node.else_ or not node.body or not isinstance(target, nodes.Name):
        return False

    def pure(expr: nodes.Node) -> bool:
        if isinstance(expr, nodes.TemplateData | nodes.Const):
            return True
        if isinstance(expr, nodes.Name):
            return expr.name == target.name and expr.ctx == "load"
        if isinstance(expr, nodes.Add):
            return pure(expr.left) and pure(expr.right)
        if isinstance(expr, nodes.List):
            return all(map(pure, expr.items))
        if not isinstance(expr, nodes.Filter) or expr.node is None or expr.dyn_args or expr.dyn_kwargs:
            return False
        if expr.name in chains:
            return pure(expr.node)
        constants = all(isinstance(arg, nodes.Const) for arg in [*expr.args, *(kw.value for kw in expr.kwargs)])
        return expr.name == "tojson" and constants and pure(expr.node)

    return all(isinstance(stmt, nodes.Output) and all(map(pure, stmt.nodes)) for stmt in node.body)


_PRINTED_MAX = 64
"""Tool-set lists a printing loop keeps chunks for (cleared when full: only a cost)."""


def loop_allocated() -> int:
    """The bytes the render has charged so far (before a printing loop runs, see :func:`remember_printed`)."""
    budget = current_budget()
    return budget.allocated if budget is not None else -1


def remember_printed(memo: dict[int, Any], sequence: Any, out: list[str], mark: int, allocated: int) -> None:
    """Keep the chunks a printing loop appended from ``out[mark]`` on, when ``sequence`` is a private tool-set list
    and the loop charged nothing (``allocated``: :func:`loop_allocated` before it): ``(sequence, the chunks before
    its last iteration, the chunks)`` under the list's id (the entry keeps the list, so the id is not reused)."""
    budget = current_budget()
    if type(sequence) is not list or frozen_json(sequence) is None or budget is None or budget.allocated != allocated:
        return
    chunks = tuple(out[mark:])
    per_item = len(chunks) // len(sequence) if sequence else 0  # every iteration appends as many chunks
    if len(memo) >= _PRINTED_MAX:
        memo.clear()
    memo[id(sequence)] = (sequence, len(chunks) - per_item, chunks)
