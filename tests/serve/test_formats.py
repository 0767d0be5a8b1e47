"""Every built-in format through the gateway and the OpenAI chunk mapping, whole and re-chunked at random.

Outputs are built from each format's own declared markers (as tests/parse/test_properties.py does), so they
hold tool calls, reasoning and content in that format's syntax — and malformed mixes of them. Required of
every chunking: the same final message, no empty deltas, ``index`` on every tool-call delta, id/type/name
only on a call's first delta, and the chunks joined equal the run's message.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.parse.strategies import format_outputs
from tests.serve.fakes import PiecesBackend
from turnkit.parse import list_formats, load_format
from turnkit.serve import ChatRequest, Gateway
from turnkit.serve.protocols.openai_chat import _Wire

TEMPLATE = "{% for m in messages %}{{ m.content }}{% endfor %}"


def _run(fmt: str, pieces: list[str], tools: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    gateway = Gateway(TEMPLATE, fmt, PiecesBackend(pieces))
    wire = _Wire(gateway)
    chat = ChatRequest(messages=[{"role": "user", "content": "x"}], tools=tools or None)

    async def go() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        run = gateway.run(chat)
        chunks = []
        async for delta in run:
            mapped = wire.delta(delta)
            assert mapped is not None
            chunks.append(json.loads(wire.chunk(mapped).removeprefix(b"data: ")))
        chunks.append(json.loads(wire.final(run).removeprefix(b"data: ")))
        return wire.message(run.message), chunks

    return asyncio.run(go())


def _join(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    calls: list[dict[str, Any]] = []
    for chunk in chunks[:-1]:
        delta = chunk["choices"][0]["delta"]
        assert delta and all(v != "" for k, v in delta.items() if k != "tool_calls"), delta
        for key in ("content", "reasoning_content", "reasoning"):
            if key in delta:
                message[key] = (message.get(key) or "") + delta[key]
        for call in delta.get("tool_calls", []):
            assert set(call) <= {"index", "id", "type", "function"} and "index" in call
            if call["index"] == len(calls):
                assert call["id"] and call["type"] == "function" and call["function"]["arguments"] == ""
                calls.append({"id": call["id"], "type": "function", "function": dict(call["function"])})
            else:
                assert set(call) == {"index", "function"} and set(call["function"]) == {"arguments"}
                assert call["function"]["arguments"]
                calls[call["index"]]["function"]["arguments"] += call["function"]["arguments"]
    if calls:
        message["tool_calls"] = calls
    assert chunks[-1]["choices"][0]["finish_reason"] == ("tool_calls" if calls else "stop")
    return message


def _cut(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list_formats())
def test_every_format_maps_the_same_under_any_chunking(name: str) -> None:
    fmt = load_format(name)

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(output=format_outputs(fmt.spec), cuts=st.lists(st.integers(0, 10_000), max_size=12), drop=st.booleans())
    def check(output: str, cuts: list[int], drop: bool) -> None:
        names = sorted({c["function"]["name"] for c in fmt.parse(output, prefix="x")["tool_calls"]})
        if drop and names:
            names = names[1:]  # one called function is not offered: its calls must come back as content
        tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]
        whole_message, whole_chunks = _run(name, [output] if output else [], tools)
        assert _join(whole_chunks) == whole_message
        message, chunks = _run(name, _cut(output, cuts), tools)
        assert _join(chunks) == message == whole_message

    check()
