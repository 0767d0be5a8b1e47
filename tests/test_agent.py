"""The tool loop with real Python tool functions: success, exception, invalid arguments, unknown tool, step
limit, external tools, and the plain-async-callable and backend-object model shapes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from turnkit.agent import Agent, AgentFinished, StepDelta, StepFinished, StepStarted, ToolResult
from turnkit.cli.demo import demo_template


def add(a: int, b: int) -> int:
    """
    Add two integers.

    Args:
        a: first
        b: second
    """
    return a + b


def explode(reason: str) -> str:
    """
    Always fails.

    Args:
        reason: why
    """
    raise RuntimeError(f"kaboom: {reason}")


def _call(name: str, arguments: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'


class Scripted:
    """A model that answers each step with the next scripted output, streamed 3 characters at a time."""

    def __init__(self, *outputs: str) -> None:
        self.outputs = list(outputs)
        self.prompts: list[str] = []

    async def __call__(self, prompt: str) -> AsyncIterator[str]:
        self.prompts.append(prompt)
        output = self.outputs.pop(0) if len(self.outputs) > 1 else self.outputs[0]
        for i in range(0, len(output), 3):
            yield output[i : i + 3]


def _agent(model: Any, tools: Any = (add, explode), **options: Any) -> Agent:
    return Agent(tools, template=demo_template(), output_format="hermes", backend=model, **options)


def _events(agent: Agent) -> list[Any]:
    import asyncio

    async def main() -> list[Any]:
        return [e async for e in agent.run([{"role": "user", "content": "2+3?"}])]

    return asyncio.run(main())


def _results(events: list[Any]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


def test_success_calls_the_function_and_feeds_the_result_back() -> None:
    model = Scripted("<think>add</think>" + _call("add", '{"a": 2, "b": 3}'), "It is 5.")
    events = _events(_agent(model))
    assert [type(e).__name__ for e in events if not isinstance(e, StepDelta)] == [
        "StepStarted",
        "ToolResult",
        "StepFinished",
        "StepStarted",
        "StepFinished",
        "AgentFinished",
    ]
    (result,) = _results(events)
    assert result.ok and result.output == 5 and result.content == "5" and result.arguments == {"a": 2, "b": 3}
    final = events[-1]
    assert isinstance(final, AgentFinished) and final.reason == "stop" and final.steps == 2
    assert final.message == {"role": "assistant", "content": "It is 5."}
    call = final.messages[1]["tool_calls"][0]
    assert final.messages[2] == {"role": "tool", "tool_call_id": call["id"], "name": "add", "content": "5"}
    assert "<tool_response>\n5\n</tool_response>" in model.prompts[1]
    # the deltas carry the same (run-unique) call id as the message
    first = next(e.delta for e in events if isinstance(e, StepDelta) and "tool_calls" in e.delta)
    assert first["tool_calls"][0]["id"] == call["id"] == result.call_id != "call_0"


def test_an_exception_goes_back_to_the_model_as_the_tool_message() -> None:
    model = Scripted(_call("explode", '{"reason": "x"}'), "Sorry.")
    events = _events(_agent(model))
    (result,) = _results(events)
    assert not result.ok and result.error == "explode raised RuntimeError: kaboom: x"
    assert result.content == "Error: explode raised RuntimeError: kaboom: x"
    assert "kaboom: x" in model.prompts[1]
    assert events[-1].reason == "stop"


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        ('{"a": "two", "b": 3}', "/a"),
        ('{"a": 2}', "b"),
        ("[1, 2]", "invalid arguments for counted_add"),
    ],
)
def test_invalid_arguments_go_back_as_the_tool_message_without_calling(arguments: str, needle: str) -> None:
    calls: list[Any] = []

    def counted_add(a: int, b: int) -> int:
        """
        Add.

        Args:
            a: first
            b: second
        """
        calls.append((a, b))
        return a + b

    model = Scripted(_call("counted_add", arguments), "ok")
    (result,) = _results(_events(_agent(model, [counted_add])))
    assert not calls
    assert result.error is not None and result.error.startswith("invalid arguments for counted_add")
    assert needle in result.error and result.content.startswith("Error: invalid arguments")


def test_an_unknown_tool_is_reported_to_the_model() -> None:
    model = Scripted(_call("nope", "{}"), "ok")
    (result,) = _results(_events(_agent(model)))
    assert result.error == "no tool named 'nope' (tools: add, explode)"


def test_step_limit_stops_a_model_that_keeps_calling() -> None:
    model = Scripted(_call("add", '{"a": 1, "b": 1}'))
    events = _events(_agent(model, max_steps=3))
    assert len(_results(events)) == 3
    assert [e.step for e in events if isinstance(e, StepStarted)] == [1, 2, 3]
    final = events[-1]
    assert final.reason == "max_steps" and final.steps == 3 and final.message["tool_calls"]
    ids = [m["tool_call_id"] for m in final.messages if m["role"] == "tool"]
    assert len(set(ids)) == 3


def test_a_call_to_an_external_tool_ends_the_loop_for_the_caller() -> None:
    browser = {"type": "function", "function": {"name": "confirm", "parameters": {"type": "object"}}}
    agent = _agent(Scripted(_call("confirm", "{}")), external_tools=[browser])
    assert [t["function"]["name"] for t in agent.tool_schemas] == ["add", "explode", "confirm"]
    events = _events(agent)
    assert not _results(events) and events[-1].reason == "external_tools"


@dataclass
class Chunk:
    text: str
    finish_reason: str | None = None


class BackendShaped:
    """The serve Backend shape: ``stream(prompt, params)`` yielding chunks with text and finish_reason."""

    def __init__(self) -> None:
        self.params: list[Any] = []

    async def stream(self, prompt: str, params: Any) -> AsyncIterator[Chunk]:
        self.params.append(params)
        yield Chunk("Hel")
        yield Chunk("lo", "length")


def test_backend_objects_and_run_sync() -> None:
    backend = BackendShaped()
    result = _agent(backend, params={"max_tokens": 2}).run_sync([{"role": "user", "content": "hi"}])
    assert result.reason == "length" and result.message["content"] == "Hello"
    assert backend.params == [{"max_tokens": 2}]


def test_step_finished_carries_the_finish_reason() -> None:
    events = _events(_agent(Scripted("plain")))
    (finished,) = [e for e in events if isinstance(e, StepFinished)]
    assert finished.finish_reason == "stop"
