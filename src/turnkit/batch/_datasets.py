"""``dataset.map(renderer, batched=True)``: read a batch without marking its columns, hand back what ``datasets``
converts cheaply.

``datasets`` gives a batched function a ``LazyBatch``: its columns are formatted (Arrow to Python) when read, and
every column that was read goes back through ``datasets``' Python-to-Arrow writer, which first walks every value
looking for mixed types; a column never read is copied as Arrow. So the renderer formats the columns it needs with
the batch's own ``format`` (the values ``batch[name]`` gives, decoded by the dataset's features) without marking
them read, and returns only its output columns (``datasets`` keeps the input columns itself): the token columns as
NumPy arrays (turned into one Arrow column without looking at each value), ``error`` as strings typed even when
every row of the first batch is good (``datasets`` fixes a column's type from the first batch: a column of only
``None`` would be typed null, and a bad row in a later batch would stop the map). A token column of only ``None``
(every row of the batch bad) is a list that pyarrow types as lists of ints (:class:`_NullTokens`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from turnkit.batch._tokens import token_arrays

__all__ = ["is_lazy_batch", "lazy_rows", "output_columns"]


def is_lazy_batch(batch: Mapping[str, Any]) -> bool:
    """Whether ``batch`` is ``datasets``' ``LazyBatch`` (what ``Dataset.map(batched=True)`` passes)."""
    return all(hasattr(batch, name) for name in ("pa_table", "keys_to_format", "format"))


def lazy_rows(batch: Any, names: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of a ``LazyBatch`` with the columns ``names`` that it has, formatted as ``batch[name]`` would
    format them, but left unread (``datasets`` copies them as Arrow)."""
    columns = {
        name: batch.format(name) if name in batch.keys_to_format else batch[name] for name in names if name in batch
    }
    if not columns:
        return [{} for _ in range(batch.pa_table.num_rows)]
    return [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]


_STRING_COLUMNS = ("prompt", "error")
"""Columns of strings or ``None``: typed as strings even when all of a batch's values are ``None`` (a first batch
of only bad rows leaves no ``prompt``)."""


def output_columns(rows: Sequence[Mapping[str, Any]], names: Sequence[str], ints: Sequence[str]) -> dict[str, Any]:
    """The ``names`` columns of output rows for ``datasets``: ``ints`` columns as NumPy arrays, ``prompt`` and
    ``error`` as typed strings when numpy and pyarrow allow (:func:`_typed_strings`)."""
    out: dict[str, Any] = {}
    for name in names:
        values = [row.get(name) for row in rows]
        if name in ints:
            every_row_bad = all(value is None for value in values)  # stops at the first good row
            out[name] = _NullTokens(values) if every_row_bad else token_arrays(values, bits=name == "assistant_masks")
        elif name in _STRING_COLUMNS and (dtype := _typed_strings()) is not None:
            import numpy

            out[name] = numpy.array(values, dtype=dtype)
        else:
            out[name] = values
    return out


class _NullTokens(list[None]):
    """A token column of only ``None`` that pyarrow turns into a ``list<int64>`` column of nulls (its
    ``__arrow_array__``), not a column typed null. ``datasets``' writer hands a list whose values need no conversion
    to ``pa.array`` as it is (and narrows ``input_ids`` to ``int32`` after, as for any list of ints); only lists,
    NumPy arrays and the like may be returned to ``map``, not Arrow arrays, and no NumPy array holds typed nulls."""

    def __arrow_array__(self, type: Any = None) -> Any:  # noqa: A002 - pyarrow's protocol
        import pyarrow

        return pyarrow.nulls(len(self), type=type or pyarrow.list_(pyarrow.int64()))


@functools.cache
def _typed_strings() -> Any:
    """NumPy's variable-width string dtype with ``None`` as its missing value when pyarrow turns such an array into
    a string array (NumPy 2 and a pyarrow that knows the dtype), else ``None``."""
    import numpy

    strings = getattr(getattr(numpy, "dtypes", None), "StringDType", None)  # NumPy 2
    if strings is None:
        return None
    dtype = strings(na_object=None)
    try:
        import pyarrow

        typed = pyarrow.array(numpy.array([None, "x"], dtype=dtype))
    except Exception:  # noqa: BLE001 - an older pyarrow refuses the dtype
        return None
    return dtype if typed.type == pyarrow.string() and typed.null_count == 1 else None
