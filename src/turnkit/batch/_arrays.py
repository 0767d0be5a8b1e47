"""Arrow arrays for parquet output made from buffers, not by ``pa.array`` nor ``cast``.

``pa.array`` on a Python list asks pandas whether the list is "array-like", so its first call imports pandas when
pandas is installed (~0.2 s, and pandas then imports ``pyarrow.compute``), even for a list of strings with an
explicit type; ``Array.cast`` imports ``pyarrow.compute`` (~35-60 ms). A ``turnkit batch`` command paid both before
its workers started (its first row is encoded before the fork) and again in each worker it did not fork.
``tests/batch/test_columns.py`` compares these arrays with ``pa.array``'s; ``tests/batch/test_batch.py`` checks that
a parquet run imports neither.
"""

from __future__ import annotations

import array
import itertools
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["int64_buffer", "string_array", "validity"]

_MAX_OFFSET = 2**31 - 1
"""The largest offset of a ``string`` array (int32 offsets): a longer column is left to ``pa.array``."""


def validity(nulls: Sequence[bool]) -> Any:
    """The Arrow validity bitmap (bit ``i`` set when value ``i`` is not null, least significant bit first) of a
    column with at least one null, as a pyarrow buffer."""
    import pyarrow as pa

    bits = "".join("0" if null else "1" for null in reversed(nulls))
    return pa.py_buffer(int(bits, 2).to_bytes((len(nulls) + 7) // 8, "little"))


def string_array(values: Sequence[str | None]) -> Any:
    """``pa.array(values, type=pa.string())`` for ``str`` values and ``None`` (null), built from their UTF-8 bytes
    joined once and int32 offsets (the same speed: ~0.1 ms for 256 rendered prompts). A lone surrogate raises
    ``UnicodeEncodeError``, as ``pa.array`` does."""
    import pyarrow as pa

    encoded = [b"" if value is None else value.encode("utf-8") for value in values]
    if sum(map(len, encoded)) > _MAX_OFFSET:  # over 2 GB: pa.array splits it into chunks
        return pa.array(values, type=pa.string())
    nulls = [value is None for value in values]
    offsets = array.array("i", itertools.accumulate(map(len, encoded), initial=0))
    return pa.Array.from_buffers(
        pa.string(),
        len(values),
        [validity(nulls) if any(nulls) else None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))],
    )


def int64_buffer(data: bytes) -> Any:
    """The bytes as int64 values (a mask, a byte a token), as a pyarrow buffer: each byte the low byte of an
    8-byte zero, one slice assignment (~0.2 ms for 256 chat rows' masks, where ``cast`` took ~0.1 ms once
    ``pyarrow.compute`` was imported)."""
    import pyarrow as pa

    out = bytearray(8 * len(data))
    out[0 if sys.byteorder == "little" else 7 :: 8] = data
    return pa.py_buffer(out)
