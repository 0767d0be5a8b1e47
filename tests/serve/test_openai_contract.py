"""Contract tests with the real ``openai`` client against a live server: stream == non-stream, tool calls,
turnkit's tool-call policy, response_format checks."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from turnkit.serve import Gateway, ReplayBackend, ReplayRecord, create_app, embedded_template

pytestmark = pytest.mark.timeout(60)


def _tool(name: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"city": {"type": "string"}}}
    return {"type": "function", "function": {"name": name, "description": f"{name}.", "parameters": parameters}}


TOOLS = [_tool("get_weather"), _tool("get_time")]
RECORDS = [
    ReplayRecord(
        match="PARALLEL",
        chunk=3,
        output=(
            "<think>Two lookups.</think>"
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
            '<tool_call>\n{"name": "get_time", "arguments": {"city": "Tokyo"}}\n</tool_call>'
        ),
    ),
    ReplayRecord(
        match="UNKNOWN",
        chunk=5,
        output=(
            '<tool_call>\n{"name": "launch_rockets", "arguments": {"n": 3}}\n</tool_call>'
            '<tool_call>\n{"name": "get_time", "arguments": {"city": "Rome"}}\n</tool_call>'
        ),
    ),
    ReplayRecord(
        match="BADARGS", chunk=4, output='<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>'
    ),
    ReplayRecord(match="JSON", chunk=2, output='{"answer": 42}'),
    ReplayRecord(match="LONG", chunk=2, output="<think>a long story that never ends</think>and on and on"),
    ReplayRecord(chunk=4, output="<think>Greeting.</think>Hello, world! ünïcödé \u2028 line"),
]


@pytest.fixture
def server(live):
    gateway = Gateway(embedded_template(), "hermes", ReplayBackend(RECORDS), served_model_name="replay")
    with live(create_app(gateway)) as running:
        yield running


def _client(server: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", timeout=10, max_retries=0)


def _accumulate(chunks: list[Any]) -> tuple[dict[str, Any], str | None, list[Any]]:
    message: dict[str, Any] = {"role": None, "content": None, "reasoning_content": None, "tool_calls": []}
    finish, problems = None, []
    seen_ids: set[int] = set()
    for chunk in chunks:
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta.model_dump(exclude_none=True)
        assert delta or choice.finish_reason, "empty delta"
        if delta.get("role"):
            message["role"] = delta["role"]
        for key in ("content", "reasoning_content"):
            if delta.get(key):
                message[key] = (message[key] or "") + delta[key]
        if "reasoning_content" in delta:
            assert delta["reasoning"] == delta["reasoning_content"]
        for call in delta.get("tool_calls", []):
            index = call["index"]
            if index in seen_ids:
                assert "id" not in call and "name" not in call.get("function", {}), call
                message["tool_calls"][index]["function"]["arguments"] += call["function"]["arguments"]
            else:
                assert index == len(message["tool_calls"]) and call["function"]["arguments"] == ""
                seen_ids.add(index)
                first = {"id": call["id"], "type": call["type"], "function": dict(call["function"])}
                message["tool_calls"].append(first)
        finish = choice.finish_reason or finish
        problems += (choice.model_extra or {}).get("turnkit_problems") or []
    return message, finish, problems


def _both(server: Any, content: str, **options: Any) -> tuple[Any, Any]:
    client = _client(server)
    messages = [{"role": "user", "content": content}]
    chunks = list(
        client.chat.completions.create(
            model="replay", messages=messages, stream=True, stream_options={"include_usage": True}, **options
        )
    )
    whole = client.chat.completions.create(model="replay", messages=messages, **options)
    return chunks, whole


def _non_stream(whole: Any) -> tuple[dict[str, Any], str | None, list[Any]]:
    choice = whole.choices[0]
    message = choice.message.model_dump(exclude_none=True)
    out = {
        "role": message["role"],
        "content": message.get("content"),
        "reasoning_content": (choice.message.model_extra or {}).get("reasoning_content"),
        "tool_calls": message.get("tool_calls", []),
    }
    return out, choice.finish_reason, (choice.model_extra or {}).get("turnkit_problems") or []


def test_plain_reply_stream_equals_non_stream(server):
    chunks, whole = _both(server, "Hi")
    streamed = _accumulate(chunks)
    assert streamed == _non_stream(whole)
    assert streamed[0]["content"] == "Hello, world! ünïcödé \u2028 line"
    assert streamed[0]["reasoning_content"] == "Greeting."
    assert streamed[1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    assert whole.usage.total_tokens == whole.usage.prompt_tokens + whole.usage.completion_tokens


def test_parallel_tool_calls(server):
    chunks, whole = _both(server, "PARALLEL", tools=TOOLS)
    streamed = _accumulate(chunks)
    assert streamed == _non_stream(whole)
    message, finish, problems = streamed
    assert finish == "tool_calls" and problems == []
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"city": "Tokyo"}),
    ]
    assert len({c["id"] for c in message["tool_calls"]}) == 2


def test_openai_stream_helper_accumulates_the_same(server):
    client = _client(server)
    messages = [{"role": "user", "content": "PARALLEL"}]
    with client.chat.completions.stream(model="replay", messages=messages, tools=TOOLS) as stream:
        final = stream.get_final_completion()
    whole = client.chat.completions.create(model="replay", messages=messages, tools=TOOLS)
    got = [(c.id, c.function.name, c.function.arguments) for c in final.choices[0].message.tool_calls or []]
    want = [(c.id, c.function.name, c.function.arguments) for c in whole.choices[0].message.tool_calls or []]
    assert got == want and len(got) == 2


def test_unknown_tool_is_returned_as_content_and_flagged(server):
    chunks, whole = _both(server, "UNKNOWN", tools=TOOLS)
    streamed = _accumulate(chunks)
    assert streamed == _non_stream(whole)
    message, finish, problems = streamed
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_time"]
    assert message["tool_calls"][0]["function"]["arguments"] == '{"city": "Rome"}'
    assert json.loads(message["content"]) == {"name": "launch_rockets", "arguments": {"n": 3}}
    assert [p["code"] for p in problems] == ["tool_call_not_allowed"] and finish == "tool_calls"


def test_tool_choice_none_keeps_tools_out_of_the_prompt_and_calls_out_of_tool_calls(server):
    chunks, whole = _both(server, "PARALLEL", tools=TOOLS, tool_choice="none")
    message, finish, problems = _accumulate(chunks)
    assert (message, finish, problems) == _non_stream(whole)
    assert message["tool_calls"] == [] and finish == "stop"
    assert [p["code"] for p in problems] == ["tool_call_not_allowed"] * 2


def test_named_tool_choice_and_parallel_false(server):
    named = {"type": "function", "function": {"name": "get_time"}}
    _, whole = _both(server, "PARALLEL", tools=TOOLS, tool_choice=named)
    message, _, problems = _non_stream(whole)
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_time"]
    assert [p["code"] for p in problems] == ["tool_call_not_allowed"]
    _, whole = _both(server, "PARALLEL", tools=TOOLS, parallel_tool_calls=False)
    message, _, problems = _non_stream(whole)
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather"]
    assert [p["code"] for p in problems] == ["tool_call_not_allowed"]


def test_required_tool_choice_not_met_is_flagged(server):
    _, whole = _both(server, "Hi", tools=TOOLS, tool_choice="required")
    assert [p["code"] for p in _non_stream(whole)[2]] == ["tool_choice_not_met"]


def test_invalid_arguments_are_flagged(server):
    chunks, whole = _both(server, "BADARGS", tools=TOOLS)
    streamed = _accumulate(chunks)
    assert streamed == _non_stream(whole)
    message, finish, problems = streamed
    assert message["tool_calls"][0]["function"]["arguments"].startswith('{"city": }')
    assert problems[0]["code"] == "invalid_tool_arguments" and problems[0]["index"] == 0


def test_a_call_cut_by_max_tokens_is_flagged(server):
    # 3 characters a token: the output ends inside the first call's arguments ('{"ci')
    chunks, whole = _both(server, "PARALLEL", tools=TOOLS, max_tokens=22)
    streamed = _accumulate(chunks)
    assert streamed == _non_stream(whole)
    message, finish, problems = streamed
    assert finish == "length" and message["tool_calls"][0]["function"]["name"] == "get_weather"
    assert [(p["code"], p["index"]) for p in problems] == [("invalid_tool_arguments", 0)]
    assert "ended inside the call" in problems[0]["message"]


def test_response_format_checked_at_the_end(server):
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    ok = {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}
    _, whole = _both(server, "JSON", response_format=ok)
    assert _non_stream(whole)[2] == []
    bad = {"type": "json_schema", "json_schema": {"name": "a", "schema": {**schema, "required": ["missing"]}}}
    chunks, whole = _both(server, "JSON", response_format=bad)
    assert [p["code"] for p in _accumulate(chunks)[2]] == ["response_format_not_met"]
    assert "missing" in _non_stream(whole)[2][0]["message"]
    _, whole = _both(server, "Hi", response_format={"type": "json_object"})
    assert [p["code"] for p in _non_stream(whole)[2]] == ["response_format_not_met"]


def test_max_tokens_gives_length(server):
    chunks, whole = _both(server, "LONG", max_tokens=3)
    assert _accumulate(chunks)[1] == "length" == whole.choices[0].finish_reason


def test_stop_ends_the_output_before_the_stop_string(server):
    chunks, whole = _both(server, "LONG", stop=["on and", "d on"])
    message, finish, _ = _accumulate(chunks)
    assert finish == "stop" == whole.choices[0].finish_reason
    assert message["content"] == "an" == whole.choices[0].message.content
    # max_tokens ends it first when the stop string lies beyond the budget (2 chars a token: "<think>a lo")
    chunks, whole = _both(server, "LONG", stop=["ends"], max_tokens=3)
    assert _accumulate(chunks)[1] == "length" == whole.choices[0].finish_reason


def test_models_lists_the_served_name(server):
    assert [m.id for m in _client(server).models.list()] == ["replay"]
