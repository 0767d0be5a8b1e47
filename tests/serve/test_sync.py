"""SyncRun / SyncRegistry: seq-numbered events, replay after a disconnect, eviction, backpressure, end, cancel."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import jsonpatch  # type: ignore[import-untyped]
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.structured.test_properties import _chunked
from turnkit.errors import IncompleteInputError, JsonPatchError, LimitExceededError, ParseError, UsageError
from turnkit.serve._sync import SyncEvent, SyncRegistry, SyncRun, parse_last_event_id
from turnkit.structured import JsonStream, OpDecoder, StructuredStream, apply_patch


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


class Client:
    """A client as docs/sync.md describes it: snapshot replaces, patch applies, end ends; remembers the last id."""

    def __init__(self, compact: bool = False) -> None:
        self.decoder = OpDecoder() if compact else None
        self.doc: Any = None
        self.last: int | None = None
        self.end: Any = None
        self.kinds: list[str] = []

    def connect(self) -> None:
        if self.decoder is not None:
            self.decoder = OpDecoder()  # the compact form starts afresh on every connection

    def take(self, events: list[SyncEvent]) -> None:
        for event in events:
            if event.kind == "patch" and self.decoder is not None:
                data: Any = self.decoder.decode(event.data)
            else:
                data = json.loads(event.data)  # through the wire text, as a browser gets it
            if event.kind == "snapshot":
                self.connect()
                self.doc = data
            elif event.kind == "patch":
                assert self.last is not None and event.seq > self.last
                self.doc = apply_patch(self.doc, data)
            else:
                self.end = data
            self.kinds.append(event.kind)
            self.last = event.seq


def _uninterrupted(pieces: list[str], markers: bool) -> tuple[Any, Any]:
    """(client value, end payload) of the same stream read by a client that never disconnects."""
    run = SyncRun(source=JsonStream(), markers=markers)
    client = Client()
    sub = run.subscribe()
    for piece in pieces:
        try:
            run.feed(piece)
        except Exception:
            break
        client.take(sub.ready())
    if not run.done:
        try:
            run.close()
        except Exception:
            pass
    client.take(sub.ready())
    assert _canon(client.doc) == _canon(run.value)
    return client.doc, client.end


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _chunked(),
    st.lists(st.sampled_from(["read", "read", "read", "drop", "resume", "none"]), min_size=1, max_size=60),
    st.integers(1, 40),
    st.booleans(),
    st.booleans(),
)
def test_resume_from_last_seq_rebuilds_the_uninterrupted_value(
    doc: tuple[str, list[str]], actions: list[str], log_events: int, markers: bool, compact: bool
) -> None:
    pieces = doc[1]
    expected_doc, expected_end = _uninterrupted(pieces, markers)
    run = SyncRun(source=JsonStream(), markers=markers, max_log_events=log_events, subscriber_events=3)
    encoding: Any = "compact" if compact else "ops"
    client = Client(compact)
    sub = run.subscribe(encoding=encoding)
    for i, piece in enumerate(pieces):
        action = actions[i % len(actions)]
        if action == "drop" and sub is not None:
            sub.close()
            sub = None
        elif action == "resume" and sub is None:
            replay = run.events_after(client.last) if client.last is not None else None
            client.connect()
            sub = run.subscribe(client.last, encoding=encoding)
            events = sub.ready()
            if replay is None:  # evicted (or never connected): a fresh snapshot first
                assert events and events[0].kind == "snapshot"
            else:
                assert [e.seq for e in events if e.kind != "end"] == ([replay[-1].seq] if events else [])
            client.take(events)
        try:
            run.feed(piece)
        except Exception:
            break
        if action == "read" and sub is not None:
            client.take(sub.ready())
    if not run.done:
        try:
            run.close()
        except Exception:
            pass
    if sub is None:
        client.connect()
        sub = run.subscribe(client.last, encoding=encoding)
    client.take(sub.ready())
    assert _canon(client.doc) == _canon(expected_doc) == _canon(run.value)
    assert client.end == expected_end
    assert client.kinds[-1] == "end" and sub.ready() == []


def test_compact_patches_are_written_once_for_subscribers_in_step() -> None:
    """Subscribers that received the same events share each patch's wire text; one that joined later
    (its encoder fresh after its snapshot) writes its own until it is in step; every client decodes right."""
    run = SyncRun(source=JsonStream())
    subs = [run.subscribe(encoding="compact") for _ in range(3)]
    clients = [Client(compact=True) for _ in subs]
    pieces = ['{"a": "x', 'y", "b": [1, ', '2], "c": {"d": "', 'e"', ', "f": [true]}}']
    for i, piece in enumerate([*pieces, None]):
        if i == 2:
            subs.insert(0, run.subscribe(encoding="compact"))  # read first: it encodes each event first
            clients.insert(0, Client(compact=True))
        if piece is None:
            run.close()
        else:
            run.feed(piece)
        delivered = [sub.ready() for sub in subs]
        for client, events in zip(clients, delivered, strict=True):
            client.take(events)
        texts = [[e.data for e in events if e.kind == "patch"] for events in delivered]
        if 0 < i < len(pieces):  # (a first read is the snapshot; the document ended with the last piece)
            assert texts[-1] and texts[-2][0] is texts[-1][0]  # the last in-step subscriber wrote nothing
    assert all(_canon(client.doc) == _canon(run.value) for client in clients)


def test_events_after_is_exact_and_none_when_evicted() -> None:
    run = SyncRun(source=JsonStream(), max_log_events=3)
    for piece in ['{"a": "', "x", "y", "z", "w", "v", '"}']:
        run.feed(piece)
    assert run.seq == 6 and run.log_span == (4, 6)
    assert [e.seq for e in run.events_after(3) or []] == [4, 5, 6]
    assert run.events_after(5) is not None and [e.seq for e in run.events_after(5) or []] == [6]
    assert run.events_after(6) == []
    assert run.events_after(2) is None  # evicted
    assert run.events_after(7) is None and run.events_after(-1) is None  # not this run's
    end = run.close()
    assert end.seq == 7 and end.payload == {"value": {"a": "xyzwv"}}
    assert [e.kind for e in run.events_after(6) or []] == ["end"]
    assert run.snapshot().seq == 6  # the state after the last patch


def test_evicted_resume_gets_a_snapshot_then_live_patches() -> None:
    run = SyncRun(source=JsonStream(), max_log_events=2)
    client = Client()
    client.take(run.subscribe().ready())
    run.feed('{"t": "a')
    sub = run.subscribe(client.last)
    client.take(sub.ready())
    sub.close()
    for piece in "bcdefg":
        run.feed(piece)
    sub = run.subscribe(client.last)
    events = sub.ready()
    assert [e.kind for e in events] == ["snapshot"] and events[0].seq == run.seq
    client.take(events)
    run.feed('h"}')
    client.take(sub.ready())
    assert client.doc == {"t": "abcdefgh"}


def test_log_is_bounded_by_bytes() -> None:
    run = SyncRun(source=JsonStream(), max_log_bytes=500)
    run.feed('{"t": "')
    for _ in range(1000):
        run.feed("abcdefgh")
        assert run.log_bytes <= 500
    first, last = run.log_span
    assert last == run.seq and 0 < last - first < 100


def test_slow_subscriber_memory_is_bounded_and_it_catches_up() -> None:
    run = SyncRun(source=JsonStream(), subscriber_events=8, subscriber_bytes=4_000)
    fast, slow = Client(), Client()
    fast_sub, slow_sub = run.subscribe(), run.subscribe()
    fast.take(fast_sub.ready())
    slow.take(slow_sub.ready())
    text = json.dumps({"story": "x" * 50_000, "items": [{"k": i, "v": "y" * 30} for i in range(300)]})
    for i in range(0, len(text), 5):
        run.feed(text[i : i + 5])
        fast.take(fast_sub.ready())
        assert slow_sub.pending_bytes <= 4_000 and slow_sub.pending_events <= 9
    assert slow_sub.overruns > 0
    run.close()
    slow.take(slow_sub.ready())
    fast.take(fast_sub.ready())
    assert slow.doc == fast.doc == json.loads(text)
    assert slow.kinds[1] == "snapshot" and len(slow.kinds) <= 4  # one snapshot, maybe one patch, the end
    assert len(fast.kinds) > 1000


def test_slow_subscriber_gets_fewer_larger_patches() -> None:
    run = SyncRun(source=JsonStream(), subscriber_events=4)
    sub = run.subscribe()
    client = Client()
    client.take(sub.ready())
    run.feed('{"a": ["')
    for piece in ["x", "y", '", "', "z", '"], "b": 1', ", "]:
        run.feed(piece)
    assert sub.pending_events <= 4 and sub.coalesced > 0
    events = sub.ready()
    assert len(events) == 1 and events[0].seq == run.seq
    client.take(events)
    assert client.doc == {"a": ["xy", "z"], "b": 1}
    assert events[0].payload == [{"op": "add", "path": "", "value": {"a": ["xy", "z"], "b": 1}}]


def test_end_carries_the_validated_value_or_the_typed_error() -> None:
    class Post(BaseModel):
        title: str
        n: int = 0

    run = SyncRun(source=StructuredStream(Post))
    run.feed('{"title": "Hi", "n": 3}')
    assert run.close().payload == {"value": {"title": "Hi", "n": 3}}

    bad = SyncRun(source=JsonStream())
    with pytest.raises(ParseError):
        bad.feed('{"a": tru, ')
    assert bad.done
    error = bad.end_event.payload["error"] if bad.end_event else None
    assert (
        error is not None and error["code"] == "json_syntax" and error["position"] == 9
    )  # the "," after "tru": the first character no completion allows

    short = SyncRun(source=JsonStream())
    short.feed('{"a": [1, ')
    with pytest.raises(IncompleteInputError):
        short.close()
    error = short.end_event.payload["error"] if short.end_event else None
    assert error is not None and error["code"] == "json_incomplete" and error["pointer"] == "/a"
    with pytest.raises(UsageError):
        short.feed("2]}")


def test_raw_runs_publish_ops_and_refuse_bad_ones() -> None:
    run = SyncRun()
    assert run.publish([]) == 0
    assert run.publish([{"op": "add", "path": "", "value": {"n": 1e400}}]) == 1
    assert json.loads(run.snapshot().data) == {"n": float("inf")}
    with pytest.raises(JsonPatchError):
        run.publish([{"op": "append", "path": "/n", "value": "x"}])
    assert run.done and run.end_event is not None and "error" in run.end_event.payload
    finished = SyncRun()
    finished.publish([{"op": "add", "path": "", "value": [1]}])
    assert finished.close().payload == {"value": [1]}


def test_markers_need_a_json_stream() -> None:
    with pytest.raises(UsageError):
        SyncRun(source=None, markers=True)


def test_json_patch_protocol_downgrades_append() -> None:
    run = SyncRun(source=JsonStream(), markers=True)
    sub = run.subscribe(protocol="json-patch")
    doc: Any = None
    for piece in ['{"t": "He', "ll", 'o", "u": [', '"a', '"]}']:
        run.feed(piece)
        for event in sub.ready():
            data = json.loads(event.data)
            if event.kind == "snapshot":
                doc = data
            else:
                assert all(op["op"] != "append" for op in data)
                doc = jsonpatch.apply_patch(doc, data)
        assert _canon(doc) == _canon(run.value)
    assert run.subscribe(3, protocol="json-patch").ready()[0].kind == "snapshot"


def test_cancel_ends_the_run_and_calls_back() -> None:
    run = SyncRun(source=JsonStream())
    called: list[int] = []
    run.on_cancel(lambda: called.append(1))
    sub = run.subscribe()
    assert run.cancel()
    assert not run.cancel() and called == [1] and run.cancelled
    events = sub.ready()
    assert events[-1].kind == "end" and events[-1].payload["error"]["code"] == "cancelled"


def test_registry_create_get_cancel_expire() -> None:
    now = [0.0]
    registry = SyncRegistry(ttl=10, max_runs=2, clock=lambda: now[0], max_log_events=5)
    a = registry.create(JsonStream(), run_id="a")
    assert registry.get("a") is a and "a" in registry and len(registry) == 1
    with pytest.raises(UsageError):
        registry.create(run_id="a")
    b = registry.create()
    with pytest.raises(LimitExceededError):
        registry.create()  # two live runs
    assert registry.cancel(b.id) and not registry.cancel(b.id) and not registry.cancel("nope")
    c = registry.create()  # the finished b makes room
    assert registry.get(b.id) is None and registry.get(c.id) is c
    a.feed("[1]")
    a.close()
    now[0] = 5.0
    assert registry.get("a") is a  # finished, readable within the TTL
    now[0] = 10.5
    assert registry.expire() == ["a"] and registry.get("a") is None
    assert [run.id for run in registry] == [c.id]


def test_parse_last_event_id() -> None:
    assert parse_last_event_id("12") == 12
    assert parse_last_event_id("run-1:7") == 7
    for bad in (None, "", "x", "-1", "1.5", "١٢", "9" * 40):
        assert parse_last_event_id(bad) is None


def test_async_subscribers_and_pump() -> None:
    text = json.dumps({"title": "Hello", "body": "w" * 2000, "tags": ["a", "b"]})

    async def source() -> Any:
        for i in range(0, len(text), 7):
            yield text[i : i + 7]
            await asyncio.sleep(0)

    async def read(run: SyncRun, delay: float) -> Client:
        client = Client()
        async for event in run.subscribe():
            client.take([event])
            if delay:
                await asyncio.sleep(delay)
        return client

    async def main() -> tuple[Client, Client, SyncEvent]:
        run = SyncRun(source=JsonStream(), subscriber_events=4)
        readers = [asyncio.create_task(read(run, 0)), asyncio.create_task(read(run, 0.002))]
        await asyncio.sleep(0)
        end = await run.start(source())
        fast, slow = await asyncio.gather(*readers)
        return fast, slow, end

    fast, slow, end = asyncio.run(main())
    assert fast.doc == slow.doc == json.loads(text) == end.payload["value"]
    assert len(slow.kinds) < len(fast.kinds)


def test_cancelling_the_producer_task_cancels_the_run() -> None:
    async def endless() -> Any:
        yield '{"t": "'
        while True:
            yield "x"
            await asyncio.sleep(0)

    async def main() -> SyncRun:
        run = SyncRun(source=JsonStream())
        task = run.start(endless())
        await asyncio.sleep(0.01)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return run

    run = asyncio.run(main())
    assert run.end_event is not None and run.end_event.payload["error"]["code"] == "cancelled"


def test_publishing_one_long_string_is_linear() -> None:
    import time

    def run_once(n: int) -> float:
        run = SyncRun(source=JsonStream())
        sub = run.subscribe()
        t0 = time.process_time()
        run.feed('{"story": "')
        for _ in range(n):
            run.feed("abcd")
            for event in sub.ready():
                event.data  # noqa: B018
        return time.process_time() - t0

    small = min(run_once(5_000) for _ in range(3))
    large = min(run_once(20_000) for _ in range(3))
    assert large < 8 * max(small, 1e-3), (small, large)  # quadratic would be ~16x


def test_structured_stream_runs_resume_to_the_same_value() -> None:
    """Policies and a transform change what the client sees; resuming still rebuilds it exactly."""
    import random
    from typing import Annotated

    from turnkit.structured import ItemsWhenComplete, PathMap, Transform, WhenComplete

    class Item(BaseModel):
        emoji: Annotated[str, WhenComplete()]
        text: str

    class Review(BaseModel):
        summaryV2: Annotated[list[Item], ItemsWhenComplete()]
        title: str = ""

    items = [{"emoji": "🍽️", "text": "음식이 맛있어요"}, {"emoji": "🏠", "text": "멋져요"}]
    text = json.dumps({"title": "맛집 리뷰", "summaryV2": items}, ensure_ascii=False)
    rng = random.Random(7)
    for trial in range(30):
        transform = Transform(PathMap("/summaryV2/*/text", "/summary/*")) if trial % 2 else None  # v1 from v2
        run = SyncRun(source=StructuredStream(Review, transform=transform), max_log_events=rng.choice([1, 3, 100]))
        client = Client()
        sub: Any = run.subscribe()
        i = 0
        while i < len(text):
            step = rng.randint(1, 6)
            run.feed(text[i : i + step])
            i += step
            roll = rng.random()
            if roll < 0.2 and sub is not None:
                sub.close()
                sub = None
            elif roll < 0.4 and sub is None:
                sub = run.subscribe(client.last)
            if sub is not None and rng.random() < 0.7:
                client.take(sub.ready())
        end = run.close()
        if sub is None:
            sub = run.subscribe(client.last)
        client.take(sub.ready())
        assert client.doc == run.value
        assert client.end == end.payload == {"value": Review.model_validate_json(text).model_dump(mode="json")}
        if transform is not None:
            assert client.doc["summary"] == ["음식이 맛있어요", "멋져요"]


def test_registry_create_scans_for_expired_runs_at_most_once_a_second() -> None:
    now = [0.0]
    registry = SyncRegistry(ttl=10, clock=lambda: now[0])
    scans = []
    original = registry.expire
    registry.expire = lambda: scans.append(now[0]) or original()  # type: ignore[method-assign]
    old = registry.create(run_id="old")
    old.close()
    for _ in range(100):
        registry.create()
    assert scans == [0.0]  # not once per create (a scan visits every run)
    now[0] = 10.5
    registry.create()
    assert scans == [0.0, 10.5] and "old" not in registry
