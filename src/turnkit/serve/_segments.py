"""Deltas → open/delta/close segments: the lazily opened reasoning, text and tool-call channels that AG-UI and
the AI SDK UI message stream both frame (one open channel at a time, closed on a switch, no empty deltas)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from turnkit.parse import Delta

__all__ = ["Segment", "Segmenter", "new_id"]

Kind = Literal["reasoning", "text", "tool"]
Action = Literal["open", "delta", "close"]


def new_id(prefix: str) -> str:
    """A fresh id such as ``msg_3f2a…``."""
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True, slots=True)
class Segment:
    """``open`` / ``delta`` (``text`` never empty) / ``close`` of one channel; tool channels carry ``name``
    and, on ``close``, the whole argument text in ``text``."""

    kind: Kind
    action: Action
    id: str
    text: str = ""
    name: str = ""


class Segmenter:
    """Feeds one model turn's deltas; ``close()`` ends the open channel."""

    def __init__(self) -> None:
        self._open: tuple[Kind, str] | None = None
        self._calls: dict[int, tuple[str, str]] = {}
        self._args: dict[str, list[str]] = {}
        self._latest: int | None = None

    def _close(self, out: list[Segment]) -> None:
        if self._open is None:
            return
        kind, sid = self._open
        self._open = None
        if kind == "tool":
            name = next(name for call_id, name in self._calls.values() if call_id == sid)
            out.append(Segment("tool", "close", sid, "".join(self._args[sid]), name))
        else:
            out.append(Segment(kind, "close", sid))

    def _switch(self, out: list[Segment], kind: Kind, sid: str | None = None, name: str = "") -> str:
        if self._open is not None and self._open[0] == kind and (sid is None or self._open[1] == sid):
            return self._open[1]
        self._close(out)
        sid = sid or new_id("rs" if kind == "reasoning" else "txt")
        self._open = (kind, sid)
        out.append(Segment(kind, "open", sid, name=name))
        return sid

    def feed(self, delta: Delta) -> list[Segment]:
        out: list[Segment] = []
        for key, kind in (("reasoning_content", "reasoning"), ("content", "text")):
            text = delta.get(key)
            if text:
                sid = self._switch(out, kind)  # type: ignore[arg-type]
                out.append(Segment(kind, "delta", sid, text))  # type: ignore[arg-type]
        for call in delta.get("tool_calls") or ():
            index = call["index"]
            function = call.get("function") or {}
            if "id" in call:
                self._calls[index] = (call["id"], function.get("name") or "")
                self._args[call["id"]] = []
                self._switch(out, "tool", call["id"], function.get("name") or "")
            if index not in self._calls:
                continue
            call_id, name = self._calls[index]
            arguments = function.get("arguments") or ""
            if arguments:
                self._switch(out, "tool", call_id, name)
                self._args[call_id].append(arguments)
                out.append(Segment("tool", "delta", call_id, arguments, name))
        return out

    def close(self) -> list[Segment]:
        out: list[Segment] = []
        self._close(out)
        return out
