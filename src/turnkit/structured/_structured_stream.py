"""A model's JSON output streamed to a client: parser -> policies -> optional transform -> client operations."""

from __future__ import annotations

import typing
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import Any, Generic, TypeVar, overload

from pydantic import BaseModel

from turnkit._args import expect
from turnkit._astream import astream
from turnkit.errors import UsageError
from turnkit.limits import Limits
from turnkit.structured._json_stream import JsonStream
from turnkit.structured._live_document import LiveDocument
from turnkit.structured._partials import partial_model
from turnkit.structured._patch import Op
from turnkit.structured._policies import compile_plan
from turnkit.structured._policy_filter import CLOSED, PolicyFilter
from turnkit.structured._transforms import FunctionTransform, Transform

__all__ = ["StructuredStream"]

M = TypeVar("M")


class StructuredStream(Generic[M]):
    """Stream a model's JSON output as the operations a client should see, under per-field policies.

    ``feed(text)`` returns JSON Patch (+ ``append``) operations on the client-visible value; applying them
    in order to a copy keeps it equal to :attr:`value`. Each field is validated once, when it closes;
    :attr:`result` is the validated object once the document is complete.

    >>> tags = {"type": "array", "items": {"type": "string"}, "x-turnkit-items": "when-complete"}
    >>> s = StructuredStream({"type": "object", "properties": {"tags": tags}})
    >>> _ = s.feed('{"title": "Hello, world!", "tags": ["python", "ll')
    >>> s.value
    {'title': 'Hello, world!', 'tags': ['python']}
    >>> s.feed('m"]}')
    [{'op': 'add', 'path': '/tags/1', 'value': 'llm'}]

    With a model, declare the same with ``tags: Annotated[list[str], ItemsWhenComplete()]``.
    """

    @overload
    def __init__(
        self: StructuredStream[M],
        schema: type[M],
        *,
        transform: Transform | FunctionTransform | None = None,
        validate: bool = True,
        skip_prefix: bool = False,
        limits: Limits | None = None,
    ) -> None: ...

    @overload
    def __init__(
        self: StructuredStream[Any],
        schema: Mapping[str, Any] | object | None,
        *,
        transform: Transform | FunctionTransform | None = None,
        validate: bool = True,
        skip_prefix: bool = False,
        limits: Limits | None = None,
    ) -> None: ...

    def __init__(
        self,
        schema: Any,
        *,
        transform: Transform | FunctionTransform | None = None,
        validate: bool = True,
        skip_prefix: bool = False,
        limits: Limits | None = None,
    ) -> None:
        expect_schema(schema, func="StructuredStream")
        expect(transform, (Transform, FunctionTransform), name="transform", func="StructuredStream", none=True)
        expect(validate, bool, name="validate", func="StructuredStream")
        expect(skip_prefix, bool, name="skip_prefix", func="StructuredStream")
        expect(limits, Limits, name="limits", func="StructuredStream", none=True)
        self._schema = schema
        plan = compile_plan(Any if schema is None else schema, validate=validate and not isinstance(schema, Mapping))
        self._parser = JsonStream(skip_prefix=skip_prefix, limits=limits)
        self._filter = PolicyFilter(plan, validate=validate, closed_events=transform is not None)
        self._transform = transform.start() if transform is not None else None
        self._doc = LiveDocument()
        self._failed = False

    @property
    def value(self) -> Any:
        """The client-visible value so far (``None`` before anything is shown). Live: treat as read-only."""
        return self._doc.value

    @property
    def done(self) -> bool:
        """Whether the document is complete (and validated)."""
        return self._filter.complete

    @property
    def incomplete(self) -> list[str]:
        """JSON Pointers (in the model's document) of the values still open, root first."""
        return self._parser.incomplete

    @property
    def result(self) -> M | None:
        """The validated object (a model instance for a model) once complete, else ``None``."""
        result: M | None = self._filter.result
        return result

    @property
    def partial(self) -> BaseModel | None:
        """The client-visible value as an instance of :func:`partial_model` (models only; O(size) per call)."""
        schema = self._schema
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)) or self._doc.value is None:
            return None
        if self._transform is not None:
            raise UsageError("partial is the model's shape; with a transform the client value has another shape")
        return partial_model(schema).model_validate(self._doc.value)

    @property
    def validations(self) -> int:
        """How many values have been validated so far (each exactly once, when it closed)."""
        return self._filter.validations

    def feed(self, text: str) -> list[Op]:
        """Push the next piece of model output; returns the client's operations."""
        if self._failed:
            raise UsageError("the stream failed earlier; start a new StructuredStream", code="stream_failed")
        try:
            ops = self._parser.feed(text)
            return self._forward(ops)
        except BaseException:
            self._failed = True
            raise

    def close(self) -> list[Op]:
        """End of the model output: an unfinished document is an error; returns the last operations."""
        if self._failed:
            raise UsageError("the stream failed earlier; start a new StructuredStream", code="stream_failed")
        try:
            ops = self._parser.close()
            return self._forward(ops)
        except BaseException:
            self._failed = True
            raise

    def astream(self, chunks: AsyncIterable[str]) -> AsyncIterator[Op]:
        """Feed every chunk of an async source, then close: yields exactly the ops ``feed`` and ``close`` return."""
        return astream(self, chunks, func="StructuredStream.astream")

    def _forward(self, ops: list[Op]) -> list[Op]:
        out = self._filter.push(ops, self._parser.incomplete)
        if self._transform is not None:
            out = [op for op in self._transform.push(out) if op["op"] != CLOSED]
        apply = self._doc.apply
        for op in out:
            apply(op)
        return out


def expect_schema(schema: Any, *, func: str) -> None:
    """A JSON Schema (mapping), a pydantic model or another type annotation (``list[int]``), or ``None``."""
    if schema is None or isinstance(schema, (Mapping, type)) or schema is Any or typing.get_origin(schema) is not None:
        return
    expect(schema, Mapping, name="schema", func=func, accepts="a JSON Schema mapping, a pydantic model or a type")
