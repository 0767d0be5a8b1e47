"""The one pipeline every protocol consumes: render → backend → stream parse → checked deltas.

``Gateway.run(chat)`` renders the prompt (a template error is a 400 before anything streams) and returns a
:class:`Run`: an async iterator of OpenAI-style deltas (``content``, ``reasoning_content``, ``tool_calls``)
after turnkit's tool-call policy, which then knows ``finish_reason``, ``usage``, the whole ``message`` and
any ``problems``. Protocols never talk to the backend directly.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import Any, Literal

from turnkit import ChatTemplate, OutputFormat, ResponseTemplateFormat, TemplateError, TurnkitError, load_format
from turnkit._args import expect, expect_choice, expect_int, expect_mapping
from turnkit.parse import Delta
from turnkit.serve._chat import ChatRequest, template_messages
from turnkit.serve._errors import BackendError, BadRequestError, ServeError, ShuttingDownError
from turnkit.serve._template_parser import TemplateDeltas
from turnkit.serve.backends._base import Backend, BackendChunk, Usage

__all__ = ["Gateway", "ReasoningField", "Run"]

ReasoningField = Literal["both", "reasoning_content", "reasoning", "none"]

# Keyword arguments of the render call that a request's chat_template_kwargs may not override.
_RESERVED_KWARGS = frozenset(
    {
        "messages",
        "conversation",
        "tools",
        "documents",
        "add_generation_prompt",
        "continue_final_message",
        "template_name",
    }
)


_G = "Gateway"


class Gateway:
    """A chat template, an output format and a backend, shared by every protocol of one server."""

    def __init__(
        self,
        template: ChatTemplate | str | Mapping[str, str],
        output_format: OutputFormat | ResponseTemplateFormat | str,
        backend: Backend,
        *,
        served_model_name: str = "turnkit",
        reasoning_field: ReasoningField = "both",
        template_kwargs: Mapping[str, Any] | None = None,
        tool_functions: Mapping[str, Callable[..., Any]] | None = None,
        max_steps: int = 8,
    ) -> None:
        expect(
            template, (ChatTemplate, str, Mapping), name="template", func=_G, accepts="a ChatTemplate, str or mapping"
        )
        expect(output_format, (OutputFormat, ResponseTemplateFormat, str), name="output_format", func=_G)
        if not callable(getattr(backend, "stream", None)):
            expect(backend, (), name="backend", func=_G, accepts="a Backend (an object with .stream(prompt, params))")
        expect(served_model_name, str, name="served_model_name", func=_G)
        expect_mapping(template_kwargs, name="template_kwargs", func=_G, none=True)
        expect_mapping(tool_functions, name="tool_functions", func=_G, values=Callable, none=True)  # type: ignore[arg-type]
        expect_int(max_steps, name="max_steps", func=_G, minimum=1)
        self.template = template if isinstance(template, ChatTemplate) else ChatTemplate(template)
        self.format = load_format(output_format) if isinstance(output_format, str) else output_format
        self.backend = backend
        self.served_model_name = served_model_name
        expect_choice(
            reasoning_field, ("both", "reasoning_content", "reasoning", "none"), name="reasoning_field", func=_G
        )
        self.reasoning_field: ReasoningField = reasoning_field
        self.template_kwargs = dict(template_kwargs or {})
        self.tool_functions = dict(tool_functions or {})
        self.max_steps = max_steps  # model calls per request in the tool loop (AG-UI, AI SDK) with tool_functions
        self.closing = False
        self._active: set[Run] = set()

    @property
    def format_name(self) -> str:
        """The output format's name, or ``response_template`` for a model folder's own."""
        return "response_template" if isinstance(self.format, ResponseTemplateFormat) else self.format.name

    def parser(self, prompt: str, tools: list[Any] | None) -> Any:
        """A stream parser for one generation: the format's own, or the response template's behind turnkit deltas."""
        if isinstance(self.format, ResponseTemplateFormat):
            return TemplateDeltas(self.format.stream(prefix=prompt, tools=tools))
        return self.format.stream(prefix=prompt, tools=tools)

    def prompt_tools(self, chat: ChatRequest) -> list[dict[str, Any]] | None:
        """The tools the prompt shows: none for ``tool_choice="none"``, only the named one for a named choice."""
        if not chat.tools or chat.tool_choice == "none":
            return None
        forced = chat.forced_tool
        tools = [dict(tool) for tool in chat.tools]
        if forced is not None:
            tools = [tool for tool in tools if tool.get("function", {}).get("name") == forced]
        return tools or None

    def render(self, chat: ChatRequest) -> str:
        """The prompt for ``chat`` (with the generation prompt). Raises :class:`BadRequestError` on a template error."""
        messages = template_messages(chat.messages)
        reserved = _RESERVED_KWARGS & set(chat.chat_template_kwargs)
        if reserved:
            raise BadRequestError(
                f"chat_template_kwargs may not set {', '.join(sorted(reserved))}", param="chat_template_kwargs"
            )
        kwargs = {**self.template_kwargs, **chat.chat_template_kwargs}
        try:
            prompt: str = self.template.render(
                messages, tools=self.prompt_tools(chat), add_generation_prompt=True, **kwargs
            )
            return prompt
        except TemplateError as exc:
            raise BadRequestError(f"chat template error: {exc}", param="messages", code="template_error") from exc

    def run(self, chat: ChatRequest) -> Run:
        """Render ``chat`` and prepare its generation; iterate the result (``async for delta in run``)."""
        if self.closing:
            raise ShuttingDownError("the server is shutting down")
        return Run(self, chat, self.render(chat))

    def shutdown(self) -> None:
        """Stop: new runs are refused and every run waiting on the backend ends with :class:`ShuttingDownError`.

        Call it on the event loop (``loop.call_soon_threadsafe(gateway.shutdown)`` from a signal handler).
        """
        self.closing = True
        for run in list(self._active):
            run.interrupt()

    async def aclose(self) -> None:
        """Shut down and release the backend's resources."""
        self.shutdown()
        aclose = getattr(self.backend, "aclose", None)
        if aclose is not None:
            await aclose()


