"""Streaming structured output: incremental JSON, partial values, policies, JSON Patch (+append).

>>> from turnkit.structured import JsonStream
>>> s = JsonStream()
>>> _ = s.feed('{"title": "Hello, world!", "tags": ["python", "ll')
>>> s.annotated()
{'title': 'Hello, world!', 'tags': ['python', 'll'], '$partial': {'tags': True}}
"""

from __future__ import annotations

from turnkit.structured._downgrade import Rfc6902Downgrader, to_rfc6902
from turnkit.structured._json_stream import JsonStream, loads, loads_partial
from turnkit.structured._partial_codegen import partial_types_module
from turnkit.structured._partial_ops import PartialMarkers
from turnkit.structured._partials import FieldState, partial_model
from turnkit.structured._patch import Op, apply_patch, coalesce_ops
from turnkit.structured._policies import ItemsWhenComplete, RequireFields, Stream, WhenComplete, WithState
from turnkit.structured._structured_stream import StructuredStream
from turnkit.structured._transforms import FunctionTransform, PathMap, Transform
from turnkit.structured._wire import OpDecoder, OpEncoder, decode_ops, encode_ops

__all__ = [
    "FieldState",
    "FunctionTransform",
    "ItemsWhenComplete",
    "JsonStream",
    "Op",
    "OpDecoder",
    "OpEncoder",
    "PartialMarkers",
    "PathMap",
    "RequireFields",
    "Rfc6902Downgrader",
    "Stream",
    "StructuredStream",
    "Transform",
    "WhenComplete",
    "WithState",
    "apply_patch",
    "coalesce_ops",
    "decode_ops",
    "encode_ops",
    "loads",
    "loads_partial",
    "partial_model",
    "partial_types_module",
    "to_rfc6902",
]
