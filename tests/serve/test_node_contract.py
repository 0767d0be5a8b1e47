"""Contract tests with the real npm clients under Node, against a real uvicorn: the AI SDK's
``parseJsonEventStream`` + ``uiMessageChunkSchema`` + ``readUIMessageStream`` over ``/api/chat``, and
``@ag-ui/client``'s ``HttpAgent`` (its verifyEvents and its message reducer) over ``/agui``.

The packages live in ``.refs/node`` (scripts/test.sh installs them). Skipped with a message where Node or the
packages are absent; under CI=true that is a failure instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.serve.wire import UI_CHUNK_FIELDS, check_ui_chunks, verify_agui
from turnkit.cli.demo import get_current_temperature
from turnkit.serve import create_app, embedded_gateway

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
PREFIX = ROOT / ".refs" / "node"
JS = Path(__file__).resolve().parent / "js"
PACKAGES = ("ai", "@ag-ui/client")


def _node() -> str:
    node = shutil.which("node")
    missing = [p for p in PACKAGES if not (PREFIX / "node_modules" / p / "package.json").is_file()]
    reason = (
        "node is not installed"
        if node is None
        else (f"npm packages missing in {PREFIX}: {', '.join(missing)} (run scripts/test.sh)" if missing else None)
    )
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and the Node contract tests cannot run: {reason}")
        pytest.skip(reason)
    assert node is not None
    return node


def _run(script: str, *args: str) -> Any:
    out = subprocess.run(
        [_node(), str(JS / script), *args],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "TURNKIT_NODE_PREFIX": str(PREFIX)},
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout)


def _gateway(tools: bool) -> Any:
    return embedded_gateway(tool_functions={"get_current_temperature": get_current_temperature} if tools else None)


@pytest.mark.parametrize("tools", [True, False], ids=["server-tools", "no-tools"])
def test_ai_sdk_read_ui_message_stream(live: Any, tools: bool) -> None:
    body = {
        "id": "chat-1",
        "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "temp in Paris?"}]}],
    }
    if not tools:
        body["messages"][0]["parts"][0]["text"] = "Hi"
    with live(create_app(_gateway(tools))) as server:
        result = _run("ai_sdk_contract.mjs", server.url + "/api/chat", json.dumps(body))
        assert result["headers"]["x-vercel-ai-ui-message-stream"] == "v1"
        chunks = result["chunks"]
        for chunk in chunks:  # the schema is loose in ai@7; turnkit sends exactly the listed fields
            assert set(chunk) - {"type"} == UI_CHUNK_FIELDS[chunk["type"]], chunk
        check_ui_chunks(chunks)
        message = result["message"]
        assert message["role"] == "assistant"
        parts = message["parts"]
        texts = [p["text"] for p in parts if p["type"] == "text"]
        if tools:
            tool = next(p for p in parts if p["type"] == "tool-get_current_temperature")
            assert tool["state"] == "output-available" and tool["output"] == 22
            assert tool["input"] == {"location": "Paris, France", "unit": "celsius"}
            assert [p["type"] for p in parts].count("step-start") == 2
            assert texts == ["It is 22 °C in Paris right now."]
            # the next turn: the client sends the whole UIMessage (tool parts included) back and it renders
            body["messages"].append(message)
            body["messages"].append({"id": "u2", "role": "user", "parts": [{"type": "text", "text": "And now?"}]})
            again = _run("ai_sdk_contract.mjs", server.url + "/api/chat", json.dumps(body))
            assert again["message"]["parts"][-1]["text"] == "It is 22 °C in Paris right now."
        else:
            assert texts[0].startswith("Hello!")
            assert any(p["type"] == "reasoning" and p["text"] for p in parts)


@pytest.mark.parametrize("tools", [True, False], ids=["server-tools", "client-tools"])
def test_agui_http_agent(live: Any, tools: bool) -> None:
    client_tools = (
        []
        if tools
        else [
            {
                "name": "get_current_temperature",
                "description": "temperature",
                "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
            }
        ]
    )
    agent_input = {
        "messages": [{"id": "u1", "role": "user", "content": "temp in Paris?"}],
        "tools": client_tools,
        "context": [{"description": "unit", "value": "celsius"}],
    }
    with live(create_app(_gateway(tools))) as server:
        result = _run("agui_contract.mjs", server.url + "/agui", json.dumps(agent_input))
        events = result["events"]
        verify_agui([{k: v for k, v in e.items() if k != "timestamp"} for e in events])
        messages = result["messages"]
        calls = [c for m in messages if m["role"] == "assistant" for c in m.get("toolCalls") or []]
        assert calls[0]["function"]["name"] == "get_current_temperature"
        assert json.loads(calls[0]["function"]["arguments"])["location"] == "Paris, France"
        if tools:
            tool = next(m for m in messages if m["role"] == "tool")
            assert tool["toolCallId"] == calls[0]["id"] and tool["content"] == "22.0"
            assert messages[-1] == {**messages[-1], "role": "assistant", "content": "It is 22 °C in Paris right now."}
            # the next run sends the client's messages (reasoning messages included) back; the tool result
            # reaches the prompt, so the replay answers from it without calling the tool again
            again = _run(
                "agui_contract.mjs",
                server.url + "/agui",
                json.dumps({"messages": messages + [{"id": "u2", "role": "user", "content": "And now?"}]}),
            )
            assert again["messages"][-1]["content"] == "It is 22 °C in Paris right now."
            assert not any(e["type"] == "TOOL_CALL_START" for e in again["events"])
        else:
            assert not any(m["role"] == "tool" for m in messages)