class _Call:
    __slots__ = ("id", "name", "parts")

    def __init__(self, call_id: str, name: str) -> None:
        self.id = call_id
        self.name = name
        self.parts: list[str] = []


class Run:
    """One generation: ``async for delta in run`` yields checked deltas; afterwards ``finish_reason``,
    ``usage``, ``message`` and ``problems`` are set.

    Tool-call policy (the same for every protocol): a call to a function that is not allowed (not in
    ``tools``, ``tool_choice="none"``, another function than a named ``tool_choice``, or a second call when
    ``parallel_tool_calls`` is false) is not passed on as a call: it is written into ``content`` as
    ``{"name": ..., "arguments": ...}`` and reported in ``problems``. Kept calls are numbered 0, 1, ...
    """

    def __init__(self, gateway: Gateway, chat: ChatRequest, prompt: str) -> None:
        self.gateway = gateway
        self.chat = chat
        self.prompt = prompt
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.problems: list[dict[str, Any]] = []
        self._parser = gateway.parser(prompt, [dict(t) for t in chat.tools or ()] or None)
        self._allowed = None if chat.tool_choice == "none" else set(chat.tool_names)
        forced = chat.forced_tool
        if forced is not None:
            self._allowed = {forced}
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_Call] = []
        self._index: dict[int, int | None] = {}
        self._diverted: int | None = None
        self._chunks = 0
        self._backend_finish: str | None = None
        self._it: AsyncIterator[BackendChunk] | None = None
        self._first: BackendChunk | None = None
        self._first_taken = False  # ready() has consumed the first chunk
        self._started = False
        self._task: asyncio.Task[Any] | None = None
        self._interrupted = False
        self._iterator: AsyncIterator[Any] | None = None

    # -- backend ----------------------------------------------------------------------------------
    async def start(self) -> None:
        """Send the request and wait for the first chunk, so that an unreachable backend fails before any
        response is started (HTTP 502). Iterating calls it when needed."""
        if self._started:
            return
        self._started = True
        self.gateway._active.add(self)
        self._it = aiter(self.gateway.backend.stream(self.prompt, self.chat.params))
        self._first = await self._next()

    async def _next(self) -> BackendChunk | None:
        if self.gateway.closing or self._interrupted:
            raise ShuttingDownError("the server is shutting down")
        assert self._it is not None
        self._task = asyncio.current_task()
        try:
            return await anext(self._it)
        except StopAsyncIteration:
            return None
        except asyncio.CancelledError:
            task = self._task
            if self._interrupted and task is not None and task.uncancel() == 0:
                raise ShuttingDownError("the server is shutting down") from None
            raise
        except ServeError:
            raise
        except Exception as exc:
            raise BackendError(f"backend failed: {exc!r}") from exc
        finally:
            self._task = None

    def interrupt(self) -> None:
        """End this run with :class:`ShuttingDownError` (used by ``Gateway.shutdown``)."""
        self._interrupted = True
        if self._task is not None:
            self._task.cancel()

    async def aclose(self) -> None:
        """Stop the generation and cancel the backend request."""
        if self._iterator is not None:
            aclose = getattr(self._iterator, "aclose", None)
            if aclose is not None:
                await aclose()
        await self._close_backend()

    async def _close_backend(self) -> None:
        self.gateway._active.discard(self)
        it, self._it = self._it, None
        aclose = getattr(it, "aclose", None)
        if aclose is not None:
            try:
                await aclose()
            except Exception:  # noqa: S110 - the backend is being abandoned; its error no longer matters
                pass

    # -- iteration --------------------------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[Delta]:
        if self._iterator is None:
            self._iterator = self._deltas()
        return self._iterator

    def batches(self) -> AsyncIterator[list[Delta]]:
        """The same deltas as ``async for delta in run``, one non-empty list per backend chunk that produced any
        (then the close's), so that a protocol can write them at once. Use either this or ``async for``."""
        if self._iterator is None:
            self._iterator = self._batches()
        return self._iterator

    async def _deltas(self) -> AsyncIterator[Delta]:
        batches = self._batches()
        try:
            async for batch in batches:
                for delta in batch:
                    yield delta
        finally:
            await batches.aclose()

    def ready(self) -> list[Delta]:
        """After :meth:`start`: the checked deltas of the backend chunk already received, without waiting (so a
        protocol can write them with its first event); iterating then goes on from the next chunk."""
        chunk = self._first
        if chunk is None or self._first_taken:  # not started, the backend sent nothing, or already taken
            return []
        self._first_taken = True
        self._first = None
        return self._feed(chunk)

    def _feed(self, chunk: BackendChunk) -> list[Delta]:
        checked: list[Delta] = []
        if chunk.text:
            self._chunks += 1
            try:
                deltas = self._parser.feed(chunk.text)
            except TurnkitError as exc:
                raise ServeError(f"model output could not be parsed: {exc}", code="output_error") from exc
            if deltas:
                checked = self._check(deltas)
        if chunk.finish_reason is not None:
            self._backend_finish = chunk.finish_reason
        if chunk.usage is not None:
            self.usage = chunk.usage
        return checked

    async def _batches(self) -> AsyncGenerator[list[Delta], None]:
        try:
            await self.start()
            if self._first_taken:  # ready() fed the first chunk
                chunk = await self._next()
            else:
                chunk, self._first = self._first, None
                self._first_taken = True
            feed = self._feed
            while chunk is not None:
                checked = feed(chunk)
                if checked:
                    yield checked
                chunk = await self._next()
            tail = self._check(self._parser.close())
            self._close_diverted(tail)
            if tail:
                yield tail
            self._finish()
        finally:
            await self._close_backend()

    async def complete(self) -> dict[str, Any]:
        """Run to the end and return the ``message``."""
        async for _ in self:
            pass
        return self.message

    # -- the tool-call policy -----------------------------------------------------------------------
    def _refusal(self, name: str) -> str | None:
        chat = self.chat
        if chat.tool_choice == "none":
            return 'tool_choice is "none"'
        if self._allowed is None or name not in self._allowed:
            if chat.forced_tool is not None:
                return f"tool_choice names {chat.forced_tool!r}"
            return "no such function in tools"
        if not chat.parallel_tool_calls and self._calls:
            return "parallel_tool_calls is false"
        return None

    def _text(self, out: list[Delta], key: str, text: str) -> None:
        (self._content if key == "content" else self._reasoning).append(text)
        out.append({key: text})

    def _close_diverted(self, out: list[Delta]) -> None:
        if self._diverted is not None:
            self._diverted = None
            self._text(out, "content", "}")

    def _check(self, deltas: list[Delta]) -> list[Delta]:
        out: list[Delta] = []
        for delta in deltas:
            if len(delta) == 1 and self._diverted is None:  # the common case: one text delta
                text = delta.get("content")
                if text:
                    self._content.append(text)
                    out.append({"content": text})
                    continue
                text = delta.get("reasoning_content")
                if text:
                    self._reasoning.append(text)
                    out.append({"reasoning_content": text})
                    continue
            calls = delta.get("tool_calls")
            if calls is None:
                for key in ("content", "reasoning_content"):
                    text = delta.get(key)
                    if text:
                        self._close_diverted(out)
                        self._text(out, key, text)
                continue
            for call in calls:
                self._call_delta(out, call)
        return out

    def _call_delta(self, out: list[Delta], call: Mapping[str, Any]) -> None:
        index = call["index"]
        error = call.get("error")
        if error is not None:  # the parser's verdict on a call (after its last fragment): not sent to clients
            self._flag(index, error)
            return
        function = call.get("function") or {}
        arguments = function.get("arguments") or ""
        if "id" in call:  # the first delta of a call
            self._close_diverted(out)
            name = function.get("name") or ""
            reason = self._refusal(name)
            if reason is not None:
                self._index[index] = None
                self._diverted = index
                self.problems.append(
                    {
                        "code": "tool_call_not_allowed",
                        "name": name,
                        "message": f"the model called {name!r}, which is not allowed ({reason}); "
                        "the call is returned as content",
                    }
                )
                self._text(out, "content", '{"name": ' + json.dumps(name, ensure_ascii=False) + ', "arguments": ')
                if arguments:
                    self._text(out, "content", arguments)
                return
            position = len(self._calls)
            self._index[index] = position
            self._calls.append(_Call(call["id"], name))
            out.append(
                {
                    "tool_calls": [
                        {
                            "index": position,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        if not arguments:
            return
        position_or_none = self._index.get(index)
        if position_or_none is None:
            if self._diverted != index:  # a fragment of an earlier diverted call: keep it readable
                self._close_diverted(out)
                self._diverted = index
            self._text(out, "content", arguments)
            return
        self._close_diverted(out)
        self._calls[position_or_none].parts.append(arguments)
        out.append({"tool_calls": [{"index": position_or_none, "function": {"arguments": arguments}}]})

    def _flag(self, index: int, error: Mapping[str, str]) -> None:
        """Report a kept call whose arguments the parser found invalid (not JSON, not an object, cut off); the
        parser's ``unknown_tool`` is this policy's own business (``_refusal``), diverted calls are content."""
        position = self._index.get(index)
        if position is None or error["code"] not in ("invalid_arguments", "incomplete"):
            return
        name = self._calls[position].name
        self.problems.append(
            {
                "code": "invalid_tool_arguments",
                "index": position,
                "name": name,
                "message": f"the arguments of call {position} ({name!r}) are not a JSON object: {error['message']}",
            }
        )

    # -- the end ------------------------------------------------------------------------------------
    def _finish(self) -> None:
        if self._backend_finish == "length":
            self.finish_reason = "length"
        elif self._calls:
            self.finish_reason = "tool_calls"
        else:
            self.finish_reason = "stop"
        if self.usage is None:
            self.usage = Usage(prompt_tokens=0, completion_tokens=self._chunks)
        choice = self.chat.tool_choice
        if (choice == "required" or self.chat.forced_tool is not None) and not self._calls:
            self.problems.append(
                {"code": "tool_choice_not_met", "message": "tool_choice asked for a tool call and the model made none"}
            )
        if self._parser.incomplete and self.finish_reason != "length":
            self.problems.append(
                {"code": "incomplete_output", "message": "the model output ended inside an unfinished region"}
            )
        fmt = self.chat.response_format
        if fmt is not None and fmt.get("type") in ("json_object", "json_schema"):
            error = check_response_format(self.content, fmt)
            if error is not None:
                self.problems.append({"code": "response_format_not_met", "message": error})

    @property
    def content(self) -> str | None:
        return "".join(self._content) or None

    @property
    def reasoning(self) -> str | None:
        return "".join(self._reasoning) or None

    @property
    def message(self) -> dict[str, Any]:
        """What the deltas so far add up to: ``role``, ``content``, ``reasoning_content``, ``tool_calls``
        (arguments as the JSON text the deltas carried); ``tool_calls`` only when there are calls."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content, "reasoning_content": self.reasoning}
        if self._calls:
            message["tool_calls"] = [
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": "".join(call.parts)}}
                for call in self._calls
            ]
        return message


def check_response_format(content: str | None, response_format: Mapping[str, Any]) -> str | None:
    """Why ``content`` does not satisfy ``response_format`` (json_object / json_schema), or None."""
    if content is None:
        return "the model wrote no content, and response_format asks for JSON"
    try:
        value = json.loads(content)
    except (ValueError, RecursionError) as exc:
        return f"the content is not valid JSON: {exc}"
    if response_format.get("type") == "json_object":
        return None if isinstance(value, dict) else "the content is JSON but not an object"
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    if not isinstance(schema, Mapping):
        return None
    try:
        jsonschema: Any = importlib.import_module("jsonschema")
    except ImportError:  # pragma: no cover - documented: without jsonschema only JSON syntax is checked
        return None
    validator_cls = jsonschema.validators.validator_for(schema)
    errors = sorted(validator_cls(schema).iter_errors(value), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    first = errors[0]
    pointer = "/" + "/".join(str(p) for p in first.absolute_path)
    return f"the content does not match the schema at {pointer}: {first.message}"
