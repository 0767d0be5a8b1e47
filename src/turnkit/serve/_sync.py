"""Runs that outlive their connections: seq-numbered events, a bounded replay log, per-subscriber backpressure.

Transport-agnostic (plain Python + asyncio, no web framework), so it is tested without a server. The
HTTP layer maps a :class:`SyncEvent` to one SSE event: ``event: <kind>``, ``id: <seq>``,
``data: <data>`` (see docs/sync.md).

* A :class:`SyncRun` publishes one :class:`~turnkit.structured.JsonStream` or
  :class:`~turnkit.structured.StructuredStream` (or raw operations) under an id. Every non-empty batch
  of operations is a ``patch`` event with the next ``seq``; the run ends with one ``end`` event (its own
  ``seq``) carrying the validated final value or the typed error. A ``snapshot`` event carries the
  client's whole value at the current ``seq`` (it takes no seq of its own).
* The replay log keeps the latest patches, bounded by count and by characters of JSON;
  :meth:`SyncRun.events_after` returns exactly the events after a seq, or ``None`` when they were
  evicted (the caller then sends a snapshot).
* Each :class:`SyncSubscription` has a bounded buffer: a subscriber that falls behind gets its
  pending patches coalesced into fewer, larger ones (:func:`~turnkit.structured.coalesce_ops`), and
  once the buffer would exceed its byte bound it is dropped and the subscriber gets a fresh snapshot
  instead. Memory per subscriber never grows with the stream.
* A :class:`SyncRegistry` creates, finds, cancels and expires runs (finished runs stay readable for a TTL).

Everything runs on one event loop's thread: ``publish`` and friends are plain calls that wake the
subscriptions waiting in that loop.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
import uuid
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from turnkit._json import escape_token, json_copy, split_pointer
from turnkit.errors import LimitExceededError, TurnkitError, UsageError
from turnkit.structured import (
    JsonStream,
    Op,
    OpEncoder,
    PartialMarkers,
    Rfc6902Downgrader,
    StructuredStream,
    coalesce_ops,
)
from turnkit.structured._live_document import LiveDocument
from turnkit.structured._transforms import FunctionTransform, Transform
from turnkit.structured._wire import _encode_str, _Shared, _value_json

__all__ = [
    "SyncEvent",
    "SyncRegistry",
    "SyncRun",
    "SyncSubscription",
    "error_payload",
    "parse_last_event_id",
]

EventKind = Literal["snapshot", "patch", "end"]
Protocol = Literal["turnkit", "json-patch"]
Encoding = Literal["ops", "compact"]


class SyncEvent:
    """One event: ``kind`` (``snapshot`` / ``patch`` / ``end``), ``seq`` and ``payload``.

    ``payload`` is the client value (snapshot), the list of operations (patch), or ``{"value": v}`` /
    ``{"error": {...}}`` (end). ``data`` is its compact JSON (non-ASCII kept, a float too large for JSON
    written as ``1e999``), computed once and shared by every subscriber. Treat both as read-only.
    """

    __slots__ = ("_compact", "_data", "kind", "payload", "seq")

    def __init__(self, seq: int, kind: EventKind, payload: Any, data: str | None = None) -> None:
        self.seq = seq
        self.kind = kind
        self.payload = payload
        self._data = data
        self._compact: _Shared | None = None

    @property
    def data(self) -> str:
        data = self._data
        if data is None:
            payload = self.payload
            if self.kind == "patch" and len(payload) == 1:  # the usual batch: one op with a string value
                op = payload[0]
                name, path, value = op.get("op"), op.get("path"), op.get("value")
                if len(op) == 3 and type(name) is str and type(path) is str and type(value) is str:
                    data = f'[{{"op":{_encode_str(name)},"path":{_encode_str(path)},"value":{_encode_str(value)}}}]'
            if data is None:
                data = _value_json(payload)
            self._data = data
        return data

    def compact(self, encoder: OpEncoder) -> str:
        """The patch in ``encoder``'s wire form (advancing it); written once for all the subscribers whose
        encoders are in the same state, which is every subscriber that received the same events."""
        text, self._compact = encoder._encode_shared(self.payload, self._compact)
        return text

    @property
    def id(self) -> str:
        """The SSE ``id`` field: the seq in decimal."""
        return str(self.seq)

    def __repr__(self) -> str:
        return f"SyncEvent({self.seq}, {self.kind!r}, {self.payload!r})"


def parse_last_event_id(value: str | None) -> int | None:
    """The seq in a ``Last-Event-ID`` header or ``?lastEventId=`` value (``"12"`` or ``"<run>:12"``); else None."""
    if not value:
        return None
    tail = value.rpartition(":")[2].strip()
    if not tail.isdigit() or not tail.isascii() or len(tail) > 18:
        return None
    return int(tail)


def error_payload(error: BaseException | dict[str, Any]) -> dict[str, Any]:
    """The ``error`` member of an ``end`` event: ``code`` and ``message``, plus ``position`` / ``pointer`` if known."""
    if isinstance(error, dict):
        out = dict(error)
        out.setdefault("code", "error")
        out.setdefault("message", str(out["code"]))
        return out
    if isinstance(error, TurnkitError):
        out = {"code": error.code, "message": error.message}
        if error.position is not None:
            out["position"] = error.position
        if error.pointer is not None:
            out["pointer"] = error.pointer
        return out
    return {"code": "internal_error", "message": f"{type(error).__name__}: {error}"}


def _merge(events: Sequence[SyncEvent]) -> SyncEvent:
    """Consecutive patch events as one (the last seq): fewer, larger patches with the same effect."""
    if len(events) == 1:
        return events[0]
    ops: list[Op] = []
    for event in events:
        ops.extend(event.payload)
    return SyncEvent(events[-1].seq, "patch", coalesce_ops(ops))


_MISSING: Any = object()


class SyncRun:
    """One published stream: ``feed`` / ``publish`` on the producer side, ``subscribe`` / ``events_after`` to read.

    ``source`` is a :class:`JsonStream`, a :class:`StructuredStream` or ``None`` (raw operations via
    :meth:`publish`). ``markers=True`` (a ``JsonStream`` only) adds the ``$partial`` marker operations
    (:class:`~turnkit.structured.PartialMarkers`): clients then hold exactly ``annotated()``.
    """

    def __init__(
        self,
        run_id: str | None = None,
        source: JsonStream | StructuredStream[Any] | None = None,
        *,
        markers: bool = False,
        max_log_events: int = 4096,
        max_log_bytes: int = 4 << 20,
        subscriber_events: int = 64,
        subscriber_bytes: int = 1 << 20,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_log_events < 0 or max_log_bytes < 0 or subscriber_events < 1 or subscriber_bytes < 1:
            raise UsageError("SyncRun bounds must be positive")
        self.id = run_id if run_id is not None else uuid.uuid4().hex
        # A capability to read this run's events without the server's API key (``?token=``): EventSource
        # cannot send an Authorization header.
        self.token = secrets.token_urlsafe(18)
        self._marked: PartialMarkers | None = None
        self._open_marks: dict[str, dict[str, bool]] | None = None  # markers=True on a StructuredStream
        if markers:
            if isinstance(source, JsonStream):
                self._marked = PartialMarkers(source)
            elif isinstance(source, StructuredStream):
                self._open_marks = {}
            else:
                raise UsageError("markers=True needs a JsonStream or StructuredStream source")
        self._source = source
        self._doc = LiveDocument()
        self._seq = 0
        self._log: deque[SyncEvent] = deque()
        self._log_bytes = 0
        self._max_log_events = max_log_events
        self._max_log_bytes = max_log_bytes
        self.subscriber_events = subscriber_events
        self.subscriber_bytes = subscriber_bytes
        self._end: SyncEvent | None = None
        self._snapshot: SyncEvent | None = None  # cached snapshot of the current seq
        self._subscriptions: set[SyncSubscription] = set()
        self._cancel_callbacks: list[Callable[[], Any]] = []
        self._clock = clock
        self.created_at = clock()
        self.ended_at: float | None = None
        self.cancelled = False

    # ------------------------------------------------------------------ state

    @property
    def seq(self) -> int:
        """The seq of the last event (0 before any)."""
        return self._seq

    @property
    def done(self) -> bool:
        """Whether the run has ended (normally, with an error, or cancelled)."""
        return self._end is not None

    @property
    def end_event(self) -> SyncEvent | None:
        return self._end

    @property
    def value(self) -> Any:
        """The client value at the current seq. Live: treat it as read-only."""
        return self._doc.value

    @property
    def log_span(self) -> tuple[int, int]:
        """``(first, last)`` seq of the patches still in the log (``(seq + 1, seq)`` when it is empty)."""
        if not self._log:
            return self._seq + 1, self._seq
        return self._log[0].seq, self._log[-1].seq

    @property
    def log_bytes(self) -> int:
        """Characters of JSON held by the log."""
        return self._log_bytes

    @property
    def subscribers(self) -> int:
        return len(self._subscriptions)

    def snapshot(self) -> SyncEvent:
        """A ``snapshot`` event of the client value at the current seq (a copy, cached per seq)."""
        seq = self._seq if self._end is None else self._end.seq - 1  # the state the last patch left
        cached = self._snapshot
        if cached is None or cached.seq != seq:
            cached = self._snapshot = SyncEvent(seq, "snapshot", json_copy(self._doc.value))
        return cached

    def events_after(self, seq: int) -> list[SyncEvent] | None:
        """Exactly the events after ``seq`` (patches, then the end if the run ended); ``None`` when some
        were evicted from the log, or ``seq`` is not one of this run's (the caller sends a snapshot)."""
        last = self._seq
        if seq < 0 or seq > last:
            return None
        end = self._end
        patches_last = end.seq - 1 if end is not None else last
        events: list[SyncEvent] = []
        if seq < patches_last:
            log = self._log
            if not log or log[0].seq > seq + 1:
                return None
            events = list(itertools.islice(log, seq + 1 - log[0].seq, None))
        if end is not None and seq < end.seq:
            events.append(end)
        return events

    # ------------------------------------------------------------------ producing

    def feed(self, text: str) -> int:
        """Feed the source the next piece of model output and publish its operations; returns the seq.

        A parse error ends the run with the typed error (and is raised)."""
        source = self._source
        if source is None:
            raise UsageError("this run has no source: publish() operations instead")
        self._check_open()
        try:
            ops = self._marked.feed(text) if self._marked is not None else source.feed(text)
        except TurnkitError as exc:
            self.fail(exc)
            raise
        if self._open_marks is not None:
            return self._publish_marked(ops)
        return self.publish(ops)

    def publish(self, ops: Sequence[Op]) -> int:
        """Publish one batch of operations (applied to the client value); returns its seq (unchanged if empty).

        Raw operations are checked by applying them: one that does not apply raises JsonPatchError and
        ends the run with that error (the client value is no longer a consistent document)."""
        self._check_open()
        if not ops:
            return self._seq
        ops = list(ops)
        apply = self._doc.apply
        try:
            for op in ops:
                apply(op)
        except TurnkitError as exc:
            self.fail(exc)
            raise
        return self._emit(ops)

    def _emit(self, ops: list[Op]) -> int:
        """Publish operations already applied to the client value."""
        self._seq += 1
        event = SyncEvent(self._seq, "patch", ops)
        size = len(event.data)
        log = self._log
        log.append(event)
        self._log_bytes += size
        while log and (len(log) > self._max_log_events or self._log_bytes > self._max_log_bytes):
            self._log_bytes -= len(log.popleft().data)
        for subscription in self._subscriptions:
            subscription._push(event)
        return self._seq

    def close(self, value: Any = _MISSING) -> SyncEvent:
        """End of the model output: the source's last operations, then ``end`` with the final value.

        The final value is a StructuredStream's validated ``result`` (a model dumped as JSON), a
        JsonStream's value, or for raw runs ``value`` (default: the client value). An unfinished
        document ends the run with the error (and raises it)."""
        self._check_open()
        source = self._source
        if source is not None:
            try:
                ops = self._marked.close() if self._marked is not None else source.close()
            except TurnkitError as exc:
                self.fail(exc)
                raise
            if self._open_marks is not None:
                self._publish_marked(ops)
            else:
                self.publish(ops)
            if value is _MISSING:
                if isinstance(source, StructuredStream):
                    value = source.result
                    if isinstance(value, BaseModel):
                        value = value.model_dump(mode="json")
                else:
                    value = source.value
        if value is _MISSING:
            value = json_copy(self._doc.value)
        return self._finish({"value": value})

    def fail(self, error: BaseException | dict[str, Any]) -> SyncEvent:
        """End the run with an error (a TurnkitError's code, message, position, pointer)."""
        if self._end is not None:
            return self._end
        return self._finish({"error": error_payload(error)})

    def cancel(self, reason: str = "cancelled by the client") -> bool:
        """Stop the run: ends it with ``{"error": {"code": "cancelled"}}`` and calls the cancel callbacks
        (e.g. cancelling the task that reads the backend). False if it had already ended."""
        if self._end is not None:
            return False
        self.cancelled = True
        self._finish({"error": {"code": "cancelled", "message": reason}})
        callbacks, self._cancel_callbacks = self._cancel_callbacks, []
        for callback in callbacks:
            callback()
        return True

    def on_cancel(self, callback: Callable[[], Any]) -> None:
        """Call ``callback()`` when the run is cancelled."""
        self._cancel_callbacks.append(callback)

    async def pump(self, chunks: AsyncIterable[str] | Iterable[str]) -> SyncEvent:
        """Feed every chunk, then close; an exception from ``chunks`` ends the run with an error.

        Cancelling the task that runs it cancels the run (``code: cancelled``)."""
        try:
            if isinstance(chunks, AsyncIterable):
                async for chunk in chunks:
                    if self._end is not None:
                        break
                    self.feed(chunk)
            else:
                for chunk in chunks:
                    if self._end is not None:
                        break
                    self.feed(chunk)
                    await asyncio.sleep(0)
            if self._end is None:
                self.close()
        except asyncio.CancelledError:
            self.cancel("the producer was cancelled")
            raise
        except TurnkitError:
            if self._end is None:
                raise
        except Exception as exc:
            self.fail(exc)
        assert self._end is not None
        return self._end

    def start(self, chunks: AsyncIterable[str] | Iterable[str]) -> asyncio.Task[SyncEvent]:
        """Run :meth:`pump` as a task of the running loop; cancelling the run cancels the task."""
        task = asyncio.ensure_future(self.pump(chunks))
        self.on_cancel(task.cancel)
        return task

    # ------------------------------------------------------------------ reading

    def subscribe(
        self, last_seq: int | None = None, *, protocol: Protocol = "turnkit", encoding: Encoding = "ops"
    ) -> SyncSubscription:
        """A subscription from ``last_seq`` (the client's Last-Event-ID): the events after it when the log
        still has them, else a snapshot first. ``None`` (a new client) starts with a snapshot.

        ``protocol="json-patch"`` downgrades ``append`` to RFC 6902 ``replace`` per subscriber; it always
        starts from a snapshot (the server does not keep the client documents of past seqs).

        ``encoding="compact"`` writes each patch's data in :class:`~turnkit.structured.OpEncoder`'s wire
        form (about 7x smaller), its carried op and path starting fresh with the subscription (one
        connection) and after every snapshot; a client decodes with one OpDecoder per connection, reset
        at each snapshot (turnkit.js does)."""
        if protocol not in ("turnkit", "json-patch"):
            raise UsageError(f"unknown sync protocol {protocol!r}")
        if encoding not in ("ops", "compact"):
            raise UsageError(f"unknown sync encoding {encoding!r}")
        replay = None
        if last_seq is not None and protocol == "turnkit":
            replay = self.events_after(last_seq)
        subscription = SyncSubscription(self, replay, protocol, encoding)
        self._subscriptions.add(subscription)
        return subscription

    # ------------------------------------------------------------------ internals

    def _publish_marked(self, ops: Sequence[Op]) -> int:
        """``ops`` of a StructuredStream plus ``$partial`` markers on the open objects of the model's
        document that the client value has at the same pointer (no transform, or one with keep=True).

        As with PartialMarkers: markers of objects that closed are removed before the value operations,
        new and changed ones are set (``add``) after them."""
        source = self._source
        marks = self._open_marks
        assert isinstance(source, StructuredStream) and marks is not None
        incomplete = source.incomplete
        wanted: dict[str, dict[str, bool]] = {}
        for i, pointer in enumerate(incomplete):
            member = split_pointer(incomplete[i + 1])[-1] if i + 1 < len(incomplete) else None
            wanted[pointer] = {member: True} if member is not None else {}
        doc = self._doc
        out: list[Op] = []
        try:
            for pointer in list(marks):
                if pointer not in wanted:
                    del marks[pointer]
                    node = _resolve(doc.value, pointer)
                    if isinstance(node, dict) and _MARKER in node:
                        op: Op = {"op": "remove", "path": pointer + _MARKER_TOKEN}
                        doc.apply(op)
                        out.append(op)
            for op in ops:
                doc.apply(op)
                out.append(op)
            for pointer, mark in wanted.items():
                node = _resolve(doc.value, pointer)
                if not isinstance(node, dict):
                    marks.pop(pointer, None)
                    continue
                marks[pointer] = mark
                if node.get(_MARKER) != mark:
                    op = {"op": "add", "path": pointer + _MARKER_TOKEN, "value": dict(mark)}
                    doc.apply(op)
                    out.append(op)
        except TurnkitError as exc:
            self.fail(exc)
            raise
        if not out:
            return self._seq
        return self._emit(out)

    def _check_open(self) -> None:
        if self._end is not None:
            raise UsageError(f"run {self.id} has ended", code="run_ended")

    def _finish(self, payload: dict[str, Any]) -> SyncEvent:
        self._seq += 1
        end = self._end = SyncEvent(self._seq, "end", payload)
        self.ended_at = self._clock()
        for subscription in self._subscriptions:
            subscription._push(end)
        return end

    def _unsubscribe(self, subscription: SyncSubscription) -> None:
        self._subscriptions.discard(subscription)


