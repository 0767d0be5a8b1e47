"""``POST /agui`` and ``POST /api/chat``: request conversion, headers and framing, the server-side tool loop,
errors before and during the stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.serve.wire import agui_message, check_ui_chunks, sse_data, ui_message, verify_agui
from turnkit.cli.demo import get_current_temperature
from turnkit.serve import BackendChunk, BadRequestError, Gateway, SamplingParams, create_app, embedded_gateway
from turnkit.serve.protocols.agui import parse_run_input
from turnkit.serve.protocols.ai_sdk import parse_chat_body, ui_messages

pytestmark = [pytest.mark.timeout(30), pytest.mark.anyio]

USER = "temp in Paris?"


async def _post(app: Any, path: str, body: Any) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        return await client.post(path, json=body)


def _agui_body(**extra: Any) -> dict[str, Any]:
    return {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": USER}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **extra,
    }


def _chat_body() -> dict[str, Any]:
    return {
        "id": "c1",
        "trigger": "submit-message",
        "messageId": None,
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": USER}]}],
    }


async def test_agui_runs_the_server_tools_and_reports_steps_and_results() -> None:
    app = create_app(embedded_gateway(tool_functions={"get_current_temperature": get_current_temperature}))
    r = await _post(app, "/agui", _agui_body())
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(d) for d in sse_data(r.content)]
    verify_agui(events)
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["RUN_STARTED", "STEP_STARTED"] and kinds[-1] == "RUN_FINISHED"
    assert kinds.count("STEP_STARTED") == kinds.count("STEP_FINISHED") == 2
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert start["toolCallName"] == "get_current_temperature"
    assert result["toolCallId"] == start["toolCallId"] and result["content"] == "22.0" and result["role"] == "tool"
    assert kinds.index("TOOL_CALL_RESULT") < kinds.index("STEP_FINISHED")
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "It is 22 °C in Paris right now."
    assert events[-1]["usage"][0]["outputTokens"] > 0


async def test_agui_without_server_tools_leaves_client_tools_to_the_client() -> None:
    tool = {
        "name": "get_current_temperature",
        "description": "temperature",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
    }
    r = await _post(create_app(embedded_gateway()), "/agui", _agui_body(tools=[tool]))
    events = [json.loads(d) for d in sse_data(r.content)]
    verify_agui(events)
    kinds = [e["type"] for e in events]
    assert "STEP_STARTED" not in kinds and "TOOL_CALL_RESULT" not in kinds
    message = agui_message(events)
    assert json.loads(message["tool_calls"][0]["function"]["arguments"])["location"] == "Paris, France"


async def test_ai_sdk_headers_parts_and_tool_loop() -> None:
    app = create_app(embedded_gateway(tool_functions={"get_current_temperature": get_current_temperature}))
    r = await _post(app, "/api/chat", _chat_body())
    assert r.status_code == 200
    assert r.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert r.headers["x-accel-buffering"] == "no" and r.headers["cache-control"] == "no-cache"
    assert r.headers["content-type"].startswith("text/event-stream")
    data = sse_data(r.content)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    check_ui_chunks(chunks)
    kinds = [c["type"] for c in chunks]
    assert kinds.count("start-step") == kinds.count("finish-step") == 2
    output = next(c for c in chunks if c["type"] == "tool-output-available")
    assert output["output"] == 22.0
    assert chunks[-1] == {"type": "finish", "finishReason": "stop"}
    second = kinds.index("start-step", 1)
    assert ui_message(chunks[second:])["content"] == "It is 22 °C in Paris right now."


async def test_ai_sdk_invalid_tool_arguments_are_a_tool_input_error_then_a_tool_output_error() -> None:
    from turnkit.serve import ReplayBackend, ReplayRecord, embedded_template

    bad = '<tool_call>\n{"name": "get_current_temperature", "arguments": {"unit": "kelvin"}}\n</tool_call>'
    backend = ReplayBackend([ReplayRecord("Sorry.", match="<tool_response>"), ReplayRecord(bad)])
    gateway = Gateway(
        embedded_template(), "hermes", backend, tool_functions={"get_current_temperature": get_current_temperature}
    )
    r = await _post(create_app(gateway), "/api/chat", _chat_body())
    chunks = [json.loads(d) for d in sse_data(r.content)[:-1]]
    check_ui_chunks(chunks)
    error = next(c for c in chunks if c["type"] == "tool-output-error")
    assert "invalid arguments" in error["errorText"] and "location" in error["errorText"]
    assert chunks[-1]["finishReason"] == "stop"


def test_ai_sdk_ui_messages_become_openai_turns() -> None:
    messages = ui_messages(
        [
            {"id": "s", "role": "system", "parts": [{"type": "text", "text": "Be brief."}]},
            {"id": "u", "role": "user", "parts": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {
                "id": "a",
                "role": "assistant",
                "parts": [
                    {"type": "step-start"},
                    {"type": "reasoning", "text": "think"},
                    {
                        "type": "tool-get_weather",
                        "toolCallId": "c1",
                        "state": "output-available",
                        "input": {"city": "Paris"},
                        "output": {"t": 22},
                    },
                    {
                        "type": "dynamic-tool",
                        "toolName": "lookup",
                        "toolCallId": "c2",
                        "state": "output-error",
                        "input": {},
                        "errorText": "boom",
                    },
                    {"type": "step-start"},
                    {"type": "text", "text": "It is 22."},
                ],
            },
        ]
    )
    assert messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "a\nb"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "think",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
                {"id": "c2", "type": "function", "function": {"name": "lookup", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": '{"t": 22}'},
        {"role": "tool", "tool_call_id": "c2", "name": "lookup", "content": "Error: boom"},
        {"role": "assistant", "content": "It is 22."},
    ]
    with pytest.raises(BadRequestError) as info:
        parse_chat_body({"messages": [{"role": "user", "parts": [{"type": "file", "url": "x"}]}]})
    assert info.value.param == "messages[0].parts[0]"


def test_agui_run_input_becomes_a_chat_request() -> None:
    chat, thread, run = parse_run_input(
        {
            "threadId": "t",
            "runId": "r",
            "messages": [
                {"id": "1", "role": "developer", "content": "Be brief."},
                {"id": "2", "role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"id": "3", "role": "reasoning", "content": "skipped"},
                {
                    "id": "4",
                    "role": "assistant",
                    "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
                },
                {"id": "5", "role": "tool", "toolCallId": "c", "content": "ok"},
            ],
            "tools": [{"name": "f", "description": "d", "parameters": {"type": "object"}}],
            "context": [{"description": "user name", "value": "Ada"}],
        }
    )
    assert (thread, run) == ("t", "r")
    assert list(chat.messages) == [
        {"role": "developer", "content": "Be brief.\n\nContext:\nuser name: Ada"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "content": "ok", "tool_call_id": "c"},
    ]
    assert chat.tools == [
        {"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}
    ]


async def test_bad_requests_are_400_before_any_stream() -> None:
    app = create_app(embedded_gateway())
    r = await _post(app, "/agui", {"threadId": "t", "runId": "r", "messages": [{"role": "wizard", "content": "x"}]})
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages[0].role"
    r = await _post(app, "/api/chat", {"messages": []})
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages"


class _Dying:
    async def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[BackendChunk]:
        yield BackendChunk("<think>part")
        raise RuntimeError("backend died")


async def test_a_backend_dying_mid_stream_is_run_error_and_error_part() -> None:
    from turnkit.serve import embedded_template

    app = create_app(Gateway(embedded_template(), "hermes", _Dying()))
    events = [json.loads(d) for d in sse_data((await _post(app, "/agui", _agui_body())).content)]
    verify_agui(events)
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "backend_error"
    data = sse_data((await _post(app, "/api/chat", _chat_body())).content)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    check_ui_chunks(chunks)
    assert chunks[-1]["type"] == "error" and "backend died" in chunks[-1]["errorText"]


def test_cli_tools_flag_loads_functions() -> None:

    from turnkit.cli import CliError, build_parser
    from turnkit.cli.serve import build_gateway, load_tools

    assert list(load_tools("turnkit.cli.demo:DEMO_TOOLS")) == ["get_current_temperature", "get_current_wind_speed"]
    with pytest.raises(CliError):
        load_tools("turnkit.cli.demo")
    args = build_parser().parse_args(["serve", "--tools", "turnkit.cli.demo:DEMO_TOOLS", "--max-steps", "3"])
    gateway = build_gateway(args)
    assert set(gateway.tool_functions) == {"get_current_temperature", "get_current_wind_speed"}
    assert gateway.max_steps == 3
