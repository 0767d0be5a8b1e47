"""Every exception turnkit raises, in one place.

All derive from :class:`TurnkitError` and, where one fits, from the matching builtin, so
``except ValueError`` keeps working for callers that do not know turnkit. Errors carry data:
a stable ``code``, and where it applies a ``position`` (character offset), a JSON ``pointer``
and a short ``snippet`` of the offending input.

Three families: bad input (``ParseError``, ``IncompleteInputError``, template and schema errors),
misuse of the API (``UsageError`` and its ``ArgumentTypeError`` / ``ArgumentValueError``), and budgets
(``LimitExceededError``). docs/errors.md draws the whole tree; a test keeps it equal to this module.
"""

from __future__ import annotations

__all__ = [
    "ArgumentTypeError",
    "ArgumentValueError",
    "BatchInputError",
    "DocstringParsingException",
    "FormatNotFoundError",
    "IncompleteInputError",
    "JsonPatchError",
    "LimitExceededError",
    "MissingDependencyError",
    "NotATemplateError",
    "OutputParseError",
    "ParseError",
    "RegexTimeoutError",
    "ResponseSchemaError",
    "ResponseTemplateError",
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
]

_SNIPPET_CHARS = 40


def snippet_around(text: str, position: int, *, width: int = _SNIPPET_CHARS) -> str:
    """A short, printable window of ``text`` centred on ``position`` for error messages."""
    start = max(0, position - width // 2)
    window = text[start : start + width]
    return window.encode("unicode_escape").decode("ascii")


class TurnkitError(Exception):
    """Root of every turnkit error."""

    code: str = "turnkit_error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        position: int | None = None,
        pointer: str | None = None,
        snippet: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.position = position
        self.pointer = pointer
        self.snippet = snippet

    def __str__(self) -> str:
        where = []
        if self.pointer is not None:
            where.append(f"at {self.pointer or '/'}")
        if self.position is not None:
            where.append(f"at position {self.position}")
        text = self.message
        if where:
            text += f" ({', '.join(where)})"
        if self.snippet:
            # snippets are already printable (escaped or JSON-quoted where they are made): quote, never re-escape
            quoted = self.snippet[0] in '"…'
            text += f": {self.snippet}" if quoted else f': "{self.snippet}"'
        return text


class UsageError(TurnkitError, RuntimeError):
    """The API was misused (e.g. feeding a closed parser): a bug in the caller, not bad input."""

    code = "usage"


class ArgumentTypeError(UsageError, TypeError):
    """A public function or constructor got an argument of the wrong type; the message names the parameter."""

    code = "argument_type"


class ArgumentValueError(UsageError, ValueError):
    """A public function or constructor got an argument of the right type but an unusable value."""

    code = "argument_value"


class LimitExceededError(TurnkitError):
    """A configured resource budget (size, depth, time, iterations) was exceeded."""

    code = "limit_exceeded"


class TemplateError(TurnkitError, ValueError):
    """A chat template failed to compile or render."""

    code = "template"


class TemplateSecurityError(TemplateError):
    """A template tried something the sandbox forbids (attribute walks, mutation, format strings)."""

    code = "template_security"


class TemplateLimitError(TemplateError, LimitExceededError):
    """A template exceeded a resource budget (output size, range, repetition, recursion, time)."""

    code = "template_limit"


class TemplateNotFoundError(TemplateError, LookupError):
    """No chat template could be chosen (missing, unknown name, or unsafe name)."""

    code = "template_not_found"


class ToolSchemaError(TurnkitError, TypeError):
    """A Python function could not be turned into a tool JSON schema."""

    code = "tool_schema"


class TypeHintParsingException(ToolSchemaError):
    """A tool function's type hint is missing or has no JSON schema (transformers' exception of that name)."""

    # code stays "tool_schema": the class says which part of the function is at fault


class DocstringParsingException(ToolSchemaError):
    """A tool function's docstring is missing or lacks an argument (transformers' exception of that name)."""

    # code stays "tool_schema"


class ParseError(TurnkitError, ValueError):
    """Input (model output, JSON, a reply) is invalid and cannot be parsed."""

    code = "parse"


class ToolCallError(ParseError):
    """A parsed tool call cannot be right (``strict=True`` of a model output format): ``index`` is the call's
    position in the message, ``code`` why (``unknown_tool``, ``invalid_arguments``, ``incomplete``)."""

    code = "tool_call"

    def __init__(self, message: str, *, index: int, code: str) -> None:
        super().__init__(message, code=code, pointer=f"/tool_calls/{index}")
        self.index = index


class IncompleteInputError(TurnkitError, ValueError):
    """Input ended before it was complete: more input could still make it valid."""

    code = "incomplete"


class ResponseSchemaError(TurnkitError, ValueError):
    """A response schema (x-regex and friends) is itself invalid."""

    code = "response_schema"


class RegexTimeoutError(LimitExceededError, ParseError):
    """A regular expression ran past its time budget on untrusted input."""

    code = "regex_timeout"


class FormatNotFoundError(TurnkitError, LookupError):
    """No built-in model output format has the requested name."""

    code = "format_not_found"


class JsonPatchError(TurnkitError, ValueError):
    """A JSON Patch operation is malformed or cannot be applied to the document."""

    code = "json_patch"
    op_index: int | None = None
    """Index of the failing operation in the patch, when one is to blame."""


class OutputParseError(ParseError):
    """A model reply did not match the requested format (raised by ``turnkit.outputs`` parsers).

    A :class:`ParseError` that also carries ``feedback`` (text meant for the model) and ``retryable``.
    """

    code = "output_parse"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        position: int | None = None,
        pointer: str | None = None,
        snippet: str | None = None,
        feedback: str = "",
        retryable: bool = True,
    ) -> None:
        super().__init__(message, code=code, position=position, pointer=pointer, snippet=snippet)
        self.feedback = feedback
        self.retryable = retryable


class MissingDependencyError(TurnkitError, ImportError):
    """An optional extra is not installed; the message names the ``pip install 'turnkit[...]'`` to run."""

    code = "missing_dependency"


class NotATemplateError(TemplateError):
    """What was given as a chat template (text, file or model folder) is not one (``detect_format``)."""

    code = "not_a_template"


class ResponseTemplateError(ResponseSchemaError):
    """A Hugging Face ``response_template`` is itself invalid; ``key`` names the offending entry."""

    code = "response_template"

    def __init__(self, message: str, *, key: str = "response_template", code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.key = key


class TokenizerError(TurnkitError, ValueError):
    """A tokenizer could not be loaded, or cannot do what was asked (pad without a pad token, ragged tensors)."""

    code = "tokenizer"


class BatchInputError(TurnkitError, ValueError):
    """A batch input or output file is unreadable, corrupt or of an unknown kind (found before any output)."""

    code = "batch_input"
