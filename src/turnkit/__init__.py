"""turnkit: the conversation I/O layer of LLM applications.

Render conversations into the exact prompt a model expects, parse what the model writes back
into structured messages (complete or streaming), and stream structured JSON output to clients
as partial values and JSON Patch deltas.
"""

from __future__ import annotations

import importlib
import typing

from turnkit.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    BatchInputError,
    DocstringParsingException,
    FormatNotFoundError,
    IncompleteInputError,
    JsonPatchError,
    LimitExceededError,
    MissingDependencyError,
    NotATemplateError,
    OutputParseError,
    ParseError,
    RegexTimeoutError,
    ResponseSchemaError,
    ResponseTemplateError,
    TemplateError,
    TemplateLimitError,
    TemplateNotFoundError,
    TemplateSecurityError,
    TokenizerError,
    ToolCallError,
    ToolSchemaError,
    TurnkitError,
    TypeHintParsingException,
    UsageError,
)
from turnkit.limits import DEFAULT_LIMITS, Limits

# eager: a first import of the subpackage after ``turnkit``'s would rebind ``turnkit.lint`` to it
from turnkit.lint import LintFinding, lint

if typing.TYPE_CHECKING:
    from turnkit import outputs
    from turnkit._model_format import ModelFormat, detect_format, model_format
    from turnkit.parse import (
        Detection,
        FormatSpec,
        OutputFormat,
        ResponseSchema,
        ResponseTemplateFormat,
        StreamParser,
        list_formats,
        load_format,
        parse_response,
        parse_response_template,
    )
    from turnkit.render import ChatTemplate, ModelFolder, apply_chat_template, read_model_folder, write_model_folder
    from turnkit.tools import get_json_schema

# The rest of the API is imported on first use (PEP 562): a command or a worker that only renders does not pay
# for the parsers, the output parsers and the schema tools (~35 ms of ``import turnkit``'s ~110 ms).
_LAZY = {
    name: module
    for module, names in {
        "turnkit._model_format": ("ModelFormat", "detect_format", "model_format"),
        "turnkit.parse": (
            "Detection",
            "FormatSpec",
            "OutputFormat",
            "ResponseSchema",
            "ResponseTemplateFormat",
            "StreamParser",
            "list_formats",
            "load_format",
            "parse_response",
            "parse_response_template",
        ),
        "turnkit.render": (
            "ChatTemplate",
            "ModelFolder",
            "apply_chat_template",
            "read_model_folder",
            "write_model_folder",
        ),
        "turnkit.tools": ("get_json_schema",),
    }.items()
    for name in names
}


def __getattr__(name: str) -> typing.Any:
    if name == "outputs":
        return importlib.import_module("turnkit.outputs")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'turnkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0.dev0"

__all__ = [
    "ArgumentTypeError",
    "ArgumentValueError",
    "BatchInputError",
    "ChatTemplate",
    "DEFAULT_LIMITS",
    "Detection",
    "DocstringParsingException",
    "FormatNotFoundError",
    "FormatSpec",
    "IncompleteInputError",
    "JsonPatchError",
    "LimitExceededError",
    "Limits",
    "LintFinding",
    "MissingDependencyError",
    "ModelFolder",
    "ModelFormat",
    "NotATemplateError",
    "OutputFormat",
    "OutputParseError",
    "ParseError",
    "RegexTimeoutError",
    "ResponseSchema",
    "ResponseSchemaError",
    "ResponseTemplateError",
    "ResponseTemplateFormat",
    "StreamParser",
    "TemplateError",
    "TemplateLimitError",
    "TemplateNotFoundError",
    "TemplateSecurityError",
    "TokenizerError",
    "ToolCallError",
    "ToolSchemaError",
    "TurnkitError",
    "TypeHintParsingException",
    "UsageError",
    "__version__",
    "apply_chat_template",
    "detect_format",
    "get_json_schema",
    "lint",
    "list_formats",
    "load_format",
    "model_format",
    "outputs",
    "parse_response",
    "parse_response_template",
    "read_model_folder",
    "write_model_folder",
]
