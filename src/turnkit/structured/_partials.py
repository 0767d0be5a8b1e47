"""Partial types at run time: :class:`FieldState` and :func:`partial_model`."""

from __future__ import annotations

import threading
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from turnkit.structured._partial_codegen import expect_model, render_partials

__all__ = ["FieldState", "partial_model"]

T = TypeVar("T")


class FieldState(BaseModel, Generic[T]):
    """A field shown with its state (``WithState``): pending until it starts, then incomplete, then complete."""

    state: Literal["pending", "incomplete", "complete"] = "pending"
    value: T | None = None


_CACHE: dict[type[BaseModel], type[BaseModel]] = {}
_LOCK = threading.Lock()


def partial_model(model: type[BaseModel]) -> type[BaseModel]:
    """The partial class of ``model``: what a client sees while it streams (every field may be missing).

    Built from the same source ``turnkit partial-types`` writes to a file, so both agree; cached per model.

    >>> from pydantic import BaseModel
    >>> class Post(BaseModel):
    ...     title: str
    ...     tags: list[str]
    >>> PartialPost = partial_model(Post)
    >>> PartialPost.model_validate({"title": "Hel"})
    PartialPost(title='Hel', tags=None)
    """
    expect_model(model, func="partial_model")
    with _LOCK:
        cached = _CACHE.get(model)
        if cached is not None:
            return cached
        source = render_partials(model)
        namespace: dict[str, Any] = {
            "__name__": f"turnkit.partials.{getattr(model, '__module__', 'model')}",
            "Any": Any,
            "BaseModel": BaseModel,
            "ConfigDict": ConfigDict,
            "Field": Field,
            "FieldState": FieldState,
            "Literal": Literal,
            **source.names,
        }
        exec(
            compile("from __future__ import annotations\n" + source.code, "<turnkit partial types>", "exec"), namespace
        )
        for name in source.classes:
            namespace[name].model_rebuild(_types_namespace=namespace)
        result: type[BaseModel] = namespace[source.root]
        _CACHE[model] = result
        return result
