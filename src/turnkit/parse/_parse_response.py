"""``turnkit.parse_response``: one entry point for both kinds of declarative response parser.

A Hugging Face ``response_template`` (transformers >= 5.13: ``fields`` with ``open``/``close`` markers, a
``start_anchor``) goes to :mod:`turnkit.parse._response_template`; anything else is an x-regex response
schema (transformers 5.12) and goes to :func:`turnkit.parse._schema.parse_response`, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from turnkit._args import expect, expect_items
from turnkit.errors import UsageError
from turnkit.limits import Limits
from turnkit.parse._response_template import is_response_template, parse_response_template
from turnkit.parse._schema import ResponseSchema
from turnkit.parse._schema import parse_response as _parse_with_schema

if TYPE_CHECKING:
    from turnkit.parse._response_template._template import ResponseTemplate

__all__ = ["parse_response"]


def parse_response(
    text: str,
    schema: Mapping[str, Any] | ResponseSchema | ResponseTemplate,
    *,
    limits: Limits | None = None,
    prefix: str | None = None,
    tools: list[dict[str, Any] | Callable[..., Any]] | None = None,
) -> Any:
    """Parse raw model output with an x-regex response schema or a Hugging Face ``response_template``.

    x-regex schemas (transformers 5.12 semantics) are parsed exactly as before. A ``response_template`` (a
    dict whose keys are among ``version``, ``defaults``, ``fields``, ``start_anchor``,
    ``start_anchor_pattern``, or a loaded :class:`ResponseTemplate`) is parsed as transformers 5.23's
    ``parse_response(text, template, prefix=prefix or "", tools=tools)`` does; ``prefix`` and ``tools``
    apply only to response templates.
    """
    expect(text, str, name="text", func="parse_response")
    if not isinstance(schema, (Mapping, ResponseSchema)) and not is_response_template(schema):
        expect(
            schema,
            Mapping,
            name="schema",
            func="parse_response",
            accepts="a mapping, a ResponseSchema or a ResponseTemplate",
        )
    expect(limits, Limits, name="limits", func="parse_response", none=True)
    expect(prefix, str, name="prefix", func="parse_response", none=True)
    expect_items(
        tools,
        object,
        name="tools",
        func="parse_response",
        accepts="a list of tool schemas or functions, or None",
        none=True,
    )
    if is_response_template(schema):
        kwargs: dict[str, Any] = {} if limits is None else {"limits": limits}
        return parse_response_template(text, schema, prefix=prefix, tools=tools, **kwargs)  # type: ignore[arg-type]
    if prefix is not None or tools is not None:
        raise UsageError("prefix= and tools= apply to response templates, not to x-regex response schemas")
    return _parse_with_schema(text, schema, limits=limits)  # type: ignore[arg-type]
