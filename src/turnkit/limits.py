"""Resource budgets for untrusted input, in one object.

Templates, schemas, regexes and model output come from the internet. Every budget turnkit
enforces lives here; pass a custom :class:`Limits` where an API accepts ``limits=``, or keep
the module default :data:`DEFAULT_LIMITS`, which real inputs never come near.
"""

from __future__ import annotations

from dataclasses import dataclass

from turnkit._args import check_fields

__all__ = ["DEFAULT_LIMITS", "Limits"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Budgets for rendering templates and parsing untrusted text."""

    # Template rendering
    max_output_chars: int = 4_000_000
    """Largest rendered prompt (characters)."""
    max_range: int = 100_000
    """Largest ``range(...)`` a template may create."""
    max_sequence_length: int = 1_000_000
    """Largest string or list a single template operation may produce (``*``, ``join``, ``center``...)."""
    max_integer_bits: int = 4_096
    """Largest integer (in bits) a template arithmetic operation may produce (``**``, ``*``, ``<<``)."""
    max_loop_iterations: int = 1_000_000
    """Total loop iterations across one render."""
    max_call_depth: int = 64
    """Deepest macro / call nesting."""
    render_timeout_s: float = 5.0
    """Wall-clock budget for one render."""
    max_render_bytes: int = 32_000_000
    """Memory one render may allocate through string/list-building operations, on top of 8x the input size."""

    # Parsing untrusted output
    regex_timeout_s: float = 1.0
    """Budget for one regular-expression match on model output."""
    parse_timeout_s: float = 10.0
    """Budget for all regular expressions of one ``parse_response`` call together."""
    max_schema_depth: int = 100
    """Deepest nesting of nodes in a response schema."""
    max_json_depth: int = 512
    """Deepest nesting of arrays/objects accepted in JSON. Past it, ``turnkit.structured`` streams and the
    built-in output formats' tool-call arguments (values converted to JSON included) raise
    ``LimitExceededError`` (code ``json_too_deep``), whole or streamed alike; ``turnkit.outputs`` reports the
    reply as too deep and its schema checks stop there. x-regex ``parse_response`` does not apply it (its JSON
    decoding fails with ``ParseError`` past Python's recursion limit)."""
    max_input_chars: int = 64_000_000
    """Largest input accepted by a parser or stream."""
    max_repair_chars: int = 256_000
    """Largest JSON text on which token-rewriting repairs (quotes, literals, bare keys) are tried."""

    def __post_init__(self) -> None:
        check_fields(self)


DEFAULT_LIMITS = Limits()
