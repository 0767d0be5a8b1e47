"""Where ``{% generation %}`` blocks land in a rendered prompt: the character spans assistant masks are built from.

The render loop keeps :attr:`SpanTracker.length` (characters emitted so far at the template's top level) and the
``{% generation %}`` block appends ``(start, end)`` when it is rendered: the method transformers 5.23 uses, so
the spans are the ones its ``return_assistant_tokens_mask`` sees.
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["TRACKER", "SpanTracker"]


class SpanTracker:
    """Character spans of the ``{% generation %}`` blocks of one render."""

    __slots__ = ("length", "renders")

    def __init__(self) -> None:
        self.length = 0
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
