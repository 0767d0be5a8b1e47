"""A model folder that ships a ``response_template`` is served with it: `turnkit serve --model FOLDER` picks it
over detection, and every reply (stream and non-stream, real ``openai`` client) is the template's parse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

import turnkit
from tests.parse.test_response_template import QWEN  # transformers 5.23's template for Qwen2/Qwen3
from tests.serve.test_openai_contract import _accumulate, _non_stream
from turnkit import ResponseTemplateFormat
from turnkit.cli import build_parser
from turnkit.cli.serve import build_gateway
from turnkit.serve import create_app

pytestmark = pytest.mark.timeout(60)

CALLS = (
    "<think>Two lookups.</think>\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_time", "arguments": {"city": "Tokyo"}}\n</tool_call><|im_end|>'
)
TEXT = "<think>A greeting.</think>Hello, ünïcödé world!<|im_end|>"
TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}
    for name in ("get_weather", "get_time")
]


@pytest.fixture
def served(tmp_path: Path, live: Any) -> Any:
    folder = tmp_path / "model"
    folder.mkdir()
    template = (Path(turnkit.__file__).parent / "data" / "chatml-tools.jinja").read_text(encoding="utf-8")
    config = {"chat_template": template, "response_template": QWEN, "eos_token": "<|im_end|>"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    replay = tmp_path / "replay.jsonl"
    records = [{"match": "WEATHER", "output": CALLS, "chunk": 3}, {"output": TEXT, "chunk": 2}]
    replay.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    args = build_parser().parse_args(["serve", "--model", str(folder), "--backend", f"replay:{replay}"])
    gateway = build_gateway(args)
    with live(create_app(gateway)) as server:
        yield gateway, openai.OpenAI(base_url=server.url + "/v1", api_key="x", timeout=10, max_retries=0)


def _both(client: openai.OpenAI, content: str, **options: Any) -> tuple[Any, Any]:
    messages = [{"role": "user", "content": content}]
    chunks = list(client.chat.completions.create(model="m", messages=messages, stream=True, **options))
    return _accumulate(chunks), _non_stream(client.chat.completions.create(model="m", messages=messages, **options))


def test_the_folders_response_template_is_used(served: Any) -> None:
    gateway, client = served
    assert gateway.format_name == "response_template"
    expected = ResponseTemplateFormat(QWEN).parse(CALLS, tools=TOOLS)
    streamed, whole = _both(client, "WEATHER?", tools=TOOLS)
    assert streamed == whole
    message, finish, problems = streamed
    assert finish == "tool_calls" and problems == []
    assert message["reasoning_content"] == expected["reasoning_content"] == "Two lookups."
    calls = [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]]
    assert calls == [
        ("call_0", "get_weather", {"city": "Paris"}),
        ("call_1", "get_time", {"city": "Tokyo"}),
    ]
    assert [c["function"]["arguments"] for c in expected["tool_calls"]] == [{"city": "Paris"}, {"city": "Tokyo"}]


def test_text_and_reasoning_through_the_template(served: Any) -> None:
    _, client = served
    streamed, whole = _both(client, "Hi")
    assert streamed == whole
    message, finish, _ = streamed
    assert (message["reasoning_content"], message["content"], finish) == (
        "A greeting.",
        "Hello, ünïcödé world!",
        "stop",
    )


def test_the_policy_applies_to_template_calls(served: Any) -> None:
    _, client = served
    (message, _, problems), _ = _both(client, "WEATHER?", tools=TOOLS[:1])
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather"]
    assert [p["code"] for p in problems] == ["tool_call_not_allowed"]
    assert '"name": "get_time"' in message["content"]
