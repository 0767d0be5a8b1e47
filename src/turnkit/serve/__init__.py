"""turnkit's server: an OpenAI-compatible gateway in front of a raw completion backend (``turnkit[serve]``).

turnkit renders the prompt with the model's chat template, streams raw text from the backend, parses it with
the model's output format, and serves the parsed deltas over each protocol. Start it with ``turnkit serve``
or build the ASGI app yourself::

    from turnkit.serve import Gateway, ReplayBackend, create_app
"""

from __future__ import annotations

from turnkit._extras import require as _require

for _module in ("starlette", "httpx", "httpx_sse"):
    _require(_module, "serve", purpose="turnkit.serve")

from turnkit.serve._app import create_app
from turnkit.serve._chat import ChatRequest
from turnkit.serve._embedded import embedded_gateway, embedded_replay, embedded_template
from turnkit.serve._errors import BackendError, BadRequestError, ServeError, ShuttingDownError
from turnkit.serve._gateway import Gateway, ReasoningField, Run
from turnkit.serve._sse import SSE_HEADERS, sse_comment, sse_event, sse_response
from turnkit.serve.backends import (
    Backend,
    BackendChunk,
    CompletionsBackend,
    ReplayBackend,
    ReplayRecord,
    SamplingParams,
    Usage,
    backend_from_spec,
)

__all__ = [
    "Backend",
    "BackendChunk",
    "BackendError",
    "BadRequestError",
    "ChatRequest",
    "CompletionsBackend",
    "Gateway",
    "ReasoningField",
    "ReplayBackend",
    "ReplayRecord",
    "Run",
    "SSE_HEADERS",
    "SamplingParams",
    "ServeError",
    "ShuttingDownError",
    "Usage",
    "backend_from_spec",
    "create_app",
    "embedded_gateway",
    "embedded_replay",
    "embedded_template",
    "sse_comment",
    "sse_event",
    "sse_response",
]
