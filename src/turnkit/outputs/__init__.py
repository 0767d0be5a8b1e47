"""Format-instruction parsers (AgentScope-style): tell the model how to answer, then parse the reply.

Each parser has a ``format_instruction`` to put in the prompt and a ``parse(response)`` that
reads the reply into ``response.parsed``. Malformed replies are repaired where that is safe (each
repair listed in ``response.repairs_applied``) or rejected with :class:`OutputParseError` (a :class:`ParseError`), whose
``feedback`` can be sent back to the model; :func:`parse_with_retry` does exactly that. ``ParseError``
here is ``turnkit.ParseError`` itself, re-exported for ``except ParseError`` in AgentScope-style code.
"""

from __future__ import annotations

from turnkit.errors import OutputParseError, ParseError
from turnkit.outputs._base import DictFilterMixin, KeySelection, ParserBase
from turnkit.outputs._code_block import MarkdownCodeBlockParser
from turnkit.outputs._feedback import MAX_FEEDBACK_BYTES
from turnkit.outputs._json_parsers import JsonReplyStream, MarkdownJsonDictParser, MarkdownJsonObjectParser
from turnkit.outputs._response import ModelResponse, Repair
from turnkit.outputs._retry import AsyncModel, Message, Model, aparse_with_retry, parse_with_retry, retry_message
from turnkit.outputs._streaming import ReplyStream
from turnkit.outputs._tagged import MultiTaggedContentParser, TaggedContent, TaggedReplyStream

__all__ = [
    "AsyncModel",
    "DictFilterMixin",
    "JsonReplyStream",
    "KeySelection",
    "MAX_FEEDBACK_BYTES",
    "MarkdownCodeBlockParser",
    "MarkdownJsonDictParser",
    "MarkdownJsonObjectParser",
    "Message",
    "Model",
    "ModelResponse",
    "MultiTaggedContentParser",
    "OutputParseError",
    "ParseError",
    "ParserBase",
    "Repair",
    "ReplyStream",
    "TaggedContent",
    "TaggedReplyStream",
    "aparse_with_retry",
    "parse_with_retry",
    "retry_message",
]
