"""Finding built-in formats by name, and the object ``load_format`` returns.

Every module in ``turnkit/parse/builtin/`` (not starting with ``_``) declares ``FORMATS``: a tuple of
:class:`~turnkit.parse._spec.FormatSpec`. The registry imports them on first use and indexes names and
aliases, so adding a format is adding a file.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from functools import lru_cache
from typing import Any

from turnkit._args import expect, expect_items
from turnkit._astream import astream
from turnkit.errors import FormatNotFoundError
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.messages import AssistantMessage
from turnkit.parse._emit import Delta
from turnkit.parse._engine import StreamParser
from turnkit.parse._spec import FormatSpec

__all__ = ["OutputFormat", "list_formats", "load_format", "reasoning_format", "register_format"]

_EXTRA: dict[str, FormatSpec] = {}


class OutputFormat:
    """A model output format: ``parse`` a whole output or ``stream`` one piece by piece."""

    __slots__ = ("spec",)

    def __init__(self, spec: FormatSpec) -> None:
        expect(spec, FormatSpec, name="spec", func="OutputFormat")
        self.spec = spec

    @property
    def name(self) -> str:
        return self.spec.name

    def stream(
        self,
        *,
        prefix: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        limits: Limits | None = None,
        strict: bool = False,
        frame: bool = False,
    ) -> StreamParser:
        """A new push parser: ``feed(text) -> deltas``, ``close() -> deltas``.

        ``prefix`` is the rendered prompt (a prompt that ended inside ``<think>`` makes the output start in
        reasoning); ``tools`` (OpenAI-style tool definitions) types XML and pythonic arguments, and a call to
        a name not among them gets the per-call error ``unknown_tool``. ``strict``: a call that cannot be
        right raises :class:`~turnkit.errors.ToolCallError` instead of carrying an ``error``. ``frame``: the
        deltas get OpenAI's message frame, ``{"role": "assistant"}`` first and ``{"finish_reason": ...}``
        last (see :meth:`StreamParser.close`).
        """
        _check_options("OutputFormat.stream", prefix, tools, limits, strict, frame)
        return StreamParser(
            self.spec, prefix=prefix, tools=tools, limits=limits or DEFAULT_LIMITS, strict=strict, frame=frame
        )

    def parse(
        self,
        text: str,
        *,
        prefix: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        limits: Limits | None = None,
        strict: bool = False,
    ) -> AssistantMessage:
        """The whole output as one message: exactly a new stream fed once and closed (``strict``: see
        :meth:`stream`)."""
        expect(text, str, name="text", func="OutputFormat.parse")
        _check_options("OutputFormat.parse", prefix, tools, limits, strict)
        parser = self.stream(prefix=prefix, tools=tools, limits=limits, strict=strict)
        parser.feed(text)
        parser.close()
        return parser.message

    def astream(
        self,
        chunks: AsyncIterable[str],
        *,
        prefix: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        limits: Limits | None = None,
        strict: bool = False,
        frame: bool = False,
    ) -> AsyncIterator[Delta]:
        """:meth:`stream` over an async source of chunks: yields every delta ``feed`` and ``close`` return."""
        parser = self.stream(prefix=prefix, tools=tools, limits=limits, strict=strict, frame=frame)
        return astream(parser, chunks, func="OutputFormat.astream")

    def __repr__(self) -> str:
        return f"<OutputFormat {self.spec.name!r}>"


@lru_cache(maxsize=1)
def _builtin() -> dict[str, FormatSpec]:
    from turnkit.parse import builtin

    index: dict[str, FormatSpec] = {}
    for module_info in sorted(pkgutil.iter_modules(builtin.__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{builtin.__name__}.{module_info.name}")
        for spec in getattr(module, "FORMATS", ()):
            for key in (spec.name, *spec.aliases):
                if key in index and index[key] is not spec:
                    raise RuntimeError(f"format name {key!r} declared twice ({index[key].name}, {spec.name})")
                index[key] = spec
    return index


def _index() -> dict[str, FormatSpec]:
    if not _EXTRA:
        return _builtin()
    return {**_builtin(), **_EXTRA}


def register_format(spec: FormatSpec) -> None:
    """Make a user-declared format findable by ``load_format`` under its name and aliases."""
    expect(spec, FormatSpec, name="spec", func="register_format")
    for key in (spec.name, *spec.aliases):
        _EXTRA[key] = spec


def reasoning_format(
    start: str = "<think>", end: str = "</think>", *, open_by_default: bool = False, name: str | None = None
) -> OutputFormat:
    """A think-tag splitter with your own markers: text between ``start`` and ``end`` is reasoning."""
    expect(start, str, name="start", func="reasoning_format")
    expect(end, str, name="end", func="reasoning_format")
    expect(open_by_default, bool, name="open_by_default", func="reasoning_format")
    expect(name, str, name="name", func="reasoning_format", none=True)
    from turnkit.parse._spec import Reasoning

    spec = FormatSpec(
        name=name or f"reasoning[{start}...{end}]",
        description=f"{start}...{end} reasoning, the rest is content",
        reasoning=(Reasoning(starts=(start,), ends=(end,), open_by_default=open_by_default),),
    )
    return OutputFormat(spec)


def list_formats() -> list[str]:
    """Canonical names of every available format (aliases not repeated)."""
    return sorted({spec.name for spec in _index().values()})


def load_format(name: str | FormatSpec) -> OutputFormat:
    """The format called ``name`` (a corpus label such as ``"hermes"``, or an alias such as vLLM's parser name)."""
    expect(name, (str, FormatSpec), name="name", func="load_format")
    if isinstance(name, FormatSpec):
        return OutputFormat(name)
    index = _index()
    key = name.strip().lower().replace("-", "_") if name not in index else name
    spec = index.get(name) or index.get(key)
    if spec is None:
        close = difflib.get_close_matches(key, list(index), n=5, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(list_formats())}"
        raise FormatNotFoundError(f"no built-in output format named {name!r}{hint}")
    return OutputFormat(spec)


def _check_options(func: str, prefix: Any, tools: Any, limits: Any, strict: Any = False, frame: Any = False) -> None:
    expect(strict, bool, name="strict", func=func)
    expect(frame, bool, name="frame", func=func)
    expect(prefix, str, name="prefix", func=func, none=True)
    expect_items(
        tools, Mapping, name="tools", func=func, accepts="a list of tool schemas (mappings) or None", none=True
    )
    expect(limits, Limits, name="limits", func=func, none=True)
