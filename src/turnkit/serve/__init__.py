"""turnkit's server: an OpenAI-compatible gateway in front of a raw completion backend (``turnkit[serve]``).

turnkit renders the prompt with the model's chat template, streams raw text from the backend, parses it with
the model's output format, and serves the parsed deltas over each protocol. Start it with ``turnkit serve``
or build the ASGI app yourself::

    from turnkit.serve import Gateway, ReplayBackend, create_app
"""

from __future__ import annotations

from turnkit.errors import MissingDependencyError

try:
    import httpx  # noqa: F401
    import httpx_sse  # noqa: F401
    import starlette  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised by a subprocess test without the extra
    raise MissingDependencyError(
        f"turnkit.serve needs the serve extra ({exc.name} is missing): pip install 'turnkit[serve]'",
        code="missing_dependency",
    ) from exc

from turnkit.serve._app import PROTOCOLS, create_app
from turnkit.serve._chat import ChatRequest, template_messages
from turnkit.serve._embedded import embedded_gateway, embedded_replay, embedded_template
from turnkit.serve._errors import BackendError, BadRequestError, ServeError, ShuttingDownError
from turnkit.serve._gateway import Gateway, ReasoningField, Run, check_response_format
from turnkit.serve._http import read_json_body
from turnkit.serve._sse import SSE_HEADERS, SSEResponse, sse_comment, sse_event, sse_response
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
    "PROTOCOLS",
    "SSE_HEADERS",
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
    "SSEResponse",
    "SamplingParams",
    "ServeError",
    "ShuttingDownError",
    "Usage",
    "backend_from_spec",
    "check_response_format",
    "create_app",
    "embedded_gateway",
    "embedded_replay",
    "embedded_template",
    "read_json_body",
    "sse_comment",
    "sse_event",
    "sse_response",
    "template_messages",
]
