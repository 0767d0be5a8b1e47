"""A bounded first-in-first-out memo keyed by bytes: the render memo and the prefix cache keep their texts in one."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

__all__ = ["FifoMemo"]

V = TypeVar("V")


class FifoMemo(Generic[V]):
    """At most ``max_entries`` values and ``max_bytes`` of keys and texts (oldest out first); a text longer than
    ``max_text`` is not kept. ``entries`` is read without a lock (a dict lookup is atomic); writes take one."""

    __slots__ = ("entries", "_sizes", "_bytes", "_lock", "_max_entries", "_max_bytes", "_max_text", "_seen")

    def __init__(self, *, max_entries: int, max_bytes: int, max_text: int) -> None:
        self.entries: dict[bytes, V] = {}
        self._sizes: dict[bytes, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self._max_entries, self._max_bytes, self._max_text = max_entries, max_bytes, max_text
        self._seen: dict[int, None] = {}

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
        if len(seen) > 4 * self._max_entries:
            try:
                seen.pop(next(iter(seen)), None)
            except RuntimeError:  # another thread changed the dict between iter() and next(): evict next time
                pass
        return False

    def get(self, key: bytes) -> V | None:
        return self.entries.get(key)

    def put(self, key: bytes, value: V, text: str) -> None:
        """Keep ``value`` under ``key``; ``text`` is what it holds, for the size bound."""
        if len(text) > self._max_text:
            return
        size = len(key) + (len(text) if text.isascii() else 4 * len(text))
        with self._lock:
            if key in self.entries:
                return
            while self.entries and (len(self.entries) >= self._max_entries or self._bytes + size > self._max_bytes):
                old = next(iter(self.entries))
                del self.entries[old]
                self._bytes -= self._sizes.pop(old)
            self.entries[key] = value
            self._sizes[key] = size
            self._bytes += size
