"""What every argument-encoding decoder shares: the :class:`Body` interface, the rejection sentinel, and
turning a raw parameter text into a typed JSON value."""

from __future__ import annotations

import ast
import enum
from typing import Any, Protocol

from turnkit._json import json_loads
from turnkit.parse._emit import Delta, Emitter
from turnkit.parse._json_scan import JsonDepthGauge, JsonValueScanner
from turnkit.parse._spec import BodySpec

__all__ = [
    "FENCE",
    "MAX_NAME",
    "REJECT",
    "WS",
    "Body",
    "Fed",
    "Lane",
    "LaneTaker",
    "Reject",
    "ToolTypes",
    "after_fence",
    "check_depth",
    "param_type",
    "typed_value",
]

ToolTypes = dict[str, dict[str, Any]]
"""Tool name -> parameter name -> JSON schema of that parameter."""

Lane = tuple[str, str, list[str], int]
"""A body's lane (:attr:`Body.lane_to`): two stop characters (the same one twice if there is one; two ``in`` tests
cost less than a pattern's search; ``""``: every chunk stops), the list a chunk is appended to, and the index of the
call whose argument delta the chunk is (``-1``: no delta). A lane with an index is one of streamed JSON arguments
inside an object or array (:attr:`LaneTaker._lane_scanner` their scanner): a chunk that stops it but holds quotes
and no bracket or backslash (:data:`~turnkit.parse._json_scan.QUOTES`) stays on it, an odd count flipping the
scanner's string state; the lane then stops at a quote or backslash inside a string, at every chunk outside one."""


class LaneTaker(Protocol):
    """Where a body puts the lane it opens (:attr:`Body.lane_to`): the engine, whose ``feed`` takes it."""

    _lane: Lane | None
    _lane_scanner: JsonValueScanner | None


class Reject(enum.Enum):
    """The type of :data:`REJECT` (one member, compared with ``is``)."""

    REJECT = "reject"


REJECT = Reject.REJECT
"""Returned by ``feed`` when the body is not in the decoder's encoding: an object no model output can spell."""

Fed = str | None | Reject
"""What ``feed`` returns: ``None`` (the body continues), the unconsumed rest (it ended), or :data:`REJECT`."""

MAX_NAME = 512
"""Longest function name, parameter key or header a decoder collects before it decides the text is no call."""

WS = " \t\r\n"


class Body:
    """One tool-call body being decoded: pushed text with :meth:`feed`, ended with :meth:`close`.

    A decoder that sees the body is not in its encoding returns :data:`REJECT` before emitting anything;
    the engine then treats the region's text as content. Calls are emitted through the shared ``Emitter``
    as they become known: the name first, then JSON argument text fragments.
    """

    __slots__ = (
        "out",
        "types",
        "max_depth",
        "lane_to",
        "end",
    )

    def __init__(
        self, spec: BodySpec, emitter: Emitter, types: ToolTypes, max_depth: int, region_close: str | None
    ) -> None:
        self.out = emitter
        self.types = types
        self.max_depth = max_depth
        self.lane_to: LaneTaker | None = None
        """Where :meth:`fast` puts a lane (``None``: no lanes, while the engine keeps the region's text to give it
        back). A lane is opened after a chunk that was only more text of a run (a JSON string in the arguments, an
        untyped raw value): while the next chunks have no stop character, the engine's ``feed`` takes them itself
        (no call into the body): each is appended to the lane's list and, with an index, is an argument delta of
        that call. The engine clears it before any other chunk reaches the body, so the body's next step starts
        without one; written straight into the engine, it costs the common step nothing."""
        self.end: Fed = None
        """What :meth:`feed` returned when the body ended on a chunk :meth:`fast` took (``None`` while it goes on)."""

    def feed(self, text: str) -> Fed:  # pragma: no cover - abstract
        raise NotImplementedError

    def fast(self, text: str) -> list[Delta] | None:
        """The streaming path (the engine's armed step inside a body): take ``text`` and return this chunk's deltas
        while the body goes on, or ``None`` when it ended on the chunk (:attr:`end` holding what :meth:`feed`
        returned; the engine then leaves the region). Called only when no delta is pending and no region is held
        back, so it may emit through the emitter and return its ``take()``. Decoders override it with one-step
        lanes for their common chunks and fall back to :meth:`fed`."""
        return self.fed(text)

    def fed(self, text: str) -> list[Delta] | None:
        """:meth:`fast` for any chunk: :meth:`feed`, then this chunk's deltas, or ``None`` with :attr:`end` set."""
        rest = self.feed(text)
        if rest is None:
            return self.out.take()
        self.end = rest
        return None

    def close(self) -> None:
        """End of input inside the body: whatever was open stays open (the message is incomplete)."""
        self.out.incomplete = True


FENCE = "```"


def after_fence(tail: str) -> Fed:
    """After a fenced value: the text past the closing fence, ``None`` while ``tail`` may still become one,
    or the text as it is (leading whitespace dropped) when no fence closes the value."""
    stripped = tail.lstrip(WS)
    if stripped.startswith(FENCE):
        return stripped[len(FENCE) :]
    if FENCE.startswith(stripped):
        return None
    return stripped


def check_depth(raw: str, max_depth: int) -> None:
    """Raise the depth-limit error if the complete JSON-ish text ``raw`` nests deeper than ``max_depth``."""
    if ("{" in raw or "[" in raw) and raw.count("{") + raw.count("[") > max_depth:
        # (fewer opening brackets cannot nest deeper; most values have none, and an ``in`` test costs less than a count)
        JsonDepthGauge(max_depth=max_depth).feed(raw)


def param_type(types: ToolTypes, function: str, param: str) -> str:
    """The JSON type the tool schema declares for a parameter (``""`` when unknown or ambiguous)."""
    schema = types.get(function, {}).get(param)
    if not isinstance(schema, dict):
        return ""
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else ""
    if kind is None and ("enum" in schema or "const" in schema):
        values = schema.get("enum", [schema.get("const")])
        kind = "string" if all(isinstance(v, str) for v in values) else ""
    return kind if isinstance(kind, str) else ""


_JSON_FIRST = frozenset('"{[-0123456789tfnNI')
"""The characters a text ``json.loads`` reads can start with (``NaN`` and ``Infinity`` included)."""


_LITERAL_KINDS = frozenset(("integer", "number", "boolean", "object", "array", "null", "json"))
"""Declared types whose raw text, when it is not JSON, is read as a Python literal (``True``, ``'a'``, ``(1, 2)``)."""


def typed_value(raw: str, kind: str) -> Any:
    """A raw parameter text as a JSON value: strings stay text; other types parse when they can."""
    if kind == "string":
        return raw
    stripped = raw.strip()
    if stripped[:1] in _JSON_FIRST:  # (else not JSON, most raw text: no json.loads and its costlier error)
        try:
            return json_loads(stripped)
        except (ValueError, RecursionError):
            pass
    if kind in _LITERAL_KINDS:
        try:
            return ast.literal_eval(stripped)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return raw
    return raw
