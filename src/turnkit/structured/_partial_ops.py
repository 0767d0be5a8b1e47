"""``$partial`` markers on the operation stream: the ops that keep a client equal to ``annotated()``.

:meth:`JsonStream.annotated` puts a member ``marker`` in every open object (``{open_key: true}``, or
``{}`` when no member is open). :class:`PartialMarkers` emits the same markers as ordinary JSON
Patch operations on the client document, interleaved with the parser's own operations, so that a
client applying every batch with plain JSON Patch (+ ``append``) holds exactly ``annotated()``:

* ``remove <object>/$partial`` for each object that was open before the batch and is not after
  it (closed, or replaced by a duplicate key) — placed *before* the batch's value operations,
  while the object still exists;
* ``add <object>/$partial {…}`` for each object newly open after the batch, and
  ``replace <object>/$partial {…}`` where a still-open object's open member changed — placed
  *after* them, once the object exists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnkit._args import expect
from turnkit._json import escape_token

if TYPE_CHECKING:  # pragma: no cover
    from turnkit.structured._json_stream import JsonStream
    from turnkit.structured._patch import Op

__all__ = ["PartialMarkers"]


class PartialMarkers:
    """Wraps a :class:`JsonStream`: ``feed`` / ``close`` return its operations plus the marker operations.

    >>> from turnkit.structured import JsonStream, PartialMarkers, apply_patch
    >>> s = PartialMarkers(JsonStream())
    >>> s.feed('{"a": [{"b": "x')
    [{'op': 'add', 'path': '', 'value': {}}, {'op': 'add', 'path': '/a', 'value': []}, \
{'op': 'add', 'path': '/a/0', 'value': {}}, {'op': 'add', 'path': '/a/0/b', 'value': 'x'}, \
{'op': 'add', 'path': '/$partial', 'value': {'a': True}}, {'op': 'add', 'path': '/a/0/$partial', 'value': {'b': True}}]
    >>> s.feed('y"}]}')
    [{'op': 'remove', 'path': '/$partial'}, {'op': 'remove', 'path': '/a/0/$partial'}, \
{'op': 'append', 'path': '/a/0/b', 'value': 'y'}]

    Every operation is a new dict; marker values are fresh (never shared with the stream).
    """

    __slots__ = ("_marker", "_open", "_stream", "_token")

    def __init__(self, stream: JsonStream, marker: str = "$partial") -> None:
        from turnkit.structured._json_stream import JsonStream

        expect(stream, JsonStream, name="stream", func="PartialMarkers")
        expect(marker, str, name="marker", func="PartialMarkers")
        self._stream = stream
        self._marker = marker
        self._token = "/" + escape_token(marker)
        # (frame, open key or None) of each open object, root first: the markers the client holds now
        self._open: list[tuple[Any, Any]] = []

    @property
    def stream(self) -> JsonStream:
        """The wrapped parser."""
        return self._stream

    @property
    def marker(self) -> str:
        return self._marker

    def feed(self, text: str) -> list[Op]:
        """``stream.feed(text)`` with the marker operations around it."""
        return self.wrap(self._stream.feed(text))

    def close(self) -> list[Op]:
        """``stream.close()`` with the marker operations (the last markers removed)."""
        return self.wrap(self._stream.close())

    def current(self) -> list[tuple[str, dict[str, bool]]]:
        """``(pointer of the marker member, marker value)`` of every open object, root first."""
        return [(frame[4] + self._token, {} if key is None else {key: True}) for frame, key in self._open]

    def wrap(self, ops: list[Op]) -> list[Op]:
        """The marker operations around ``ops``, the operations the stream returned since the last call."""
        stream = self._stream
        stack = stream._stack
        # the open key of each object frame: the slot of the frame above it, or the open string's key
        string_open = len(stream.incomplete) > len(stack)
        now: list[tuple[Any, Any]] = []
        last = len(stack) - 1
        for i, frame in enumerate(stack):
            if frame[1]:
                if i < last:
                    key = stack[i + 1][5]
                elif string_open:
                    key = stream._skey
                else:
                    key = None
                now.append((frame, key))
        before = self._open
        if not before and not now:
            return ops
        common = 0
        limit = min(len(before), len(now))
        while common < limit and before[common][0] is now[common][0]:
            common += 1
        token = self._token
        out: list[Op] = [{"op": "remove", "path": frame[4] + token} for frame, _ in before[common:]]
        out.extend(ops)
        for i in range(common):
            key = now[i][1]
            if key != before[i][1]:
                out.append({"op": "replace", "path": now[i][0][4] + token, "value": {} if key is None else {key: True}})
        for frame, key in now[common:]:
            out.append({"op": "add", "path": frame[4] + token, "value": {} if key is None else {key: True}})
        self._open = now
        return out
