"""A spread of conversations and options every real chat template is rendered with (differential tests)."""

from __future__ import annotations

import copy
from typing import Any

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current local time in a time zone.",
        "parameters": {
            "type": "object",
            "properties": {"tz": {"type": "string", "description": "IANA time zone"}},
            "required": ["tz"],
        },
    },
}
TOOLS = [WEATHER_TOOL, TIME_TOOL]
DOCUMENTS = [
    {"title": "Paris", "text": "Paris is the capital of France."},
    {"title": "Tokyo", "text": "東京は日本の首都です。"},
]

USER = {"role": "user", "content": "What's the weather in Paris?"}
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    ],
}
CALL_JSON_ARGS = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    ],
}
RESULT = {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": '{"temp": 21, "sky": "clear"}'}
PARALLEL = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": {"tz": "Europe/Paris"}}},
    ],
}
RESULTS = [
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "21°C, clear"},
    {"role": "tool", "tool_call_id": "call_2", "name": "get_time", "content": "14:05"},
]


def cases() -> list[tuple[str, list[dict[str, Any]], dict[str, Any]]]:
    """(id, conversation, options) triples; conversations are fresh copies per call."""
    base: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = [
        ("plain", [USER], {}),
        ("plain-gen", [USER], {"add_generation_prompt": True}),
        ("system", [SYSTEM, USER], {"add_generation_prompt": True}),
        (
            "multi-turn",
            [SYSTEM, USER, {"role": "assistant", "content": "Sunny, 21°C."}, {"role": "user", "content": "Thanks!"}],
            {},
        ),
        (
            "multi-turn-gen",
            [USER, {"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "And tomorrow?"}],
            {"add_generation_prompt": True},
        ),
        (
            "unicode",
            [
                {"role": "user", "content": 'こんにちは 🌍 — "quotes" \\ back\\slash <b>&amp;</b>\n\tnew line'},
                {"role": "assistant", "content": "Привет! 😀 ünïcödé"},
            ],
            {},
        ),
        ("tools", [SYSTEM, USER], {"tools": TOOLS, "add_generation_prompt": True}),
        ("tool-call", [USER, CALL, RESULT], {"tools": TOOLS, "add_generation_prompt": True}),
        ("tool-call-json-args", [USER, CALL_JSON_ARGS, RESULT], {"tools": TOOLS}),
        (
            "parallel-calls",
            [SYSTEM, USER, PARALLEL, *RESULTS, {"role": "assistant", "content": "It is 21°C and 14:05 in Paris."}],
            {"tools": TOOLS},
        ),
        ("documents", [USER], {"documents": DOCUMENTS, "add_generation_prompt": True}),
        (
            "continue-final",
            [USER, {"role": "assistant", "content": "The weather in Paris is"}],
            {"continue_final_message": True},
        ),
        ("thinking-on", [USER], {"add_generation_prompt": True, "enable_thinking": True}),
        ("thinking-off", [USER], {"add_generation_prompt": True, "enable_thinking": False}),
        (
            "reasoning",
            [USER, {"role": "assistant", "content": "Sunny.", "reasoning_content": "The user wants weather."}, USER],
            {"add_generation_prompt": True},
        ),
        (
            "content-blocks",
            [{"role": "user", "content": [{"type": "text", "text": "Describe Paris."}]}],
            {"add_generation_prompt": True},
        ),
    ]
    return [(name, copy.deepcopy(conv), copy.deepcopy(opts)) for name, conv, opts in base]


def get_weather(city: str, unit: str = "celsius") -> str:
    """
    Get the current weather in a city.

    Args:
        city: The city, e.g. Paris
        unit: The temperature unit (choices: ["celsius", "fahrenheit"])

    Returns:
        A short description of the weather.
    """
    return f"21 {unit}, clear in {city}"


def get_time(tz: str) -> str:
    """
    Current local time in a time zone.

    Args:
        tz: IANA time zone
    """
    return "14:05"


PYTHON_TOOLS = [get_weather, get_time]


def function_tool_cases() -> list[tuple[str, list[dict[str, Any]], dict[str, Any]]]:
    """The cases that pass tools, with the tools given as Python functions instead of JSON schemas."""
    return [
        (name + "-py", conversation, {**options, "tools": PYTHON_TOOLS})
        for name, conversation, options in cases()
        if "tools" in options
    ]