_MARKER = "$partial"
_MARKER_TOKEN = "/" + escape_token(_MARKER)


def _resolve(doc: Any, pointer: str) -> Any:
    """The value at ``pointer`` in ``doc``, or None."""
    node = doc
    if pointer == "":
        return node
    for token in split_pointer(pointer):
        if isinstance(node, dict):
            node = node.get(token)
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


class SyncSubscription:
    """What one client receives: ``async for event in subscription`` until (and including) ``end``.

    :meth:`ready` returns what is deliverable now without waiting (snapshot, patches merged into one,
    end). The buffer holds at most ``run.subscriber_events`` events (more are coalesced) and
    ``run.subscriber_bytes`` characters of JSON (more drops it: the next event is a snapshot);
    :attr:`overruns` counts those fallbacks.
    """

    def __init__(
        self, run: SyncRun, replay: list[SyncEvent] | None, protocol: Protocol, encoding: Encoding = "ops"
    ) -> None:
        self._run = run
        self._protocol = protocol
        self._encoder = OpEncoder() if encoding == "compact" else None
        self._pending: deque[SyncEvent] = deque()
        self._bytes = 0
        self._needs_snapshot = replay is None
        self._end: SyncEvent | None = None
        self._end_sent = False
        self._closed = False
        self._wake = asyncio.Event()
        self._listener: Callable[[], None] | None = None
        self._downgrader: Rfc6902Downgrader | None = None
        self.overruns = 0
        self.coalesced = 0
        self.last_seq: int | None = None  # the seq of the last event handed out
        if replay is not None:
            for event in replay:
                self._push(event)
        if run.end_event is not None:  # (sent again to a client that had it: it learns the run is over)
            self._end = run.end_event

    @property
    def pending_bytes(self) -> int:
        """Characters of JSON buffered for this subscriber (bounded by ``run.subscriber_bytes``)."""
        return self._bytes

    @property
    def done(self) -> bool:
        """True once ``end`` was handed out or the subscription was closed: nothing more will come."""
        return self._closed or self._end_sent

    @property
    def pending_events(self) -> int:
        return len(self._pending)

    def _push(self, event: SyncEvent) -> None:
        if self._closed:
            return
        if event.kind == "end":
            self._end = event
        elif not self._needs_snapshot:  # (a snapshot to come covers every patch before it)
            pending = self._pending
            pending.append(event)
            self._bytes += len(event.data)
            run = self._run
            if len(pending) > run.subscriber_events and self._bytes <= run.subscriber_bytes:
                merged = _merge(pending)
                pending.clear()
                pending.append(merged)
                self._bytes = len(merged.data)
                self.coalesced += 1
            if self._bytes > run.subscriber_bytes:
                pending.clear()
                self._bytes = 0
                self._needs_snapshot = True
                self.overruns += 1
        self._wake.set()
        if self._listener is not None:
            self._listener()

    def on_ready(self, listener: Callable[[], None] | None) -> None:
        """Call ``listener()`` whenever events become deliverable, for a writer that takes them with
        :meth:`ready` (the HTTP layer writes every such subscription once per loop tick) instead of a task
        per subscription awaiting :meth:`next_events`. It must not block: it only schedules the write."""
        self._listener = listener

    def ready(self) -> list[SyncEvent]:
        """The events deliverable now, in order: a snapshot if due, the pending patches merged into
        one, the end; ``[]`` when there is nothing new."""
        out: list[SyncEvent] = []
        if self._closed or self._end_sent:
            return out
        if self._needs_snapshot:
            self._needs_snapshot = False
            self._pending.clear()
            self._bytes = 0
            out.append(self._deliver(self._run.snapshot()))
        if self._pending:
            merged = _merge(self._pending)
            self._pending.clear()
            self._bytes = 0
            out.append(self._deliver(merged))
        if self._end is not None:
            self._end_sent = True
            out.append(self._deliver(self._end))
            self.close()
        return out

    def _deliver(self, event: SyncEvent) -> SyncEvent:
        self.last_seq = event.seq
        if event.kind == "end":
            return event
        if event.kind == "snapshot":
            if self._protocol == "json-patch":
                self._downgrader = Rfc6902Downgrader(event.payload)
            if self._encoder is not None:
                self._encoder = OpEncoder()
            return event
        if self._downgrader is not None:
            event = SyncEvent(event.seq, "patch", self._downgrader.downgrade(event.payload))
        if self._encoder is not None:
            event = SyncEvent(event.seq, "patch", event.payload, event.compact(self._encoder))
        return event

    async def next_events(self) -> list[SyncEvent]:
        """Wait until something is deliverable and return it (``[]`` once the end was delivered or closed)."""
        while True:
            self._wake.clear()
            events = self.ready()
            if events or self._closed or self._end_sent:
                return events
            await self._wake.wait()

    def __aiter__(self) -> AsyncIterator[SyncEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[SyncEvent]:
        while True:
            events = await self.next_events()
            if not events:
                return
            for event in events:
                yield event

    def close(self) -> None:
        """Stop receiving (the client went away); the run goes on."""
        self._closed = True
        self._pending.clear()
        self._bytes = 0
        self._run._unsubscribe(self)
        self._wake.set()


class SyncRegistry:
    """Runs by id: ``create`` / ``get`` / ``cancel`` / ``expire``. Finished runs stay readable for ``ttl``
    seconds; at most ``max_runs`` are kept (the oldest finished ones go first; when all are live,
    creating one more is a LimitExceededError). ``run_options`` are passed to every :class:`SyncRun`.

    ``transforms`` names the transforms a client may ask for (``"transform": NAME`` in ``POST /v1/streams``);
    add more with :meth:`add_transform`."""

    def __init__(
        self,
        *,
        ttl: float = 300.0,
        max_runs: int = 1024,
        clock: Callable[[], float] = time.monotonic,
        transforms: Mapping[str, Transform | FunctionTransform] | None = None,
        **run_options: Any,
    ) -> None:
        self.transforms: dict[str, Transform | FunctionTransform] = dict(transforms or {})
        self.ttl = ttl
        self.max_runs = max_runs
        self._clock = clock
        self._run_options = run_options
        self._runs: dict[str, SyncRun] = {}
        self._next_expire = -float("inf")

    def create(
        self,
        source: JsonStream | StructuredStream[Any] | None = None,
        *,
        run_id: str | None = None,
        markers: bool = False,
        **options: Any,
    ) -> SyncRun:
        """A new run, registered under ``run_id`` (default: a random hex id)."""
        now = self._clock()
        if now >= self._next_expire:  # (a scan of every run: at most once a second, not per create)
            self._next_expire = now + min(1.0, self.ttl)
            self.expire()
        if run_id is not None and run_id in self._runs:
            raise UsageError(f"a run with id {run_id!r} exists", code="run_exists")
        if len(self._runs) >= self.max_runs:
            finished = sorted((r for r in self._runs.values() if r.ended_at is not None), key=lambda r: r.ended_at or 0)
            for run in finished[: len(self._runs) - self.max_runs + 1]:
                del self._runs[run.id]
            if len(self._runs) >= self.max_runs:
                raise LimitExceededError(f"more than max_runs={self.max_runs} live runs", code="too_many_runs")
        run = SyncRun(run_id, source, markers=markers, clock=self._clock, **{**self._run_options, **options})
        self._runs[run.id] = run
        return run

    def add_transform(self, name: str, transform: Transform | FunctionTransform) -> None:
        """Register a transform under ``name`` (what ``"transform": name`` in a request selects)."""
        self.transforms[name] = transform

    def get(self, run_id: str) -> SyncRun | None:
        """The run, or None (unknown, or finished more than ``ttl`` seconds ago)."""
        run = self._runs.get(run_id)
        if run is not None and self._expired(run, self._clock()):
            del self._runs[run_id]
            return None
        return run

    def cancel(self, run_id: str) -> bool:
        """Cancel a live run; False when it is unknown or already ended."""
        run = self.get(run_id)
        return run.cancel() if run is not None else False

    def expire(self) -> list[str]:
        """Forget runs that finished more than ``ttl`` seconds ago; returns their ids."""
        now = self._clock()
        gone = [run_id for run_id, run in self._runs.items() if self._expired(run, now)]
        for run_id in gone:
            del self._runs[run_id]
        return gone

    def _expired(self, run: SyncRun, now: float) -> bool:
        return run.ended_at is not None and now - run.ended_at > self.ttl

    def __len__(self) -> int:
        return len(self._runs)

    def __contains__(self, run_id: object) -> bool:
        return isinstance(run_id, str) and self.get(run_id) is not None

    def __iter__(self) -> Iterator[SyncRun]:
        return iter(list(self._runs.values()))
