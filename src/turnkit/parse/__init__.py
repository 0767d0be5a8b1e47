"""Parsing model output: the x-regex response schema and built-in streaming model formats."""

from __future__ import annotations

from turnkit.parse._emit import Delta
from turnkit.parse._engine import StreamParser
from turnkit.parse._registry import OutputFormat, list_formats, load_format, reasoning_format, register_format
from turnkit.parse._schema import ResponseSchema, parse_response
from turnkit.parse._spec import (
    FormatSpec,
    Harmony,
    JsonArgs,
    JsonCalls,
    KeyedDict,
    Pythonic,
    Reasoning,
    Section,
    ToolRegion,
    XmlParams,
)

__all__ = [
    "Delta",
    "FormatSpec",
    "Harmony",
    "JsonArgs",
    "JsonCalls",
    "KeyedDict",
    "OutputFormat",
    "Pythonic",
    "Reasoning",
    "ResponseSchema",
    "Section",
    "StreamParser",
    "ToolRegion",
    "XmlParams",
    "list_formats",
    "load_format",
    "parse_response",
    "reasoning_format",
    "register_format",
]
