"""Model backends: one interface (:class:`Backend`), a raw ``/v1/completions`` client and a replay backend."""

from __future__ import annotations

from turnkit._args import expect, fail_value
from turnkit.serve.backends._base import Backend, BackendChunk, SamplingParams, Usage
from turnkit.serve.backends.completions import CompletionsBackend
from turnkit.serve.backends.replay import ReplayBackend, ReplayRecord

__all__ = [
    "Backend",
    "BackendChunk",
    "CompletionsBackend",
    "ReplayBackend",
    "ReplayRecord",
    "SamplingParams",
    "Usage",
    "backend_from_spec",
]


def backend_from_spec(spec: str) -> Backend:
    """``"http://host:port"`` (an OpenAI-compatible completions server) or ``"replay:FILE"`` (JSONL records)."""
    expect(spec, str, name="spec", func="backend_from_spec")
    if spec.startswith("replay:"):
        return ReplayBackend.from_file(spec.removeprefix("replay:"))
    if spec.startswith(("http://", "https://")):
        return CompletionsBackend(spec)
    raise fail_value(
        f"must be an http(s):// URL of a /v1/completions server or replay:FILE, not {spec!r}",
        name="spec",
        func="backend_from_spec",
    )
