"""Argument encodings: push decoders for the body of one tool-call region, one module per encoding.

``base`` holds what they share (the :class:`Body` interface and the :data:`REJECT` sentinel); ``table``
maps each body declaration of ``_spec.py`` to its decoder. Each decoder is pushed text with ``feed``,
which returns ``None`` while the body continues, the unconsumed rest once it ended, or ``REJECT``.
"""

from __future__ import annotations

from turnkit.parse._bodies.base import REJECT, Body, Fed, Lane, ToolTypes
from turnkit.parse._bodies.table import BODIES, body_class

__all__ = ["BODIES", "REJECT", "Body", "Fed", "Lane", "ToolTypes", "body_class"]
