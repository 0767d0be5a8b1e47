"""Bad input: every fault is an HTTP 400 (401, 404) with the OpenAI error object naming the field."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from turnkit.serve import Gateway, ReplayBackend, ReplayRecord, create_app, embedded_gateway

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

USER = [{"role": "user", "content": "Hi"}]


async def _post(
    app: Any,
    body: Any,
    *,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
    path: str = "/v1/chat/completions",
) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        if raw is not None:
            return await client.post(path, content=raw, headers=headers)
        return await client.post(path, json=body, headers=headers)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": "hi"}, "messages"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user"}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": 3}]}, "messages[0].content"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
            "messages[0].content[0].type",
        ),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id"),
        (
            {"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]},
            "messages[0].tool_calls[0].function.name",
        ),
        ({"messages": USER, "frobnicate": 1}, "frobnicate"),
        ({"messages": USER, "n": 2}, "n"),
        ({"messages": USER, "temperature": "hot"}, "temperature"),
        ({"messages": USER, "temperature": 9}, "temperature"),
        ({"messages": USER, "top_p": -1}, "top_p"),
        ({"messages": USER, "max_tokens": 0}, "max_tokens"),
        ({"messages": USER, "max_tokens": True}, "max_tokens"),
        ({"messages": USER, "stream": "yes"}, "stream"),
        ({"messages": USER, "stream_options": {"include_usage": True}}, "stream_options"),
        ({"messages": USER, "stop": 5}, "stop"),
        ({"messages": USER, "seed": 1.5}, "seed"),
        ({"messages": USER, "tools": {"a": 1}}, "tools"),
        ({"messages": USER, "tools": [{"type": "function", "function": {}}]}, "tools[0].function.name"),
        ({"messages": USER, "tool_choice": "sometimes"}, "tool_choice"),
        ({"messages": USER, "tool_choice": "required"}, "tool_choice"),
        ({"messages": USER, "response_format": {"type": "xml"}}, "response_format"),
        ({"messages": USER, "chat_template_kwargs": []}, "chat_template_kwargs"),
        ({"messages": USER, "chat_template_kwargs": {"add_generation_prompt": False}}, "chat_template_kwargs"),
        ({"messages": USER, "model": 3}, "model"),
        ({"messages": USER, "logprobs": True}, "logprobs"),
    ],
)
async def test_bad_request_names_the_field(body: Any, param: str):
    r = await _post(create_app(embedded_gateway()), body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error"
    assert set(error) == {"message", "type", "param", "code"}


async def test_malformed_json_and_non_object_body():
    app = create_app(embedded_gateway())
    r = await _post(app, None, raw=b'{"messages": [', headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
    r = await _post(app, [1, 2])
    assert r.status_code == 400


async def test_too_large_body():
    app = create_app(embedded_gateway(), max_body_bytes=1000)
    r = await _post(app, {"messages": [{"role": "user", "content": "x" * 2000}]})
    assert r.status_code == 400 and r.json()["error"]["code"] == "body_too_large"


async def test_template_error_is_400_with_message_and_line():
    template = "hello\n\n{{ messages[0].content.foo() }}"
    app = create_app(Gateway(template, "hermes", ReplayBackend([ReplayRecord("x")])))
    r = await _post(app, {"messages": USER})
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == "template_error" and "line 3" in error["message"] and "foo" in error["message"]
    raising = "{{ raise_exception('Only user and assistant roles are supported!') }}"
    app = create_app(Gateway(raising, "hermes", ReplayBackend([ReplayRecord("x")])))
    r = await _post(app, {"messages": USER})
    assert r.status_code == 400 and "Only user and assistant" in r.json()["error"]["message"]


async def test_api_key():
    app = create_app(embedded_gateway(), api_key="sekret")
    r = await _post(app, {"messages": USER})
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    r = await _post(app, {"messages": USER}, headers={"authorization": "Bearer wrong"})
    assert r.status_code == 401
    r = await _post(app, {"messages": USER}, headers={"authorization": "Bearer sekret"})
    assert r.status_code == 200
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        assert (await client.get("/healthz")).status_code == 200
        assert (await client.get("/v1/models")).status_code == 401


async def test_unknown_route_is_an_openai_error():
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(embedded_gateway())), base_url="http://t"
    ) as client:
        r = await client.get("/v1/nothing")
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
        r = await client.get("/v1/chat/completions")
        assert r.status_code == 405 and "error" in r.json()


async def test_conversation_shapes_are_accepted():
    messages = [
        {"role": "developer", "content": "Be brief."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "What is the temperature"}, {"type": "text", "text": "?"}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "get_current_temperature", "arguments": '{"location": "Paris, France"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": "22.0"},
    ]
    r = await _post(create_app(embedded_gateway()), {"messages": messages})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "It is 22 °C in Paris right now."
