"""The tool loop: render → model → stream parse → call the Python tools → render again, until the model answers.

``Agent(tools, template=..., output_format=..., backend=...)`` runs a conversation against any object with the
backend shape ``stream(prompt, params) -> async iterator of chunks`` (chunks are strings or objects with
``text`` and optionally ``finish_reason``), or a plain async callable ``complete(prompt)`` yielding text::

    agent = Agent([get_weather], template=ChatTemplate(text), output_format="hermes", backend=complete)
    async for event in agent.run([{"role": "user", "content": "Weather in Paris?"}]):
        ...  # StepStarted, StepDelta, ToolResult, StepFinished, then AgentFinished
    result = agent.run_sync(messages)  # the AgentFinished event

Tools are Python functions; their JSON schemas come from :func:`turnkit.get_json_schema`. Arguments are
checked against the schema before the call; invalid arguments, an unknown tool and an exception raised by the
tool all go back to the model as the tool message (``"Error: ..."``), so it can correct itself. The loop stops
when a step makes no tool call, when the output was cut (``length``), when a call names an *external* tool
(one the caller runs, e.g. a browser), or after ``max_steps`` model calls.

Messages are in OpenAI wire form (tool-call arguments as JSON text). This module knows no HTTP and no wire
protocol: the server feeds its own model turns in through ``step``.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from turnkit._json import loads_or_none
from turnkit.errors import UsageError
from turnkit.outputs._schema_check import SchemaChecker
from turnkit.parse import Delta, OutputFormat, load_format
from turnkit.render import ChatTemplate
from turnkit.tools import get_json_schema

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentFinished",
    "CompletionBackend",
    "StepDelta",
    "StepFinished",
    "StepRun",
    "StepStarted",
    "ToolOutcome",
    "ToolResult",
    "Tool",
    "call_tool",
]

StopReason = Literal["stop", "length", "external_tools", "max_steps"]


# -- events -----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StepStarted:
    """A model call begins (steps are numbered from 1)."""

    step: int


@dataclass(frozen=True, slots=True)
class StepDelta:
    """One OpenAI-style delta of the model's reply (``content``, ``reasoning_content`` or ``tool_calls``)."""

    step: int
    delta: Delta


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool ran (or was refused): ``content`` is the tool message the model sees next."""

    step: int
    call_id: str
    name: str
    arguments: Any
    content: str
    output: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True)
class StepFinished:
    """A model call ended; ``message`` is its assistant message (wire form) and ``finish_reason`` the model's."""

    step: int
    message: dict[str, Any]
    finish_reason: str | None
    usage: Any = None


@dataclass(frozen=True, slots=True)
class AgentFinished:
    """The loop ended: the last assistant ``message``, the whole conversation and why it stopped."""

    message: dict[str, Any]
    messages: list[dict[str, Any]]
    steps: int
    reason: StopReason


AgentEvent = StepStarted | StepDelta | ToolResult | StepFinished | AgentFinished


# -- the model side -----------------------------------------------------------------------------------
@runtime_checkable
class CompletionBackend(Protocol):
    """Anything that streams raw model text for a prompt (``turnkit.serve``'s backends have this shape)."""

    def stream(self, prompt: str, params: Any, /) -> AsyncIterator[Any]:
        """Chunks for ``prompt``: strings, or objects with ``text`` (and optionally ``finish_reason``)."""
        ...


class StepRun(Protocol):
    """One model turn: iterate its deltas; afterwards ``message`` (wire form) and ``finish_reason`` are set."""

    finish_reason: str | None

    def __aiter__(self) -> AsyncIterator[Delta]: ...

    @property
    def message(self) -> dict[str, Any]: ...


StepFactory = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], StepRun]
"""``step(messages, tools)`` → the model's next turn (``tools`` in OpenAI form, or None)."""

Complete = Callable[[str], AsyncIterator[str]]


