"""x-regex response schemas: a complete-parse interpreter with transformers' exact semantics.

``response_schema`` (the public door, light to import), ``compiler`` (schema dict to node tree),
``nodes`` (the tree and its interpreter), ``regex`` (time-bounded ``re``-exact regexes) and ``cost``
(their worst-case bound). Only the door is imported with ``turnkit``; the rest, with ``regex`` and
``jmespath``, when a schema is first compiled.
"""

from __future__ import annotations

from turnkit.parse._schema.response_schema import ResponseSchema, parse_response

__all__ = ["ResponseSchema", "parse_response"]
