"""Request-body reading and error responses shared by every route: errors are OpenAI error objects."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any, TypeVar

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from turnkit.serve._errors import BadRequestError, ServeError

__all__ = ["DEFAULT_MAX_BODY_BYTES", "error_response", "read_json_body", "unless_disconnected"]

_T = TypeVar("_T")

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024


def error_response(error: ServeError) -> JSONResponse:
    """``{"error": {"message", "type", "param", "code"}}`` with the error's HTTP status."""
    return JSONResponse(error.to_openai(), status_code=error.status)


async def read_json_body(request: Request) -> Any:
    """The request's JSON body; too large (``max_body_bytes``) or malformed → :class:`BadRequestError`."""
    limit = getattr(request.app.state, "max_body_bytes", DEFAULT_MAX_BODY_BYTES)
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadRequestError(f"request body is larger than {limit} bytes", code="body_too_large")
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise BadRequestError(f"request body is larger than {limit} bytes", code="body_too_large")
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise BadRequestError(
            f"request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", code="invalid_json"
        ) from exc
    except UnicodeDecodeError as exc:
        raise BadRequestError("request body is not UTF-8", code="invalid_json") from exc


async def unless_disconnected(request: Request, awaitable: Awaitable[_T]) -> _T:
    """Await ``awaitable`` (e.g. the backend's first chunk) unless the client goes away first: then cancel it,
    which cancels the backend request, and raise ``ClientDisconnect``. Before a response starts, nothing else
    watches the connection (a streaming response watches it once it runs)."""
    task = asyncio.ensure_future(awaitable)

    async def gone() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(gone())
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        raise
    finally:
        watcher.cancel()
    if task in done:
        return task.result()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    raise ClientDisconnect()
