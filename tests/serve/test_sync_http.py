"""The sync endpoints over real HTTP (uvicorn + httpx): create, read, resume, downgrade, compact, cancel, errors,
the publishing API, faults (connections killed at random points), load (concurrent streams) and a client that
never reads."""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import httpx
import jsonpatch
import pytest

from turnkit.serve import Gateway, ReplayBackend, ReplayRecord, create_app, embedded_template
from turnkit.serve._sync import SyncRegistry
from turnkit.serve.protocols.sync import publish
from turnkit.structured import JsonStream, apply_patch, decode_ops

pytestmark = pytest.mark.timeout(120)

REVIEW = {
    "summaryV2": [
        {"emoji": "🍽️", "text": "음식이 맛있어요"},
        {"emoji": "🏠", "text": "인테리어가 멋져요"},
        {"emoji": "🥗", "text": "재료가 신선해요"},
    ],
    "sentiment": "positive",
    "key_points": ["fresh ingredients", "book ahead", "expensive but fair"],
}
SCHEMA = {
    "type": "object",
    "properties": {
        "summaryV2": {
            "type": "array",
            "items": {"type": "object", "properties": {"emoji": {"type": "string"}, "text": {"type": "string"}}},
        },
        "sentiment": {"type": "string"},
        "key_points": {"type": "array", "items": {"type": "string"}},
    },
}


def _request(text: str = "REVIEW", **extra: Any) -> dict[str, Any]:
    return {
        "messages": [{"role": "user", "content": text}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "review", "schema": SCHEMA}},
        **extra,
    }


def _gateway(delay: float = 0.0) -> Gateway:
    records = [
        ReplayRecord(json.dumps(REVIEW, ensure_ascii=False), match="REVIEW", chunk=3),
        ReplayRecord('<think>ok</think>{"summaryV2": [{"emoji": "x", "text": "broken', match="NOTJSON", chunk=5),
        ReplayRecord('{"summaryV2": [], "sentiment": nope}', match="BADTOKEN", chunk=5),
        ReplayRecord(json.dumps(REVIEW, ensure_ascii=False), match="SLOW", chunk=2, delay=0.01),
    ]
    return Gateway(embedded_template(), "hermes", ReplayBackend(records, delay=delay))


def _parse_sse(text: str) -> list[tuple[str, str, str]]:
    events = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields[name] = fields[name] + "\n" + value if name == "data" and name in fields else value
        if "data" in fields:
            events.append((fields.get("event", "message"), fields.get("id", ""), fields["data"]))
    return events


