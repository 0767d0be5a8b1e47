"""The one size gate every parser applies before reading a reply."""

from __future__ import annotations

from turnkit.limits import Limits
from turnkit.outputs._feedback import reply_error

__all__ = ["check_size", "check_size_of"]


def check_size(text: str, limits: Limits) -> None:
    """Reject replies larger than ``limits.max_input_chars`` (not retryable: the model is runaway)."""
    check_size_of(len(text), limits)


def check_size_of(size: int, limits: Limits) -> None:
    """:func:`check_size` for a reply of ``size`` characters that was not kept."""
    if size > limits.max_input_chars:
        raise reply_error(
            "input_too_large",
            f"the response is {size} characters, over the limit of {limits.max_input_chars}",
            "",
            hint=f"Answer in at most {limits.max_input_chars} characters.",
            retryable=False,
        )
