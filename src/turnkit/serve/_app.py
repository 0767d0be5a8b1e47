"""The ASGI app: routes gathered from the protocol modules, bearer auth, OpenAI-shaped errors."""

from __future__ import annotations

import contextlib
import hmac
import importlib
import logging
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from turnkit._args import expect, expect_int
from turnkit.serve._errors import ServeError
from turnkit.serve._gateway import Gateway
from turnkit.serve._http import DEFAULT_MAX_BODY_BYTES, error_response
from turnkit.serve._sync import SyncRegistry
from turnkit.serve.protocols.sync import sync_registry

__all__ = ["PROTOCOLS", "create_app"]

_log = logging.getLogger("turnkit.serve")

# One line per protocol module in turnkit/serve/protocols/; each exposes ``routes(gateway) -> list[Route]``.
PROTOCOLS: tuple[str, ...] = (
    "openai_chat",
    "agui",
    "ai_sdk",
    "sync",
)

OPEN_PATHS = frozenset({"/healthz"})
# A stream's events may be read with the stream's own read token (``?token=``) instead of the API key: a
# browser's EventSource cannot send headers. The route checks the token (``token_auth`` in the scope's state).
_EVENTS_PATH = re.compile(r"/v1/streams/[^/]+/events")


class BearerAuth:
    """Every path but ``/healthz`` needs ``Authorization: Bearer <api_key>``; else 401 with an OpenAI error."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self.expected = f"Bearer {api_key}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        if hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        if not given and _EVENTS_PATH.fullmatch(scope["path"]) and b"token=" in scope.get("query_string", b""):
            scope.setdefault("state", {})["token_auth"] = True
            await self.app(scope, receive, send)
            return
        error = ServeError(
            "missing or incorrect API key (send Authorization: Bearer KEY, or a stream's ?token= for its events)",
            code="invalid_api_key",
            status=401,
        )
        error.type = "invalid_request_error"
        await error_response(error)(scope, receive, send)


def _models(gateway: Gateway) -> Route:
    created = int(time.time())

    async def models(request: Request) -> Response:
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {"id": gateway.served_model_name, "object": "model", "created": created, "owned_by": "turnkit"}
                ],
            }
        )

    return Route("/v1/models", models, methods=["GET"])


async def _healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def _serve_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServeError)
    return error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    error = ServeError(
        str(exc.detail), code="not_found" if exc.status_code == 404 else "http_error", status=exc.status_code
    )
    error.type = "invalid_request_error"
    return error_response(error)


async def _internal_error(request: Request, exc: Exception) -> Response:
    _log.exception("unhandled error in %s %s", request.method, request.url.path)
    return error_response(ServeError("internal server error", code="internal_error"))


def protocol_routes(gateway: Gateway) -> list[BaseRoute]:
    """Every protocol module's routes, in ``PROTOCOLS`` order."""
    routes: list[BaseRoute] = []
    for name in PROTOCOLS:
        module = importlib.import_module(f"turnkit.serve.protocols.{name}")
        routes.extend(module.routes(gateway))
    return routes


def create_app(
    gateway: Gateway,
    *,
    api_key: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    sync: SyncRegistry | None = None,
) -> Starlette:
    """The ASGI app serving ``gateway`` over every protocol; ``api_key`` turns on bearer auth.

    ``sync`` is the registry of the sync streams (``app.state.sync``; default: one with a 300 s TTL).

    The app owns the gateway: its lifespan shutdown closes it (and the backend's connections).
    """
    expect(gateway, Gateway, name="gateway", func="create_app")
    expect(api_key, str, name="api_key", func="create_app", none=True)
    expect_int(max_body_bytes, name="max_body_bytes", func="create_app", minimum=1)
    expect(sync, SyncRegistry, name="sync", func="create_app", none=True)
    app_sync = sync_registry(gateway, sync)
    routes: list[BaseRoute] = [Route("/healthz", _healthz, methods=["GET"]), _models(gateway)]
    routes.extend(protocol_routes(gateway))
    handlers: dict[Any, Any] = {ServeError: _serve_error, HTTPException: _http_error, Exception: _internal_error}

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await gateway.aclose()

    app = Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan)
    app.state.gateway = gateway
    app.state.max_body_bytes = max_body_bytes
    app.state.sync = app_sync
    if api_key:
        app.add_middleware(BearerAuth, api_key=api_key)
    return app
