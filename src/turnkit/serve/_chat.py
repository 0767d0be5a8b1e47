"""What every protocol hands the gateway: a chat request in OpenAI's shape, checked field by field."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnkit.serve._errors import BadRequestError
from turnkit.serve.backends._base import SamplingParams

__all__ = ["ChatRequest", "ToolChoice", "template_messages"]

ToolChoice = str | dict[str, Any]
"""``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "function": {"name": NAME}}``."""

ROLES = ("system", "developer", "user", "assistant", "tool")


@dataclass(frozen=True)
class ChatRequest:
    """One chat turn to generate: OpenAI-shaped ``messages`` and ``tools`` plus the generation options.

    ``messages`` are in OpenAI wire form (content parts, tool-call arguments as JSON text); the gateway turns
    them into template form (:func:`template_messages`).
    """

    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]] | None = None
    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: bool = True
    params: SamplingParams = field(default_factory=SamplingParams)
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    response_format: Mapping[str, Any] | None = None

    @property
    def tool_names(self) -> list[str]:
        """Names of the functions in ``tools``."""
        names = []
        for tool in self.tools or ():
            function = tool.get("function")
            if isinstance(function, Mapping) and isinstance(function.get("name"), str):
                names.append(function["name"])
        return names

    @property
    def forced_tool(self) -> str | None:
        """The function name a named ``tool_choice`` asks for."""
        choice = self.tool_choice
        if isinstance(choice, Mapping):
            function = choice.get("function")
            if isinstance(function, Mapping) and isinstance(function.get("name"), str):
                return str(function["name"])
        return None


def _text_content(content: Any, where: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            if not isinstance(part, Mapping):
                raise BadRequestError("a content part must be an object", param=f"{where}[{j}]")
            kind = part.get("type")
            if kind not in ("text", "input_text", "refusal"):
                raise BadRequestError(
                    f"content part type {kind!r} is not supported (text-only models): send text parts",
                    param=f"{where}[{j}].type",
                )
            key = "refusal" if kind == "refusal" else "text"
            text = part.get(key)
            if not isinstance(text, str):
                raise BadRequestError(f"a {kind} part needs a string {key!r}", param=f"{where}[{j}].{key}")
            texts.append(text)
        return "\n".join(texts)
    raise BadRequestError("content must be a string, a list of content parts or null", param=where)


def _template_tool_call(call: Any, where: str) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        raise BadRequestError("a tool call must be an object", param=where)
    function = call.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise BadRequestError("a tool call needs function.name (a string)", param=f"{where}.function.name")
    arguments: Any = function.get("arguments", "{}")
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            decoded = None
        if isinstance(decoded, dict):  # templates expect a mapping (vLLM decodes them the same way)
            arguments = decoded
    elif not isinstance(arguments, Mapping):
        raise BadRequestError(
            "function.arguments must be a JSON string or an object", param=f"{where}.function.arguments"
        )
    out: dict[str, Any] = {"type": "function", "function": {"name": function["name"], "arguments": arguments}}
    if isinstance(call.get("id"), str):
        out["id"] = call["id"]
    return out


def template_messages(messages: Any, *, param: str = "messages") -> list[dict[str, Any]]:
    """OpenAI wire messages → the messages a chat template sees. Raises :class:`BadRequestError` naming the field.

    Text content parts are joined with newlines; ``developer`` becomes ``system``; tool-call arguments given
    as JSON text are decoded to objects, as vLLM does before rendering.
    """
    if not isinstance(messages, list | tuple) or not messages:
        raise BadRequestError("messages must be a non-empty list", param=param)
    out = []
    for i, message in enumerate(messages):
        where = f"{param}[{i}]"
        if not isinstance(message, Mapping):
            raise BadRequestError("a message must be an object", param=where)
        role = message.get("role")
        if role not in ROLES:
            raise BadRequestError(f"unknown role {role!r}: expected one of {', '.join(ROLES)}", param=f"{where}.role")
        converted: dict[str, Any] = {"role": "system" if role == "developer" else role}
        content = _text_content(message.get("content"), f"{where}.content")
        if content is None and role != "assistant":
            raise BadRequestError(f"a {role} message needs content", param=f"{where}.content")
        converted["content"] = content
        if role == "assistant":
            calls = message.get("tool_calls")
            if calls is not None:
                if not isinstance(calls, list):
                    raise BadRequestError("tool_calls must be a list", param=f"{where}.tool_calls")
                converted["tool_calls"] = [
                    _template_tool_call(call, f"{where}.tool_calls[{j}]") for j, call in enumerate(calls)
                ]
            for key in ("reasoning_content", "reasoning"):
                if isinstance(message.get(key), str):
                    converted["reasoning_content"] = message[key]
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                raise BadRequestError("a tool message needs tool_call_id (a string)", param=f"{where}.tool_call_id")
            converted["tool_call_id"] = call_id
        name = message.get("name")
        if name is not None:
            if not isinstance(name, str):
                raise BadRequestError("name must be a string", param=f"{where}.name")
            converted["name"] = name
        out.append(converted)
    return out
