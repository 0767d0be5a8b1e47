"""The errors the server turns into HTTP answers: each carries the OpenAI error object's fields."""

from __future__ import annotations

from typing import Any

from turnkit.errors import TurnkitError

__all__ = ["BackendError", "BadRequestError", "ServeError", "ShuttingDownError"]


class ServeError(TurnkitError):
    """A request failed; ``status`` is the HTTP status, ``type``/``param`` go into the OpenAI error object."""

    code = "serve_error"
    status = 500
    type = "server_error"

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message, code=code)
        self.param = param
        if status is not None:
            self.status = status

    def to_openai(self) -> dict[str, Any]:
        """``{"error": {"message", "type", "param", "code"}}``."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


class BadRequestError(ServeError, ValueError):
    """The request is invalid (HTTP 400); ``param`` names the offending field."""

    code = "invalid_request"
    status = 400
    type = "invalid_request_error"


class BackendError(ServeError):
    """The model backend is unreachable, refused the request or died mid-stream (HTTP 502)."""

    code = "backend_error"
    status = 502
    type = "backend_error"


class ShuttingDownError(ServeError):
    """The server is stopping: in-flight streams end with this error (HTTP 503)."""

    code = "shutting_down"
    status = 503
    type = "server_error"
