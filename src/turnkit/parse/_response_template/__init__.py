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

    The template's regions are matched incrementally, exactly as transformers' ``ResponseParser`` does (its
    events are kept in :attr:`events` for live rendering), but the *deltas* are buffered: a region's value
    is only final when the output ends (a later region may overwrite it, empty values are dropped, tool
    arguments are typed on close), so ``feed`` returns no deltas and ``close`` returns one delta, the whole
    message. Joining the deltas therefore always equals :meth:`ResponseTemplateFormat.parse`.
    """

    def __init__(self, template: ResponseTemplate, *, prefix: str, tools: Tools | None, limits: Limits) -> None:
        self._parser = _new_parser(template, prefix, tools, limits)
        self.events: list[dict[str, Any]] = list(self._parser.initial_events)
        self._message: dict[str, Any] | None = None
        self._closed = ""  # "", or why the stream takes no more input: "closed" or "failed"

    def feed(self, text: str) -> list[dict[str, Any]]:
        if self._closed:
            raise UsageError(f"feed() on a {self._closed} response-template stream")
        if type(text) is not str:
            self._closed = "failed"
            raise UsageError(f"feed() takes str, not {type(text).__name__}")
        try:
            self.events.extend(self._parser.feed(text))
        except BaseException:
            self._closed = "failed"
            raise
        return []

    def close(self) -> list[dict[str, Any]]:
        if self._closed:
            raise UsageError(f"close() on a {self._closed} response-template stream")
        self._closed = "failed"  # until the final parse succeeds
        message, events = self._parser.finalize()
        self._closed = "closed"
        self.events.extend(events)
        self._message = message
        return [message]

    @property
    def message(self) -> dict[str, Any]:
        """The message so far (the parser's output dict; final after :meth:`close`)."""
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
        """A push parser (deltas buffered until ``close``; see :class:`ResponseTemplateStream`)."""
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
        """:meth:`stream` over an async source of chunks: yields every delta (here: one, at the end)."""
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
