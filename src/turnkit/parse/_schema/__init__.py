"""x-regex response schemas: a complete-parse interpreter with transformers' exact semantics."""

from __future__ import annotations

from turnkit.parse._schema.nodes import ResponseSchema, parse_response

__all__ = ["ResponseSchema", "parse_response"]
