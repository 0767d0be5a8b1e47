"""turnkit's sync stream over HTTP: structured runs that outlive their connections (docs/sync.md).

* ``POST /v1/streams``: an OpenAI chat request whose ``response_format`` is ``json_schema`` (or
  ``json_object``), plus optional ``"transform": NAME`` (a transform registered on the registry) and
  ``"markers": true`` (``$partial`` markers); starts the run in a background task (render → backend →
  content text → :class:`~turnkit.structured.StructuredStream` → :class:`~turnkit.serve._sync.SyncRun`)
  that goes on without any client until it ends or is cancelled; answers ``201 {"id", "events", "token"}``
  (``token`` reads the events without the API key).
* ``GET /v1/streams/{id}/events``: SSE (``EventSource`` works): ``snapshot``, ``patch``es, ``end``, each with
  ``id: <seq>``; ``Last-Event-ID`` / ``?lastEventId=`` resumes; ``?protocol=json-patch``, ``?encoding=compact``.
* ``POST /v1/streams/{id}/cancel``: ``{"cancelled": true}``, or 409 when the run had already ended.
* ``GET /turnkit.js`` (and ``/static/turnkit.js``): the browser client; ``GET /demo``: the live demo page.

Application code publishes its own streams the same way: :func:`publish` (or ``app.state.sync.create``).
"""

from __future__ import annotations

import asyncio
import hmac
import importlib
import secrets
import weakref
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping
from importlib.resources import files
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from turnkit.errors import TurnkitError
from turnkit.serve._chat import ChatRequest
from turnkit.serve._errors import BadRequestError, ServeError
from turnkit.serve._gateway import Gateway
from turnkit.serve._http import read_json_body
from turnkit.serve._sse import PushedSSEResponse, _frame
from turnkit.serve._sync import SyncRegistry, SyncRun, SyncSubscription, parse_last_event_id
from turnkit.serve.protocols.openai_chat import parse_chat_request
from turnkit.structured import JsonStream, PathMap, StructuredStream, Transform

__all__ = [
    "DEMO_TRANSFORM",
    "publish",
    "routes",
    "start_structured_run",
    "structured_source",
    "sync_registry",
]

# What the demo's v1 client asks for: the seed's v1 ``summary`` (strings) derived live from v2's ``summaryV2``.
DEMO_TRANSFORM = "review-v1"
RETRY_MS = 1000
HEARTBEAT = 15.0

_REGISTRIES: weakref.WeakKeyDictionary[Gateway, SyncRegistry] = weakref.WeakKeyDictionary()
_TASKS: set[asyncio.Task[Any]] = set()  # background runs (asyncio keeps only weak references to tasks)


def _default_registry() -> SyncRegistry:
    registry = SyncRegistry()
    registry.add_transform(DEMO_TRANSFORM, Transform(PathMap("/summaryV2/*/text", "/summary/*")))
    return registry


def sync_registry(gateway: Gateway, registry: SyncRegistry | None = None) -> SyncRegistry:
    """The :class:`SyncRegistry` of ``gateway``'s sync endpoints (created on first use; ``registry`` sets it).

    The default one keeps finished runs for 300 s and knows the transform ``review-v1``."""
    if registry is not None:
        _REGISTRIES[gateway] = registry
        return registry
    found = _REGISTRIES.get(gateway)
    if found is None:
        found = _REGISTRIES[gateway] = _default_registry()
    return found


def _keep(task: asyncio.Task[Any]) -> asyncio.Task[Any]:
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)
    return task


def publish(
    app_or_registry: Any,
    source: JsonStream | StructuredStream[Any] | None,
    chunks: AsyncIterable[str] | Iterable[str] | None = None,
    *,
    run_id: str | None = None,
    markers: bool = False,
) -> SyncRun:
    """Publish ``source`` under an id on a serve app (or a :class:`SyncRegistry`); clients read it at
    ``GET /v1/streams/{run.id}/events``. With ``chunks`` (text, sync or async) a background task feeds them
    and closes the run; without, feed it yourself (``run.feed(text)`` / ``run.close()``). Call it on the
    app's event loop (a route handler, a startup hook)."""
    registry: SyncRegistry = (
        app_or_registry if isinstance(app_or_registry, SyncRegistry) else app_or_registry.state.sync
    )
    run = registry.create(source, run_id=run_id, markers=markers)
    if chunks is not None:
        _keep(run.start(chunks))
    return run


