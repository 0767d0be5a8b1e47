"""The hardened Jinja environment chat templates run in.

It behaves exactly like the environment transformers 5.23 compiles chat templates with (an
``ImmutableSandboxedEnvironment`` with ``trim_blocks``, ``lstrip_blocks``, loop controls, the
``{% generation %}`` block, a non-escaping ``tojson``, ``raise_exception``, ``strftime_now`` and hardened
``dict``/``namespace``), and adds budgets from :class:`~turnkit.limits.Limits` through jinja2's own hooks:
``call_binop`` (repetition, powers, printf), ``call`` (call depth, string methods that pad or repeat),
``wrap_str_format`` (format widths), ``finalize`` (printing shared structures), the code generator (every
``for`` loop is counted, every ``~`` is sized, every capture buffer is metered) and guarded filters/globals.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from functools import update_wrapper
from io import StringIO
from itertools import chain, repeat
from pprint import pformat
from types import BuiltinMethodType, MethodType, SimpleNamespace
from typing import Any

import jinja2
import jinja2.exceptions
import jinja2.ext
import jinja2.nodes as nodes
from jinja2 import filters as jinja_filters
from jinja2 import tests as jinja_tests
from jinja2.compiler import CodeGenerator, DependencyFinderVisitor, Frame, find_undeclared, optimizeconst
from jinja2.idtracking import VAR_LOAD_ALIAS, VAR_LOAD_RESOLVE, VAR_LOAD_UNDEFINED
from jinja2.nodes import EvalContext
from jinja2.runtime import Context, LoopContext, Macro, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedFormatter
from jinja2.utils import Namespace, generate_lorem_ipsum, missing
from jinja2.visitor import NodeTransformer
from markupsafe import Markup

from turnkit.errors import TemplateLimitError
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.render._budget import current_budget, estimate_str_size, guard_iterable
from turnkit.render._fragments import (
    FUTURE,
    UNKEYABLE,
    Fragment,
    FragmentEntry,
    LoopKeys,
    LoopTraces,
    Resumable,
    as_fragment,
    fragment_loops,
    fragment_memo,
    key_pickler,
    macro_names,
    wrap_loop,
)
from turnkit.render._inputs import frozen_json
from turnkit.render._loops import (
    LOOP_EXPRESSIONS,
    dict_loop_target,
    plain_loop_body,
    printing_loop,
    repeated_items,
)
from turnkit.render._memo import FifoMemo
from turnkit.render._spans import MARKS, TRACKER
from turnkit.render._straight import CHECK_EVERY, OUT, straight_template

__all__ = ["TemplateSandbox", "nested_generation", "sandbox_for"]

_LOOP_FILTER = "_turnkit_loop"
_DICT_ATTRIBUTES = frozenset(dir(dict))
# Attributes jinja2's sandbox always lets through unchanged (read-only methods, ``loop`` properties).
_SAFE_DICT_METHODS = frozenset({"get", "items", "keys", "values"})
_LOOP_ATTRIBUTES = frozenset(
    {"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0", "previtem", "nextitem"}
)
# Methods a template may call on plain data that the sandbox calls directly, unsized: inlined by the code generator.
_INLINE_METHODS: dict[type, frozenset[str]] = {
    dict: _SAFE_DICT_METHODS,
    str: frozenset({"strip", "lstrip", "rstrip", "startswith", "endswith", "lower", "upper"}),
}
_STR = frozenset({str})
# Tests the code generator writes inline (when jinja2's own function is the environment's test): the code before
# and after the tested value, which is what the test function returns.
_INLINE_TESTS: dict[str, tuple[str, str]] = {
    "string": ("isinstance(", ", str)"),
    "defined": ("(not isinstance(", ", Undefined))"),
    "undefined": ("isinstance(", ", Undefined)"),
    "none": ("(", " is None)"),
}
# The same tests of a variable's local, or of a dict's item read as ``missing`` for a missing key (``{0}`` the first
# time, ``{1}`` after), which holds jinja2's ``missing`` where a read would build an undefined value: what the test
# returns for that value, without building it.
_MISSING_TESTS: dict[str, str] = {
    "string": "isinstance({0}, str)",
    "defined": "({0} is not missing and not isinstance({1}, Undefined))",
    "undefined": "({0} is missing or isinstance({1}, Undefined))",
    "none": "({0} is None)",
}
_PLAIN_VALUES = frozenset({str, int, float, bool, type(None), dict, list, tuple})
# Tests whose answer for a value of a type of _PLAIN_VALUES is decided by the type alone (``{0}``: the value; what
# jinja2's function returns: a ``Mapping``; ``iter()`` works; ``len()`` and ``__getitem__`` exist).
_TYPE_TESTS: dict[str, str] = {
    "mapping": "type({0}) is dict",
    "iterable": "type({0}) in tk_containers",
    "sequence": "type({0}) in tk_containers",
}
_CONTAINERS = frozenset({str, dict, list, tuple})
_JSON_ENCODER = json.JSONEncoder(ensure_ascii=False)
_JSON_DEFAULTS = (False, None, None, False)  # ``tojson``'s (ensure_ascii, indent, separators, sort_keys) defaults
_encode_str = json.encoder.encode_basestring


def _encode(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``: the C encoder json.dumps builds for those arguments, minus the
    two Python frames around it (``JSONEncoder.encode`` and ``iterencode``)."""
    if _C_MAKE_ENCODER is None:  # pragma: no cover - a Python without the _json accelerator
        return _JSON_ENCODER.encode(value)
    return "".join(_c_encoder({})(value, 0))


def _c_encoder(markers: dict[int, Any] | None) -> Any:
    """The C encoder ``json.dumps(..., ensure_ascii=False)`` builds, with ``markers`` for its cycle detection."""
    encoder = _JSON_ENCODER
    return _C_MAKE_ENCODER(
        markers, encoder.default, _encode_str, None, encoder.key_separator, encoder.item_separator, False, False, True
    )


_C_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
# The same encoder without cycle detection (``markers`` None), built once: it keeps no state between calls, so
# every render and thread can share it. Only for a tree of plain data (a container the render's input was adopted
# or rebuilt into, see _inputs): it has no cycle to detect and runs no Python code, so it writes what _encode
# writes. Anything else takes a fresh encoder per call (one that fails midway leaves ids in its ``markers``).
_TREE_ENCODER: Any = _c_encoder(None) if _C_MAKE_ENCODER is not None else None


# Methods the immutable sandbox refuses (jinja2.sandbox's list for dict and list).
_MUTATORS: dict[type, frozenset[str]] = {
    dict: frozenset({"clear", "pop", "popitem", "setdefault", "update"}),
    list: frozenset({"append", "clear", "pop", "reverse", "insert", "sort", "extend", "remove"}),
}
# Allocations smaller than this are not counted: each costs a loop iteration or a call, which are budgeted.
_FREE_BYTES = 4096
_CONCAT_FILTER = "_turnkit_concat"
_ADD_FILTER = "_turnkit_add"
_CHAINS = frozenset({_CONCAT_FILTER, _ADD_FILTER})
"""The sized chains ``a + b + c`` and ``a ~ b`` are compiled to (see _GuardRewriter)."""
# The operators that can make a value much bigger than their operands, run through call_binop (``-``, ``/`` and
# ``//`` cannot: they compile to the Python operator, as in transformers' sandbox, which intercepts none).
_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "*": operator.mul,
    "**": operator.pow,
    "%": operator.mod,
}
# printf-style conversion specifiers: width and precision are what can blow up.
_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
# str.format specs: [[fill]align][sign][z][#][0][width][grouping][.precision][type]
_FORMAT_SPEC_NUMBERS = re.compile(r"\d+")


def _nbytes(text: str) -> int:
    """Memory a string takes, roughly: 1 byte per character when ASCII, 4 otherwise (an upper bound)."""
    return len(text) if text.isascii() else 4 * len(text)