class _Accumulator:
    """Adds deltas up to an OpenAI wire message (arguments as the JSON text the deltas carried)."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[dict[str, Any]] = []

    def add(self, delta: Delta) -> None:
        if delta.get("content"):
            self.content.append(delta["content"])
        if delta.get("reasoning_content"):
            self.reasoning.append(delta["reasoning_content"])
        for call in delta.get("tool_calls") or ():
            function = call.get("function") or {}
            if "id" in call:
                self.calls.append(
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": function.get("name", ""), "arguments": ""},
                    }
                )
            if function.get("arguments") and self.calls:
                self.calls[-1]["function"]["arguments"] += function["arguments"]

    @property
    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self.content) or None,
            "reasoning_content": "".join(self.reasoning) or None,
        }
        if self.calls:
            message["tool_calls"] = self.calls
        return message


class _BackendStep:
    """render → backend → stream parse, for the library use of :class:`Agent`."""

    def __init__(self, agent: Agent, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> None:
        assert agent.template is not None and agent.format is not None
        self.agent = agent
        self.prompt = agent.template.render(
            _template_messages(messages), tools=tools, add_generation_prompt=True, **agent.template_kwargs
        )
        self.tools = tools
        self.finish_reason: str | None = None
        self._acc = _Accumulator()

    @property
    def message(self) -> dict[str, Any]:
        return self._acc.message

    def __aiter__(self) -> AsyncIterator[Delta]:
        return self._deltas()

    async def _chunks(self) -> AsyncIterator[tuple[str, str | None]]:
        backend = self.agent.backend
        assert backend is not None
        source = (
            backend.stream(self.prompt, self.agent.params)
            if isinstance(backend, CompletionBackend)
            else backend(self.prompt)
        )
        async for chunk in source:
            if isinstance(chunk, str):
                yield chunk, None
            else:
                yield str(getattr(chunk, "text", "") or ""), getattr(chunk, "finish_reason", None)

    async def _deltas(self) -> AsyncIterator[Delta]:
        assert self.agent.format is not None
        parser = self.agent.format.stream(prefix=self.prompt, tools=self.tools)
        finish = None
        async for text, reason in self._chunks():
            finish = reason or finish
            for delta in parser.feed(text) if text else ():
                self._acc.add(delta)
                yield delta
        for delta in parser.close():
            self._acc.add(delta)
            yield delta
        self.finish_reason = "length" if finish == "length" else "tool_calls" if self._acc.calls else "stop"


def _template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Wire-form messages → the form templates read: tool-call arguments that are a JSON object are decoded
    (as vLLM does); anything else is passed as the text the model wrote, so a bad call can still be shown."""
    out = []
    for message in messages:
        form = dict(message)
        if message.get("role") == "assistant" and message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                function = dict(call["function"])
                arguments = function.get("arguments")
                if isinstance(arguments, str):
                    _, decoded = loads_or_none(arguments)
                    if isinstance(decoded, dict):
                        function["arguments"] = decoded
                calls.append({**call, "function": function})
            form["tool_calls"] = calls
        if form.get("reasoning_content"):
            form.setdefault("thinking", form["reasoning_content"])
        out.append(form)
    return out


# -- tools ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tool:
    """A Python function offered to the model, with its JSON schema (OpenAI ``{"type": "function", ...}``)."""

    function: Callable[..., Any]
    schema: dict[str, Any]
    name: str = ""
    _checker: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def from_function(cls, function: Callable[..., Any], *, name: str | None = None) -> Tool:
        schema = get_json_schema(function)
        if name is not None:
            schema = {**schema, "function": {**schema["function"], "name": name}}
        schema["function"].pop("return", None)
        return cls(function, schema, schema["function"]["name"], _make_checker(schema["function"].get("parameters")))


def _make_checker(parameters: Any) -> Callable[[Any], list[tuple[str, str]]] | None:
    """A validator for the parameters schema: turnkit's strict checker, else ``jsonschema``, else none."""
    if not isinstance(parameters, Mapping | bool):
        return None
    try:
        return SchemaChecker(parameters).errors
    except UsageError:  # a keyword turnkit's checker does not implement
        pass
    try:
        jsonschema: Any = importlib.import_module("jsonschema")
    except ImportError:  # pragma: no cover - documented: then only JSON syntax and the object shape are checked
        return None
    validator = jsonschema.validators.validator_for(parameters)(parameters)

    def errors(value: Any) -> list[tuple[str, str]]:
        return [("/" + "/".join(str(p) for p in e.absolute_path), e.message) for e in validator.iter_errors(value)]

    return errors


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What calling a tool gave: ``content`` for the tool message, the raw ``output`` or an ``error``."""

    content: str
    output: Any = None
    error: str | None = None
    arguments: Any = None


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


async def call_tool(tool: Tool, arguments: str | Mapping[str, Any]) -> ToolOutcome:
    """Check ``arguments`` (JSON text or a mapping) against the tool's schema and call it; never raises
    for bad arguments or a failing tool: the outcome's ``error`` says what went wrong."""
    name = tool.name
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError) as exc:
            error = f"invalid arguments for {name}: not valid JSON ({exc})"
            return ToolOutcome(f"Error: {error}", error=error, arguments=arguments)
    else:
        value = dict(arguments)
    if not isinstance(value, dict):
        error = f"invalid arguments for {name}: expected a JSON object"
        return ToolOutcome(f"Error: {error}", error=error, arguments=value)
    if tool._checker is not None:
        problems = tool._checker(value)
        if problems:
            detail = "; ".join(f"{pointer or '/'}: {message}" for pointer, message in problems[:5])
            error = f"invalid arguments for {name}: {detail}"
            return ToolOutcome(f"Error: {error}", error=error, arguments=value)
    try:
        if inspect.iscoroutinefunction(tool.function):
            output = await tool.function(**value)
        else:
            output = await asyncio.to_thread(tool.function, **value)
            if inspect.isawaitable(output):
                output = await output
    except Exception as exc:  # the model sees what went wrong and may retry
        error = f"{name} raised {type(exc).__name__}: {exc}"
        return ToolOutcome(f"Error: {error}", error=error, arguments=value)
    return ToolOutcome(_content(output), output=output, arguments=value)


