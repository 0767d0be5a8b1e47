"""Request-body reading and error responses shared by every route: errors are OpenAI error objects."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from turnkit.serve._errors import BadRequestError, ServeError

__all__ = ["DEFAULT_MAX_BODY_BYTES", "error_response", "read_json_body"]

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
