"""turnkit: the conversation I/O layer of LLM applications.

Render conversations into the exact prompt a model expects, parse what the model writes back
into structured messages (complete or streaming), and stream structured JSON output to clients
as partial values and JSON Patch deltas.
"""

from __future__ import annotations

from turnkit import outputs  # stdlib-only, ~20 ms to import
from turnkit.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    DocstringParsingException,
    FormatNotFoundError,
    IncompleteInputError,
    JsonPatchError,
    LimitExceededError,
    OutputParseError,
    ParseError,
    RegexTimeoutError,
    ResponseSchemaError,
    TemplateError,
    TemplateLimitError,
    TemplateNotFoundError,
    TemplateSecurityError,
    ToolSchemaError,
    TurnkitError,
    TypeHintParsingException,
    UsageError,
)
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.parse import (
    FormatSpec,
    OutputFormat,
    ResponseSchema,
    StreamParser,
    list_formats,
    load_format,
    parse_response,
)
from turnkit.render import ChatTemplate, ModelFolder, apply_chat_template, read_model_folder, write_model_folder
from turnkit.tools import get_json_schema

__version__ = "0.1.0.dev0"

__all__ = [
    "ArgumentTypeError",
    "ArgumentValueError",
    "ChatTemplate",
    "DEFAULT_LIMITS",
    "DocstringParsingException",
    "FormatNotFoundError",
    "FormatSpec",
    "IncompleteInputError",
    "JsonPatchError",
    "LimitExceededError",
    "Limits",
    "ModelFolder",
    "OutputFormat",
    "OutputParseError",
    "ParseError",
    "RegexTimeoutError",
    "ResponseSchema",
    "ResponseSchemaError",
    "StreamParser",
    "TemplateError",
    "TemplateLimitError",
    "TemplateNotFoundError",
    "TemplateSecurityError",
    "ToolSchemaError",
    "TurnkitError",
    "TypeHintParsingException",
    "UsageError",
    "__version__",
    "apply_chat_template",
    "get_json_schema",
    "list_formats",
    "load_format",
    "outputs",
    "parse_response",
    "read_model_folder",
    "write_model_folder",
]
