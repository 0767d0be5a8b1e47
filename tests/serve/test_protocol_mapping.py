"""Every built-in format through AG-UI and the AI SDK stream, from the replay backend, whole and re-chunked at
random: the events rebuild the gateway's message exactly, the same every time, with no empty delta."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.parse.strategies import format_outputs
from tests.serve.wire import agui_message, check_ui_chunks, sse_data, ui_message, verify_agui
from turnkit.agent import AgentEvent, StepFinished
from turnkit.parse import list_formats, load_format
from turnkit.serve import ChatRequest, Gateway, ReplayBackend, ReplayRecord, embedded_template, sse_event
from turnkit.serve._loop import start_loop
from turnkit.serve.protocols.agui import encode_event, stream_events
from turnkit.serve.protocols.ai_sdk import stream_parts

pytestmark = pytest.mark.timeout(300)

TOOLS = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in ("f", "g")]
TEMPLATE = embedded_template()


async def _replay(events: list[AgentEvent]) -> AsyncIterator[AgentEvent]:
    for event in events:
        yield event


async def _both(fmt: str, output: str, chunk: int) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    gateway = Gateway(TEMPLATE, fmt, ReplayBackend([ReplayRecord(output, chunk=chunk)]))
    chat = ChatRequest(messages=[{"role": "user", "content": "hi"}], tools=TOOLS)
    events = [event async for event in await start_loop(gateway, chat)]
    reference = next(e.message for e in events if isinstance(e, StepFinished))
    agui = b"".join([encode_event(e) async for e in stream_events(_replay(events), "t", "r", steps=False)])
    ui = b"".join([sse_event(json.dumps(p)) async for p in stream_parts(_replay(events))])
    return reference, [json.loads(d) for d in sse_data(agui)], [json.loads(d) for d in sse_data(ui)]


def _without_ids(message: dict[str, Any]) -> dict[str, Any]:
    calls = [{**c, "id": None} for c in message.get("tool_calls", [])]
    return {**message, "tool_calls": calls}


def _check(fmt: str, output: str, chunk: int) -> None:
    whole = asyncio.run(_both(fmt, output, max(1, len(output))))
    cut = asyncio.run(_both(fmt, output, chunk))
    for reference, agui, ui in (whole, cut):
        verify_agui(agui)
        check_ui_chunks(ui)
        assert agui_message(agui) == reference
        assert ui_message(ui) == reference
    assert _without_ids(whole[0]) == _without_ids(cut[0])


@pytest.mark.parametrize("name", list_formats())
def test_every_format_maps_the_same_whole_and_rechunked(name: str) -> None:
    @settings(
        max_examples=25,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(output=format_outputs(load_format(name).spec), chunk=st.integers(1, 9))
    def run(output: str, chunk: int) -> None:
        _check(name, output, chunk)

    run()


WELL_FORMED = {
    "hermes": '<think>plan é</think>Hi <tool_call>\n{"name": "f", "arguments": {"a": "x\\u2028y"}}\n</tool_call>',
    "qwen3_coder_xml": "<think>r</think>ok<tool_call>\n<function=g>\n<parameter=k>\nv\n</parameter>\n</function>\n"
    "</tool_call>",
    "gpt_oss": "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>Done.",
}


@pytest.mark.parametrize("name", sorted(WELL_FORMED))
@pytest.mark.parametrize("chunk", [1, 2, 3, 7])
def test_well_formed_replies_keep_reasoning_content_and_calls(name: str, chunk: int) -> None:
    _check(name, WELL_FORMED[name], chunk)
    reference, agui, ui = asyncio.run(_both(name, WELL_FORMED[name], chunk))
    assert reference["content"]
    assert reference.get("reasoning_content")
    if name != "gpt_oss":
        assert reference["tool_calls"][0]["function"]["name"] in ("f", "g")
        assert any(p["type"] == "tool-input-available" for p in ui)
        assert ui[-1] == {"type": "finish", "finishReason": "tool-calls"}
