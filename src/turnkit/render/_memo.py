"""A bounded first-in-first-out memo: the render memo (bytes keys) and the prefix cache (tuple keys) keep texts."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["FifoMemo"]

V = TypeVar("V")


class FifoMemo(Generic[V]):
    """At most ``max_entries`` values and ``max_bytes`` of keys and texts (oldest out first); a text longer than
    ``max_text`` is not kept. ``entries`` is read without a lock (a dict lookup is atomic); writes take one.

    The order of arrival is kept in a deque: taking a dict's first key (``next(iter(d))``) after deleting from
    its front scans the deleted slots, a cost that grows with every eviction until the dict is resized."""

    __slots__ = (
        "entries",
        "_order",
        "_sizes",
        "_bytes",
        "_lock",
        "_max_entries",
        "_max_bytes",
        "_max_text",
        "_seen",
        "_seen_order",
    )

    def __init__(self, *, max_entries: int, max_bytes: int, max_text: int) -> None:
        self.entries: dict[Hashable, V] = {}
        self._order: deque[Hashable] = deque()
        self._sizes: dict[Hashable, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self._max_entries, self._max_bytes, self._max_text = max_entries, max_bytes, max_text
        self._seen: dict[int, None] = {}
        self._seen_order: deque[int] = deque()

    def seen(self, fingerprint: int) -> bool:
        """Whether ``fingerprint`` came before among the last ``4 * max_entries`` (it is noted now).

        An exact key costs as much as a sixth of a render; a caller computes it only for an input whose cheap
        fingerprint (equal inputs, equal fingerprints) was met before, so an input met once (a batch of
        distinct conversations, each turn of a growing chat) costs no key, and a repeat is kept from its
        second time on."""
        seen = self._seen
        if fingerprint in seen:
            return True
        seen[fingerprint] = None
        order = self._seen_order
        order.append(fingerprint)
        if len(order) > 4 * self._max_entries:
            try:
                seen.pop(order.popleft(), None)
            except IndexError:  # another thread took the last one meanwhile
                pass
        return False

    def get(self, key: Hashable) -> V | None:
        return self.entries.get(key)

    def put(self, key: Hashable, value: V, text: str, key_size: int | None = None) -> None:
        """Keep ``value`` under ``key``; ``text`` is what it holds, for the size bound, with the key's size
        (``len(key)`` of a bytes key unless given)."""
        if len(text) > self._max_text:
            return
        if key_size is None:
            assert isinstance(key, bytes)
            key_size = len(key)
        size = key_size + (len(text) if text.isascii() else 4 * len(text))
        with self._lock:
            if key in self.entries:
                return
            while self.entries and (len(self.entries) >= self._max_entries or self._bytes + size > self._max_bytes):
                old = self._order.popleft()
                del self.entries[old]
                self._bytes -= self._sizes.pop(old)
            self.entries[key] = value
            self._order.append(key)
            self._sizes[key] = size
            self._bytes += size
