"""The keys a ``response_template`` may have, at the top and in each field (transformers 5.23's schema).

Kept apart from the compiler (which imports ``regex``) so that telling a response template from an x-regex
schema costs no import.
"""

from __future__ import annotations

__all__ = ["FIELD_KEYS", "TEMPLATE_KEYS"]

TEMPLATE_KEYS = frozenset({"version", "defaults", "fields", "start_anchor", "start_anchor_pattern"})
FIELD_KEYS = frozenset(
    {
        "open",
        "open_pattern",
        "close",
        "close_pattern",
        "content",
        "content_args",
        "repeats",
        "join",
        "optional",
        "transform",
        "transform_each",
    }
)
