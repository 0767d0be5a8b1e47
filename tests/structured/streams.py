"""Shared runner for StructuredStream tests: the client's ops must rebuild ``value`` after every feed."""

from __future__ import annotations

from typing import Any

from turnkit._json import json_copy
from turnkit.structured import Op, StructuredStream, apply_patch


def run_checked(
    schema: Any, pieces: list[str], **kwargs: Any
) -> tuple[StructuredStream[Any], list[Any], list[list[Op]]]:
    """Feed ``pieces``; after every feed the client's ops applied to a mirror must equal ``value``."""
    s: StructuredStream[Any] = StructuredStream(schema, **kwargs)
    mirror: Any = None
    snapshots: list[Any] = []
    batches: list[list[Op]] = []
    for piece in [*pieces, None]:
        ops = s.feed(piece) if piece is not None else s.close()
        batches.append(ops)
        mirror = apply_patch(mirror, ops)
        assert mirror == s.value
        snapshots.append(json_copy(s.value))
    return s, snapshots, batches