def _read(url: str, headers: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    with httpx.stream("GET", url, headers=headers, timeout=30) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return _parse_sse(response.read().decode())


def _rebuild(events: list[tuple[str, str, str]], value: Any = None, compact: bool = False) -> Any:
    for kind, _, data in events:
        if kind == "snapshot":
            value = json.loads(data)
        elif kind == "patch":
            value = apply_patch(value, decode_ops(data) if compact else json.loads(data))
    return value


def _create(base: str, body: dict[str, Any]) -> str:
    response = httpx.post(base + "/v1/streams", json=body, timeout=30)
    assert response.status_code == 201, response.text
    run_id: str = response.json()["id"]
    assert response.json()["events"] == f"/v1/streams/{run_id}/events"
    return run_id


def test_create_read_resume(live: Any) -> None:
    with live(create_app(_gateway())) as server:
        run_id = _create(server.url, _request("SLOW"))
        url = f"{server.url}/v1/streams/{run_id}/events"
        live_events = _read(url)  # live, while the model writes
        assert live_events[0][0] == "snapshot" and live_events[-1][0] == "end" and len(live_events) > 10
        ids = [int(e[1]) for e in live_events]
        assert ids == sorted(set(ids))
        assert json.loads(live_events[-1][2]) == {"value": REVIEW}
        assert _rebuild(live_events) == REVIEW
        # resume: the events after the seq (replayed from the log; a resuming client's pending patches are
        # coalesced into one with the same effect), by header or by query (the header wins)
        end_seq = int(live_events[-1][1])
        values: dict[int, Any] = {}
        value: Any = None
        for kind, seq, data in live_events[:-1]:
            value = json.loads(data) if kind == "snapshot" else apply_patch(value, json.loads(data))
            values[int(seq)] = value
        for seq in sorted(set(values) & {0, 3, end_seq // 2, end_seq - 2}):
            for headers, query in (({"Last-Event-ID": str(seq)}, ""), (None, f"?lastEventId={seq}")):
                resumed = _read(url + query, headers)
                assert [e[0] for e in resumed] == ["patch", "end"] and resumed[0][1] == str(end_seq - 1)
                assert resumed[-1] == live_events[-1]
                assert _rebuild(resumed, values[seq]) == REVIEW
        both = _read(url + f"?lastEventId={end_seq - 2}", {"Last-Event-ID": str(end_seq)})
        assert [e[0] for e in both] == ["end"]  # the header (the end's seq) won: only the end again
        # malformed ids: a snapshot, not a crash
        for bad in ("abc", "-1", "99999", "1e3", "x:"):
            again = _read(url, {"Last-Event-ID": bad})
            assert again[0][0] == "snapshot" and _rebuild(again) == REVIEW
        status = httpx.get(f"{server.url}/v1/streams/{run_id}").json()
        assert status["done"] and status["end"] == {"value": REVIEW}


def test_api_key_or_the_streams_read_token(live: Any) -> None:
    """With an API key, EventSource (which sends no header) reads a stream's events with its read token."""
    with live(create_app(_gateway(), api_key="sekret")) as server:
        auth = {"Authorization": "Bearer sekret"}
        assert httpx.post(server.url + "/v1/streams", json=_request(), timeout=30).status_code == 401
        created = httpx.post(server.url + "/v1/streams", json=_request(), headers=auth, timeout=30).json()
        assert len(created["token"]) >= 24
        url = f"{server.url}{created['events']}"
        assert _rebuild(_read(url, auth)) == REVIEW  # the API key, as before
        assert _rebuild(_read(f"{url}?token={created['token']}")) == REVIEW  # the read token, no header
        other = httpx.post(server.url + "/v1/streams", json=_request(), headers=auth, timeout=30).json()
        for bad in (url, f"{url}?token=", f"{url}?token={other['token']}", f"{url}?token=x&token=y"):
            response = httpx.get(bad, timeout=30)
            assert response.status_code == 401 and response.json()["error"]["code"] == "invalid_api_key", bad
        # an unknown stream with a token is a 401 too (a token must not tell which ids exist)
        unknown = httpx.get(f"{server.url}/v1/streams/nope/events?token={created['token']}", timeout=30)
        assert unknown.status_code == 401
        # the token opens only the events: status, cancel and new streams still need the key
        status = httpx.get(f"{server.url}/v1/streams/{created['id']}?token={created['token']}", timeout=30)
        assert status.status_code == 401


def test_downgrade_compact_transform_markers(live: Any) -> None:
    with live(create_app(_gateway())) as server:
        run_id = _create(server.url, _request("SLOW", transform="review-v1", markers=True))
        url = f"{server.url}/v1/streams/{run_id}/events"
        # markers: a live client's intermediate values carry $partial on the open objects
        values, value = [], None
        for kind, _, data in _read(url)[:-1]:
            value = json.loads(data) if kind == "snapshot" else apply_patch(value, json.loads(data))
            values.append(json.dumps(value, ensure_ascii=False))
        assert any('"$partial": {"summaryV2": true}' in v for v in values)
        assert any('"$partial": {"text": true}' in v for v in values)
        full = _rebuild(_read(url))
        assert full["summary"] == [item["text"] for item in REVIEW["summaryV2"]]
        assert "$partial" not in json.dumps(full)
        # json-patch: RFC 6902 only, applied by the jsonpatch library
        events = _read(url + "?protocol=json-patch")
        doc = json.loads(events[0][2])
        for _kind, _, data in events[1:-1]:
            ops = json.loads(data)
            assert all(op["op"] != "append" for op in ops)
            doc = jsonpatch.apply_patch(doc, ops)
        assert doc == full
        compact = _read(url + "?encoding=compact")
        assert _rebuild(compact, compact=True) == full
        compact = _read(url + "?encoding=compact", {"Last-Event-ID": "0"})  # the replay, compact
        assert _rebuild(compact, compact=True) == full


def test_bad_input(live: Any) -> None:
    with live(create_app(_gateway())) as server:
        base = server.url
        missing = httpx.get(base + "/v1/streams/nope/events")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "stream_not_found"
        assert httpx.post(base + "/v1/streams/nope/cancel").status_code == 404
        bad = _request()
        bad["response_format"]["json_schema"]["schema"] = {"type": "object", "properties": {"a": {"type": 5}}}
        response = httpx.post(base + "/v1/streams", json=bad)
        assert response.status_code == 400
        error = response.json()["error"]
        assert (
            error["code"] == "invalid_schema"
            and error["param"] == "response_format.json_schema.schema.properties.a.type"
        )
        ref = _request()
        ref["response_format"]["json_schema"]["schema"] = {"$ref": "#/nowhere"}
        response = httpx.post(base + "/v1/streams", json=ref)
        assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_schema"
        no_format = _request()
        del no_format["response_format"]
        assert httpx.post(base + "/v1/streams", json=no_format).json()["error"]["param"] == "response_format"
        unknown = httpx.post(base + "/v1/streams", json=_request(transform="nope"))
        assert unknown.status_code == 400 and "review-v1" in unknown.json()["error"]["message"]
        run_id = _create(base, _request())
        url = f"{base}/v1/streams/{run_id}/events"
        assert httpx.get(url + "?protocol=xml").status_code == 400
        assert httpx.get(url + "?encoding=gzip").status_code == 400


@pytest.mark.parametrize("prompt,code", [("NOTJSON", "json_incomplete"), ("BADTOKEN", None)])
def test_model_output_not_json(live: Any, prompt: str, code: str | None) -> None:
    with live(create_app(_gateway())) as server:
        run_id = _create(server.url, _request(prompt))
        url = f"{server.url}/v1/streams/{run_id}/events"
        events = _read(url)
        end = json.loads(events[-1][2])
        assert events[-1][0] == "end" and "error" in end
        error = end["error"]
        if code is not None:
            assert error["code"] == code
        else:
            assert error["code"] != "internal_error" and isinstance(error["position"], int)
        # the log is intact: a client resuming from 0 gets the patches (merged) and the same end
        replay = _read(url, {"Last-Event-ID": "0"})
        assert replay[-1] == events[-1] and _rebuild(replay) == _rebuild(events)
        if prompt == "NOTJSON":
            assert _rebuild(events) == {"summaryV2": [{"emoji": "x", "text": "broken"}]}


def test_run_outlives_connections_and_cancel(live: Any) -> None:
    with live(create_app(_gateway())) as server:
        run_id = _create(server.url, _request("SLOW"))
        url = f"{server.url}/v1/streams/{run_id}/events"
        with httpx.stream("GET", url, timeout=30) as response:  # read a little, then go away
            for line in response.iter_lines():
                if line.startswith("id: 3"):
                    break
        deadline = time.monotonic() + 30
        while not httpx.get(f"{server.url}/v1/streams/{run_id}").json()["done"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        events = _read(url)  # a late client: snapshot of the whole value, then end
        assert [e[0] for e in events] == ["snapshot", "end"] and json.loads(events[0][2]) == REVIEW

        run_id = _create(server.url, _request("SLOW"))
        time.sleep(0.1)
        cancelled = httpx.post(f"{server.url}/v1/streams/{run_id}/cancel")
        assert cancelled.json() == {"id": run_id, "cancelled": True}
        assert httpx.post(f"{server.url}/v1/streams/{run_id}/cancel").status_code == 409
        end = json.loads(_read(f"{server.url}/v1/streams/{run_id}/events")[-1][2])
        assert end["error"]["code"] == "cancelled"


def test_ttl_and_static(live: Any) -> None:
    clock = [0.0]
    registry = SyncRegistry(ttl=10, clock=lambda: clock[0])
    with live(create_app(_gateway(), sync=registry)) as server:
        run_id = _create(server.url, _request())
        url = f"{server.url}/v1/streams/{run_id}/events"
        assert _read(url)[-1][0] == "end"
        clock[0] = 5
        assert _read(url)[-1][0] == "end"  # still readable within the TTL
        clock[0] = 20
        assert httpx.get(url).status_code == 404
        js = httpx.get(server.url + "/turnkit.js")
        assert js.headers["content-type"].startswith("text/javascript") and "export function subscribe" in js.text
        assert httpx.get(server.url + "/static/turnkit.js").text == js.text
        demo = httpx.get(server.url + "/demo")
        assert demo.status_code == 200 and 'from "/turnkit.js"' in demo.text


def test_publish_api(live: Any) -> None:
    app = create_app(_gateway())
    text = json.dumps(REVIEW, ensure_ascii=False)

    async def chunks() -> Any:
        for i in range(0, len(text), 7):
            yield text[i : i + 7]
            await asyncio.sleep(0)

    async def start(request: Any) -> Any:
        from starlette.responses import JSONResponse

        run = publish(request.app, JsonStream(), chunks(), run_id="mine", markers=True)
        return JSONResponse({"id": run.id})

    app.add_route("/start-mine", start, methods=["POST"])
    with live(app) as server:
        assert httpx.post(server.url + "/start-mine").json() == {"id": "mine"}
        events = _read(server.url + "/v1/streams/mine/events")
        assert json.loads(events[-1][2]) == {"value": REVIEW}
        assert _rebuild(events) == REVIEW  # markers=True: the last patches remove them


async def _client_with_drops(base: str, run_id: str, rng: random.Random, drops: int) -> tuple[Any, int]:
    """Read a stream, dropping the connection after a random number of events ``drops`` times; resume each time
    from the last seq. Returns (rebuilt value, snapshots received)."""
    url = f"{base}/v1/streams/{run_id}/events"
    value: Any = None
    last: str | None = None
    snapshots = 0
    seen: list[int] = []
    async with httpx.AsyncClient(timeout=30) as client:
        while True:
            cut = rng.randint(1, 12) if drops > 0 else None
            headers = {"Last-Event-ID": last} if last is not None else {}
            count = 0
            ended = False
            async with client.stream("GET", url, headers=headers) as response:
                buffer = ""
                async for piece in response.aiter_text():
                    buffer += piece
                    while "\n\n" in buffer:
                        block, buffer = buffer.split("\n\n", 1)
                        for kind, seq, data in _parse_sse(block + "\n\n"):
                            if kind == "snapshot":
                                snapshots += 1
                                value = json.loads(data)
                            elif kind == "patch":
                                value = apply_patch(value, json.loads(data))
                                seen.append(int(seq))
                            else:
                                ended = True
                            last = seq
                            count += 1
                    if ended or (cut is not None and count >= cut):
                        break
            if ended:
                assert len(seen) == len(set(seen)), "a patch was delivered twice"
                return value, snapshots
            drops -= 1


def test_faults_random_drops_resume(live: Any) -> None:
    with live(create_app(_gateway())) as server:

        async def main() -> None:
            rng = random.Random(7)
            ids = [_create(server.url, _request("SLOW")) for _ in range(12)]
            results = await asyncio.gather(
                *(_client_with_drops(server.url, run_id, random.Random(rng.random()), 6) for run_id in ids)
            )
            for value, _ in results:
                assert value == REVIEW

        asyncio.run(main())


def test_load_many_streams(live: Any) -> None:
    """200 concurrent streams over real HTTP, each op delivered once, in order; latency of delivery measured."""
    registry = SyncRegistry(max_runs=10_000)
    app = create_app(_gateway(), sync=registry)
    n, pieces = 200, 20
    text = json.dumps({"items": [f"item {i} " * 3 for i in range(pieces)]})
    with live(app) as server:

        async def main() -> list[float]:
            runs = [registry.create(JsonStream(), run_id=f"load-{i}") for i in range(n)]
            latencies: list[float] = []
            published: dict[tuple[str, int], float] = {}
            limits = httpx.Limits(max_connections=n + 10)
            async with httpx.AsyncClient(timeout=60, limits=limits) as client:

                async def reader(run_id: str) -> Any:
                    value: Any = None
                    seqs: list[int] = []
                    async with client.stream("GET", f"{server.url}/v1/streams/{run_id}/events") as response:
                        buffer = ""
                        async for piece in response.aiter_text():
                            buffer += piece
                            while "\n\n" in buffer:
                                block, buffer = buffer.split("\n\n", 1)
                                for kind, seq, data in _parse_sse(block + "\n\n"):
                                    now = time.monotonic()
                                    if kind == "snapshot":
                                        value = json.loads(data)
                                    elif kind == "patch":
                                        value = apply_patch(value, json.loads(data))
                                        seqs.append(int(seq))
                                        sent = published.get((run_id, int(seq)))
                                        if sent is not None:
                                            latencies.append(now - sent)
                    assert seqs == sorted(set(seqs))
                    return value

                tasks = [asyncio.ensure_future(reader(run.id)) for run in runs]
                while sum(run.subscribers for run in runs) < n:  # (the server runs in another thread)
                    await asyncio.sleep(0.01)
                loop = server.loop
                step = max(1, len(text) // pieces)
                for i in range(0, len(text), step):

                    def feed(chunk: str = text[i : i + step]) -> None:
                        for run in runs:
                            before = run.seq
                            seq = run.feed(chunk)
                            if seq != before:
                                published[(run.id, seq)] = time.monotonic()

                    loop.call_soon_threadsafe(feed)
                    await asyncio.sleep(0.02)
                loop.call_soon_threadsafe(lambda: [run.close() for run in runs])
                values = await asyncio.gather(*tasks)
            assert all(v == json.loads(text) for v in values)
            return latencies

        latencies = sorted(asyncio.run(main()))
        assert latencies
        p99 = latencies[int(len(latencies) * 0.99)]
        assert p99 < 2.0, f"p99 op delivery latency {p99 * 1000:.0f} ms"  # loose: the machine is shared


def test_client_that_never_reads(live: Any) -> None:
    """A subscriber that never reads: the server's buffer for it stays bounded while the run publishes MBs."""
    registry = SyncRegistry(subscriber_bytes=64_000)
    app = create_app(_gateway(), sync=registry)
    with live(app) as server:
        run = registry.create(None, run_id="flood")
        sock = server.unread_subscriber(run)
        done = asyncio.run_coroutine_threadsafe(_flood(run), server.loop).result(60)
        assert done["published"] > 8_000_000
        assert done["max_pending"] <= 64_000 + 20_000  # the subscriber buffer never grew past its bound
        assert done["overruns"] >= 1  # it was dropped and will get a snapshot
        sock.close()


async def _flood(run: Any) -> dict[str, int]:
    published = 0
    sub = next(iter(run._subscriptions))
    max_pending = 0
    run.publish([{"op": "add", "path": "", "value": {"t": ""}}])
    chunk = "x" * 2000
    for _ in range(4500):
        run.publish([{"op": "append", "path": "/t", "value": chunk}])
        published += len(chunk)
        max_pending = max(max_pending, sub.pending_bytes)
        await asyncio.sleep(0)
    return {"published": published, "max_pending": max_pending, "overruns": sub.overruns}