def _check_schema(schema: Any) -> None:
    """A 400 naming the schema path when ``schema`` is not a valid JSON Schema (with jsonschema, if installed)."""
    base = "response_format.json_schema.schema"
    if not isinstance(schema, Mapping | bool):
        raise BadRequestError("the schema must be a JSON object", param=base, code="invalid_schema")
    try:
        jsonschema: Any = importlib.import_module("jsonschema")
    except ImportError:  # pragma: no cover - without jsonschema only turnkit's own compile checks the schema
        return
    cls = jsonschema.validators.validator_for(schema)
    errors = sorted(cls(cls.META_SCHEMA).iter_errors(schema), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        pointer = "".join(f"/{p}" for p in first.absolute_path)
        raise BadRequestError(
            f"the schema is not valid at {pointer or '/'}: {first.message}",
            param=base + pointer.replace("/", "."),
            code="invalid_schema",
        )


def structured_source(
    response_format: Mapping[str, Any] | None, transform: str | None, registry: SyncRegistry, *, where: str = ""
) -> JsonStream | StructuredStream[Any]:
    """The stream parsing a response_format's output: a StructuredStream over its schema (with the named
    transform), or a JsonStream for ``json_object``. Bad input is a :class:`BadRequestError` (400)."""
    kind = response_format.get("type") if isinstance(response_format, Mapping) else None
    if response_format is None or kind not in ("json_schema", "json_object"):
        raise BadRequestError(
            'a sync stream needs response_format {"type": "json_schema", ...} (or "json_object")',
            param=where + "response_format",
        )
    chosen = None
    if transform is not None:
        if not isinstance(transform, str) or transform not in registry.transforms:
            known = ", ".join(sorted(registry.transforms)) or "none"
            raise BadRequestError(
                f"unknown transform {transform!r} (registered: {known})",
                param=where + "transform",
                code="bad_transform",
            )
        chosen = registry.transforms[transform]
    if kind == "json_object":
        return JsonStream() if chosen is None else StructuredStream(None, transform=chosen)
    spec = response_format.get("json_schema")
    schema = spec.get("schema", {}) if isinstance(spec, Mapping) else {}
    _check_schema(schema)
    try:
        return StructuredStream(schema, transform=chosen)
    except TurnkitError as exc:
        where_in = f" at {exc.pointer}" if exc.pointer else ""
        raise BadRequestError(
            f"the schema cannot be compiled{where_in}: {exc.message}",
            param=where + "response_format.json_schema.schema" + (exc.pointer or "").replace("/", "."),
            code="invalid_schema",
        ) from exc


async def start_structured_run(
    gateway: Gateway,
    chat: ChatRequest,
    source: JsonStream | StructuredStream[Any],
    *,
    registry: SyncRegistry | None = None,
    markers: bool = False,
    run_id: str | None = None,
) -> SyncRun:
    """Start the model (a template or backend failure raises here, before any response) and a SyncRun fed
    with its content text, in a background task that outlives every connection."""
    registry = registry if registry is not None else sync_registry(gateway)
    model = gateway.run(chat)
    try:
        await model.start()
        run = registry.create(source, run_id=run_id, markers=markers)
    except BaseException:
        await model.aclose()
        raise

    async def content() -> AsyncIterator[str]:
        try:
            async for delta in model:
                text = delta.get("content")
                if text:
                    yield text
        finally:
            await model.aclose()

    def release(_: asyncio.Task[Any]) -> None:  # (a run cancelled before it read anything never ran content())
        try:
            _keep(asyncio.ensure_future(model.aclose()))
        except RuntimeError:  # pragma: no cover - the loop is gone
            pass

    _keep(run.start(content())).add_done_callback(release)
    return run


def _check_token(run: SyncRun | None, token: str) -> None:
    """401 unless ``token`` is the run's read token (an unknown run too: a token must not tell ids apart)."""
    expected = run.token if run is not None else secrets.token_urlsafe(18)
    if not hmac.compare_digest(token.encode(), expected.encode()):
        error = ServeError("missing or incorrect read token for this stream", code="invalid_api_key", status=401)
        error.type = "invalid_request_error"
        raise error


def _not_found(run_id: str) -> ServeError:
    error = ServeError(f"no stream {run_id!r} (unknown, or finished and expired)", code="stream_not_found", status=404)
    error.type = "invalid_request_error"
    return error


def _subscribe_options(request: Request) -> tuple[str, str]:
    protocol = request.query_params.get("protocol", "turnkit")
    encoding = request.query_params.get("encoding", "ops")
    if protocol not in ("turnkit", "json-patch"):
        raise BadRequestError('protocol must be "turnkit" or "json-patch"', param="protocol")
    if encoding not in ("ops", "compact"):
        raise BadRequestError('encoding must be "ops" or "compact"', param="encoding")
    return protocol, encoding


class _SubscriptionSource:
    """A subscription as the source of a PushedSSEResponse: its deliverable events, framed."""

    def __init__(self, sub: SyncSubscription) -> None:
        self.sub = sub
        self.retry: int | None = RETRY_MS  # (on the first event only)

    def on_ready(self, listener: Callable[[], None] | None) -> None:
        self.sub.on_ready(listener)

    def pull(self) -> tuple[bytes, bool]:
        frames = []
        for event in self.sub.ready():
            frames.append(_frame(event.data, event.kind, event.id, self.retry))
            self.retry = None
        return b"".join(frames), self.sub.done

    def close(self) -> None:
        self.sub.close()


def _flag(value: Any) -> bool:
    return value in (True, 1, "1", "true", "yes")


def _static(name: str) -> str:
    return files("turnkit.serve").joinpath("static", name).read_text(encoding="utf-8")


def routes(gateway: Gateway) -> list[Route]:
    """``POST /v1/streams``, ``GET /v1/streams/{id}/events``, ``POST /v1/streams/{id}/cancel``,
    ``GET /v1/streams/{id}``, ``GET /turnkit.js``, ``GET /demo``."""
    registry = sync_registry(gateway)

    async def create(request: Request) -> Response:
        body = await read_json_body(request)
        if not isinstance(body, dict):
            raise BadRequestError("the request body must be a JSON object")
        body = dict(body)
        transform = body.pop("transform", None)
        markers = _flag(body.pop("markers", False)) or _flag(request.query_params.get("markers"))
        chat, _stream, _usage = parse_chat_request(body)
        source = structured_source(chat.response_format, transform, registry)
        run = await start_structured_run(gateway, chat, source, registry=registry, markers=markers)
        events = f"/v1/streams/{run.id}/events"
        return JSONResponse({"id": run.id, "events": events, "token": run.token}, status_code=201)

    async def events(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        run = registry.get(run_id)
        if getattr(request.state, "token_auth", False):  # no API key: the stream's read token instead
            _check_token(run, request.query_params.get("token", ""))
        if run is None:
            raise _not_found(run_id)
        protocol, encoding = _subscribe_options(request)
        last = parse_last_event_id(request.headers.get("last-event-id") or request.query_params.get("lastEventId"))
        sub = run.subscribe(last, protocol=protocol, encoding=encoding)  # type: ignore[arg-type]
        return PushedSSEResponse(_SubscriptionSource(sub), heartbeat=HEARTBEAT)

    async def status(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        run = registry.get(run_id)
        if run is None:
            raise _not_found(run_id)
        end = run.end_event
        return JSONResponse(
            {
                "id": run.id,
                "seq": run.seq,
                "done": run.done,
                "subscribers": run.subscribers,
                "end": end.payload if end is not None else None,
            }
        )

    async def cancel(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        run = registry.get(run_id)
        if run is None:
            raise _not_found(run_id)
        if not run.cancel():
            return JSONResponse({"id": run.id, "cancelled": False, "reason": "the run had already ended"}, 409)
        return JSONResponse({"id": run.id, "cancelled": True})

    async def client(request: Request) -> Response:
        return Response(_static("turnkit.js"), media_type="text/javascript; charset=utf-8")

    async def demo(request: Request) -> Response:
        return Response(_static("demo.html"), media_type="text/html; charset=utf-8")

    return [
        Route("/v1/streams", create, methods=["POST"]),
        Route("/v1/streams/{run_id}/events", events, methods=["GET"]),
        Route("/v1/streams/{run_id}/cancel", cancel, methods=["POST"]),
        Route("/v1/streams/{run_id}", status, methods=["GET"]),
        Route("/turnkit.js", client, methods=["GET"]),
        Route("/static/turnkit.js", client, methods=["GET"]),
        Route("/demo", demo, methods=["GET"]),
    ]
