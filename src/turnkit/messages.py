"""The assistant message and tool-call data model, and its two outside forms.

turnkit's own form (what parsers return) keeps tool-call arguments as a parsed value::

    {"role": "assistant", "content": str | None, "reasoning_content": str | None,
     "tool_calls": [{"id": str, "type": "function", "function": {"name": str, "arguments": dict}}]}

:func:`to_openai` gives the OpenAI wire form (arguments as a JSON string); :func:`to_template` gives the
form chat templates expect (``thinking`` beside ``reasoning_content``, arguments as a dict). This module
knows nothing about Jinja, regexes or HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

from turnkit.errors import ParseError

__all__ = [
    "REASONING_FIELDS",
    "AssistantMessage",
    "CallError",
    "FunctionCall",
    "ToolCall",
    "assistant_message",
    "normalize_message",
    "to_openai",
    "to_template",
    "tool_call",
]

REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
"""The keys a message's reasoning goes by (turnkit and OpenAI-compatible servers, chat templates, others)."""


class FunctionCall(TypedDict):
    """The ``function`` part of a tool call: a name and its arguments (a parsed value in turnkit form)."""

    name: str
    arguments: Any


class CallError(TypedDict):
    """Why a parsed tool call cannot be right: ``code`` (``unknown_tool``, ``invalid_arguments``,
    ``incomplete``) and a readable ``message``."""

    code: str
    message: str


class ToolCall(TypedDict):
    """One tool call of an assistant message; ``error`` is present only on a call that cannot be right."""

    id: str
    type: str
    function: FunctionCall
    error: NotRequired[CallError]


class AssistantMessage(TypedDict, total=False):
    """An assistant message in turnkit form; ``incomplete`` is present (True) only for truncated output."""

    role: str
    content: str | None
    reasoning_content: str | None
    tool_calls: list[ToolCall]
    incomplete: bool


def tool_call(name: str, arguments: Any, *, id: str) -> ToolCall:
    """A tool call in turnkit form."""
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant_message(
    content: str | None = None,
    *,
    reasoning_content: str | None = None,
    tool_calls: list[ToolCall] | None = None,
) -> AssistantMessage:
    """An assistant message in turnkit form (empty strings become ``None``)."""
    return {
        "role": "assistant",
        "content": content or None,
        "reasoning_content": reasoning_content or None,
        "tool_calls": list(tool_calls or []),
    }


def _arguments_value(arguments: Any, *, where: str) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise ParseError(f"tool-call arguments are not valid JSON: {exc.msg}", pointer=where) from exc
    return arguments


def normalize_message(message: Mapping[str, Any]) -> AssistantMessage:
    """Bring an assistant message from any of the usual shapes into turnkit form.

    Accepts OpenAI wire form (string arguments), template form (``thinking``), flat tool calls
    (``{"name", "arguments"}``) and ``""`` for "no content".
    """
    reasoning = message.get("reasoning_content")
    if reasoning is None:
        reasoning = message.get("thinking") or message.get("reasoning")
    calls: list[ToolCall] = []
    for index, raw in enumerate(message.get("tool_calls") or []):
        where = f"/tool_calls/{index}"
        function = raw.get("function", raw)
        name = function.get("name")
        if not isinstance(name, str):
            raise ParseError("tool call has no string name", pointer=where)
        arguments = _arguments_value(function.get("arguments", {}), where=where + "/function/arguments")
        call_id = raw.get("id")
        calls.append(tool_call(name, arguments, id=str(call_id) if call_id is not None else f"call_{index}"))
    normal = assistant_message(message.get("content"), reasoning_content=reasoning, tool_calls=calls)
    if message.get("incomplete"):
        normal["incomplete"] = True
    return normal


def to_openai(message: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAI wire form: arguments as a JSON string, no ``tool_calls`` key when there are none."""
    normal = normalize_message(message)
    wire: dict[str, Any] = {"role": "assistant", "content": normal["content"]}
    if normal["reasoning_content"] is not None:
        wire["reasoning_content"] = normal["reasoning_content"]
    if normal["tool_calls"]:
        wire["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": call["function"]["name"],
                    "arguments": json.dumps(call["function"]["arguments"], ensure_ascii=False),
                },
            }
            for call in normal["tool_calls"]
        ]
    return wire


def to_template(message: Mapping[str, Any]) -> dict[str, Any]:
    """The form chat templates read: ``thinking`` (and ``reasoning_content``), arguments as a dict."""
    normal = normalize_message(message)
    form: dict[str, Any] = {"role": "assistant", "content": normal["content"] or ""}
    if normal["reasoning_content"] is not None:
        form["thinking"] = normal["reasoning_content"]
        form["reasoning_content"] = normal["reasoning_content"]
    if normal["tool_calls"]:
        form["tool_calls"] = [dict(call) for call in normal["tool_calls"]]
    return form
