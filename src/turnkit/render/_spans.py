"""Where ``{% generation %}`` blocks land in a rendered prompt: the character spans assistant masks are built from.

The render loop keeps :attr:`SpanTracker.length` (characters emitted so far at the template's top level) and the
``{% generation %}`` block appends ``(start, end)`` when it is rendered: the method transformers 5.23 uses, so
the spans are the ones its ``return_assistant_tokens_mask`` sees.

That method is only right for blocks at the template's top level. A block inside a macro, a ``{% set %}`` block, a
call or filter block renders into a buffer whose text is output later (or elsewhere, or never), so transformers
records the length at the time the buffer is filled: the span lands too early. For templates with such a block,
the template is rendered a second time with each block's output wrapped in two Unicode noncharacters
(:data:`MARKS`); where the marks land in the output is where the blocks' text is (:func:`marked_spans`), provided
removing them gives the first render's text exactly (a filter such as ``length`` or ``trim`` applied to marked text
would not), else the top-level spans stand.
"""

from __future__ import annotations

import re
from contextvars import ContextVar

__all__ = ["MARKS", "TRACKER", "SpanTracker", "marked_spans"]

MARKS = ("\ufdd0", "\ufdd1")
"""Start and end of a generation block's output in a marked render (noncharacters: never assigned to text)."""
_MARK = re.compile("[\ufdd0\ufdd1]")


class SpanTracker:
    """Character spans of the ``{% generation %}`` blocks of one render."""

    __slots__ = ("length", "marking", "renders")

    def __init__(self) -> None:
        self.length = 0
        self.marking = False  # generation blocks wrap their output in MARKS (the second render)
        self.renders: list[list[tuple[int, int]]] = []

    def start_render(self) -> None:
        """A new render begins (one per conversation of a batch)."""
        self.length = 0
        self.renders.append([])

    def generated(self, text: str) -> None:
        """Record a generation block whose rendered body is ``text``, starting at the current length."""
        if self.renders:
            self.renders[-1].append((self.length, self.length + len(text)))


TRACKER: ContextVar[SpanTracker | None] = ContextVar("turnkit_generation_spans", default=None)


def marked_spans(marked: str, plain: str) -> list[tuple[int, int]] | None:
    """The spans between :data:`MARKS` in ``marked`` (in the order the blocks end, as the tracker records them),
    when removing the marks gives ``plain``; else ``None``."""
    if MARKS[0] in plain or MARKS[1] in plain:
        return None
    spans: list[tuple[int, int]] = []
    starts: list[int] = []
    pieces: list[str] = []
    length = at = 0
    for match in _MARK.finditer(marked):
        pieces.append(marked[at : match.start()])
        length += match.start() - at
        at = match.end()
        if match.group() == MARKS[0]:
            starts.append(length)
        elif starts:
            spans.append((starts.pop(), length))
        else:
            return None
    pieces.append(marked[at:])
    return spans if not starts and "".join(pieces) == plain else None