class _GenerationExtension(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: renders its body unchanged, as transformers does."""

    tags = {"generation"}

    def parse(self, parser: Any) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller: Macro) -> str:
        text = str(caller())
        tracker = TRACKER.get()
        if tracker is not None:
            if tracker.marking:
                return f"{MARKS[0]}{text}{MARKS[1]}"
            tracker.generated(text)
        return text


_GENERATION = _GenerationExtension._generation_support

_BUFFERED = (nodes.Macro, nodes.CallBlock, nodes.AssignBlock, nodes.FilterBlock)
"""Nodes whose body renders into a buffer output later (or elsewhere): a generation block inside one is not at the
top-level position the render loop counts."""


def _is_generation(node: nodes.Node) -> bool:
    call = getattr(node, "call", None)
    target = getattr(call, "node", None)
    return isinstance(node, nodes.CallBlock) and getattr(target, "name", None) == "_generation_support"


def nested_generation(tree: nodes.Node, inside: bool = False) -> bool:
    """Whether the parsed template ``tree`` has a ``{% generation %}`` block inside a macro, ``{% set %}``, call
    or filter block (another generation block counts too)."""
    for child in tree.iter_child_nodes():
        if _is_generation(child) and inside:
            return True
        if nested_generation(child, inside or isinstance(child, _BUFFERED)):
            return True
    return False


class _GuardRewriter(NodeTransformer):
    """Route every loop through the iteration budget and every ``~`` through the size check."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = nodes.Filter(node.iter, _LOOP_FILTER, [], [], None, None, lineno=node.lineno)
        return node

    def visit_Add(self, node: nodes.Add) -> nodes.Node:
        # ``a + b + c + d`` (the bulk of chat-template code) becomes one sized call instead of three.
        operands: list[nodes.Expr] = []
        current: nodes.Expr = node
        while isinstance(current, nodes.Add):
            operands.append(current.right)
            current = current.left
        operands.append(current)
        operands.reverse()
        if len(operands) < 3:
            self.generic_visit(node)
            return node
        visited = [self.visit(operand) for operand in operands]
        items = nodes.List(visited, lineno=node.lineno)
        return nodes.Filter(items, _ADD_FILTER, [], [], None, None, lineno=node.lineno)

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        items = nodes.List(list(node.nodes), lineno=node.lineno)
        return nodes.Filter(items, _CONCAT_FILTER, [], [], None, None, lineno=node.lineno)


class _GuardedCodeGenerator(CodeGenerator):
    """jinja2's code generator, with the AST guard applied first, capture buffers that count their size, and
    inline fast paths for the sandbox's hot operations on plain data.

    Each fast path is an exact-type test (``type(x) is dict``, ``is str``, ``is LoopContext``) in front of the
    sandbox call jinja2 would make, and returns what that call returns for that type (the sandbox's own
    shortcuts for plain data, see :meth:`TemplateSandbox.getattr` and :meth:`TemplateSandbox.call`); any other
    value takes the sandbox call unchanged. They save a Python call per attribute, item, method call and print.
    """

    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        _GuardRewriter().visit(node)
        # per print being compiled: (the stream to go back to, the one its expression is written aside to), or None
        self._finalized: list[tuple[Any, StringIO] | None] = []
        self._print_node: nodes.Expr | None = None  # the printed expression, until a fast path takes its test
        self._print_tmps: list[str] = []
        # the item read whose value an inline test takes (see visit_Test): a dict's missing key reads as ``missing``
        self._tested: nodes.Node | None = None
        # the ids of the expressions whose value only an ``if`` tests for truth: a dict's missing key reads as
        # ``None`` there, as false as the undefined value (when the environment's undefined values are false)
        self._truth: set[int] = set()
        if self.environment.undefined.__bool__ is Undefined.__bool__:
            for test in chain(
                (branch.test for branch in node.find_all(nodes.If)),
                (cond.test for cond in node.find_all(nodes.CondExpr)),
            ):
                self._mark_truth(test)
        # the ``loop`` variables of the loops being compiled, innermost last: (its Python name, and for a plain
        # loop the local holding its sequence: its ``loop`` is the position in a list or tuple, see _loops); the next
        # loop header's kind
        self._loops: list[tuple[str, str | None]] = []
        self._next_loop_plain = False
        self._plain_iterable: str | None = None  # the next loop guard is a plain loop's: its sequence's local
        # reads of a loop variable's item answered from the last dict read (see _loops): node id -> the locals
        # holding that dict and its item
        self._kept_items: dict[int, tuple[str, str]] = {}
        # loop bodies compiled twice, once for an exact dict in the loop variable (see _loops.dict_loop_target):
        # the Python names known to hold an exact dict where code is being written, the next body to specialise
        # (the loop's body and its variable's name), and how many generic copies enclose the code being written
        self._exact: set[str] = set()
        self._dict_body: tuple[list[nodes.Node], str, list[str]] | None = None
        # kept items forgotten at the start of each iteration of a dict copy: the local holding the item -> the
        # local holding the dict (while that copy is being written)
        self._fresh: dict[str, str] = {}
        # the Python names bound where code is being written (see visit_Assign), and the statements being visited
        self._bound: set[str] = set()
        self._statements: Iterable[nodes.Node] = ()
        # the template's variables set to a ``namespace(...)`` somewhere: their attributes are read namespace first
        self._namespaces = {
            assign.target.name
            for assign in node.find_all(nodes.Assign)
            if isinstance(assign.target, nodes.Name)
            and isinstance(assign.node, nodes.Call)
            and getattr(assign.node.node, "name", None) == "namespace"
        }
        self._generic = 0
        self._dependencies: list[tuple[str, str, str]] = []  # (Python name, "filters" or "tests", name)
        # the memos of printing loops (see _loops.printing_loop); none where an autoescape block could change what
        # a loop prints from one render to the next (tested before prefix reuse wraps loop bodies in such nodes)
        self._printing_memos: list[str] = []
        self._print_memos = node.find(nodes.EvalContextModifier) is None
        fragments = getattr(self.environment, "fragments", False)
        # the root as straight Python, appending to a list (see _straight), or jinja2's generator
        self._straight = straight_template(node, _is_generation)
        self._meter_loop = False  # the next loop body starts with the output check (a loop of the root frame)
        memos = []
        # the flag local of each loop remembered by position, by its ``loop``'s Python name (see _fragments.Resume)
        self._future_flags: dict[str, str] = {}
        if fragments and self._straight:  # remembered iterations append to the root's list
            also_read = macro_names(node)
            for number, loop in enumerate(fragment_loops(node)):
                memo = f"tk_fragments_{number}"
                state, new_name = self.temporary_identifier(), self.temporary_identifier
                resume = wrap_loop(loop, memo, state, also_read, new_name, _LOOP_FILTER)
                memos.append((memo, resume is not None))
        super().visit_Template(node, frame)
        for memo, by_position in memos:
            self.writeline(f"{memo} = environment.fragment_memo({by_position})")
        if any(by_position for _, by_position in memos):
            self.writeline("from turnkit.render._fragments import Resume as tk_resume")
        self._write_dependencies()
        for memo in self._printing_memos:
            self.writeline(f"{memo} = {{}}")
        self.writeline("from turnkit.render._loops import plain_loop as tk_plain_loop")
        if self._printing_memos:
            self.writeline("from turnkit.render._loops import loop_allocated as tk_loop_allocated")
            self.writeline("from turnkit.render._loops import remember_printed as tk_remember_printed")
        self.writeline("from turnkit.render._straight import output_grew as tk_output_grew")
        self.writeline("from turnkit.render._budget import guard_iterable as tk_guard_iterable")
        self.writeline("from turnkit.render._sandbox import _ABSENT as tk_unset")
        self.writeline("from turnkit.render._inputs import frozen_slot as tk_frozen_slot")
        self.writeline("from json.encoder import encode_basestring as tk_encode_str")
        self.writeline("from turnkit.render._sandbox import _TemplateNamespace as tk_namespace")
        self.writeline("from turnkit.render._sandbox import _new_namespace as tk_new_namespace")
        self.writeline("from turnkit.render._sandbox import _PLAIN_VALUES as tk_plain_values")
        self.writeline("from turnkit.render._sandbox import _CONTAINERS as tk_containers")
        self.writeline("tk_getattribute = object.__getattribute__")
        self.writeline("from turnkit.render._sandbox import _NO_LOOP_VARS as tk_no_vars")
        self.writeline("from turnkit.render._sandbox import _CaptureBuffer as tk_capture_buffer")
        self.writeline("from turnkit.render._sandbox import _NO_SLOT as tk_no_slot, _NO_TEXT as tk_no_text")
        self.writeline("from turnkit.render._sandbox import _TREE_ENCODER as tk_tree_encoder")
        self.writeline("from turnkit.render._sandbox import _NO_BUDGET as tk_no_budget")
        self.writeline("from turnkit.render._budget import current_budget as tk_current_budget")
        self.writeline("tk_join = ''.join")

    def _mark_truth(self, node: nodes.Node) -> None:
        """Note ``node`` as tested for truth only, and the operands of ``not``, ``and`` and ``or`` in it."""
        self._truth.add(id(node))
        if isinstance(node, nodes.Not):
            self._mark_truth(node.node)
        elif isinstance(node, nodes.And | nodes.Or):
            self._mark_truth(node.left)
            self._mark_truth(node.right)

    def pull_dependencies(self, nodes: Iterable[nodes.Node]) -> None:
        # jinja2 looks each filter and test up at every render, in a ``try`` per name (a missing one fails when
        # called); the sandbox's filters and tests never change once it is built, so the same lookups run once,
        # when the template's module runs (_write_dependencies), and the functions read module globals
        visitor = DependencyFinderVisitor()
        for node in nodes:
            visitor.visit(node)
        for id_map, names, dependency in (
            (self.filters, visitor.filters, "filters"),
            (self.tests, visitor.tests, "tests"),
        ):
            for name in sorted(names):
                if name not in id_map:
                    id_map[name] = self.temporary_identifier()
                    self._dependencies.append((id_map[name], dependency, name))

    def _write_dependencies(self) -> None:
        for ident, dependency, name in self._dependencies:
            self.writeline("try:")
            self.indent()
            self.writeline(f"{ident} = environment.{dependency}[{name!r}]")
            self.outdent()
            self.writeline("except KeyError:")
            self.indent()
            self.writeline("@internalcode")
            self.writeline(f"def {ident}(*unused):")
            self.indent()
            self.writeline(f'raise TemplateRuntimeError("No {dependency[:-1]} named {name!r} found.")')
            self.outdent()
            self.outdent()

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        if (
            self._print_memos
            and self._straight
            and frame.buffer == OUT
            and not frame.loop_frame  # (a nested loop resets the enclosing iteration's ``_loop_vars``)
            and isinstance(node.iter, nodes.Filter)
            and node.iter.name == _LOOP_FILTER
            and node.iter.node is not None
            and printing_loop(node, _CHAINS)
        ):
            self._printing_loop(node, node.iter, frame)
            return
        self._visit_for(node, frame)

    def _printing_loop(self, node: nodes.For, guard: nodes.Filter, frame: Frame) -> None:
        """A printing loop (see _loops.printing_loop): over a private tool-set list seen before, the loop counted
        and the chunks kept appended, when no output check would fall inside the loop; else the loop as usual, its
        chunks kept for the next render."""
        assert guard.node is not None
        memo = f"tk_printed_{len(self._printing_memos)}"
        self._printing_memos.append(memo)
        sequence, hit, mark, allocated = (self.temporary_identifier() for _ in range(4))
        self.writeline(f"{sequence} = ", node)  # the iterable, evaluated once, as the loop header would
        self.visit(guard.node, frame)
        self.writeline(
            f"if ({hit} := {memo}.get(id({sequence}))) is not None and {hit}[0] is {sequence} "
            f"and len({OUT}) + {hit}[1] < tk_next_check:"
        )
        self.indent()
        self.writeline(f"tk_guard_iterable({sequence})")
        self.writeline(f"{OUT}.extend({hit}[2])")
        self.outdent()
        self.writeline("else:")
        self.indent()
        self.writeline(f"{mark}, {allocated} = len({OUT}), tk_loop_allocated()")
        guard.node = _internal_name(sequence, node.lineno)
        self._visit_for(node, frame)
        self.writeline(f"tk_remember_printed({memo}, {sequence}, {OUT}, {mark}, {allocated})")
        self.outdent()

    def _visit_for(self, node: nodes.For, frame: Frame) -> None:
        fragment = as_fragment(node.body[0]) if len(node.body) == 1 else None
        if fragment is not None:
            self.writeline(f"{fragment.state} = None")
        depth = len(self._loops)
        target = None if self._generic or fragment is not None else dict_loop_target(node)
        fresh = []  # the kept items of the loop variable's own keys, forgotten at each iteration of its dict copy
        for reads in repeated_items(node, _DICT_ATTRIBUTES):
            if id(reads[0]) not in self._kept_items:  # not already kept by an enclosing loop
                owner, value = self.temporary_identifier(), self.temporary_identifier()
                self.writeline(f"{owner} = tk_unset")
                self._kept_items.update((id(read), (owner, value)) for read in reads)
            if target is not None and getattr(reads[0].node, "name", None) == target:
                fresh.append(self._kept_items[id(reads[0])][1])
        # jinja2 writes a LoopContext header when the body reads ``loop`` (see CodeGenerator.visit_For)
        uses_loop = "loop" in find_undeclared(node.iter_child_nodes(only=("body",)), ("loop",))
        self._next_loop_plain = uses_loop and plain_loop_body(node)
        self._meter_loop = frame.buffer == OUT and not node.recursive
        self._dict_body = None if target is None else (node.body, target, fresh)
        super().visit_For(node, frame)
        del self._loops[depth:]

    def blockvisit(self, nodes: Iterable[nodes.Node], frame: Frame) -> None:
        pending = self._dict_body
        if pending is None or nodes is not pending[0]:
            self._body_visit(nodes, frame)
            return
        # a loop body, twice: for an exact dict in the loop variable (its reads straight off the dict), and for
        # anything else (every read tested, as everywhere); the copy is chosen once per iteration
        self._dict_body = None
        ref = frame.symbols.ref(pending[1])
        self.writeline(f"if type({ref}) is dict:")
        self.indent()
        fresh = pending[2]
        if fresh:
            # the variable's items read more than once: none read yet in this iteration (its dict is the same
            # object all through the iteration, so a kept item needs no identity test, see _dict_item)
            self.writeline(f"{' = '.join(fresh)} = missing")
            self._fresh.update(dict.fromkeys(fresh, ref))
        self._exact.add(ref)
        first = self._last_identifier
        self._body_visit(nodes, frame)
        self._exact.discard(ref)
        for value in fresh:
            del self._fresh[value]
        self.outdent()
        self.writeline("else:")
        self.indent()
        # the generic copy reuses the dict copy's temporaries (only one of the two runs, each assigns a temporary
        # before reading it): every local of the function costs its frame a slot to clear on every call
        last, self._last_identifier = self._last_identifier, first
        self._generic += 1  # loops nested in the generic copy stay generic: the code grows linearly with depth
        self._body_visit(nodes, frame)
        self._generic -= 1
        self._last_identifier = max(last, self._last_identifier)
        self.outdent()

    def _body_visit(self, body: Iterable[nodes.Node], frame: Frame) -> None:
        """jinja2's visit of a list of statements, knowing which are its own (see visit_Assign): a variable the list
        sets is bound from there to its end."""
        bound, outer = set(self._bound), self._statements
        self._statements = body
        super().blockvisit(body, frame)
        self._bound, self._statements = bound, outer

    def visit_Assign(self, node: nodes.Assign, frame: Frame) -> None:
        super().visit_Assign(node, frame)
        # ``{% set x = ... %}`` as a statement of the list being visited (not inside an ``if`` of it): ``x`` holds
        # the value from here to the list's end, never jinja2's ``missing`` (a read makes an undefined of that)
        if isinstance(node.target, nodes.Name) and any(node is statement for statement in self._statements):
            self._bound.add(frame.symbols.ref(node.target.name))

    def visit_Macro(self, node: nodes.Macro, frame: Frame) -> None:
        super().visit_Macro(node, frame)
        # ``{% macro f() %}`` as a statement of the list being visited binds ``f`` as a ``set`` does
        if any(node is statement for statement in self._statements):
            self._bound.add(frame.symbols.ref(node.name))

    def visit_Name(self, node: nodes.Name, frame: Frame) -> None:
        if node.ctx == "load" and self._bound:
            ref = frame.symbols.find_ref(node.name)
            if ref in self._bound:  # bound by a ``set`` before it in the same function: no test for ``missing``
                self.write(ref)
                return
        super().visit_Name(node, frame)

    def macro_body(self, node: nodes.Macro | nodes.CallBlock, frame: Frame) -> tuple[Frame, Any]:
        # a macro or call block runs when called, maybe after its enclosing variables were reset to ``missing``
        bound, self._bound = self._bound, set()
        try:
            return super().macro_body(node, frame)
        finally:
            self._bound = bound

    def _exact_dict(self, node: nodes.Node, frame: Frame) -> str | None:
        """The Python name of ``node`` when it is a variable known to hold an exact dict here, else None."""
        if self._exact and isinstance(node, nodes.Name) and node.ctx == "load":
            ref = frame.symbols.find_ref(node.name)
            if ref in self._exact:
                return ref
        return None

    def write_commons(self) -> None:
        if not self._straight:
            super().write_commons()
            return
        # jinja2's preamble, minus the dead ``yield`` that makes the root a generator
        self.writeline("resolve = context.resolve_or_missing")
        self.writeline("undefined = environment.undefined")
        self.writeline("concat = environment.concat")
        self.writeline("cond_expr_undefined = Undefined")
        self.writeline("tk_parent_get = context.parent.get")
        self.writeline("tk_vars = context.vars")
        self.writeline(f"{OUT} = []")
        self.writeline(f"tk_next_check = {CHECK_EVERY}")
        self.writeline("tk_total = 0")

    def enter_frame(self, frame: Frame) -> None:
        if self._straight and frame.rootlevel:
            frame.buffer = OUT
            # jinja2's loads, reading each variable of the render straight from its dict: before the root's first
            # statement no name is assigned yet (``context.vars`` is empty), so ``resolve_or_missing`` would look
            # in ``context.parent`` alone
            resolve = "tk_parent_get({0!r}, missing)"
        elif self._straight and self.get_resolve_func() == "resolve":
            # an inner frame: what ``context.resolve_or_missing`` returns, without its Python frame
            resolve = "tk_vars[{0!r}] if {0!r} in tk_vars else tk_parent_get({0!r}, missing)"
        else:
            super().enter_frame(frame)
            return
        undefs = []
        for target, (action, param) in frame.symbols.loads.items():
            if action == VAR_LOAD_RESOLVE:
                self.writeline(f"{target} = {resolve.format(param)}")
            elif action == VAR_LOAD_UNDEFINED:
                undefs.append(target)
            elif action == VAR_LOAD_ALIAS:
                self.writeline(f"{target} = {param}")
        if undefs:
            self.writeline(f"{' = '.join(undefs)} = missing")

    def leave_frame(self, frame: Frame, with_python_scope: bool = False) -> None:
        super().leave_frame(frame, with_python_scope)
        if self._straight and frame.rootlevel:
            self.writeline(f"return {OUT}")

    def write(self, x: str) -> None:
        if x.startswith("context.exported_vars."):
            # the names a template exports are read only when another template imports it, and nothing can import
            # from this sandbox (it has no loader): a set operation less per top-level ``set`` and macro
            return
        if x == "_loop_vars = {}":
            # the first line of a loop body: the names the iteration sets, read only by calls of context functions
            # (jinja2's Context.call derives a context from them when there are some); most bodies set none, so
            # the iteration starts with one shared empty dict, and its first ``{% set %}`` makes its own (below)
            super().write("_loop_vars = tk_no_vars")
            if self._meter_loop:
                # a loop body of the root frame: measure the output every CHECK_EVERY chunks
                self._meter_loop = False
                self.writeline(
                    f"if len({OUT}) >= tk_next_check: "
                    f"tk_next_check, tk_total = tk_output_grew(environment, {OUT}, tk_next_check, tk_total)"
                )
            return
        if x.startswith("_loop_vars[") or x == "_loop_vars.update({":
            # a ``{% set %}`` in a loop body recording the name it sets: never into the shared empty dict
            super().write("if _loop_vars is tk_no_vars: _loop_vars = {}")
            self.newline()
        # jinja2's loop header ``for <target>, l_1_loop in LoopContext(<iterable>, undefined):``, met before the
        # body: remember which ``loop`` it binds, and bind a plain loop's to tk_plain_loop's tuples instead
        if x.startswith(", ") and x.endswith(" in LoopContext("):
            ref = x[2 : -len(" in LoopContext(")]
            sequence = self.temporary_identifier() if self._next_loop_plain else None
            self._loops.append((ref, sequence))
            if sequence is not None:
                x = f", {ref} in tk_plain_loop("
            self._plain_iterable, self._next_loop_plain = sequence, False
        super().write(x)

    def visit_ScopedEvalContextModifier(self, node: nodes.ScopedEvalContextModifier, frame: Frame) -> None:
        fragment = as_fragment(node)
        if fragment is None:
            super().visit_ScopedEvalContextModifier(node, frame)
        else:
            self._fragment(fragment, frame)

    def _fragment(self, node: Fragment, frame: Frame) -> None:
        """One iteration: the remembered text for its key, or the body run (appending to the root's list) and its
        text kept. The key is a tuple: the scope's part, then each loop part, as it is (an ``int`` or ``bool``
        property) or its :meth:`LoopKeys.piece`, looked up inline among the pieces of this run first."""
        if node.resume is not None:
            self._resumed_fragment(node, node.resume, frame)
            return
        key, hit, mark, value, entry = (self.temporary_identifier() for _ in range(5))
        state = node.state
        self._start_fragments(node, "environment.fragment_scope(", node.layout, frame)
        self.outdent()
        self.writeline(f"{key} = ")
        sequence = self._plain_loop(frame) if node.layout is not None else None
        if sequence is not None:
            ref = frame.symbols.find_ref("loop")  # a plain loop over the sequence read: its position's key
            self.write(f"{state}.keys[{ref}] if type({ref}) is int and {sequence} is {state}.sequence else ")
        self.write(f"({state}.scope")
        for part, raw in zip(node.parts.items, node.raw, strict=True):
            self.write(", ")
            if raw:
                self.visit(part, frame)
                continue
            self.write(f"({entry}[1] if ({entry} := {state}.pieces.get(id({value} := ")
            self.visit(part, frame)
            self.write(f"))) is not None and {entry}[0] is {value} else {state}.piece({value}))")
        self.write(")")
        self.writeline(f"{hit} = {node.memo}.entries.get({key})")
        self.writeline(f"if {hit} is None:")
        self.indent()
        self.writeline(f"{mark} = environment.fragment_mark({frame.buffer})")
        self.blockvisit(node.body, frame)
        self.writeline(f"environment.fragment_store({node.memo}, {state}, {key}, {frame.buffer}, {mark})")
        self.outdent()
        self.writeline("else:")
        self.indent()
        self._replay_fragment(hit, frame)
        self.outdent()

    def _start_fragments(self, node: Fragment, call: str, last: object, frame: Frame) -> None:
        """Open ``if <state> is None:`` and set the loop's state for this run: ``<call>`` (up to its first
        argument) with the scope's values, the sequence and ``last``."""
        self.writeline(f"if {node.state} is None:")
        self.indent()
        self.writeline(f"{node.state} = {call}")
        # the scope's locals as they are, ``missing`` for an undefined name (keyed as any undefined value): no
        # Undefined built per run, so a run's scope values are the last run's objects when they are unchanged
        assert all(isinstance(name, nodes.Name) for name in node.scope.items)
        self.write(f"({''.join(frame.symbols.ref(name.name) + ', ' for name in node.scope.items)})")  # type: ignore[attr-defined]
        self.write(", ")
        self.visit(node.sequence, frame)
        self.write(f", {last!r})")

    def _replay_fragment(self, hit: str, frame: Frame) -> None:
        """Append a remembered iteration's text, charging its budget use when it had any."""
        self.writeline(f"if {hit}[1] or {hit}[2]:")
        self.indent()
        self.writeline(f"environment.fragment_replay({hit})")
        self.outdent()
        self.writeline(f"{frame.buffer}.append({hit}[0])")

    def _resumed_fragment(self, node: Fragment, resume: Resumable, frame: Frame) -> None:
        """One iteration of a loop remembered by position (see _fragments.Resume): the remembered entry at its
        position, or the body run with a flag collecting the FUTURE bits of the ``loop`` properties it read."""
        hit, mark = self.temporary_identifier(), self.temporary_identifier()
        state, position, flag = node.state, resume.position, resume.flag
        self._start_fragments(node, f"tk_resume({node.memo}, ", resume.ordered, frame)
        self.writeline(f"{position} = 0")
        self.outdent()
        self.writeline("else:")
        self.indent()
        self.writeline(f"{position} += 1")
        self.outdent()
        self.writeline(f"if {position} < {state}.k and ({hit} := {state}.entries[{position}]) is not None:")
        self.indent()
        self._replay_fragment(hit, frame)
        self.outdent()
        self.writeline("else:")
        self.indent()
        self.writeline(f"{flag} = {resume.reads}")
        # where the iteration starts (see Resume.keep), inline: the budget's loop iterations and bytes, the
        # output's length, and the loop variable (the body may rebind it)
        budget = self.temporary_identifier()
        self.writeline(
            f"{mark} = (({budget} := tk_current_budget() or tk_no_budget).loops, {budget}.allocated, "
            f"len({frame.buffer}), "
        )
        self.visit(node.parts.items[0], frame)
        self.write(")")
        ref = frame.symbols.find_ref("loop")
        if ref is not None:
            self._future_flags[ref] = flag
        self.blockvisit(node.body, frame)
        self._future_flags.pop(ref or "", None)
        self.writeline(f"{state}.keep({position}, {flag}, {frame.buffer}, {mark})")
        self.outdent()

    def buffer(self, frame: Frame) -> None:
        frame.buffer = self.temporary_identifier()
        # the buffer class called with the sandbox, not a method of it: one Python frame less per macro call
        self.writeline(f"{frame.buffer} = tk_capture_buffer(environment)")

    @optimizeconst
    def visit_Getattr(self, node: nodes.Getattr, frame: Frame) -> None:
        # ``message.role``: a dict's item when the name is no dict attribute; ``loop.first``: the property.
        tmp = self.temporary_identifier()
        attr = node.attr
        if attr in _LOOP_ATTRIBUTES and isinstance(node.node, nodes.Name) and node.node.name == "loop":
            # a loop remembered by position notes the properties that depend on the items after this one
            flag = self._future_flags.get(frame.symbols.find_ref("loop") or "") if attr in FUTURE else None
            if flag is not None:
                self.write(f"(({flag} := {flag} | {FUTURE[attr]}) and ")
            sequence = self._plain_loop(frame)
            if sequence is not None:
                # a plain loop's ``loop`` is its position in a list or tuple, else the LoopContext (see _loops)
                ref = frame.symbols.find_ref("loop")
                expression = LOOP_EXPRESSIONS[attr].format(ref, sequence)
                self.write(f"(({expression}) if type({ref}) is int else {ref}.{attr})")
            else:
                self.write(f"({tmp}.{attr} if type({tmp} := ")
                self.visit(node.node, frame)
                self.write(f") is LoopContext else environment.getattr({tmp}, {attr!r}))")
            if flag is not None:
                self.write(")")
        elif attr not in _DICT_ATTRIBUTES:
            self._dict_item(node.node, attr, frame, "getattr", self._kept_items.get(id(node)), self._absent(node))
        else:
            super().visit_Getattr(node, frame)

    def _plain_loop(self, frame: Frame) -> str | None:
        """The local holding the sequence when ``loop`` here names a plain loop's variable (see _loops)."""
        ref = frame.symbols.find_ref("loop")
        for name, sequence in reversed(self._loops):
            if name == ref:
                return sequence
        return None

    @optimizeconst
    def visit_Getitem(self, node: nodes.Getitem, frame: Frame) -> None:
        # ``message['role']`` on a dict that has the key, ``messages[0]`` on a list that has the index.
        try:
            key = node.arg.as_const(frame.eval_ctx)
        except Exception:  # noqa: BLE001 - nodes.Impossible, or a constant that fails to fold: not a constant key
            key = None
        tmp = self.temporary_identifier()
        if type(key) is str and key not in _DICT_ATTRIBUTES:
            self._dict_item(node.node, key, frame, "getitem", self._kept_items.get(id(node)), self._absent(node))
        elif type(key) is int:
            self.write(f"({tmp}[{key!r}] if type({tmp} := ")
            self.visit(node.node, frame)
            self.write(
                f") is list and {-key - 1 if key < 0 else key} < len({tmp}) else environment.getitem({tmp}, {key!r}))"
            )
        else:
            super().visit_Getitem(node, frame)

    def _dict_item(
        self,
        node: nodes.Expr,
        key: str,
        frame: Frame,
        hook: str,
        kept: tuple[str, str] | None = None,
        absent: str | None = None,
    ) -> None:
        """A dict's item, or the undefined value the sandbox gives for a missing key that is no dict attribute.

        ``kept``: the locals holding the last dict this read found the key in and its item (see _loops): the same
        dict object again is answered with that item. ``absent``: what to read instead of that undefined value
        (see :meth:`_absent`).
        """
        exact = self._exact_dict(node, frame)
        if exact is not None:
            # the variable holds an exact dict for the whole iteration: the read is the dict's, untested
            if kept is None:
                self.write(f"({exact}[{key!r}] if {key!r} in {exact} else ")
            elif self._fresh.get(kept[1]) == exact:
                value = kept[1]
                self.write(
                    f"({value} if {value} is not missing else ({value} := {exact}[{key!r}]) if {key!r} in {exact} else "
                )
            else:
                owner, value = kept
                self.write(
                    f"({value} if {exact} is {owner} else ({value} := {exact}[{key!r}]) if {key!r} in {exact} and "
                    f"({owner} := {exact}) is {exact} else "
                )
            self.write(f"{absent or f'environment.undefined(obj={exact}, name={key!r})'})")
            return
        tmp, is_dict = self.temporary_identifier(), self.temporary_identifier()
        if kept is None and hook == "getattr" and key[:1] != "_" and getattr(node, "name", None) in self._namespaces:
            # ``ns.system`` where ``ns`` is set to a ``namespace(...)``: the namespace's plain value tested first
            item = self.temporary_identifier()
            self.write(f"({item} if type({tmp} := ")
            self.visit(node, frame)
            self.write(
                f") is tk_namespace and type({item} := tk_getattribute({tmp}, '_Namespace__attrs').get({key!r}, "
                f"tk_unset)) in tk_plain_values else {tmp}[{key!r}] if ({is_dict} := type({tmp}) is dict) and "
                f"{key!r} in {tmp} else environment.undefined(obj={tmp}, name={key!r}) if {is_dict} else "
                f"environment.getattr({tmp}, {key!r}))"
            )
            return
        if kept is None:
            self.write(f"({tmp}[{key!r}] if ({is_dict} := type({tmp} := ")
            self.visit(node, frame)
            self.write(f") is dict) and {key!r} in {tmp} else ")
        else:
            owner, value = kept
            self.write(f"({value} if ({tmp} := ")
            self.visit(node, frame)
            self.write(
                f") is {owner} else ({value} := {tmp}[{key!r}]) if ({is_dict} := type({tmp}) is dict) and "
                f"{key!r} in {tmp} and ({owner} := {tmp}) is {tmp} else "
            )
        self.write(f"{absent or f'environment.undefined(obj={tmp}, name={key!r})'} if {is_dict} else ")
        if hook == "getattr" and key[:1] != "_":
            # ``ns.system``: a plain value of a namespace, what TemplateSandbox.getattr returns for it
            item = self.temporary_identifier()
            self.write(
                f"{item} if type({tmp}) is tk_namespace and type({item} := tk_getattribute({tmp}, "
                f"'_Namespace__attrs').get({key!r}, tk_unset)) in tk_plain_values else "
            )
        self.write(f"environment.{hook}({tmp}, {key!r}))")

    def _absent(self, node: nodes.Node) -> str | None:
        """What a read of a dict's missing key gives where ``node`` is read: ``missing`` for an inline test (see
        visit_Test), ``None`` where only its truth matters, else None (the undefined value)."""
        if self._tested is node:
            return "missing"
        return "None" if id(node) in self._truth else None

    def visit_Call(self, node: nodes.Call, frame: Frame, forward_caller: bool = False) -> None:
        # ``message.get('x', [])`` on a dict, ``content.strip()`` on a str: the method itself. Only with
        # arguments that contain no call, so that writing them twice (once per branch) stays small.
        method = node.node
        if (
            isinstance(method, nodes.Name)
            and method.name == "namespace"
            and not forward_caller
            and node.dyn_args is None
            and node.dyn_kwargs is None
            and not any(arg.find(nodes.Call) or isinstance(arg, nodes.Call) for arg in (*node.args, *node.kwargs))
        ):
            # ``namespace(...)``: what TemplateSandbox.call does when the name is still the sandbox's global; with
            # keywords only, none underscored (checked here), the namespace of their dict (tk_new_namespace)
            tmp = self.temporary_identifier()
            names = [keyword.key for keyword in node.kwargs]
            if not node.args and len(set(names)) == len(names) and not any(name[:1] == "_" for name in names):
                self.write("(tk_new_namespace({")
                for i, keyword in enumerate(node.kwargs):
                    self.write(f"{', ' if i else ''}{keyword.key!r}: ")
                    self.visit(keyword.value, frame)
                self.write("})")
            else:
                self.write("(tk_namespace(")
                for i, arg in enumerate((*node.args, *node.kwargs)):
                    self.write(", " if i else "")
                    self.visit(arg, frame)
                self.write(")")
            self.write(f" if ({tmp} := ")
            self.visit(method, frame)
            self.write(") is tk_namespace else ")
            fallback = nodes.Call(_internal_name(tmp, method.lineno), node.args, node.kwargs, None, None)
            fallback.set_lineno(node.lineno)
            super().visit_Call(fallback, frame)
            self.write(")")
            return
        owner = None
        if (
            isinstance(method, nodes.Getattr)
            and not forward_caller
            and node.dyn_args is None
            and node.dyn_kwargs is None
        ):
            if method.attr in _INLINE_METHODS[dict]:
                owner = "dict"
            elif method.attr in _INLINE_METHODS[str]:
                owner = "str"
        if owner is None or any(
            arg.find(nodes.Call) or isinstance(arg, nodes.Call) for arg in (*node.args, *node.kwargs)
        ):
            super().visit_Call(node, frame, forward_caller=forward_caller)
            return
        assert isinstance(method, nodes.Getattr)
        exact = self._exact_dict(method.node, frame) if owner == "dict" else None
        tmp = exact or self.temporary_identifier()
        self.write(f"({tmp}.{method.attr}(")
        for i, arg in enumerate((*node.args, *node.kwargs)):
            if i:
                self.write(", ")
            self.visit(arg, frame)
        if exact is not None:
            self.write("))")
            return
        self.write(f") if type({tmp} := ")
        self.visit(method.node, frame)
        self.write(f") is {owner} else ")
        fallback = nodes.Call(
            nodes.Getattr(_internal_name(tmp, method.lineno), method.attr, "load", lineno=method.lineno),
            node.args,
            node.kwargs,
            None,
            None,
            lineno=node.lineno,
        )
        super().visit_Call(fallback, frame)
        self.write(")")

    @optimizeconst
    def visit_Filter(self, node: nodes.Filter, frame: Frame) -> None:
        if node.name == _LOOP_FILTER and node.node is not None:
            # the loop guard (a plain Python call; a plain loop's tk_plain_loop counts the loop itself)
            sequence, self._plain_iterable = self._plain_iterable, None
            self.write(f"({sequence} := " if sequence is not None else "tk_guard_iterable(")
            self.visit(node.node, frame)
            self.write(")")
            return
        if (
            node.name == "trim"
            and node.node is not None
            and not (node.args or node.kwargs or node.dyn_args or node.dyn_kwargs)
        ):
            # ``text | trim`` on a short str: what the sized ``trim`` returns for it (``str.strip``, uncharged)
            tmp, printed = self.temporary_identifier(), self._printed(node)
            self.write(f"({tmp}.strip() if type({tmp} := ")
            self.visit(node.node, frame)
            self.write(f") is str and len({tmp}) < {_FREE_BYTES} else ")
            self._fallback(
                nodes.Filter(_internal_name(tmp, node.lineno), "trim", [], [], None, None, lineno=node.lineno),
                frame,
                printed,
            )
            self.write(")")
            return
        if (
            node.name == "tojson"
            and node.node is not None
            and self.environment.filters.get("tojson") == getattr(self.environment, "_tojson", None)
        ):
            arguments = _json_arguments(node, frame)
            if arguments is not None:
                self._tojson(node, frame, arguments)
                return
        if node.name not in (_ADD_FILTER, _CONCAT_FILTER) or not isinstance(node.node, nodes.List):
            super().visit_Filter(node, frame)
            return
        # ``a + b + c`` and ``a ~ b ~ c`` (the guard's sized filters) on strings whose total is short: the
        # concatenation the filter returns for them. Every operand is evaluated, left to right, before either
        # branch (``&`` does not short-circuit), as the filter's argument list is.
        items = node.node.items
        # a constant string is written as itself; any other operand is held in a temporary and tested
        constants = [_str_const(item) for item in items]
        names = [self.temporary_identifier() if text is None else repr(text) for text in constants]
        tested = [(name, item) for name, item, text in zip(names, items, constants, strict=True) if text is None]
        if not tested:
            super().visit_Filter(node, frame)
            return
        printed = self._printed(node)
        self.write(f"({_joined(names, constants)} if ")
        for i, (name, item) in enumerate(tested):
            self.write(f"{' & ' if i else ''}(type({name} := ")
            self.visit(item, frame)
            self.write(") is str)")
        free = _FREE_BYTES - sum(len(text) for text in constants if text is not None)
        self.write(f" and {' + '.join(f'len({name})' for name, _ in tested)} < {free} else ")
        held = [
            item if text is not None else _internal_name(name, item.lineno)
            for name, item, text in zip(names, items, constants, strict=True)
        ]
        self._fallback(
            nodes.Filter(nodes.List(held, lineno=node.lineno), node.name, [], [], None, None, lineno=node.lineno),
            frame,
            printed,
        )
        self.write(")")

    def _tojson(self, node: nodes.Filter, frame: Frame, arguments: tuple[Any, ...]) -> None:
        """``x | tojson(...)`` with constant ``arguments`` (``ensure_ascii, indent, separators, sort_keys``): what
        :meth:`TemplateSandbox._tojson` returns without a check that could fail or charge: with the default
        arguments, a string short enough that neither its size check nor its text's can fail; with any, a private
        tool schema whose text for those arguments is already built (and short)."""
        assert node.node is not None
        tmp, slot, text = (self.temporary_identifier() for _ in range(3))
        printed = self._printed(node)
        limit = self.environment.limits.max_sequence_length  # type: ignore[attr-defined]
        short = min(limit, (_FREE_BYTES - 3) // 6)  # at most 6 characters per character, plus the quotes
        # each test is written around its ``type(x)`` call: a schema's text, from its slot (or a stand-in whose value
        # is no object of the template's) and the text kept for these arguments (or a stand-in that never fits),
        # when it is short and within the size limit; with the default arguments, a short string's
        tests = [
            (
                f"{text}[0] if type(",
                f") is dict and ({slot} := tk_frozen_slot(id({tmp}), tk_no_slot))[0] is {tmp} and "
                f"({text} := {slot}[1].get({arguments!r}, tk_no_text))[2] <= {limit} else ",
            )
        ]
        if arguments == _JSON_DEFAULTS:
            tests.append((f"tk_encode_str({tmp}) if type(", f") is str and len({tmp}) <= {short} else "))
            if not isinstance(node.node, nodes.Name):
                # an item (``fn['name'] | tojson``) is more often a string; a variable (``tool``) a schema
                tests.reverse()
        self.write(f"({tests[0][0]}{tmp} := ")
        self.visit(node.node, frame)
        self.write(tests[0][1])
        for head, tail in tests[1:]:
            self.write(f"{head}{tmp}{tail}")
        if arguments == _JSON_DEFAULTS and _TREE_ENCODER is not None:
            # a container of the render's input (a tool call's arguments), no private schema (whose text the filter
            # keeps, the first test having found none for these arguments yet): the shared encoder's text, charged
            # when long, as the filter writes it (the schema test ran first, so a dict has its slot read)
            encoded = self.temporary_identifier()
            self.write(
                f"({encoded} if len({encoded} := tk_join(tk_tree_encoder({tmp}, 0))) < {_FREE_BYTES} "
                f"else environment.charged({encoded})) if id({tmp}) in (tk_current_budget() or tk_no_budget).trusted "
                f"and (type({tmp}) is not dict or {slot}[0] is not {tmp}) else "
            )
        held = _internal_name(tmp, node.lineno)
        self._fallback(
            nodes.Filter(held, "tojson", node.args, node.kwargs, None, None, lineno=node.lineno), frame, printed
        )
        self.write(")")

    def _fallback(self, node: nodes.Filter, frame: Frame, printed: bool) -> None:
        """A fast path's fallback: the filter call jinja2 writes, with the print's str test around it when the
        fast path is printed (see _printed)."""
        if printed:
            self._print_open()
        super().visit_Filter(node, frame)
        if printed:
            self._print_close()

    @optimizeconst
    def visit_Test(self, node: nodes.Test, frame: Frame) -> None:
        # ``x is string``, ``x is defined``...: the expression jinja2's own test function evaluates.
        inline = _INLINE_TESTS.get(node.name) or _TYPE_TESTS.get(node.name)
        if (
            inline is None
            or node.args
            or node.kwargs
            or node.dyn_args is not None
            or node.dyn_kwargs is not None
            or self.environment.tests.get(node.name) is not jinja_tests.TESTS[node.name]
        ):
            super().visit_Test(node, frame)
            return
        if node.name in _TYPE_TESTS:
            # ``x is mapping``...: the answer for a plain value's type, the test function for any other value
            tmp = self.temporary_identifier()
            self.write(f"({_TYPE_TESTS[node.name].format(tmp)} if type({tmp} := ")
            self.visit(node.node, frame)
            self.write(f") in tk_plain_values else {self.tests[node.name]}({tmp}))")
            return
        if isinstance(node.node, nodes.Name) and node.node.ctx == "load":
            # a variable: its local, tested for ``missing`` where jinja2 would build an undefined value of it (of
            # an ``Undefined`` subclass, as jinja2 requires, which cannot be a ``str``)
            ref = frame.symbols.ref(node.node.name)
            self.write(_MISSING_TESTS[node.name].format(ref, ref))
            return
        if isinstance(node.node, (nodes.Getitem, nodes.Getattr)):
            # an item: read with ``missing`` for a dict's missing key (any other read is unchanged), written aside
            tmp, outer, self.stream = self.temporary_identifier(), self.stream, StringIO()
            self._tested = node.node
            try:
                self.visit(node.node, frame)
            finally:
                self._tested, code, self.stream = None, self.stream.getvalue(), outer
            test = _MISSING_TESTS[node.name]
            self.write(test.format(f"({tmp} := {code})" if "{1}" in test else code, tmp))
            return
        self.write(inline[0])
        self.visit(node.node, frame)
        self.write(inline[1])

    @optimizeconst
    def visit_Add(self, node: nodes.BinExpr, frame: Frame) -> None:
        # ``a + b`` on two short strings: what call_binop returns for them.
        if frame.eval_ctx.volatile:
            super().visit_Add(node, frame)
            return
        printed = self._printed(node)
        # a constant string operand is written as itself, untested (as in the sized chains below)
        constants = [_str_const(node.left), _str_const(node.right)]
        names = [self.temporary_identifier() if text is None else repr(text) for text in constants]
        tests: list[str] = []
        self.write(f"({names[0]} + {names[1]} if ")
        for name, operand, text in zip(names, (node.left, node.right), constants, strict=True):
            if text is None:
                self.write(f"{' & ' if tests else ''}(type({name} := ")
                self.visit(operand, frame)
                self.write(") is str)")
                tests.append(f"len({name})")
        if not tests:  # folded by the optimizer already, unless volatile (handled above)
            self.write("True")
        free = _FREE_BYTES - sum(len(text) for text in constants if text is not None)
        self.write(f" and {' + '.join(tests) or '0'} < {free} else ")
        if printed:
            self._print_open()
        self.write(f"environment.call_binop(context, '+', {names[0]}, {names[1]})")
        if printed:
            self._print_close()
        self.write(")")

    def _output_child_pre(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        # ``{{ text }}``: a str prints as itself (finalize and str() return it unchanged). The expression is
        # written aside: a fast path whose own branch always makes a str (see _printed) takes the print's test
        # into its fallback branch, and any other expression gets it around the whole.
        if frame.eval_ctx.volatile or frame.eval_ctx.autoescape or finalize.src != "environment.finalize(":
            self._finalized.append(None)
            super()._output_child_pre(node, frame, finalize)
            return
        aside = StringIO()
        self._finalized.append((self.stream, aside))
        self._print_node = node
        self.stream = aside

    def _output_child_post(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        printed = self._finalized.pop()
        if printed is None:
            super()._output_child_post(node, frame, finalize)
            return
        self.stream, aside = printed
        code = aside.getvalue()
        if self._print_node is None:  # the fast path took the test into its fallback
            self.write(code)
        else:
            self._print_node = None
            self._print_open()
            self.write(code)
            self._print_close()

    def _printed(self, node: nodes.Expr) -> bool:
        """Whether ``node`` is being printed (and the print's str test is now the caller's, for its fallback:
        every caller's fast branch makes an exact ``str``, which prints as itself)."""
        if self._print_node is node:
            self._print_node = None
            return True
        return False

    def _print_open(self) -> None:
        """The start of what a print makes of a value: the value when it is a str, else finalized and str()."""
        tmp = self.temporary_identifier()
        self._print_tmps.append(tmp)
        self.write(f"({tmp} if type({tmp} := ")

    def _print_close(self) -> None:
        tmp = self._print_tmps.pop()
        self.write(f") is str else str(environment.finalize({tmp})))")


_JSON_PARAMETERS = ("ensure_ascii", "indent", "separators", "sort_keys")


def _json_arguments(node: nodes.Filter, frame: Frame) -> tuple[Any, ...] | None:
    """The ``(ensure_ascii, indent, separators, sort_keys)`` a ``tojson`` filter passes, when they are constants of
    the types that key the per-schema JSON cache as they are (bool, int, str, None), else None."""
    if node.dyn_args is not None or node.dyn_kwargs is not None or len(node.args) > len(_JSON_PARAMETERS):
        return None
    values = list(_JSON_DEFAULTS)
    given = set()
    try:
        for i, arg in enumerate(node.args):
            values[i] = arg.as_const(frame.eval_ctx)
            given.add(i)
        for keyword in node.kwargs:
            i = _JSON_PARAMETERS.index(keyword.key)
            if i in given:
                return None  # given twice: the filter call raises
            values[i] = keyword.value.as_const(frame.eval_ctx)
            given.add(i)
    except Exception:  # noqa: BLE001 - not a constant (nodes.Impossible), an unknown keyword (ValueError)
        return None
    if not all(type(value) in _JSON_KEY_TYPES for value in values):
        return None
    return tuple(values)


_JSON_KEY_TYPES = frozenset({bool, int, str, type(None)})


def _joined(names: list[str], constants: list[str | None]) -> str:
    """Python for the concatenation of ``names`` (temporaries holding strings, or the repr of a constant): one
    f-string (its parts joined by a single ``BUILD_STRING``, a plain literal part taken as it is), cheaper from three
    parts on than a ``+`` per part, each building an intermediate string."""
    if len(names) < 3:
        return " + ".join(names)
    return " ".join(name if text is not None else f"f'{{{name}}}'" for name, text in zip(names, constants, strict=True))


def _str_const(node: nodes.Node) -> str | None:
    """The text of a constant string node, else None."""
    return node.value if isinstance(node, nodes.Const) and type(node.value) is str else None


def _internal_name(name: str, lineno: int) -> nodes.InternalName:
    """A node naming one of the generated code's temporaries (jinja2's parser never makes one)."""
    node = object.__new__(nodes.InternalName)
    nodes.Node.__init__(node, name, lineno=lineno)
    return node


class _CaptureBuffer(list[Any]):
    """The list a macro, ``{% set %}`` block or call block renders into; its size counts against the budget.

    ``charge=False`` for a remembered loop iteration's output, on its way to the prompt: sized like the prompt,
    but not charged as memory the template keeps.
    """

    __slots__ = ("_sandbox", "_chars", "_charge", "_limit")

    def __init__(self, sandbox: TemplateSandbox, *, charge: bool = True) -> None:
        # (no list.__init__: it would only empty the new list)
        self._sandbox = sandbox
        self._chars = 0
        self._charge = charge
        self._limit = sandbox.limits.max_output_chars

    def append(self, item: Any) -> None:
        if type(item) is str:
            self._chars += len(item)
            # a string under 1,024 characters takes under 4 KB: never charged
            if self._chars > self._limit or (self._charge and len(item) >= _FREE_BYTES // 4):
                self._grown(item)
        _list_append(self, item)

    def extend(self, items: Iterable[Any]) -> None:
        for item in tuple(items):
            self.append(item)

    def _grown(self, text: str) -> None:
        """Refuse a buffer past the output limit (plus twice the input); charge a long string's memory."""
        if self._chars > self._limit and self._chars > self._sandbox.output_cap():
            raise TemplateLimitError(
                f"a captured block grew past {self._limit} characters (Limits.max_output_chars)",
                code="template_output",
            )
        if self._charge:
            self._sandbox.charge(_nbytes(text))


_list_append = list.append


class _TemplateDict:
    """The ``dict`` global: builds plain dicts, and exposes nothing else a template could walk through."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


class _TemplateNamespace(Namespace):
    """``namespace(...)`` that refuses underscore-prefixed attributes (no reaching CPython internals)."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 - same signature trick as jinja2's Namespace
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            if type(name) is not str or name[:1] == "_":
                _TemplateNamespace._check_name(name)
        object.__setattr__(self, "_Namespace__attrs", attrs)  # what Namespace.__init__ sets (a copy of attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        if type(name) is not str or name[:1] == "_":
            _TemplateNamespace._check_name(name)
        _namespace_items(self)[name] = value  # what Namespace.__setitem__ does

    @staticmethod
    def _check_name(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"Chat templates cannot store underscore-prefixed attributes on a namespace, but got {name!r}. "
                "Please rename the attribute."
            )


def _new_namespace(attrs: dict[str, Any]) -> _TemplateNamespace:
    """``namespace(name=value, ...)`` with names the code generator checked (no underscore, no repeat): what
    ``_TemplateNamespace.__init__`` builds from them, without its argument packing, copy and checks."""
    namespace = object.__new__(_TemplateNamespace)
    object.__setattr__(namespace, "_Namespace__attrs", attrs)
    return namespace


def _namespace_items(namespace: Namespace) -> dict[str, Any]:
    """The dict holding a namespace's attributes (jinja2's ``Namespace`` keeps them in its private ``__attrs``)."""
    items: dict[str, Any] = object.__getattribute__(namespace, "_Namespace__attrs")
    return items


_ABSENT: Any = object()
_NO_LOOP_VARS: dict[str, Any] = {}
"""The names a loop iteration has set while it has set none: shared, never written (see
``_GuardedCodeGenerator.write``)."""
_NO_SLOT: tuple[Any, dict[Any, Any]] = (_ABSENT, {})
"""What an inline ``tojson`` reads for an object that is no private tool schema: its value is no template's object."""
_NO_TEXT = ("", 0, math.inf)
"""What an inline ``tojson`` reads for a schema whose text for the arguments is not built yet: it never fits."""
_NO_BUDGET = SimpleNamespace(trusted=frozenset(), loops=0, allocated=0)
"""What an inline ``tojson`` reads the trusted containers of when no render is in progress (none), and prefix
reuse its counters (see _fragments.Resume.keep)."""


def _raise_exception(message: Any) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _strftime_now(format: str) -> str:  # noqa: A002 - the name templates call it with
    return datetime.now().strftime(format)


class _BudgetedFormatter(SandboxedFormatter):
    """``str.format`` in the sandbox, refusing field widths and precisions past the size budget."""

    def __init__(self, sandbox: TemplateSandbox) -> None:
        super().__init__(sandbox)
        self._sandbox = sandbox

    def format_field(self, value: Any, format_spec: str) -> Any:
        for number in _FORMAT_SPEC_NUMBERS.findall(format_spec):
            self._sandbox.check_size(int(number), "a format width")
        self._sandbox.check_size(self._sandbox.estimate(value), "formatting a value")
        return super().format_field(value, format_spec)


class TemplateSandbox(ImmutableSandboxedEnvironment):
    """transformers' chat-template environment, with every operation that can blow up held to a :class:`Limits`."""

    intercepted_binops = frozenset(_BINOPS)
    code_generator_class = _GuardedCodeGenerator

    def __init__(self, limits: Limits | None = None, *, fragments: bool = False) -> None:
        super().__init__(
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=[_GenerationExtension, jinja2.ext.loopcontrols],
            finalize=self._finalize,
        )
        self.limits = limits or DEFAULT_LIMITS
        self._attribute_verdicts: dict[tuple[type, str], bool] = {}
        self.filters["tojson"] = self._tojson
        self.filters[_LOOP_FILTER] = _guard_loop
        self.filters[_CONCAT_FILTER] = self._concat
        self.filters[_ADD_FILTER] = self._add_chain
        self.filters.update(_guarded_filters(self))
        self.globals["raise_exception"] = _raise_exception
        self.globals["strftime_now"] = _strftime_now
        self.globals["dict"] = _TemplateDict()
        self.globals["namespace"] = _TemplateNamespace
        self.globals["range"] = self._range
        self.globals["lipsum"] = self._lipsum
        # compile top-level loops to remember their iterations (prefix reuse, see _fragments)
        self.fragments = fragments
        self._key_pickler = key_pickler({id(value): (name, value) for name, value in self.globals.items()})

    # -- budget helpers -------------------------------------------------------------------------------------

    def check_size(self, size: int, what: str) -> None:
        """Refuse an operation whose result would exceed ``Limits.max_sequence_length`` (plus twice the input)."""
        if size > self.limits.max_sequence_length:
            budget = current_budget()
            if budget is not None and size <= self.limits.max_sequence_length + 2 * budget.input_size():
                return
            raise TemplateLimitError(
                f"{what} would produce {size} items or characters, over the limit of "
                f"{self.limits.max_sequence_length} (Limits.max_sequence_length)",
                code="template_size",
            )

    def charge(self, nbytes: int) -> None:
        """Count an allocation against the render's memory budget (small ones are free: loops bound them)."""
        if nbytes >= _FREE_BYTES:
            budget = current_budget()
            if budget is not None:
                budget.allocate(nbytes)

    def estimate(self, value: Any, *, per_item: int = 0) -> int:
        """Estimated length of ``str(value)``; strings, numbers and the caller's own data cost nothing to estimate."""
        kind = type(value)
        if kind is str:
            return len(value)
        if kind is int or kind is float or kind is bool or value is None:
            return 0
        if per_item == 0:
            budget = current_budget()
            if budget is not None and id(value) in budget.trusted:
                return 0
        return estimate_str_size(value, self.limits.max_sequence_length, per_item=per_item)

    def output_cap(self) -> int:
        """``Limits.max_output_chars``, plus twice the input of the render in progress."""
        budget = current_budget()
        extra = 2 * budget.input_size() if budget is not None else 0
        return self.limits.max_output_chars + extra

    # -- remembered loop iterations (see _fragments) ------------------------------------------------------------

    def fragment_memo(self, by_position: bool = False) -> FifoMemo[FragmentEntry] | LoopTraces:
        return LoopTraces(self._key_pickler) if by_position else fragment_memo()

    def fragment_scope(self, values: tuple[Any, ...], sequence: Any, layout: tuple[str, ...] | None) -> LoopKeys:
        budget = current_budget()
        trusted = budget.trusted if budget is not None else frozenset()
        return LoopKeys(values, self._key_pickler, trusted, sequence, layout)

    def fragment_mark(self, out: list[str]) -> tuple[int, int, int]:
        """Where an iteration starts: the budget's loop iterations and bytes, and the output's length."""
        budget = current_budget()
        return (budget.loops, budget.allocated, len(out)) if budget is not None else (0, 0, len(out))

    def fragment_store(
        self,
        memo: FifoMemo[FragmentEntry],
        keys: LoopKeys,
        key: tuple[Any, ...],
        out: list[str],
        mark: tuple[int, int, int],
    ) -> None:
        """Keep the iteration's text and budget use, unless its key holds an unkeyable value or it needed the
        input-size allowance of a limit."""
        budget = current_budget()
        if budget is None or budget.input_measured or UNKEYABLE in key:
            return
        text = "".join(out[mark[2] :])
        entry = (text, budget.loops - mark[0], budget.allocated - mark[1])
        memo.put(key, entry, text, keys.size_of(key))

    def fragment_replay(self, entry: tuple[str, int, int]) -> None:
        """Charge a remembered iteration's loop iterations and bytes to this render, as running it would."""
        budget = current_budget()
        if budget is not None:
            if entry[1]:
                budget.reserve_iterations(entry[1])
            if entry[2]:
                budget.allocate(entry[2])

    # -- jinja2 hooks ---------------------------------------------------------------------------------------

    def _finalize(self, value: Any) -> Any:
        if type(value) is str:
            return value
        self.check_size(self.estimate(value), "printing a value")
        return value

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        lt = type(left)
        if operator == "+":
            if lt is str and type(right) is str:
                size = len(left) + len(right)
                if size >= _FREE_BYTES:
                    self.check_size(size, "'+'")
                    self.charge(size if left.isascii() and right.isascii() else 4 * size)
                return left + right
            if (lt is list or lt is tuple) and type(right) is lt:
                size = len(left) + len(right)
                self.check_size(size, "'+'")
                self.charge(8 * size)
                return left + right
        elif operator == "*":
            if isinstance(left, int) and isinstance(right, int):
                bits = left.bit_length() + right.bit_length()
                self._check_bits(bits)
            elif isinstance(right, int) and isinstance(left, str | list | tuple):
                return self._repeat(left, right)
            elif isinstance(left, int) and isinstance(right, str | list | tuple):
                return self._repeat(right, left)
        elif operator == "**":
            if isinstance(left, int) and isinstance(right, int) and right > 0 and left not in (0, 1, -1):
                self._check_bits(right * left.bit_length())
        elif operator == "%" and isinstance(left, str):
            return self._printf(left, right)
        return _BINOPS[operator](left, right)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        if type(obj) is BuiltinMethodType:
            # Methods of plain strings, dicts and lists (the bulk of calls in chat templates) take no context
            # and cannot re-enter the template: call them directly, sizing the ones that can blow up.
            owner = type(obj.__self__)
            if owner is str or owner is dict or owner is list:
                kwargs.pop("_loop_vars", None)
                kwargs.pop("_block_vars", None)
                if owner is str:
                    return self._call_str_method(obj, args, kwargs)
                if obj.__name__ in _MUTATORS[owner]:
                    raise jinja2.exceptions.SecurityError(f"{obj!r} is not safely callable")
                try:
                    return obj(*args, **kwargs)
                except StopIteration:
                    return self.undefined("value was undefined because a callable raised a StopIteration exception")
        if obj is _TemplateNamespace:
            # ``namespace(...)``: what jinja2's Context.call does for a class that takes no context.
            kwargs.pop("_loop_vars", None)
            kwargs.pop("_block_vars", None)
            return _TemplateNamespace(*args, **kwargs)
        if type(obj) is MethodType and obj.__func__ is _GENERATION:
            # ``{% generation %}``: the extension's own method, given only its ``caller``; its body's calls are
            # budgeted where they happen. What Context.call does for it, without the generic checks.
            return obj(kwargs["caller"])
        budget = current_budget()
        if budget is not None:
            budget.depth += 1
            if budget.depth > self.limits.max_call_depth:
                budget.depth -= 1
                raise TemplateLimitError(
                    f"template calls nested deeper than {self.limits.max_call_depth} (Limits.max_call_depth)",
                    code="template_depth",
                )
            budget.tick()
        try:
            if type(obj) is Macro:
                # the template's own macro: always safe, takes no context; what Context.call does for it
                kwargs.pop("_loop_vars", None)
                kwargs.pop("_block_vars", None)
                try:
                    count = obj._argument_count
                    if (
                        kwargs
                        or len(args) > count
                        or obj.caller
                        or obj.catch_kwargs
                        or obj.catch_varargs
                        or obj._default_autoescape
                        or (args and isinstance(args[0], EvalContext))
                    ):
                        return obj(*args, **kwargs)
                    # what Macro.__call__ does with positional arguments only (no caller, varargs or kwargs to fill,
                    # no autoescaping, no eval context in front): the arguments not given are ``missing`` (the
                    # function puts their defaults), and the function's text is returned as it is
                    return (
                        obj._func(*args, *repeat(missing, count - len(args))) if len(args) < count else obj._func(*args)
                    )
                except StopIteration:
                    return self.undefined("value was undefined because a callable raised a StopIteration exception")
            if not self.is_safe_callable(obj):
                raise jinja2.exceptions.SecurityError(f"{obj!r} is not safely callable")
            return context.call(obj, *args, **kwargs)
        finally:
            if budget is not None:
                budget.depth -= 1

    def getattr(self, obj: Any, attribute: str) -> Any:
        kind = type(obj)
        if kind is dict:
            if attribute not in _DICT_ATTRIBUTES:
                # ``message.role``: not a dict attribute, so jinja2 would fall back to the item (same result, faster).
                try:
                    return obj[attribute]
                except LookupError:
                    return self.undefined(obj=obj, name=attribute)
            if attribute in _SAFE_DICT_METHODS:
                return getattr(obj, attribute)  # ``message.get``: what jinja2 returns after its checks
        elif kind is LoopContext:
            if attribute in _LOOP_ATTRIBUTES:
                return getattr(obj, attribute)  # ``loop.first``: public properties, always safe
        elif kind is _TemplateNamespace and attribute[:1] != "_":
            # ``ns.system``: a namespace's attributes are the items of its dict (what Namespace.__getattribute__
            # reads, here without its two Python frames); plain values need none of jinja2's checks
            value = _namespace_items(obj).get(attribute, _ABSENT)
            if value is _ABSENT:
                return self.undefined(obj=obj, name=attribute)
            if type(value) in _PLAIN_VALUES:
                return value
        return super().getattr(obj, attribute)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        # jinja2's verdict depends only on the object's type and the attribute name: remember it.
        key = (type(obj), attr)
        verdict = self._attribute_verdicts.get(key)
        if verdict is None:
            verdict = super().is_safe_attribute(obj, attr, value)
            if len(self._attribute_verdicts) < 4096:
                self._attribute_verdicts[key] = verdict
        return verdict

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        if type(value) is not BuiltinMethodType or value.__name__ not in ("format", "format_map"):
            return super().wrap_str_format(value) if isinstance(value, MethodType) else None
        f_self = value.__self__
        if not isinstance(f_self, str) or isinstance(f_self, Markup):
            return super().wrap_str_format(value)
        is_format_map = value.__name__ == "format_map"
        formatter = _BudgetedFormatter(self)

        def wrapper(*args: Any, **kwargs: Any) -> str:
            if is_format_map:
                if kwargs:
                    raise TypeError("format_map() takes no keyword arguments")
                if len(args) != 1:
                    raise TypeError(f"format_map() takes exactly one argument ({len(args)} given)")
                kwargs = args[0]
                args = ()
            result = type(f_self)(formatter.vformat(f_self, args, kwargs))
            self.check_size(len(result), "str.format")
            self.charge(_nbytes(result))
            return result

        return update_wrapper(wrapper, value)

    # -- guarded operations ---------------------------------------------------------------------------------

    def _check_bits(self, bits: int) -> None:
        if bits > self.limits.max_integer_bits:
            raise TemplateLimitError(
                f"integer arithmetic would produce a number of about {bits} bits, over the limit of "
                f"{self.limits.max_integer_bits} (Limits.max_integer_bits)",
                code="template_integer",
            )

    def _repeat(self, seq: str | list[Any] | tuple[Any, ...], count: int) -> Any:
        size = len(seq) * max(count, 0)
        self.check_size(size, "repetition with '*'")
        if isinstance(seq, str):
            self.charge(size if seq.isascii() else 4 * size)
        else:
            self.charge(8 * size)
        return seq * count

    def _printf(self, fmt: str, args: Any) -> Any:
        values = args if isinstance(args, tuple) else (args,)
        for match in _PRINTF_SPEC.finditer(fmt):
            for group in match.groups():
                if group == "*":
                    for value in values:
                        if isinstance(value, int):
                            self.check_size(abs(value), "a printf width")
                elif group:
                    self.check_size(int(group), "a printf width")
        self.check_size(len(fmt) + sum(self.estimate(v) for v in values), "printf formatting")
        result = fmt % args
        if isinstance(result, str):
            self.charge(_nbytes(result))
        return result

    def _call_str_method(self, method: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        text: str = method.__self__
        name = method.__name__
        size = len(text)
        if name in ("center", "ljust", "rjust", "zfill") and args and isinstance(args[0], int):
            size = max(size, args[0])
        elif name == "expandtabs":
            tab = args[0] if args else kwargs.get("tabsize", 8)
            if isinstance(tab, int):
                size += text.count("\t") * max(tab, 0)
        elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
            old, new = args[0], args[1]
            hits = text.count(old) if old else size + 1
            if len(args) > 2 and isinstance(args[2], int) and args[2] >= 0:
                hits = min(hits, args[2])
            size += hits * max(len(new) - len(old), 0)
        elif name == "join" and args:
            items = list(args[0])
            size = sum(len(x) if type(x) is str else 0 for x in items) + len(text) * max(len(items) - 1, 0)
            args = (items, *args[1:])
        elif name in ("split", "rsplit", "splitlines"):
            sep = args[0] if args else kwargs.get("sep")
            if name == "splitlines":
                pieces = text.count("\n") + 1
            elif isinstance(sep, str) and sep:
                pieces = text.count(sep) + 1
            else:
                pieces = size // 2 + 1  # whitespace split: at most one piece per two characters
            self.charge(8 * pieces + (57 * pieces + _nbytes(text) if pieces > 1 else 0))
            return method(*args, **kwargs)
        elif name == "translate" and args and isinstance(args[0], Mapping):
            widest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
            size *= max(widest, 1)
        else:
            return method(*args, **kwargs)
        self.check_size(size, f"str.{name}")
        result = method(*args, **kwargs)
        if isinstance(result, str):
            self.charge(_nbytes(result))
        return result

    def _concat(self, items: list[Any]) -> str:
        parts = [x if type(x) is str else self._str(x) for x in items]
        size = sum(map(len, parts))
        if size >= _FREE_BYTES:
            self.check_size(size, "'~' concatenation")
            self.charge(size if all(p.isascii() for p in parts) else 4 * size)
        return "".join(parts)

    def _add_chain(self, operands: list[Any]) -> Any:
        """``a + b + c ...`` evaluated left to right, with one size check when every operand is a string."""
        if _STR.issuperset(map(type, operands)):
            size = sum(map(len, operands))
            if size >= _FREE_BYTES:
                self.check_size(size, "'+'")
                self.charge(size if all(x.isascii() for x in operands) else 4 * size)
            return "".join(operands)
        result = operands[0]
        for operand in operands[1:]:
            result = self.call_binop(None, "+", result, operand)  # type: ignore[arg-type]
        return result

    def _str(self, value: Any) -> str:
        self.check_size(self.estimate(value), "converting a value to a string")
        return str(value)

    def _tojson(
        self,
        x: Any,
        ensure_ascii: bool = False,
        indent: int | str | None = None,
        separators: tuple[str, str] | None = None,
        sort_keys: bool = False,
    ) -> str:
        defaults = ensure_ascii is False and indent is None and separators is None and sort_keys is False
        if defaults and type(x) is str:
            self.check_size(len(x), "tojson")
            result = _encode_str(x)
        else:
            # A tool schema's private copy never changes: its text (and size estimate) per set of arguments is
            # built once per process. Not for a float indent: 4.0 equals 4 as a key, but json.dumps refuses it.
            frozen = frozen_json(x) if type(x) is dict and type(indent) is not float else None
            budget = current_budget()
            if defaults and frozen is None and budget is not None and id(x) in budget.trusted:
                # a tree of plain data (the render's input, adopted or rebuilt): its size needs no estimate (see
                # estimate) and the shared encoder writes what _encode writes
                result = "".join(_TREE_ENCODER(x, 0)) if _TREE_ENCODER is not None else _encode(x)
            else:
                args = (ensure_ascii, indent, separators, sort_keys)
                try:
                    known = frozen[1].get(args) if frozen is not None else None
                except TypeError:  # unhashable arguments (separators given as a list)
                    frozen = known = None
                if known is not None:
                    self.check_size(known[1], "tojson")
                    result = known[0]
                else:
                    per_item = 0
                    if indent is not None:
                        per_item = len(indent) if isinstance(indent, str) else max(int(indent), 0)
                    if separators is not None:
                        per_item += sum(len(s) for s in separators if isinstance(s, str))
                    estimate = self.estimate(x, per_item=per_item)
                    self.check_size(estimate, "tojson")
                    if defaults:
                        result = _encode(x)
                    else:
                        result = json.dumps(
                            x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
                        )
                    if frozen is not None:
                        # the third item is what the code generator's inline read tests against the size limit:
                        # the estimate, or infinity for a text long enough to be charged (see _tojson above)
                        frozen[1][args] = (result, estimate, estimate if len(result) < _FREE_BYTES else math.inf)
        return self.charged(result) if len(result) >= _FREE_BYTES else result

    def charged(self, text: str) -> str:
        """``text``, a long ``tojson`` result, once its size is checked and charged to the render."""
        self.check_size(len(text), "tojson")
        self.charge(_nbytes(text))
        return text

    def _range(self, *args: Any) -> range:
        result = range(*args)
        if len(result) > self.limits.max_range:
            raise TemplateLimitError(
                f"range of {len(result)} items is over the limit of {self.limits.max_range} (Limits.max_range)",
                code="template_range",
            )
        return result

    def _lipsum(self, n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # noqa: A002
        self.check_size(int(n) * int(max) * 12, "lipsum")
        return str(generate_lorem_ipsum(n=n, html=html, min=min, max=max))


@jinja2.pass_context  # never constant-folded at compile time: a literal list must be counted at run time too
def _guard_loop(context: Context, iterable: Iterable[Any]) -> Iterable[Any]:
    return guard_iterable(iterable)


def _guarded_filters(sandbox: TemplateSandbox) -> dict[str, Callable[..., Any]]:
    """The built-in filters that can make large values from small ones, each checked before it allocates."""
    check, charge, estimate = sandbox.check_size, sandbox.charge, sandbox.estimate

    def center(value: Any, width: int = 80) -> str:
        text = sandbox._str(value)
        check(max(len(text), int(width)), "center")
        return jinja_filters.do_center(text, width)

    def indent(s: Any, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
        text = sandbox._str(s)
        pad = len(width) if isinstance(width, str) else max(int(width), 0)
        check(len(text) + (text.count("\n") + 1) * pad, "indent")
        result = jinja_filters.do_indent(text, width, first, blank)
        charge(_nbytes(result))
        return result

    @jinja2.pass_eval_context
    def join(eval_ctx: Any, value: Iterable[Any], d: str = "", attribute: str | int | None = None) -> str:
        items = list(value)
        if attribute is None:
            size = sum(estimate(x) for x in items) + len(str(d)) * max(len(items) - 1, 0)
            check(size, "join")
        result = jinja_filters.sync_do_join(eval_ctx, items, d, attribute)
        check(len(result), "join")
        charge(_nbytes(result))
        return result

    @jinja2.pass_eval_context
    def replace(eval_ctx: Any, s: Any, old: Any, new: Any, count: int | None = None) -> str:
        text, old_s, new_s = sandbox._str(s), str(old), str(new)
        hits = text.count(old_s) if old_s else len(text) + 1
        if count is not None and count >= 0:
            hits = min(hits, count)
        check(len(text) + hits * max(len(new_s) - len(old_s), 0), "replace")
        result = jinja_filters.do_replace(eval_ctx, text, old_s, new_s, count)
        charge(_nbytes(result))
        return str(result)

    def format(value: Any, *args: Any, **kwargs: Any) -> str:  # noqa: A001 - the filter's name
        if args and kwargs:
            return jinja_filters.do_format(value, *args, **kwargs)  # raises jinja2's own error
        return str(sandbox._printf(str(value), kwargs or args))

    def batch(value: Iterable[Any], linecount: int, fill_with: Any = None) -> Iterator[list[Any]]:
        if fill_with is not None:
            check(int(linecount), "batch")
        return jinja_filters.do_batch(value, linecount, fill_with)

    def slice_(value: Iterable[Any], slices: int, fill_with: Any = None) -> Iterator[list[Any]]:
        check(int(slices), "slice")
        return jinja_filters.sync_do_slice(list(value), slices, fill_with)

    @jinja2.pass_environment
    def sum_(environment: Any, iterable: Iterable[Any], attribute: str | int | None = None, start: Any = 0) -> Any:
        if isinstance(start, list | tuple):
            items = list(iterable)
            if attribute is not None:
                items = list(map(jinja_filters.make_attrgetter(environment, attribute), items))
            if all(type(x) is type(start) for x in items):
                check(len(start) + sum(len(x) for x in items), "sum")
                return type(start)(chain(start, *items))
            return jinja_filters.sync_do_sum(environment, items, None, start)
        return jinja_filters.sync_do_sum(environment, iterable, attribute, start)

    def string_(value: Any) -> str:
        return value if type(value) is str else sandbox._str(value)

    def pprint(value: Any) -> str:
        check(estimate_str_size(value, sandbox.limits.max_sequence_length, per_item=8), "pprint")
        return pformat(value)

    def list_(value: Iterable[Any]) -> list[Any]:
        if isinstance(value, str):
            # Characters outside Latin-1 are separate objects of ~80 bytes each: count them before building.
            check(len(value), "list")
            charge(8 * len(value) if value.isascii() else 88 * len(value))
            return list(value)
        result = list(value)
        check(len(result), "list")
        charge(8 * len(result))
        return result

    @jinja2.pass_environment
    def wordwrap(
        environment: Any,
        s: Any,
        width: int = 79,
        break_long_words: bool = True,
        wrapstring: str | None = None,
        break_on_hyphens: bool = True,
    ) -> str:
        # textwrap runs in Python at ~1 µs a character, and splits a long word in time quadratic in its length.
        text = str(s)
        longest = max(map(len, text.split()), default=0)
        cost = len(text) + (longest * longest // max(int(width), 1) if break_long_words else 0)
        if cost > sandbox.limits.max_sequence_length // 4:
            raise TemplateLimitError(
                f"wordwrap of {len(text)} characters (longest word {longest}) is over the limit of "
                f"{sandbox.limits.max_sequence_length // 4} (a quarter of Limits.max_sequence_length)",
                code="template_size",
            )
        result = jinja_filters.do_wordwrap(environment, text, width, break_long_words, wrapstring, break_on_hyphens)
        charge(_nbytes(result))
        return result

    guarded: dict[str, Callable[..., Any]] = {
        "center": center,
        "indent": indent,
        "join": join,
        "replace": replace,
        "format": format,
        "batch": batch,
        "slice": slice_,
        "sum": sum_,
        "string": string_,
        "pprint": pprint,
        "list": list_,
        "wordwrap": wordwrap,
    }
    # Filters that walk their input one element at a time in Python: each element counts as a loop iteration,
    # so a million-element list cannot keep the render busy past the loop and time budgets.
    for name in ("map", "select", "reject", "selectattr", "rejectattr", "sort", "unique", "groupby", "min", "max"):
        guarded[name] = _counting(jinja_filters.FILTERS[name])
    # Filters whose result can be a few times their input (escape turns '&' into '&amp;'): sized and counted.
    for name in (
        "escape",
        "e",
        "forceescape",
        "urlize",
        "title",
        "capitalize",
        "upper",
        "lower",
        "trim",
        "striptags",
        "truncate",
        "urlencode",
        "xmlattr",
        "filesizeformat",
    ):
        guarded[name] = _sized(sandbox, jinja_filters.FILTERS[name])
    return guarded


def _counting(original: Callable[..., Any]) -> Callable[..., Any]:
    """``original`` with its input iterated through the render's loop budget."""
    if hasattr(original, "jinja_pass_arg"):

        def with_arg(arg: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
            return original(arg, _guard_iter(value), *args, **kwargs)

        with_arg.jinja_pass_arg = original.jinja_pass_arg  # type: ignore[attr-defined]
        return update_wrapper(with_arg, original)

    def plain(value: Any, *args: Any, **kwargs: Any) -> Any:
        return original(_guard_iter(value), *args, **kwargs)

    return update_wrapper(plain, original)


def _guard_iter(value: Any) -> Any:
    budget = current_budget()
    if budget is None:
        return value
    if isinstance(value, list | tuple | range):
        budget.reserve_iterations(len(value))  # refuse a huge input before walking it
        return value
    if isinstance(value, Iterator):
        return budget.guard_loop(value)
    return value


def _sized(sandbox: TemplateSandbox, original: Callable[..., Any]) -> Callable[..., Any]:
    """``original`` with its string result checked against the size limit and charged to the memory budget."""

    def account(result: Any) -> Any:
        if isinstance(result, str) and len(result) >= _FREE_BYTES:
            sandbox.check_size(len(result), f"the {original.__name__} filter")
            sandbox.charge(_nbytes(result))
        return result

    if hasattr(original, "jinja_pass_arg"):

        def with_arg(arg: Any, *args: Any, **kwargs: Any) -> Any:
            return account(original(arg, *args, **kwargs))

        with_arg.jinja_pass_arg = original.jinja_pass_arg  # type: ignore[attr-defined]
        return update_wrapper(with_arg, original)

    def plain(*args: Any, **kwargs: Any) -> Any:
        return account(original(*args, **kwargs))

    return update_wrapper(plain, original)


_SANDBOXES: dict[tuple[Limits, bool], TemplateSandbox] = {}


def sandbox_for(limits: Limits, *, fragments: bool = False) -> TemplateSandbox:
    """The (shared) sandbox for a set of limits (and prefix reuse on or off)."""
    sandbox = _SANDBOXES.get((limits, fragments))
    if sandbox is None:
        if len(_SANDBOXES) >= 32:  # many distinct Limits: keep the cache bounded
            _SANDBOXES.pop(next(iter(_SANDBOXES)))
        sandbox = _SANDBOXES.setdefault((limits, fragments), TemplateSandbox(limits, fragments=fragments))
    return sandbox
