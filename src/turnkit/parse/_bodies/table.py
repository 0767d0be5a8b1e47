"""Which decoder reads which argument encoding: one entry per body declaration of ``_spec.py``."""

from __future__ import annotations

from turnkit.parse._bodies.base import Body
from turnkit.parse._bodies.json_args import JsonArgsBody
from turnkit.parse._bodies.json_calls import JsonCallsBody
from turnkit.parse._bodies.keyed_dict import KeyedDictBody
from turnkit.parse._bodies.pythonic import PythonicBody
from turnkit.parse._bodies.xml_params import XmlParamsBody
from turnkit.parse._spec import BodySpec, JsonArgs, JsonCalls, KeyedDict, Pythonic, XmlParams

__all__ = ["BODIES", "body_class"]

BODIES: dict[type[BodySpec], type[Body]] = {
    JsonCalls: JsonCallsBody,
    JsonArgs: JsonArgsBody,
    XmlParams: XmlParamsBody,
    Pythonic: PythonicBody,
    KeyedDict: KeyedDictBody,
}


def body_class(spec: BodySpec) -> type[Body]:
    """The decoder of tool-call bodies declared as ``spec`` (built with the declaration, the emitter, the tool
    types, the depth limit and the region's close marker)."""
    body = BODIES.get(type(spec))
    if body is None:  # a subclass of a declaration
        body = next(BODIES[kind] for kind in type(spec).__mro__ if kind in BODIES)
    return body
