"""Hugging Face ``response_template`` parsing, identical to transformers 5.23's ``tokenizer.parse_response``.

Since transformers 5.13 a model folder's ``tokenizer_config.json`` may carry a declarative
``response_template``: named fields (``content``, ``reasoning_content``, ``tool_calls``...) delimited by literal
or regex ``open``/``close`` markers, each parsed by a content parser (``text``, ``json``, ``xml-inline``,
``kv-lines``...) and optionally reshaped by a ``transform``. :class:`ResponseTemplateFormat` parses with one;
``.parse()`` returns exactly the dict transformers returns.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from turnkit._args import expect, expect_items
from turnkit._astream import astream
from turnkit.errors import UsageError
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.parse._response_template._keys import TEMPLATE_KEYS

if TYPE_CHECKING:  # the modules below import ``regex``: loaded with the first response template, not with turnkit
    from turnkit.parse._response_template._parser import ResponseParser
    from turnkit.parse._response_template._template import ResponseTemplate

__all__ = [
    "ResponseTemplateFormat",
    "ResponseTemplateStream",
    "is_response_template",
    "load_response_template",
    "parse_response_template",
]

Tools = list[dict[str, Any] | Callable[..., Any]]


def is_response_template(value: Any) -> bool:
    """Whether ``value`` is shaped like a ``response_template`` (rather than an x-regex response schema)."""
    if isinstance(value, dict):
        return "fields" in value and set(value) <= TEMPLATE_KEYS
    from turnkit.parse._response_template._template import ResponseTemplate

    return isinstance(value, ResponseTemplate)


def load_response_template(spec: Any) -> ResponseTemplate:
    """Validate and compile a ``response_template`` dict, as transformers 5.23 does when it loads one."""
    expect_template(spec, func="load_response_template", name="spec")
    from turnkit.parse._response_template._template import load_response_template as load

    return load(spec)


def _new_parser(template: ResponseTemplate, prefix: str, tools: Tools | None, limits: Limits) -> ResponseParser:
    from turnkit.parse._response_template._content import Clock
    from turnkit.parse._response_template._parser import ResponseParser

    return ResponseParser(template, prefix, tools=tools, clock=Clock(limits.regex_timeout_s, limits.parse_timeout_s))


class ResponseTemplateStream:
    """A push parser over a response template: ``feed(text) -> deltas``, ``close() -> deltas``, ``message``.

    The template's regions are matched incrementally as transformers' ``ResponseParser`` does, but never
    depending on where the chunks end (its events are kept in :attr:`events` for live rendering). A delta is
    given as soon as the template's structure proves it final: a repeating field's value (a tool call) when its
    region closes, the text of a field that is only ever appended to as it arrives; every other value (one
    that a later region could replace, or that is typed or dropped at the end) comes in the last delta from
    :meth:`close`. The first delta holds the ``defaults`` that are not fields. Deltas join as a client adds
    them up (a key's first delta sets it, a later string is appended, a later list extends it), and the join
    equals :meth:`ResponseTemplateFormat.parse` for any chunking. A template whose marker patterns could match
    differently once more text follows (``$``, ``\\b``, lookahead: ``ResponseTemplate.reads_ahead``) is parsed
    whole at close instead. See ``_deltas`` for the rules.
    """

    def __init__(self, template: ResponseTemplate, *, prefix: str, tools: Tools | None, limits: Limits) -> None:
        from turnkit.parse._response_template._deltas import DeltaWriter

        self._parser = _new_parser(template, prefix, tools, limits)
        self._writer = DeltaWriter(template)
        self._pending = self._parser.initial_events
        self._whole: list[str] | None = [] if template.reads_ahead else None
        self.events: list[dict[str, Any]] = list(self._parser.initial_events)
        self._message: dict[str, Any] | None = None
        self._closed = ""  # "", or why the stream takes no more input: "closed" or "failed"

    @property
    def incremental(self) -> bool:
        """Whether chunks are parsed as they come (``False``: a marker could match differently once more text
        follows, so the output is parsed at close)."""
        return self._whole is None

    def feed(self, text: str) -> list[dict[str, Any]]:
        if self._closed:
            raise UsageError(f"feed() on a {self._closed} response-template stream")
        if type(text) is not str:
            self._closed = "failed"
            raise UsageError(f"feed() takes str, not {type(text).__name__}")
        if self._whole is not None:
            self._whole.append(text)
            return self._writer.feed([])
        try:
            events = self._pending + self._parser.feed(text)
        except BaseException:
            self._closed = "failed"
            raise
        self._pending = []
        self.events.extend(events)
        return self._writer.feed(events)

    def close(self) -> list[dict[str, Any]]:
        if self._closed:
            raise UsageError(f"close() on a {self._closed} response-template stream")
        self._closed = "failed"  # until the final parse succeeds
        events = self._pending
        if self._whole is not None:
            fed = self._parser.feed("".join(self._whole))
            self.events.extend(fed)
            events = events + fed
        message, last = self._parser.finalize()
        self._closed = "closed"
        self.events.extend(last)
        self._message = message
        return self._writer.close(events + last, message)

    @property
    def message(self) -> dict[str, Any]:
        """The message so far (the parser's output dict; final after :meth:`close`). A stream that is not
        :attr:`incremental` parses at close, so until then this holds only the defaults and the prefix's part."""
        return self._message if self._message is not None else dict(self._parser.output)


class ResponseTemplateFormat:
    """An output format built from a Hugging Face ``response_template`` (validated when built)."""

    __slots__ = ("template", "limits")

    def __init__(self, template: Mapping[str, Any] | ResponseTemplate, *, limits: Limits = DEFAULT_LIMITS) -> None:
        expect_template(template, func="ResponseTemplateFormat", name="template")
        expect(limits, Limits, name="limits", func="ResponseTemplateFormat")
        self.template = load_response_template(template)
        self.limits = limits

    @property
    def name(self) -> str:
        return "response_template"

    def stream(
        self, *, prefix: str | None = None, tools: Tools | None = None, limits: Limits | None = None
    ) -> ResponseTemplateStream:
        """A push parser: deltas as soon as the template proves them final (see :class:`ResponseTemplateStream`)."""
        _check_options("ResponseTemplateFormat.stream", prefix, tools, limits)
        return ResponseTemplateStream(self.template, prefix=prefix or "", tools=tools, limits=limits or self.limits)

    def parse(
        self, text: str, *, prefix: str | None = None, tools: Tools | None = None, limits: Limits | None = None
    ) -> dict[str, Any]:
        """transformers 5.23 ``parse_response(text, template, prefix=prefix or "", tools=tools)``.

        ``prefix`` is the prompt that came before the output (the text after its last ``start_anchor`` is
        parsed first, so a prompt that opened ``<think>`` is seen); ``None`` means none, like ``prefix=""``.
        """
        expect(text, str, name="text", func="ResponseTemplateFormat.parse")
        _check_options("ResponseTemplateFormat.parse", prefix, tools, limits)
        parser = _new_parser(self.template, prefix or "", tools, limits or self.limits)
        parser.feed(text)
        message, _ = parser.finalize()
        return message

    def astream(
        self,
        chunks: AsyncIterable[str],
        *,
        prefix: str | None = None,
        tools: Tools | None = None,
        limits: Limits | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """:meth:`stream` over an async source of chunks: yields every delta."""
        stream = self.stream(prefix=prefix, tools=tools, limits=limits)
        return astream(stream, chunks, func="ResponseTemplateFormat.astream")

    def __repr__(self) -> str:
        return f"<ResponseTemplateFormat fields={list(self.template.fields)}>"


def parse_response_template(
    text: str,
    template: Mapping[str, Any] | ResponseTemplate,
    *,
    prefix: str | None = None,
    tools: Tools | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> dict[str, Any]:
    """Parse one model output with a ``response_template``: transformers 5.23's ``parse_response``."""
    expect(text, str, name="text", func="parse_response_template")
    return ResponseTemplateFormat(template, limits=limits).parse(text, prefix=prefix, tools=tools)


def expect_template(value: Any, *, func: str, name: str) -> None:
    """A ``response_template`` mapping or a loaded :class:`ResponseTemplate` (its content is checked when loaded)."""
    if not isinstance(value, Mapping) and not is_response_template(value):
        expect(value, Mapping, name=name, func=func, accepts="a response_template mapping or a ResponseTemplate")


def _check_options(func: str, prefix: Any, tools: Any, limits: Any) -> None:
    expect(prefix, str, name="prefix", func=func, none=True)
    expect_items(
        tools, object, name="tools", func=func, accepts="a list of tool schemas or functions, or None", none=True
    )
    expect(limits, Limits, name="limits", func=func, none=True)
