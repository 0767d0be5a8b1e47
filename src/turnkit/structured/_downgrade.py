"""Downgrade turnkit's operations to plain RFC 6902 for clients without ``append``.

``append`` is turnkit's one extension. A client that only speaks RFC 6902 (``?protocol=json-patch``,
AG-UI ``STATE_DELTA``, ``fast-json-patch``, Python's ``jsonpatch``) gets each ``append`` as a
``replace`` of the whole string, computed from a mirror of the client's document. Every other
operation passes through. Order is kept, so a value is always added before it is replaced or
appended to (the parser's ``add`` comes first), and a ``replace`` never names a path the client
does not have: the mirror applies (and so validates) every operation first.

Coalescing the batch first (the default) turns ``add "He"`` + ``append "llo"`` into ``add "Hello"``
and many appends to one string into one ``replace``, so a batch resends each string at most once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnkit._args import expect
from turnkit._json import json_copy, split_pointer
from turnkit.errors import JsonPatchError
from turnkit.structured._patch import Op, _error, _Fail, _resolve, apply_one, coalesce_ops, expect_ops

__all__ = ["Rfc6902Downgrader", "to_rfc6902"]


class Rfc6902Downgrader:
    """Turns batches of turnkit operations into RFC 6902 batches for one client, keeping its document.

    ``doc`` is the client's document to start from (``None`` before anything, or the snapshot the
    client was given); it is copied.

    >>> d = Rfc6902Downgrader()
    >>> d.downgrade([{"op": "add", "path": "", "value": {}}, {"op": "add", "path": "/t", "value": "He"}])
    [{'op': 'add', 'path': '', 'value': {'t': 'He'}}]
    >>> d.downgrade([{"op": "append", "path": "/t", "value": "ll"}, {"op": "append", "path": "/t", "value": "o"}])
    [{'op': 'replace', 'path': '/t', 'value': 'Hello'}]
    >>> d.value
    {'t': 'Hello'}
    """

    __slots__ = ("_coalesce", "_doc")

    def __init__(self, doc: Any = None, *, coalesce: bool = True) -> None:
        expect(coalesce, bool, name="coalesce", func="Rfc6902Downgrader")
        self._doc = json_copy(doc)
        self._coalesce = coalesce

    @property
    def value(self) -> Any:
        """The client's document after the batches so far. Live: treat it as read-only."""
        return self._doc

    def downgrade(self, ops: Sequence[Op]) -> list[Op]:
        """The RFC 6902 form of one batch; an inapplicable operation raises JsonPatchError (index, path)."""
        expect_ops(ops, func="Rfc6902Downgrader.downgrade")
        batch = coalesce_ops(ops) if self._coalesce else list(ops)
        out: list[Op] = []
        doc = self._doc
        for index, op in enumerate(batch):
            try:
                doc = apply_one(doc, op)
                if op["op"] == "append":
                    path = op["path"]
                    out.append({"op": "replace", "path": path, "value": _resolve(doc, split_pointer(path))})
                else:
                    out.append(op)
            except _Fail as exc:
                self._doc = doc
                raise _error(index, op, str(exc)) from None
            except JsonPatchError as exc:
                self._doc = doc
                raise _error(index, op, exc.message) from None
        self._doc = doc
        return out


def to_rfc6902(ops: Sequence[Op], doc_before: Any = None, *, coalesce: bool = True) -> list[Op]:
    """One batch in RFC 6902 form, for a client whose document is ``doc_before`` (not modified).

    >>> to_rfc6902([{"op": "append", "path": "/t", "value": "lo"}], {"t": "Hel"})
    [{'op': 'replace', 'path': '/t', 'value': 'Hello'}]
    """
    expect_ops(ops, func="to_rfc6902")
    expect(coalesce, bool, name="coalesce", func="to_rfc6902")
    return Rfc6902Downgrader(doc_before, coalesce=coalesce).downgrade(ops)