# -- the loop ---------------------------------------------------------------------------------------
class Agent:
    """Runs the tool loop; see the module docstring. Give either ``template``, ``output_format`` and
    ``backend``, or a ``step`` factory (how the server plugs in its own model turns)."""

    def __init__(
        self,
        tools: Iterable[Callable[..., Any]] | Mapping[str, Callable[..., Any]] = (),
        *,
        template: ChatTemplate | str | None = None,
        output_format: OutputFormat | str | None = None,
        backend: CompletionBackend | Complete | None = None,
        step: StepFactory | None = None,
        params: Any = None,
        max_steps: int = 8,
        external_tools: Sequence[Mapping[str, Any]] = (),
        template_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if max_steps < 1:
            raise UsageError("max_steps must be at least 1")
        if step is None and (template is None or output_format is None or backend is None):
            raise UsageError("Agent needs template, output_format and backend (or a step factory)")
        items = tools.items() if isinstance(tools, Mapping) else ((None, f) for f in tools)
        self.tools: dict[str, Tool] = {}
        for name, function in items:
            tool = Tool.from_function(function, name=name)
            self.tools[tool.name] = tool
        self.external_tools = [
            dict(t) for t in external_tools if _tool_name(t) is not None and _tool_name(t) not in self.tools
        ]
        self.template = ChatTemplate(template) if isinstance(template, str) else template
        self.format = load_format(output_format) if isinstance(output_format, str) else output_format
        self.backend = backend
        self.params = params
        self.max_steps = max_steps
        self.template_kwargs = dict(template_kwargs or {})
        self._step = step or (lambda messages, tools: _BackendStep(self, messages, tools))

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools shown to the model: the Python functions' schemas, then the external tools."""
        return [tool.schema for tool in self.tools.values()] + self.external_tools

    async def run(self, messages: Sequence[Mapping[str, Any]]) -> AsyncGenerator[AgentEvent, None]:
        """The loop's events; the last one is :class:`AgentFinished`."""
        history = [dict(m) for m in messages]
        tools = self.tool_schemas or None
        external = {_tool_name(t) for t in self.external_tools}
        message: dict[str, Any] = {"role": "assistant", "content": None}
        reason: StopReason = "max_steps"
        step = 0
        while step < self.max_steps:
            step += 1
            yield StepStarted(step)
            run = self._step(history, tools)
            ids: dict[str, str] = {}
            try:
                async for delta in run:
                    yield StepDelta(step, _renamed(delta, ids))
            finally:
                aclose = getattr(run, "aclose", None)
                if aclose is not None:
                    await aclose()
            message = _clean(run.message, ids)
            history.append(message)
            calls = message.get("tool_calls") or []
            waiting = False
            for call in calls:
                function = call["function"]
                tool = self.tools.get(function["name"])
                if tool is None and function["name"] in external:
                    waiting = True
                    continue
                if tool is None:
                    error = f"no tool named {function['name']!r} (tools: {', '.join(self.tools) or 'none'})"
                    outcome = ToolOutcome(f"Error: {error}", error=error, arguments=function["arguments"])
                else:
                    outcome = await call_tool(tool, function["arguments"])
                history.append(
                    {"role": "tool", "tool_call_id": call["id"], "name": function["name"], "content": outcome.content}
                )
                yield ToolResult(
                    step,
                    call["id"],
                    function["name"],
                    outcome.arguments,
                    outcome.content,
                    outcome.output,
                    outcome.error,
                )
            yield StepFinished(step, message, run.finish_reason, getattr(run, "usage", None))
            if run.finish_reason == "length":
                reason = "length"
                break
            if not calls:
                reason = "stop"
                break
            if waiting:
                reason = "external_tools"
                break
        yield AgentFinished(message, history, step, reason)

    def run_sync(self, messages: Sequence[Mapping[str, Any]]) -> AgentFinished:
        """Run the loop to the end (outside an event loop) and return its :class:`AgentFinished`."""

        async def main() -> AgentFinished:
            last: AgentEvent | None = None
            async for event in self.run(messages):
                last = event
            assert isinstance(last, AgentFinished)
            return last

        return asyncio.run(main())


def _tool_name(tool: Mapping[str, Any]) -> str | None:
    function = tool.get("function")
    name = function.get("name") if isinstance(function, Mapping) else None
    return name if isinstance(name, str) else None


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _renamed(delta: Delta, ids: dict[str, str]) -> Delta:
    """Call ids made unique across the run (formats number calls from 0 in every reply)."""
    calls = delta.get("tool_calls")
    if not calls or not any("id" in call for call in calls):
        return delta
    renamed = []
    for call in calls:
        if "id" in call:
            call = {**call, "id": ids.setdefault(call["id"], _new_id())}
        renamed.append(call)
    return {**delta, "tool_calls": renamed}


def _clean(message: Mapping[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("reasoning_content"):
        out["reasoning_content"] = message["reasoning_content"]
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = []
        for call in calls:
            function = call["function"]
            arguments = function.get("arguments", "")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            out["tool_calls"].append(
                {
                    "id": ids.setdefault(call["id"], _new_id()),
                    "type": "function",
                    "function": {"name": function["name"], "arguments": arguments},
                }
            )
    return out
