"""Re-asking the model when its reply does not parse: feedback plus the format instruction, bounded.

Each failed reply is kept in the conversation as the assistant's turn, followed by a user turn
with the error's ``feedback`` and the parser's ``format_instruction``. The loop stops at
``max_retries`` re-asks, at once on an error that is not ``retryable``, and early when the model
makes the same mistake twice in a row (asking a third time rarely helps).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from turnkit._args import expect, expect_callable, expect_int, expect_items
from turnkit.errors import OutputParseError
from turnkit.outputs._base import ParserBase
from turnkit.outputs._response import ModelResponse

__all__ = ["AsyncModel", "Message", "Model", "aparse_with_retry", "parse_with_retry", "retry_message"]

Message = dict[str, Any]
"""A chat message, ``{"role": ..., "content": ...}``."""
Model = Callable[[list[Message]], "str | ModelResponse"]
"""A model call: the conversation so far in, the reply text (or a ``ModelResponse``) out."""
AsyncModel = Callable[[list[Message]], Awaitable["str | ModelResponse"]]
"""The async form of :data:`Model`."""


def retry_message(error: OutputParseError, parser: ParserBase) -> str:
    """The user turn that re-asks after ``error``: what went wrong, then the format to follow."""
    expect(error, OutputParseError, name="error", func="retry_message")
    expect(parser, ParserBase, name="parser", func="retry_message")
    return f"{error.feedback}\n\nRespond again, following this format exactly:\n{parser.format_instruction}"


def _start(parser: Any, model: Any, messages: Sequence[Message] | str, max_retries: int, func: str) -> list[Message]:
    expect(parser, ParserBase, name="parser", func=func)
    expect_callable(model, name="model", func=func)
    if not isinstance(messages, str):
        expect_items(messages, Mapping, name="messages", func=func, accepts="a list of messages (mappings) or a str")
    expect_int(max_retries, name="max_retries", func=func, minimum=0)
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


def _signature(error: OutputParseError) -> tuple[str, str | None, str]:
    return (error.code, error.pointer, error.message)


class _Loop:
    """The bookkeeping shared by the sync and async loops (one definition, two drivers)."""

    def __init__(self, parser: ParserBase, messages: list[Message], max_retries: int) -> None:
        self.parser = parser
        self.messages = messages
        self.max_retries = max_retries
        self.attempt = 0
        self.previous: tuple[str, str | None, str] | None = None

    def handle(self, reply: str | ModelResponse) -> ModelResponse | None:
        """Parse one reply; return the result, or None after queuing a re-ask; raise when giving up."""
        self.attempt += 1
        try:
            return self.parser.parse(reply)
        except OutputParseError as error:
            signature = _signature(error)
            reason = None
            if not error.retryable:
                reason = "the error is not retryable"
            elif signature == self.previous:
                reason = "the same error repeated"
            elif self.attempt > self.max_retries:
                reason = f"max_retries={self.max_retries} reached"
            if reason is not None:
                error.add_note(f"gave up after {self.attempt} attempt(s): {reason}")
                raise
            self.previous = signature
            text = reply.text if isinstance(reply, ModelResponse) else reply
            self.messages.append({"role": "assistant", "content": text})
            self.messages.append({"role": "user", "content": retry_message(error, self.parser)})
            return None


def parse_with_retry(
    parser: ParserBase, model: Model, messages: Sequence[Message] | str, *, max_retries: int = 2
) -> ModelResponse:
    """Call ``model`` and parse its reply, re-asking with feedback up to ``max_retries`` times.

    ``messages`` is the conversation (or one user prompt as a string); it is copied, not changed.
    Returns the parsed ``ModelResponse``; raises the last ``ParseError`` when the model never
    produced a valid reply.
    """
    loop = _Loop(parser, _start(parser, model, messages, max_retries, "parse_with_retry"), max_retries)
    while True:
        result = loop.handle(model(list(loop.messages)))
        if result is not None:
            return result


async def aparse_with_retry(
    parser: ParserBase, model: AsyncModel, messages: Sequence[Message] | str, *, max_retries: int = 2
) -> ModelResponse:
    """:func:`parse_with_retry` for an async ``model``."""
    loop = _Loop(parser, _start(parser, model, messages, max_retries, "aparse_with_retry"), max_retries)
    while True:
        result = loop.handle(await model(list(loop.messages)))
        if result is not None:
            return result
