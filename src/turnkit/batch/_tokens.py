"""Token columns as flat buffers: Arrow ``list<int64>`` arrays for parquet output, NumPy arrays for ``datasets``.

A batch's ``input_ids`` are a few hundred thousand small ints in Python lists. ``pa.array`` on the lists (and
``datasets``' writer, which first walks every value looking for mixed types) converts them one list at a time;
here they are joined into one list and turned into one machine-int buffer in a single call (a mask, whose values
are 0 and 1, as bytes), then cut by offsets. The same values: ``tests/batch/test_columns.py`` compares both forms
with ``pa.array`` on the lists.
"""

from __future__ import annotations

import array
from collections.abc import Callable, Sequence
from typing import Any

from turnkit.batch._arrays import int64_buffer, validity

__all__ = ["token_array", "token_arrays"]


def _flatten(
    values: Sequence[list[int] | bytes | None], bits: bool
) -> tuple[array.array[int], Any, str, list[bool] | None]:
    """``(offsets, buffer, Arrow type name, nulls)``: int32 offsets of each list in one buffer of all the values,
    ``uint8`` when ``bits`` (a mask) and every value fits, else ``int64``; ``nulls`` marks ``None`` lists (or is
    ``None`` when there are none)."""
    if bits:
        # a mask: each list as bytes, joined once (~30 % faster than joining the lists and one bytes() of that, which
        # beat an unsigned-byte array's fromlist)
        parts: list[bytes] = []
        size = [0]

        def add(value: list[int] | bytes) -> None:
            part = bytes(value)
            parts.append(part)
            size[0] += len(part)

        try:
            offsets, nulls = _offsets(values, add, lambda: size[0])
            return offsets, b"".join(parts), "uint8", nulls
        except ValueError:  # a value outside 0-255: not a mask after all, converted as ids are
            pass
    # ids: each list converted by fromlist, ~25 % faster than joining them and converting the one list
    flat = array.array("q")
    offsets, nulls = _offsets(values, flat.fromlist, flat.__len__)
    return offsets, flat, "int64", nulls


def _offsets(
    values: Sequence[list[int] | bytes | None], add: Callable[[Any], None], size: Callable[[], int]
) -> tuple[array.array[int], list[bool] | None]:
    """``add`` each list of ``values`` to a buffer; the int32 offsets of their ends (``size()`` after each), and
    which are ``None`` (``None`` when none is)."""
    offsets = array.array("i", [0])
    nulls: list[bool] | None = None
    for index, value in enumerate(values):
        if value is None:
            if nulls is None:
                nulls = [False] * len(values)
            nulls[index] = True
        else:
            add(value)
        offsets.append(size())
    return offsets, nulls


def token_array(values: Sequence[list[int] | bytes | None], *, bits: bool = False) -> Any:
    """``pa.array(values, type=pa.list_(pa.int64()))`` for lists of ints (``None`` for a bad row's), built from
    one buffer, without ``pa.array`` or ``cast`` (see :mod:`~turnkit.batch._arrays`). ``bits``: the lists are masks
    (0s and 1s), read as bytes (or given as ``bytes``, a byte a token: :meth:`~turnkit.batch.Renderer.rows` with
    ``mask_bytes``)."""
    import pyarrow as pa

    offsets, data, kind, nulls = _flatten(values, bits)
    buffer = pa.py_buffer(data) if kind == "int64" else int64_buffer(data)
    flat = pa.Array.from_buffers(pa.int64(), len(data), [None, buffer])
    return pa.Array.from_buffers(
        pa.list_(pa.int64()),
        len(values),
        [validity(nulls) if nulls is not None else None, pa.py_buffer(offsets)],
        children=[flat],
    )


def token_arrays(values: Sequence[list[int] | None], *, bits: bool = False) -> list[Any]:
    """The lists as ``int64`` NumPy arrays (``None`` stays ``None``), cut from one buffer: ``datasets`` turns a
    list of arrays into an Arrow column without looking at each value."""
    import numpy

    offsets, data, kind, nulls = _flatten(values, bits)
    flat = numpy.frombuffer(data, dtype=kind).astype(numpy.int64, copy=False)
    ends = numpy.frombuffer(offsets, dtype=numpy.int32)
    parts = numpy.split(flat, ends[1:-1]) if values else []
    if nulls is not None:
        return [None if null else part for part, null in zip(parts, nulls, strict=True)]
    return parts
