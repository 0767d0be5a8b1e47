"""Which decoder reads which argument encoding: one entry per body declaration of ``_spec.py``."""

from __future__ import annotations

from turnkit.parse._bodies.base import Body, ToolTypes
from turnkit.parse._bodies.json_args import JsonArgsBody
from turnkit.parse._bodies.json_calls import JsonCallsBody
from turnkit.parse._bodies.keyed_dict import KeyedDictBody
from turnkit.parse._bodies.pythonic import PythonicBody
from turnkit.parse._bodies.xml_params import XmlParamsBody
from turnkit.parse._emit import Emitter
from turnkit.parse._spec import BodySpec, JsonArgs, JsonCalls, KeyedDict, Pythonic, XmlParams

__all__ = ["BODIES", "make_body"]

BODIES: dict[type[BodySpec], type[Body]] = {
    JsonCalls: JsonCallsBody,
    JsonArgs: JsonArgsBody,
    XmlParams: XmlParamsBody,
    Pythonic: PythonicBody,
    KeyedDict: KeyedDictBody,
}


def make_body(spec: BodySpec, emitter: Emitter, types: ToolTypes, max_depth: int, region_close: str | None) -> Body:
    """A new decoder for one tool-call body declared as ``spec`` (``region_close`` ends the region)."""
    body = BODIES.get(type(spec))
    if body is None:  # a subclass of a declaration
        body = next(BODIES[kind] for kind in type(spec).__mro__ if kind in BODIES)
    return body(spec, emitter, types, max_depth, region_close)
