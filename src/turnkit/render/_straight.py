"""Templates compiled to straight Python: the root function appends its output to a list and returns the list.

jinja2 compiles a template's top level to a generator, resumed once per output chunk, and the render loop pulls
the chunks in batches to check the prompt's size between them. Most chat templates need none of that: the code
generator (see _sandbox) gives the root frame a plain list as its buffer, as jinja2 does for a macro's body, and
the root returns that list (jinja2's ``Template.render`` joins it like the generator's output).

The output limit holds as before: a loop of the root frame counts the chunks appended since the last check at
the start of each iteration, and every :data:`CHECK_EVERY` chunks adds up their length (:func:`output_grew`, with
the time budget); between two checks run at most that many chunks plus one iteration's, a number fixed by the
template's text (a loop nested in the iteration checks at its own iterations), as the generator's batches held at
most 64 chunks. Each chunk is a string already sized when it was built (or part of the input), so between checks
the list only holds references, and the text is built once the whole was measured (``_run``).

Which templates (decided per template at compile time, :func:`straight_template`): all but those with
``{% extends %}``, ``{% block %}``, ``{% include %}``, ``{% import %}`` (jinja2 yields their output from other
generators), a ``{% generation %}`` block (the span tracker needs the length emitted before it, see _spans) or
reading ``self``. Those templates keep jinja2's generator, and remember no loop iterations (prefix reuse, see
_fragments, appends to the root's list).
"""

from __future__ import annotations

from itertools import islice
from typing import Any

import jinja2.nodes as nodes
from jinja2.compiler import find_undeclared

from turnkit.errors import TemplateLimitError
from turnkit.render._budget import current_budget

__all__ = ["CHECK_EVERY", "OUT", "check_output", "output_grew", "straight_template"]

OUT = "tk_out"
"""The root function's output list in the generated code."""
CHECK_EVERY = 64
"""Chunks appended between two measures of the output (the generator's batch size before)."""

_GENERATORS = (nodes.Extends, nodes.Block, nodes.Include, nodes.Import, nodes.FromImport)


def straight_template(tree: nodes.Template, generation_block: Any) -> bool:
    """Whether the template's root can be straight Python (``generation_block`` tells a ``{% generation %}``)."""
    if any(tree.find(kind) is not None for kind in _GENERATORS) or "self" in find_undeclared(tree.body, ("self",)):
        return False
    return not any(generation_block(block) for block in tree.find_all(nodes.CallBlock))


def check_output(sandbox: Any, total: int) -> None:
    """Refuse a prompt of ``total`` characters past ``Limits.max_output_chars`` (plus twice the render's input)."""
    if total > sandbox.limits.max_output_chars:
        cap = sandbox.output_cap()  # a long conversation may make a long prompt
        if total > cap:
            raise TemplateLimitError(
                f"rendered prompt grew past {cap} characters (Limits.max_output_chars)", code="template_output"
            )


def output_grew(sandbox: Any, out: list[str], next_check: int, total: int) -> tuple[int, int]:
    """Measure the chunks ``out`` got since the last check (at ``next_check - CHECK_EVERY``), refusing a prompt
    past the limit or a render past its time; the chunk count of the next check and the new total."""
    total += sum(map(len, islice(out, next_check - CHECK_EVERY, None)))
    check_output(sandbox, total)
    budget = current_budget()
    if budget is not None:
        budget.check_time()
    return len(out) + CHECK_EVERY, total
