"""The one interface every model backend implements: a prompt in, a stream of raw text chunks out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from turnkit._args import check_fields

__all__ = ["Backend", "BackendChunk", "SamplingParams", "Usage"]


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """Sampling options passed through to the backend (``None`` = the backend's default)."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts, as the backend reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __post_init__(self) -> None:
        check_fields(self)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class BackendChunk:
    """One piece of raw model text; the last chunk may carry ``finish_reason`` and ``usage``."""

    text: str
    finish_reason: str | None = None
    usage: Usage | None = None

    def __post_init__(self) -> None:
        check_fields(self)


@runtime_checkable
class Backend(Protocol):
    """Streams raw model text for a rendered prompt. Closing the iterator cancels the request."""

    def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[BackendChunk]:
        """Raw output chunks for ``prompt``; raises :class:`~turnkit.serve.BackendError` on failure."""
        ...
