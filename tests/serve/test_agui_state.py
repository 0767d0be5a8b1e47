"""AG-UI structured runs: ``forwardedProps.response_format`` streams the model's JSON as STATE_SNAPSHOT +
STATE_DELTA, checked with the real ``@ag-ui/client`` (its verifier, and its reducer applying every delta with
fast-json-patch, validation on) under Node, and in Python with the jsonpatch library."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonpatch
import pytest

from tests.serve.test_node_contract import _run
from tests.serve.test_sync_http import REVIEW, SCHEMA, _gateway, _parse_sse
from tests.serve.wire import verify_agui
from turnkit.serve import create_app

pytestmark = pytest.mark.timeout(120)


def _input(prompt: str, **props: Any) -> dict[str, Any]:
    fmt = {"type": "json_schema", "json_schema": {"name": "review", "schema": SCHEMA}}
    return {
        "threadId": "thread-1",
        "runId": "run-1",
        "messages": [{"id": "u1", "role": "user", "content": prompt}],
        "tools": [],
        "context": [],
        "forwardedProps": {"response_format": fmt, **props},
    }


def _events(base: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    with httpx.stream("POST", base + "/agui", json=body, timeout=30) as response:
        assert response.status_code == 200, response.read()
        return [json.loads(data) for _, _, data in _parse_sse(response.read().decode())]


@pytest.mark.parametrize("props", [{}, {"transform": "review-v1", "markers": True}], ids=["plain", "v1-markers"])
def test_agui_state_python(live: Any, props: dict[str, Any]) -> None:
    with live(create_app(_gateway())) as server:
        events = _events(server.url, _input("SLOW", **props))
        verify_agui(events)
        types = [e["type"] for e in events]
        assert types[:3] == ["RUN_STARTED", "CUSTOM", "STATE_SNAPSHOT"] and types[-1] == "RUN_FINISHED"
        assert set(types[3:-1]) == {"STATE_DELTA"}
        state = events[2]["snapshot"]
        for event in events[3:-1]:
            assert all(op["op"] in ("add", "replace", "remove") for op in event["delta"]), event
            state = jsonpatch.apply_patch(state, event["delta"])  # (raises on a replace of a missing value)
        assert events[-1]["result"] == REVIEW
        expected = dict(REVIEW)
        if props:
            expected["summary"] = [item["text"] for item in REVIEW["summaryV2"]]
        assert state == expected
        stream_id = events[1]["value"]["id"]
        assert httpx.get(f"{server.url}/v1/streams/{stream_id}").json()["done"]


def test_agui_state_errors(live: Any) -> None:
    with live(create_app(_gateway())) as server:
        events = _events(server.url, _input("NOTJSON"))
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "json_incomplete"
        bad = _input("REVIEW")
        bad["forwardedProps"]["transform"] = "nope"
        response = httpx.post(server.url + "/agui", json=bad)
        assert response.status_code == 400 and response.json()["error"]["param"] == "forwardedProps.transform"


@pytest.mark.parametrize("props", [{}, {"transform": "review-v1", "markers": True}], ids=["plain", "v1-markers"])
def test_agui_state_http_agent(live: Any, props: dict[str, Any]) -> None:
    body = _input("SLOW", **props)
    with live(create_app(_gateway())) as server:
        result = _run(
            "agui_state_contract.mjs",
            server.url + "/agui",
            json.dumps({"messages": body["messages"], "forwardedProps": body["forwardedProps"]}),
        )
        assert result["warnings"] == []  # the client applied every delta
        expected = dict(REVIEW)
        if props:
            expected["summary"] = [item["text"] for item in REVIEW["summaryV2"]]
        assert result["state"] == expected and result["mirror"] == expected
        deltas = [e for e in result["events"] if e["type"] == "STATE_DELTA"]
        assert len(deltas) > 10 and len(result["states"]) >= len(deltas)
        if props:  # $partial markers reached the client state while the model wrote
            assert any("$partial" in json.dumps(s) for s in result["states"])
