"""The /v1/completions backend against a fake server under uvicorn: what is sent, and every fault."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from tests.serve.fakes import FakeCompletions
from turnkit import apply_chat_template
from turnkit.serve import CompletionsBackend, Gateway, create_app, embedded_template

pytestmark = pytest.mark.timeout(60)

PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": PARAMETERS}}]
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "text", "text": "Hi"}]}]


def _gateway(url: str) -> Gateway:
    return Gateway(embedded_template(), "hermes", CompletionsBackend(url, connect_timeout=2), served_model_name="m")


def _sse(server_url: str, body: dict, *, max_events: int | None = None) -> list[str]:
    data = []
    with httpx.stream("POST", server_url + "/v1/chat/completions", json=body, timeout=10) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line.startswith("data: "):
                data.append(line.removeprefix("data: "))
                if max_events is not None and len(data) >= max_events:
                    break
    return data


def test_prompt_sent_is_apply_chat_template_and_markers_survive(live):
    fake = FakeCompletions("<think>plan</think>Hello there")
    with live(fake.app) as backend, live(create_app(_gateway(backend.url))) as server:
        body = {
            "messages": MESSAGES,
            "tools": TOOLS,
            "max_tokens": 50,
            "temperature": 0.5,
            "top_p": 0.9,
            "stop": ["END"],
            "seed": 3,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        data = _sse(server.url, body)
    sent = fake.requests[-1]
    expected = apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        embedded_template(),
        tools=TOOLS,
        add_generation_prompt=True,
    )
    assert sent["prompt"] == expected
    assert sent["skip_special_tokens"] is False and sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert (sent["max_tokens"], sent["temperature"], sent["top_p"], sent["stop"], sent["seed"]) == (
        50,
        0.5,
        0.9,
        ["END"],
        3,
    )
    assert sent["model"] == "fake-model"  # discovered from the backend's /v1/models
    chunks = [json.loads(d) for d in data[:-1]]
    assert data[-1] == "[DONE]"
    assert chunks[-1]["usage"] == {"prompt_tokens": 7, "completion_tokens": 10, "total_tokens": 17}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    reasoning = "".join(c["choices"][0]["delta"].get("reasoning", "") for c in chunks if c["choices"])
    assert (text, reasoning) == ("Hello there", "plan")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_backend_is_502(live):
    with live(create_app(_gateway(f"http://127.0.0.1:{_free_port()}"))) as server:
        for stream in (False, True):
            r = httpx.post(
                server.url + "/v1/chat/completions", json={"messages": MESSAGES, "stream": stream}, timeout=10
            )
            assert r.status_code == 502, r.text
            assert r.json()["error"]["code"] == "backend_unreachable"


def test_backend_rejecting_is_400(live):
    fake = FakeCompletions()
    template = "{% for m in messages %}{{ m.content }}{% endfor %}"
    with live(fake.app) as backend:
        gateway = Gateway(template, "hermes", CompletionsBackend(backend.url))
        with live(create_app(gateway)) as server:
            r = httpx.post(
                server.url + "/v1/chat/completions",
                json={"messages": [{"role": "user", "content": "REJECT"}]},
                timeout=10,
            )
    assert r.status_code == 400 and "bad" in r.json()["error"]["message"]


def test_backend_dying_mid_stream_gives_error_event_and_closed_stream(live):
    fake = FakeCompletions("abcdefghijklmnopqrstuvwxyz", chunk=2, mode="die")
    with live(fake.app) as backend, live(create_app(_gateway(backend.url))) as server:
        started = time.monotonic()
        data = _sse(server.url, {"messages": MESSAGES, "stream": True})
        assert time.monotonic() - started < 5
        r = httpx.post(server.url + "/v1/chat/completions", json={"messages": MESSAGES}, timeout=10)
    assert "[DONE]" not in data
    last = json.loads(data[-1])
    assert last["error"]["type"] == "backend_error"
    assert r.status_code == 502 and r.json()["error"]["type"] == "backend_error"


def test_client_disconnect_cancels_backend_within_one_second(live):
    fake = FakeCompletions(mode="slow", interval=0.05)
    with live(fake.app) as backend, live(create_app(_gateway(backend.url))) as server:
        data = _sse(server.url, {"messages": MESSAGES, "stream": True}, max_events=4)
        left = time.monotonic()
        assert len(data) == 4
        assert fake.closed.wait(3)
        assert fake.closed_at is not None and fake.closed_at - left < 1.0


_AGUI_BODY = {"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "user", "content": "Hi"}], "tools": []}
_AI_SDK_BODY = {"id": "c", "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}]}


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", {"messages": MESSAGES, "stream": True}),
        ("/v1/chat/completions", {"messages": MESSAGES, "stream": False}),
        ("/agui", _AGUI_BODY),
        ("/api/chat", _AI_SDK_BODY),
    ],
    ids=["openai-stream", "openai", "agui", "ai-sdk"],
)
def test_client_gone_before_the_first_chunk_cancels_backend_within_one_second(live, path: str, body: dict):
    fake = FakeCompletions(mode="late", interval=30)
    with live(fake.app) as backend, live(create_app(_gateway(backend.url))) as server:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(server.url + path, json=body, timeout=httpx.Timeout(10, read=0.3))
        left = time.monotonic()
        assert fake.closed.wait(3)
        assert fake.closed_at is not None and fake.closed_at - left < 1.0
