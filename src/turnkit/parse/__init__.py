"""Parsing model output: the x-regex response schema and built-in streaming model formats."""

from __future__ import annotations

from turnkit.parse._detect import Detection, format_markers
from turnkit.parse._emit import Delta
from turnkit.parse._engine import StreamParser
from turnkit.parse._parse_response import parse_response
from turnkit.parse._registry import OutputFormat, list_formats, load_format, reasoning_format, register_format
from turnkit.parse._response_template import ResponseTemplateFormat, load_response_template, parse_response_template
from turnkit.parse._schema import ResponseSchema
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
    "Detection",
    "FormatSpec",
    "Harmony",
    "JsonArgs",
    "JsonCalls",
    "KeyedDict",
    "OutputFormat",
    "Pythonic",
    "Reasoning",
    "ResponseSchema",
    "ResponseTemplateFormat",
    "Section",
    "StreamParser",
    "ToolRegion",
    "XmlParams",
    "format_markers",
    "list_formats",
    "load_format",
    "load_response_template",
    "parse_response",
    "parse_response_template",
    "reasoning_format",
    "register_format",
]
