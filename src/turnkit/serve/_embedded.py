"""The embedded default: turnkit's bundled ChatML/Hermes template, the hermes format and recorded replies."""

from __future__ import annotations

from importlib.resources import as_file, files
from typing import Any

from turnkit import ChatTemplate
from turnkit._args import expect
from turnkit.serve._gateway import Gateway
from turnkit.serve.backends.replay import ReplayBackend

__all__ = ["EMBEDDED_FORMAT", "embedded_gateway", "embedded_replay", "embedded_template"]

EMBEDDED_FORMAT = "hermes"


def embedded_template() -> ChatTemplate:
    """The bundled ChatML/Hermes-style template (the one ``turnkit demo`` renders with)."""
    return ChatTemplate(files("turnkit").joinpath("data", "chatml-tools.jinja").read_text(encoding="utf-8"))


def embedded_replay(*, delay: float = 0.0) -> ReplayBackend:
    """Replay backend over the bundled recordings (a weather tool call, its answer, a greeting)."""
    expect(delay, (int, float), name="delay", func="embedded_replay", accepts="a number of seconds")
    with as_file(files("turnkit.serve").joinpath("data", "default-replay.jsonl")) as path:
        return ReplayBackend.from_file(path, delay=delay)


def embedded_gateway(**options: Any) -> Gateway:
    """A gateway that works on a fresh machine: bundled template, ``hermes`` format, replayed outputs."""
    options.setdefault("served_model_name", "turnkit-replay")
    return Gateway(embedded_template(), EMBEDDED_FORMAT, embedded_replay(), **options)
