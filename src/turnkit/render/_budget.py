"""The per-render resource budget, and size estimates that let the sandbox refuse a blow-up before allocating it.

A chat template is untrusted code. The sandbox hooks consult the budget of the render in progress (kept in a
context variable, so concurrent renders in threads or tasks never share one) before every operation that can
make something much bigger than its inputs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from jinja2.utils import Namespace

from turnkit.errors import TemplateLimitError
from turnkit.limits import Limits

__all__ = [
    "UPFRONT",
    "RenderBudget",
    "current_budget",
    "estimate_str_size",
    "guard_iterable",
    "reset_budget",
    "set_budget",
]

_TIME_CHECK_EVERY = 1024


class RenderBudget:
    """Counters for one render: wall clock, loop iterations, call depth and bytes allocated by amplifying operations."""

    __slots__ = (
        "limits",
        "deadline",
        "loops",
        "depth",
        "allocated",
        "max_allocated",
        "_ticks",
        "_measure",
        "_inputs",
        "_input",
        "input_measured",
        "trusted",
    )

    def __init__(
        self,
        limits: Limits,
        trusted: set[int] | None = None,
        measure: Callable[[Any], int] | None = None,
        inputs: Any = None,
    ) -> None:
        # (positional: a class called with keywords gets them as a new dict; every render builds one budget)
        self.limits = limits
        self.deadline = time.monotonic() + limits.render_timeout_s
        self.loops = 0
        self.depth = 0
        self.allocated = 0
        self.max_allocated = limits.max_render_bytes
        self._ticks = 0
        # Measuring the input (``measure(inputs)``) costs a walk over it, so it is done only when a render first
        # needs the allowance.
        self._measure = measure
        self._inputs = inputs
        self._input: int | None = None
        # whether some limit needed the input-size allowance during this render (see input_size): an attribute,
        # not a property, as prefix reuse reads it for every iteration it keeps
        self.input_measured = False
        # ids of the containers the caller's input was rebuilt into: a tree (no shared parts), so printing one
        # costs at most a multiple of the input size and needs no estimate.
        self.trusted: set[int] = trusted if trusted is not None else set()

    def tick(self) -> None:
        """Check the wall clock every few calls (cheap enough for per-operation use)."""
        self._ticks += 1
        if self._ticks >= _TIME_CHECK_EVERY:
            self._ticks = 0
            self.check_time()

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateLimitError(
                f"template render exceeded its time budget of {self.limits.render_timeout_s} s",
                code="template_timeout",
            )

    def allocate(self, nbytes: int) -> None:
        """Count memory allocated by a template operation against the render's budget."""
        self.allocated += nbytes
        if self.allocated > self.max_allocated and self._input is None:
            self.max_allocated += 8 * self.input_size()
        if self.allocated > self.max_allocated:
            raise TemplateLimitError(
                f"template allocated more than {self.max_allocated} bytes "
                "(Limits.max_render_bytes plus a share of the input size)",
                code="template_memory",
            )

    def input_size(self) -> int:
        """Approximate bytes of the render's input (measured once, on first need).

        Budgets scale with it: a long conversation legitimately makes long strings and a long prompt, while a
        template that blows a small input up is still held to the fixed limits.
        """
        if self._input is None:
            self._input = self._measure(self._inputs) if self._measure is not None else 0
            self.input_measured = True
        return self._input

    def reserve_iterations(self, count: int) -> None:
        """Count ``count`` iterations at once (a short loop starting, a filter about to walk a list of that length).

        The wall clock is checked whenever the count passes a multiple of 1,024, as :meth:`guard_loop` checks it
        every 1,024 iterations: between two checks at most that many iterations run, however they are counted.
        """
        before = self.loops
        self.loops = before + count
        if self.loops > self.limits.max_loop_iterations:
            raise TemplateLimitError(
                f"template ran more than {self.limits.max_loop_iterations} loop iterations "
                "(Limits.max_loop_iterations, counting the elements filters walk)",
                code="template_loops",
            )
        if self.loops >> 10 != before >> 10:
            self.check_time()

    def guard_loop(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """Iterate ``iterable`` while counting iterations against ``Limits.max_loop_iterations``."""
        limit = self.limits.max_loop_iterations
        for item in iterable:
            self.loops += 1
            if self.loops > limit:
                raise TemplateLimitError(
                    f"template ran more than {limit} loop iterations (Limits.max_loop_iterations)",
                    code="template_loops",
                )
            if not self.loops & 1023:
                self.check_time()
            yield item


# Loops up to this length are counted when they start; the wall clock is checked at least this often as well.
UPFRONT = 1024


def guard_iterable(iterable: Iterable[Any]) -> Iterable[Any]:
    """What a template's ``for`` loop iterates: ``iterable`` counted against the render's loop budget."""
    budget = current_budget()
    if budget is None:
        return iterable
    kind = type(iterable)
    if (kind is list or kind is tuple or kind is dict or kind is str or kind is range) and len(iterable) <= UPFRONT:  # type: ignore[arg-type]
        # A short sized loop counts all its iterations when it starts (one left by ``{% break %}`` counts them
        # all): no counting generator between the template and its list.
        budget.reserve_iterations(len(iterable))  # type: ignore[arg-type]
        return iterable
    return budget.guard_loop(iterable)


_CURRENT: ContextVar[RenderBudget | None] = ContextVar("turnkit_render_budget", default=None)


current_budget: Callable[[], RenderBudget | None] = _CURRENT.get
"""The budget of the render running in this thread/task, if any (the context variable's own getter: no Python
frame per call, and the sandbox's hooks ask for it on every guarded operation)."""


def set_budget(budget: RenderBudget | None) -> Any:
    return _CURRENT.set(budget)


def reset_budget(token: Any) -> None:
    _CURRENT.reset(token)


def estimate_str_size(value: Any, cap: int, *, per_item: int = 0) -> int:
    """A cheap estimate of ``len(str(value))`` (or its JSON/pprint form), stopping as soon as it passes ``cap``.

    Shared references are what turn a small template into a huge string (``[big, big]`` nested 30 times), so
    containers are memoised by identity: the walk costs the number of *distinct* objects, not their expansion.
    ``per_item`` adds a per-element overhead (indentation for ``tojson(indent=...)`` and ``pprint``).
    """
    memo: dict[int, int] = {}

    def walk(obj: Any, depth: int) -> int:
        kind = type(obj)
        if kind is str:
            return len(obj) + 2
        if kind is int or kind is float or kind is bool or obj is None:
            return 24
        key = id(obj)
        known = memo.get(key)
        if known is not None:
            return known
        if depth > 200:
            return cap + 1  # nothing real nests this deep; refuse rather than under-estimate
        total = 2
        items: Iterable[Any]
        if isinstance(obj, Mapping):
            items = (x for pair in obj.items() for x in pair)
        elif isinstance(obj, list | tuple | set | frozenset):
            items = obj
        elif isinstance(obj, Namespace):
            items = (x for pair in object.__getattribute__(obj, "_Namespace__attrs").items() for x in pair)
        else:
            return 64
        memo[key] = 0  # cycles count once
        overhead = 2 + per_item * (depth + 1)
        for item in items:
            total += walk(item, depth + 1) + overhead
            if total > cap:
                break
        memo[key] = total
        return total

    return walk(value, 0)
