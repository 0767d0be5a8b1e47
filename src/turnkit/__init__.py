"""turnkit: the conversation I/O layer of LLM applications.

Render conversations into the exact prompt a model expects, parse what the model writes back
into structured messages (complete or streaming), and stream structured JSON output to clients
as partial values and JSON Patch deltas.
"""

from __future__ import annotations

from turnkit import outputs  # stdlib-only, ~20 ms to import
from turnkit._model_format import ModelFormat, detect_format, model_format
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
from turnkit.lint import LintFinding, lint
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
