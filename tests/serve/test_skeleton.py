from __future__ import annotations

import json

import httpx
import pytest

from turnkit.serve import create_app, embedded_gateway, sse_comment, sse_event

pytestmark = pytest.mark.timeout(30)


def test_sse_framing_is_lf_only_and_splits_lines():
    assert sse_event("a") == b"data: a\n\n"
    framed = sse_event("a\nb\r\nc", event="x", id="s:1", retry=5)
    assert framed == b"event: x\nid: s:1\nretry: 5\ndata: a\ndata: b\ndata: c\n\n"
    assert sse_comment() == b":\n\n"
    assert b"\r" not in sse_event("a\r\nb")
    with pytest.raises(ValueError):
        sse_event("a", event="x\ny")


@pytest.mark.anyio
async def test_non_stream_chat_in_process():
    app = create_app(embedded_gateway())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}
        r = await client.post("/v1/chat/completions", json=body)
        assert r.status_code == 200, r.text
        message = r.json()["choices"][0]["message"]
        assert message["content"].startswith("Hello!")
        assert message["reasoning_content"] == message["reasoning"]
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        assert (await client.get("/v1/models")).json()["data"][0]["id"] == "turnkit-replay"


def test_stream_over_uvicorn(live):
    with live(create_app(embedded_gateway())) as server:
        lines = []
        with httpx.stream(
            "POST",
            server.url + "/v1/chat/completions",
            timeout=10,
            json={"messages": [{"role": "user", "content": "Hi"}], "stream": True},
        ) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            assert r.headers["x-accel-buffering"] == "no"
            for line in r.iter_lines():
                lines.append(line)
    data = [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert content.startswith("Hello!")
