"""``JsonArgs``: ``NAME<sep>{arguments}``, the name up to a marker, then one JSON value streamed raw."""

from __future__ import annotations

import enum
from functools import lru_cache

from turnkit.parse._bodies.base import MAX_NAME, REJECT, WS, Body, Fed, ToolTypes, after_fence
from turnkit.parse._emit import Emitter
from turnkit.parse._json_scan import JsonValueScanner, json_string_body, json_text
from turnkit.parse._markers import MarkerScanner, MarkerSet
from turnkit.parse._spec import JsonArgs

__all__ = ["JsonArgsBody"]


class _State(enum.Enum):
    NAME = enum.auto()
    """Reading the function name, up to one of ``name_ends``."""
    ID = enum.auto()
    """Reading a call id, up to ``id_end``."""
    ARGS_START = enum.auto()
    """The call is announced; before its arguments (whitespace, a fence)."""
    FENCE = enum.auto()
    """Inside the opening fence's info line."""
    ARGS = enum.auto()
    """Inside the JSON arguments, streamed."""
    RAW = enum.auto()
    """Raw text arguments, streamed as one JSON string up to the end of the body."""
    FENCE_TAIL = enum.auto()
    """After fenced arguments: the closing fence."""
    DONE = enum.auto()
    """A content name (``all``): not a call."""


_NAME, _ID, _ARGS_START, _FENCE, _ARGS, _RAW, _FENCE_TAIL, _DONE = _State


@lru_cache(maxsize=256)
def _name_sets(spec: JsonArgs) -> tuple[MarkerSet, MarkerSet | None]:
    ends = list(spec.name_ends) + list(spec.name_ends_kept)
    if spec.id_marker:
        ends.append(spec.id_marker)
    return MarkerSet(ends), (MarkerSet([spec.id_end]) if spec.id_end else None)


class JsonArgsBody(Body):
    """``NAME<sep>{arguments}``: the name up to a marker, then one JSON value streamed raw."""

    def __init__(
        self, spec: JsonArgs, emitter: Emitter, types: ToolTypes, max_depth: int, region_close: str | None = None
    ) -> None:
        super().__init__(spec, emitter, types, max_depth, region_close)
        self.spec = spec
        name_set, id_set = _name_sets(spec)
        self.name_scan = MarkerScanner(name_set)
        self.id_scan = MarkerScanner(id_set) if id_set is not None else None
        self.state = _NAME
        self.name_raw = ""
        self.id_raw = ""
        self.call_id: str | None = None
        self.scanner: JsonValueScanner | None = None
        self.fenced = False
        self.fence_buf = ""
        self.name = ""

    def feed(self, text: str) -> Fed:
        while text:
            state = self.state
            if state is _NAME:
                before, marker, text = self.name_scan.scan(text)
                self.name_raw += before
                if len(self.name_raw) > MAX_NAME:
                    return REJECT
                if marker is None:
                    return None
                if marker == self.spec.id_marker:
                    self.state = _ID
                    continue
                if marker in self.spec.name_ends_kept:
                    text = marker + text
                if self.spec.content_name is not None and self.name_raw.strip() == self.spec.content_name:
                    self.state = _DONE
                    return text
                if not self._begin():
                    return REJECT
            elif state is _ID:
                assert self.id_scan is not None
                before, marker, text = self.id_scan.scan(text)
                self.id_raw += before
                if marker is None:
                    return None
                self.call_id = self.id_raw.strip()
                if not self._begin():
                    return REJECT
            elif state is _ARGS_START:
                text = text.lstrip(WS)
                if not text:
                    return None
                if self.spec.fence and text[0] == "`" and not self.fenced:
                    self.state = _FENCE
                    continue
                raw_key = dict(self.spec.raw_args).get(self.name)
                if raw_key is not None and text[0] not in "{[":
                    # Raw text arguments (functionary's ``python``): streamed as one JSON string.
                    self.out.args("{" + json_text(raw_key) + ': "')
                    self.state = _RAW
                    continue
                self.scanner = JsonValueScanner(max_depth=self.max_depth)
                self.state = _ARGS
            elif state is _RAW:
                self.out.args(json_string_body(text))
                return None
            elif state is _FENCE:
                newline = text.find("\n")
                self.fence_buf += text if newline < 0 else text[: newline + 1]
                if newline < 0:
                    return None
                text = text[newline + 1 :]
                self.fenced = True
                self.state = _ARGS_START
            elif state is _ARGS:
                assert self.scanner is not None
                stop = self.scanner.feed(text)
                if stop < 0:
                    self.out.args(text)
                    return None
                self.out.args(text[:stop])
                self.out.end_call()
                text = text[stop:]
                if not self.fenced:
                    return text
                self.state = _FENCE_TAIL
                self.fence_buf = ""
            elif state is _FENCE_TAIL:
                self.fence_buf += text
                return after_fence(self.fence_buf)
            else:
                return text
        return None

    def _begin(self) -> bool:
        name = self.name_raw.strip()
        call_id = self.call_id
        if self.spec.id_from_name:
            call_id = name
        if self.spec.name_prefix and name.startswith(self.spec.name_prefix):
            name = name[len(self.spec.name_prefix) :].strip()
        if self.spec.name_cut and self.spec.name_cut in name:
            name = name.rpartition(self.spec.name_cut)[0]
        if not name or any(c in name for c in "\n<>{}"):
            return False
        self.name = name
        self.out.start_call(name, call_id)
        self.state = _ARGS_START
        return True

    def close(self) -> None:
        state = self.state
        if state is _ARGS_START:
            self.out.end_call()  # a call with no arguments written: ``{}``
        elif state is _RAW:
            self.out.args('"}')  # raw arguments run to the end of the output
            self.out.end_call()
        elif state is not _FENCE_TAIL and state is not _DONE:
            self.out.incomplete = True
