"""Rendering and parsing datasets: JSON lines and parquet files, local worker processes, Ray Data, ``datasets``.

Files::

    summary = turnkit.batch.render("chats.jsonl", "prompts.parquet", model="path/to/model", masks=True, workers=2)
    summary = turnkit.batch.parse("outputs.jsonl", "messages.jsonl", format="hermes")

Every row gets a result or an ``error`` naming the bad field; the run never stops on a bad row. ``datasets``::

    dataset.map(turnkit.batch.renderer(model="path/to/model", tokenize=True), batched=True, num_proc=2)

Ray Data LLM (``build_processor(config, preprocess=..., postprocess=...)`` with the chat template stage off)::

    preprocess=turnkit.batch.preprocess(model="path/to/model", sampling_params={"max_tokens": 256})
    postprocess=turnkit.batch.postprocess("hermes")
"""

from __future__ import annotations

import os
import typing

from turnkit import _args
from turnkit.batch._engine import Summary, run
from turnkit.batch._rows import ROLES, Parser, Renderer, RowError
from turnkit.batch._terminate import Terminated

if typing.TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from turnkit.batch._engine import Engine, StartMethod
    from turnkit.batch._rows import GenerationPrompt

__all__ = [
    "Parser",
    "ROLES",
    "Renderer",
    "RowError",
    "Summary",
    "Terminated",
    "parse",
    "postprocess",
    "preprocess",
    "render",
    "renderer",
    "run",
]


def render(
    input: str | os.PathLike[str],  # noqa: A002
    output: str | os.PathLike[str],
    *,
    model: str | os.PathLike[str] | None = None,
    template: str | os.PathLike[str] | None = None,
    tokenize: bool = False,
    masks: bool = False,
    messages_column: str = "messages",
    tools_column: str | None = "tools",
    documents_column: str | None = "documents",
    add_generation_prompt: GenerationPrompt = False,
    workers: int = 1,
    engine: Engine = "local",
    batch_size: int = 256,
    resume: bool = False,
    progress: bool = False,
    start_method: StartMethod | None = None,
    compression: str = "lz4",
) -> Summary:
    """Render every row of ``input`` (a ``messages`` column, optional per-row ``tools``) into ``output``."""
    _args.expect_path(input, name="input", func="render")
    _args.expect_path(output, name="output", func="render")
    worker = Renderer(
        model=model,
        template=template,
        tokenize=tokenize,
        masks=masks,
        messages_column=messages_column,
        tools_column=tools_column,
        documents_column=documents_column,
        add_generation_prompt=add_generation_prompt,
    )
    return run(worker, input, output, **_run_options(locals()))


def parse(
    input: str | os.PathLike[str],  # noqa: A002
    output: str | os.PathLike[str],
    *,
    format: str,  # noqa: A002
    text_column: str = "generated_text",
    workers: int = 1,
    engine: Engine = "local",
    batch_size: int = 256,
    resume: bool = False,
    progress: bool = False,
    start_method: StartMethod | None = None,
    compression: str = "lz4",
) -> Summary:
    """Parse every row's raw model output (``generated_text``) into a ``message`` (OpenAI wire form)."""
    _args.expect_path(input, name="input", func="parse")
    _args.expect_path(output, name="output", func="parse")
    worker = Parser(format, text_column=text_column)
    return run(worker, input, output, **_run_options(locals()))


_RUN_OPTIONS = ("workers", "engine", "batch_size", "resume", "progress", "start_method", "compression")


def _run_options(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The options :func:`render` and :func:`parse` pass on to :func:`run` unchanged, from their arguments."""
    return {name: arguments[name] for name in _RUN_OPTIONS}


def renderer(
    *,
    model: str | os.PathLike[str] | None = None,
    template: str | os.PathLike[str] | None = None,
    tokenize: bool = False,
    masks: bool = False,
    messages_column: str = "messages",
    tools_column: str | None = "tools",
    documents_column: str | None = "documents",
    add_generation_prompt: GenerationPrompt = False,
) -> Renderer:
    """A function for ``datasets.Dataset.map(..., batched=True)`` (or ``map_batches``) adding ``prompt`` et al."""
    return Renderer(
        model=model,
        template=template,
        tokenize=tokenize,
        masks=masks,
        messages_column=messages_column,
        tools_column=tools_column,
        documents_column=documents_column,
        add_generation_prompt=add_generation_prompt,
    )


def preprocess(
    *,
    model: str | os.PathLike[str] | None = None,
    template: str | os.PathLike[str] | None = None,
    messages_column: str = "messages",
    tools_column: str | None = "tools",
    documents_column: str | None = "documents",
    add_generation_prompt: GenerationPrompt = "auto",
    sampling_params: Mapping[str, Any] | None = None,
) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A Ray Data LLM ``preprocess``: each row's ``prompt`` rendered with its own tools (transformers-identical).

    Use it with the chat template stage disabled. ``add_generation_prompt="auto"`` follows Ray's rule (only when
    the last message is not the assistant's). ``sampling_params`` is added to every row.
    """
    _args.expect_mapping(sampling_params, name="sampling_params", func="preprocess", none=True)
    worker = Renderer(
        model=model,
        template=template,
        messages_column=messages_column,
        tools_column=tools_column,
        documents_column=documents_column,
        add_generation_prompt=add_generation_prompt,
    )
    return _RowFunction(worker, dict(sampling_params) if sampling_params is not None else None)


def postprocess(
    format: str,  # noqa: A002
    *,
    text_column: str = "generated_text",
) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A Ray Data LLM ``postprocess``: ``generated_text`` parsed into ``message``, ``content``,
    ``reasoning_content`` and ``tool_calls`` (OpenAI wire form), with ``error`` when the output does not parse."""
    _args.expect(format, str, name="format", func="postprocess")
    _args.expect(text_column, str, name="text_column", func="postprocess")
    return _RowFunction(Parser(format, text_column=text_column), None)


class _RowFunction:
    """A picklable row -> row function around a worker (Ray ships it to its actors)."""

    def __init__(self, worker: Renderer | Parser, sampling_params: dict[str, Any] | None) -> None:
        self.worker = worker
        self.sampling_params = sampling_params

    def __call__(self, row: Mapping[str, Any]) -> dict[str, Any]:
        out = self.worker.row(row)
        if isinstance(self.worker, Parser):
            message = out.get("message") or {}
            out["content"] = message.get("content")
            out["reasoning_content"] = message.get("reasoning_content")
            out["tool_calls"] = message.get("tool_calls")
        if self.sampling_params is not None:
            out["sampling_params"] = dict(self.sampling_params)
        return out
