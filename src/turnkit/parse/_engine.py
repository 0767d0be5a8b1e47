"""The streaming extraction engine: one push parser for every format declaration.

:class:`StreamParser` is built from a :class:`~turnkit.parse._spec.FormatSpec`. It moves between
regions (content, reasoning, tool-call sections and bodies, harmony headers) when it meets a marker,
holding back only a tail that could still become a marker, and hands tool-call bodies to the decoder
of their argument encoding. ``feed`` returns the OpenAI-style deltas that the new text settled;
``close`` ends the output. A complete parse is a new parser, one ``feed``, ``close``.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from turnkit.errors import LimitExceededError, UsageError
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.messages import AssistantMessage
from turnkit.parse._bodies import REJECT, Body, Fed, Lane, ToolTypes, body_class
from turnkit.parse._emit import CONTENT, REASONING, Delta, Emitter
from turnkit.parse._json_scan import QUOTES, JsonDepthGauge, JsonValueScanner
from turnkit.parse._markers import MarkerScanner, MarkerSet
from turnkit.parse._spec import FormatSpec, Harmony, Reasoning, Section, ToolRegion

__all__ = ["FINISH_REASONS", "StreamParser", "tool_types"]

FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter")
"""The ``finish_reason`` values a framed stream's last delta may carry (OpenAI's, less the legacy
``function_call``)."""


class _Mode(enum.Enum):
    """Where in the output the parser is."""

    CONTENT = enum.auto()
    REASONING = enum.auto()
    SECTION = enum.auto()
    """Inside a tool-call section, between its calls."""
    BODY = enum.auto()
    """Inside a tool region's body (its decoder reads the text)."""
    AFTER = enum.auto()
    """After a body that ended before its region's close marker."""
    HEADER = enum.auto()
    """Inside a harmony header."""
    H_TEXT = enum.auto()
    """Inside a harmony message read as text."""
    H_ARGS = enum.auto()
    """Inside a harmony message that is a call's arguments."""
    DONE = enum.auto()
    """After an end-of-message marker: the rest is ignored."""


_CONTENT, _REASONING, _SECTION, _BODY, _AFTER, _HEADER, _H_TEXT, _H_ARGS, _DONE = _Mode


class _Action(enum.Enum):
    """What a marker met in content does."""

    REASONING = enum.auto()
    TOOL = enum.auto()
    SECTION = enum.auto()
    DISCARD = enum.auto()
    END = enum.auto()
    HEADER = enum.auto()
    HEADER_AT_START = enum.auto()
    """Header text that opens a header only at the very start of the output (``to=``)."""


_Scanned = Callable[[str, str | None, str], str]
"""A mode's handler of one scan result (released text, the marker found or ``None``, the text after it): returns
the text left for the machine."""

_MAX_HEADER = 4096
"""Longest harmony header kept; a longer one ends the output as cut off."""


class _Compiled:
    """Marker tables of one declaration, computed once per format."""

    def __init__(self, spec: FormatSpec) -> None:
        self.spec = spec
        actions: dict[str, tuple[_Action, Any]] = {}
        for reasoning in spec.reasoning:
            for marker in reasoning.starts:
                actions.setdefault(marker, (_Action.REASONING, reasoning))
        for region in spec.tools:
            actions.setdefault(region.open, (_Action.TOOL, region))
        for section in spec.sections:
            actions.setdefault(section.open, (_Action.SECTION, section))
        for marker in spec.discard:
            actions.setdefault(marker, (_Action.DISCARD, None))
        for marker in spec.ends:
            actions.setdefault(marker, (_Action.END, None))
        harmony = spec.harmony
        if harmony is not None:
            for marker in harmony.header_opens:
                actions.setdefault(marker, (_Action.HEADER, marker))
            for marker in harmony.ends:
                actions.setdefault(marker, (_Action.DISCARD, None))
            for marker in harmony.header_starts:
                actions.setdefault(marker, (_Action.HEADER_AT_START, marker))
        self.content_actions = actions
        self.content_markers = MarkerSet(actions)
        in_reasoning = [m for m, (kind, _t) in actions.items() if kind is _Action.TOOL or kind is _Action.SECTION]
        if not spec.calls_in_reasoning:
            in_reasoning = []
        self.reasoning_markers = {
            id(r): MarkerSet(r.ends + r.starts + r.ends_kept + spec.ends + tuple(in_reasoning)) for r in spec.reasoning
        }
        self.section_markers = {
            id(s): MarkerSet([c.open for c in s.calls] + ([s.close] if s.close else [])) for s in spec.sections
        }
        self.close_markers: dict[int, MarkerSet] = {}
        self.bodies: dict[int, type[Body]] = {}  # each region's decoder, by the region's id
        for region in list(spec.tools) + [c for s in spec.sections for c in s.calls]:
            self.bodies[id(region)] = body_class(region.body)
            reopen = getattr(region.body, "function_open", None)
            markers = [m for m in (region.close, reopen) if m]
            self.close_markers[id(region)] = MarkerSet(markers)
        self._stray_close: dict[str, MarkerSet] = {}
        if harmony is not None:
            self.header_markers = MarkerSet([harmony.message, *harmony.ends])
            self.h_text_markers = MarkerSet([*harmony.ends, *harmony.header_opens])
            self.header_patterns = _HeaderPatterns(harmony)

    def stray_close_markers(self, close: str) -> MarkerSet:
        """Content markers plus a region's close marker (met after text that followed the region's body)."""
        found = self._stray_close.get(close)
        if found is None:
            found = self._stray_close[close] = MarkerSet([*self.content_actions, close])
        return found


class _HeaderPatterns:
    """Reading a harmony header (``ROLE<|channel|>CH to=R``), built from the declaration's own markers."""

    def __init__(self, harmony: Harmony) -> None:
        # A recipient ends at whitespace or where a special token starts (the markers' common prefix, "<|").
        token_start = os.path.commonprefix([*harmony.header_opens, harmony.message, *harmony.ends])
        stop = rf"\s|{re.escape(token_start)}|$" if token_start else r"\s|$"
        self.recipient = re.compile(rf"{re.escape(harmony.recipient)}(\S+?)(?={stop})")
        channel = re.escape(harmony.channel) if harmony.channel else None
        self.channel = re.compile(rf"{channel}\s*(\w+)") if channel else None
        self.loose_body = re.compile(rf"{channel}\s*(\w+)\s+(.*)$", re.DOTALL) if channel else None


@lru_cache(maxsize=128)
def _compiled(spec: FormatSpec) -> _Compiled:
    return _Compiled(spec)


def tool_types(tools: list[dict[str, Any]] | None) -> ToolTypes:
    """Parameter schemas by tool name from OpenAI-style tool definitions (or bare function schemas)."""
    types: ToolTypes = {}
    for tool in tools or []:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function", tool)
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        parameters = function.get("parameters") or {}
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        types[function["name"]] = dict(properties) if isinstance(properties, dict) else {}
    return types


class _Region:
    """The tool region being read: a new one on every region entry."""

    __slots__ = ("spec", "body", "opened", "calls_at_entry", "replay", "raw")

    def __init__(self, spec: ToolRegion, body: Body, opened: str, calls_at_entry: int) -> None:
        self.spec = spec
        self.body: Body | None = body
        self.opened = opened
        """The marker that opened the region."""
        self.calls_at_entry = calls_at_entry
        self.replay: list[str] | None = []
        """The text fed to the body while it may still reject it (given back as content then); ``None``
        once a call started."""
        self.raw: list[str] = []
        """``whole_calls``: the region's text as written, content if the output ends inside the region."""


class StreamParser:
    """Push parser for one model output: ``feed(text) -> deltas``, ``close() -> deltas``."""

    __slots__ = (
        "spec",
        "_c",
        "_limits",
        "_types",
        "_out",
        "_frame",
        "_closed",
        "_final",
        "_size",
        "_max_input",
        "_fast",
        "_lane",
        "_lane_scanner",
        "_fast_loud",
        "_mode",
        "_scanner",
        "_at_start",
        "_reasoning",
        "_reasoning_fresh",
        "_held",
        "_held_reasoning",
        "_resume",
        "_section",
        "_region",
        "_after_space",
        "_stray_close",
        "_header",
        "_field",
        "_gauge",
        "_prefix_pending",
    )

    def __init__(
        self,
        spec: FormatSpec,
        *,
        prefix: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        limits: Limits | None = None,
        strict: bool = False,
        frame: bool = False,
    ) -> None:
        self.spec = spec
        self._c = _compiled(spec)
        self._limits = limits = limits or DEFAULT_LIMITS
        self._types = tool_types(tools)
        known = frozenset(self._types) if tools is not None else None
        self._out = Emitter(strip=spec.strip, id_pattern=spec.ids, known_tools=known, strict=strict)
        self._frame = frame
        if frame:  # the message frame's first delta: returned first by the first ``feed`` (or ``close``)
            self._out.deltas.append({"role": "assistant"})
        self._closed = ""  # "", or why the parser takes no more input: "closed" or "failed"
        self._final = False  # close(): the held tail is scanned with nothing held back
        self._size = 0
        self._max_input = limits.max_input_chars
        self._fast: Callable[[str], list[Delta] | None] | None = None  # set by _arm (see there)
        self._lane: Lane | None = None  # a body's lane, put here by its step (see Body.lane_to)
        self._lane_scanner: JsonValueScanner | None = None  # the scanner of a JSON lane (see Lane)
        self._fast_loud = self._c.content_markers.loud  # set by _arm: the current scanner's markers' test
        self._mode = _CONTENT
        # One scanner for the parser's life: each mode switch sets its marker set, holding nothing.
        self._scanner = MarkerScanner(self._c.content_markers)
        self._at_start = True  # no content text yet (``at_start`` regions and header starts)
        # reasoning
        self._reasoning: Reasoning | None = None
        self._reasoning_fresh = False  # nothing but whitespace since the block opened
        self._held: list[str] | None = None  # raw text of a block that is reasoning only if an end follows
        self._held_reasoning: list[str] = []  # the same text as reasoning (opening markers left out)
        self._resume: Reasoning | None = None  # reasoning to return to after a call inside it
        # tool regions
        self._section: Section | None = None
        self._region: _Region | None = None
        self._after_space = ""  # whitespace after a body, before its region's close marker
        self._stray_close: str | None = None  # a left region's close marker, framing if it still comes
        # harmony
        self._header = ""
        self._field = CONTENT  # where a harmony message's text goes ("" = nowhere)
        self._gauge: JsonDepthGauge | None = None  # depth of a harmony call's arguments
        self._prefix_pending = spec.content_prefix if spec.content_prefix_with_output else ""
        self._enter_initial(prefix)
        if spec.content_prefix and not spec.content_prefix_with_output:  # returned by the first feed (or close)
            self._content(spec.content_prefix)

    # -- public -------------------------------------------------------------------------------------
    def feed(self, text: str) -> list[Delta]:
        """Parse the next piece of output; returns the deltas it settled (possibly none)."""
        lane = self._lane
        if lane is not None:  # the hottest path: more text of a body's run (see Body.lane_to), kept with its delta
            stop, also, sink, index = lane
            if type(text) is str:
                if stop not in text and also not in text and text:
                    size = self._size + len(text)
                    if size <= self._max_input:
                        sink.append(text)
                        self._size = size
                        return (
                            [] if index < 0 else [{"tool_calls": [{"index": index, "function": {"arguments": text}}]}]
                        )
                elif index >= 0 and (quotes := QUOTES.get(text, 2)) < 2:
                    size = self._size + len(text)  # (quotes only, inside JSON arguments' object or array: see Lane)
                    if size <= self._max_input:
                        sink.append(text)
                        self._size = size
                        if quotes:
                            scanner = self._lane_scanner
                            assert scanner is not None
                            scanner.in_string = in_string = not scanner.in_string
                            self._lane = ('"', "\\", sink, index) if in_string else ("", "", sink, index)
                        return [{"tool_calls": [{"index": index, "function": {"arguments": text}}]}]
            self._lane = None
        # The hot path: a chunk that the armed fast step (see _arm) can take in one step.
        fast = self._fast
        if fast is not None and type(text) is str and text:
            size = self._size + len(text)
            if size <= self._max_input:
                try:
                    deltas = fast(text)
                except BaseException:
                    self._closed = "failed"
                    self._fast = None
                    raise
                self._size = size
                if deltas is None:
                    return self._full(text)
                return deltas
        return self._feed(text)

    def _feed(self, text: str) -> list[Delta]:
        self._fast = None
        if self._closed:
            raise UsageError(f"feed() on a {self._closed} stream parser")
        if type(text) is not str:
            self._closed = "failed"
            raise UsageError(f"feed() takes str, not {type(text).__name__}")
        size = self._size = self._size + len(text)
        if size > self._limits.max_input_chars:
            self._closed = "failed"
            raise LimitExceededError(
                f"model output longer than max_input_chars={self._limits.max_input_chars}",
                position=self._limits.max_input_chars,
            )
        if self._prefix_pending and text:
            self._content(self._prefix_pending)
            self._prefix_pending = ""
        if self._out.holding:
            region = self._region
            assert region is not None
            region.raw.append(text)
        return self._full(text)

    def _full(self, text: str) -> list[Delta]:
        """The full path for a checked and counted chunk (also one the armed step declined, or one on which the
        armed body step saw its body end: armed, no prefix is pending and no region is held)."""
        fast, self._fast = self._fast, None
        try:
            if fast is not None and self._mode is _BODY:
                # The armed body step took the chunk and the body ended on it: the region ends, the rest is read on.
                region = self._region
                assert region is not None and region.body is not None
                text = self._body_ended(region, region.body.end, region.replay)
            if text:
                self._run(text)
            deltas = self._out.take()
            self._arm()
            return deltas
        except BaseException:
            self._closed = "failed"
            raise

    def _arm(self) -> None:
        """Choose the step the next ``feed`` tries first: one that handles a chunk which cannot change the
        machine's state (what _run would do with it) and returns its deltas, or ``None`` to leave the chunk to
        the full path. Armed only when no delta is pending and no region is held back (``whole_calls``); any
        ``feed`` that takes the full path chooses again.

        Inside a body it is the decoder's own step, which takes every chunk (while the body may still reject the
        region, wrapped to keep the replay of the region's text); in content, reasoning or after a body,
        a chunk in which no marker completes; elsewhere, more of a marker's beginning."""
        self._lane = None
        out = self._out
        if out.holding or out.deltas or self._prefix_pending:
            return
        mode = self._mode
        if mode is _BODY:
            region = self._region
            if region is not None and region.body is not None:
                self._arm_body(region, region.body)
            return
        scanner = self._scanner
        self._fast_loud = scanner.markers.loud
        if mode is _CONTENT:
            self._fast = self._fast_content
        elif mode is _REASONING:
            self._fast = self._fast_reasoning
        elif mode is _AFTER:
            self._fast = self._fast_after
        elif scanner.held and scanner.markers.holds:
            self._fast = self._fast_held

    def _arm_body(self, region: _Region, body: Body) -> None:
        replay = region.replay
        if replay is not None and len(self._out.calls) != region.calls_at_entry:
            replay = region.replay = None  # a call started: the body can no longer reject (as _body_feed)
        if replay is None:
            self._fast, body.lane_to = body.fast, self
        else:
            self._fast = self._fast_replaying

    def _fast_replaying(self, text: str) -> list[Delta] | None:
        """Armed in a body that may still reject its region: the body's step, the text kept for the replay (as
        _body_feed keeps it)."""
        region = self._region
        assert region is not None and region.body is not None and region.replay is not None
        region.replay.append(text)
        deltas = region.body.fast(text)
        if deltas:
            self._arm_body(region, region.body)
        return deltas

    def _fast_held(self, text: str) -> list[Delta] | None:
        """Armed inside a marker's beginning: still only its beginning, every mode waits."""
        return [] if self._scanner.hold_more(text) else None

    def _released(self, text: str, scanned: _Scanned, found: re.Match[str] | None) -> str | list[Delta]:
        """The scan of a chunk in content, reasoning or after a body: the text it releases when no marker completes
        (a marker's possible beginning is held); else the chunk's deltas, the machine run on from the scan
        (``scanned``: the mode's handler of a scan result), as _full would, without scanning the chunk again.
        ``found``: where a marker can first start in the chunk (the markers' ``loud``), when nothing is held."""
        scanner = self._scanner
        markers = scanner.markers
        if found is not None:
            at = found.start()
            if text[at:] in markers.holds:
                # From there only a marker's beginning, no marker inside it: held, what scan finds (no search).
                scanner.held = text[at:]
                return text[:at]
        elif scanner.held and (buffer := scanner.held + text) in markers.holds:  # (scanner.hold_more, inlined)
            scanner.held = buffer
            return ""
        before, marker, rest = scanner.scan(text)
        if marker is None:
            return before
        self._fast = None
        rest = scanned(before, marker, rest)
        if rest:
            self._run(rest)
        deltas = self._out.take()
        self._arm()
        return deltas

    def _fast_after(self, text: str) -> list[Delta] | None:
        """Armed after a body that ended before its region's close marker: whitespace is kept for what follows
        (as _after_scanned does); a marker runs the machine; other text takes the full path."""
        held = self._scanner.held
        released = self._released(text, self._after_scanned, None if held else self._fast_loud(text))
        if isinstance(released, list):
            return released
        if released.strip():
            self._scanner.held = held
            return None
        self._after_space += released
        return []

    def _fast_content(self, text: str) -> list[Delta] | None:
        """Armed in content: a chunk in which no marker completes is content (as _run would find)."""
        found = None if self._scanner.held else self._fast_loud(text)
        if found is not None or self._scanner.held:
            released = self._released(text, self._content_scanned, found)
            if isinstance(released, list):
                return released
            if not released:
                return []
            text = released
        if self._at_start and text.strip():
            self._at_start = False
        return self._out.text_now(CONTENT, text)

    def _fast_reasoning(self, text: str) -> list[Delta] | None:
        """Armed in reasoning: a chunk in which no marker completes is reasoning (as _reasoning_scanned would find)."""
        found = None if self._scanner.held else self._fast_loud(text)
        if found is not None or self._scanner.held:
            released = self._released(text, self._reasoning_scanned, found)
            if isinstance(released, list):
                return released
            if not released:
                return []
            text = released
        if self._reasoning_fresh and text.strip():
            self._reasoning_fresh = False
        if self._held is None:
            return self._out.text_now(REASONING, text)
        self._reasoning_text(text)
        return []

    def close(self, *, finish_reason: str | None = None) -> list[Delta]:
        """End of output: release held text, close open regions (flagging truncation).

        With ``frame=True`` the last delta returned is ``{"finish_reason": ...}``: ``finish_reason`` as given
        (``"length"`` when the caller knows the output was cut at the token limit, ``"content_filter"``), else
        ``"tool_calls"`` if the message has a call, else ``"stop"``."""
        self._fast, self._lane = None, None
        if self._closed:
            raise UsageError(f"close() on a {self._closed} stream parser")
        if finish_reason is not None:
            if not self._frame:
                raise UsageError("close(finish_reason=...) needs a framed stream: stream(frame=True)")
            if finish_reason not in FINISH_REASONS:
                raise UsageError(f"finish_reason must be one of {', '.join(FINISH_REASONS)}, not {finish_reason!r}")
        self._closed = "closed"
        try:
            self._finish()
            out = self._out.take()
            if self._frame:
                if finish_reason is None:
                    finish_reason = "tool_calls" if self._out.calls else "stop"
                out.append({"finish_reason": finish_reason})
        except BaseException:
            self._closed = "failed"
            raise
        return out

    @property
    def message(self) -> AssistantMessage:
        """The message the deltas so far add up to (arguments decoded for finished calls)."""
        return self._out.message()

    @property
    def incomplete(self) -> bool:
        """Whether the output was cut off inside a region (known for sure only after ``close``)."""
        return self._out.message_incomplete()

    # -- set-up ---------------------------------------------------------------------------------------
    def _enter_initial(self, prefix: str | None) -> None:
        harmony = self.spec.harmony
        if harmony is not None and prefix is not None and prefix.rstrip().endswith(harmony.starts_in_header_after):
            self._mode = _HEADER
            self._header = ""
            self._scanner.markers, self._scanner.held = self._c.header_markers, ""
            return
        for reasoning in self.spec.reasoning:
            if _opens_reasoning(reasoning, prefix):
                self._enter_reasoning(reasoning, held=reasoning.implicit_needs_end or reasoning.needs_end)
                return
        if prefix is None and self.spec.initial_region is not None:
            prefix = self.spec.initial_region
        if prefix is not None:
            tail = prefix.rstrip(" ")
            for region in self.spec.tools:
                if tail.endswith(region.open) and not region.keep_open:
                    self._enter_body(region, region.open, "")
                    self._at_start = True
                    return

    def _enter_reasoning(self, reasoning: Reasoning, *, held: bool = False, opening: str = "") -> None:
        self._mode = _REASONING
        self._reasoning = reasoning
        self._reasoning_fresh = True
        self._scanner.markers, self._scanner.held = self._c.reasoning_markers[id(reasoning)], ""
        self._held = [opening] if held else None
        self._held_reasoning = []

    def _reasoning_text(self, text: str, *, marker: bool = False) -> None:
        """Reasoning text — or, while the block waits for its end marker, held back (``marker``: an opening
        marker, which is content text if the block is released as content, never reasoning text)."""
        if self._held is None:
            self._out.text(REASONING, text)
            return
        self._held.append(text)
        if not marker:
            self._held_reasoning.append(text)

    def _release_held(self, *, as_reasoning: bool) -> None:
        """The held block is settled: reasoning (an end marker came) or content (it never did)."""
        held, self._held = self._held, None
        if held is None:
            return
        if as_reasoning:
            self._out.text(REASONING, "".join(self._held_reasoning))
        else:
            self._content("".join(held))
        self._held_reasoning = []

    def _enter_content(self) -> None:
        if self._resume is not None:
            reasoning, self._resume = self._resume, None
            self._enter_reasoning(reasoning)
            self._reasoning_fresh = False
            return
        self._mode = _CONTENT
        self._scanner.markers, self._scanner.held = self._c.content_markers, ""
        self._stray_close = None

    # -- the machine ------------------------------------------------------------------------------------
    def _run(self, text: str) -> None:
        while text:
            mode = self._mode
            if mode is _CONTENT:
                text = self._content_scanned(*self._scanner.scan(text, self._final))
            elif mode is _BODY:
                text = self._body_feed(text)
            elif mode is _REASONING:
                text = self._reasoning_scanned(*self._scanner.scan(text, self._final))
            elif mode is _SECTION:
                text = self._in_section(text)
            elif mode is _AFTER:
                text = self._after_scanned(*self._scanner.scan(text, self._final))
            elif mode is _HEADER:
                text = self._in_header(text)
            elif mode is _H_TEXT or mode is _H_ARGS:
                text = self._in_harmony_message(text)
            else:
                return

    def _content_scanned(self, before: str, marker: str | None, text: str) -> str:
        """Content: what the scan released is content text; a marker acts."""
        if before:
            self._content(before)
        if marker is None:
            return ""
        return self._content_marker(marker, text)

    def _reasoning_scanned(self, before: str, marker: str | None, text: str) -> str:
        """Reasoning: what the scan released is reasoning text; a marker ends, reopens or interrupts the block."""
        reasoning = self._reasoning
        assert reasoning is not None
        if before:
            self._reasoning_text(before)
            if before.strip():
                self._reasoning_fresh = False
        if marker is None:
            return ""
        if marker in reasoning.starts:
            if self._reasoning_fresh:
                if self._held is not None and not reasoning.needs_end and self._held[0] == "":
                    # implicit_needs_end only: an opening marker at the start opens an explicit block
                    self._release_held(as_reasoning=True)
                elif self._held is not None:
                    self._reasoning_text(marker, marker=True)
                return text
            self._reasoning_text(marker)
            return text
        if marker in reasoning.ends_kept:
            self._release_held(as_reasoning=True)
            self._enter_content()
            self._content(marker)
            return text
        if marker not in reasoning.ends and marker not in self.spec.ends:
            if self._held is not None:
                self._release_held(as_reasoning=False)
                self._enter_content()
            else:
                self._resume = reasoning
            return self._content_marker(marker, text)
        self._release_held(as_reasoning=marker in reasoning.ends)
        if marker in self.spec.ends:
            self._mode = _DONE
            return ""
        self._enter_content()
        return text

    def _in_section(self, text: str) -> str:
        _before, marker, text = self._scanner.scan(text, self._final)
        if marker is None:
            return ""
        section = self._section
        assert section is not None
        if marker == section.close:
            self._enter_content()
            return text
        call_region = next(c for c in section.calls if c.open == marker)
        return self._enter_body(call_region, marker, text)

    def _after_scanned(self, before: str, marker: str | None, text: str) -> str:
        """After a body that ended before its region's close marker: the close marker, or another call.

        Text there (``[f()] note<|tool_call_end|>``) is content, the whitespace before it kept whatever the
        chunking; the region's close marker, if it still comes, is framing and is dropped."""
        region = self._region
        assert region is not None
        if before.strip():
            space, self._after_space = self._after_space, ""
            held = self._scanner.flush() if marker is None else ""
            self._leave_region()
            close = region.spec.close
            if self._mode is _CONTENT and close is not None and close not in self._c.content_actions:
                self._stray_close = close
                self._scanner.markers, self._scanner.held = self._c.stray_close_markers(close), ""
            return space + before + held + ("" if marker is None else marker + text)
        if marker is None:
            self._after_space += before
            return text
        self._after_space = ""
        if marker == region.spec.close:
            self._leave_region()
            return text
        self._mode = _BODY
        region.body = self._make_body(region.spec)
        return marker + text

    def _content(self, text: str) -> None:
        if self._at_start and text.strip():
            self._at_start = False
        self._out.text(CONTENT, text)

    def _content_marker(self, marker: str, text: str) -> str:
        if marker == self._stray_close:
            self._stray_close = None
            self._scanner.markers, self._scanner.held = self._c.content_markers, ""
            return text
        kind, target = self._c.content_actions[marker]
        if kind is _Action.REASONING:
            self._enter_reasoning(target, held=target.needs_end, opening=marker)
        elif kind is _Action.TOOL:
            region: ToolRegion = target
            if region.at_start and not self._at_start:
                self._content(marker)
                return text
            return self._enter_body(region, marker, text)
        elif kind is _Action.SECTION:
            self._section = target
            self._mode = _SECTION
            self._scanner.markers, self._scanner.held = self._c.section_markers[id(target)], ""
        elif kind is _Action.END:
            self._mode = _DONE
        elif kind is _Action.HEADER_AT_START and not self._at_start:
            self._content(marker)
        elif kind is _Action.HEADER or kind is _Action.HEADER_AT_START:
            self._mode = _HEADER
            self._header = marker
            self._scanner.markers, self._scanner.held = self._c.header_markers, ""
        return text

    # -- tool regions --------------------------------------------------------------------------------
    def _make_body(self, region: ToolRegion) -> Body:
        body = self._c.bodies[id(region)]
        return body(region.body, self._out, self._types, self._limits.max_json_depth, region.close)

    def _enter_body(self, spec: ToolRegion, marker: str, text: str) -> str:
        region = _Region(spec, self._make_body(spec), marker, len(self._out.calls))
        if self.spec.whole_calls and not self._out.holding:
            self._out.hold()
            region.raw = [marker, text]
        self._region = region
        self._mode = _BODY
        self._at_start = False
        if spec.keep_open:
            return marker + text
        return text

    def _body_feed(self, text: str) -> str:
        region = self._region
        assert region is not None
        body = region.body
        assert body is not None
        replay = region.replay
        if replay is not None:
            if len(self._out.calls) != region.calls_at_entry:
                replay = region.replay = None  # a call started: the body can no longer reject
            else:
                replay.append(text)
        rest = body.feed(text)
        if rest is None:
            return ""
        return self._body_ended(region, rest, replay)

    def _body_ended(self, region: _Region, rest: Fed, replay: list[str] | None) -> str:
        """The region's body ended (``rest``: what its ``feed`` returned): leave the region, or give its text back
        as content if the body rejected it; returns the text after the body."""
        assert rest is not None
        region.body = None
        if rest is REJECT:
            # Not a tool call after all: the region's text is content (the marker is not re-scanned).
            self._return_to_container()
            self._content(region.opened)
            raw = "".join(replay or [])
            return raw[len(region.opened) :] if region.spec.keep_open else raw
        close = region.spec.close
        if close is None:
            self._leave_region()
            return rest
        markers = self._c.close_markers[id(region.spec)]
        if rest.startswith(close) and not markers.prefixes_of_longer:
            # The close marker right after the body (what the scan after it would find first): the region ends here.
            self._after_space = ""
            self._leave_region()
            return rest[len(close) :]
        self._mode = _AFTER
        self._scanner.markers, self._scanner.held = markers, ""
        if not rest.strip() and markers.loud(rest) is None:
            self._after_space += rest  # only whitespace, no marker's beginning: what _after_scanned keeps of it
            return ""
        return rest

    def _leave_region(self) -> None:
        self._out.release()
        region = self._region
        self._region = None
        section = self._section
        if region is not None and section is not None and region.spec in section.calls:
            self._mode = _SECTION
            self._scanner.markers, self._scanner.held = self._c.section_markers[id(section)], ""
        else:
            self._section = None
            self._enter_content()

    def _return_to_container(self) -> None:
        self._out.release()
        self._region = None
        self._section = None
        self._enter_content()

    # -- harmony -------------------------------------------------------------------------------------
    def _in_header(self, text: str) -> str:
        before, marker, text = self._scanner.scan(text, self._final)
        self._header += before
        if len(self._header) > _MAX_HEADER:
            self._out.incomplete = True
            self._mode = _DONE
            return ""
        if marker is None:
            return ""
        self._route_header(marker)
        return text

    def _in_harmony_message(self, text: str) -> str:
        before, marker, text = self._scanner.scan(text, self._final)
        if before:
            self._harmony_text(before)
        if marker is None:
            return ""
        self._end_harmony_message()
        if marker in self._c.content_actions:
            return self._content_marker(marker, text)
        return text

    def _harmony_text(self, text: str) -> None:
        if self._mode is _H_ARGS:
            gauge = self._gauge
            if gauge is None:  # the arguments object ended: whitespace after it is dropped, text is content
                text = text.lstrip()
                if text:
                    self._mode = _H_TEXT
                    self._field = CONTENT
                    self._out.text(CONTENT, text)
                return
            end = gauge.feed_to_end(text)
            if end < 0:
                self._out.args(text)
                return
            self._out.args(text[:end])
            self._out.end_call()
            self._gauge = None
            self._harmony_text(text[end:])
        elif self._field:
            self._out.text(self._field, text)

    def _route_header(self, marker: str) -> None:
        harmony = self.spec.harmony
        assert harmony is not None
        patterns = self._c.header_patterns
        header = self._header
        self._header = ""
        if marker != harmony.message:
            # A header ended without its message marker (non-strict harmony): the text after the channel is
            # the body.
            loose = patterns.loose_body.search(header) if patterns.loose_body is not None else None
            if loose is not None and loose.group(2).strip():
                field = REASONING if loose.group(1) in harmony.reasoning_channels else CONTENT
                self._out.text(field, loose.group(2))
            self._enter_content()
            return
        recipients = [r for r in patterns.recipient.findall(header) if r not in harmony.self_recipients]
        recipient = recipients[-1] if recipients else None
        channels = patterns.channel.findall(header) if patterns.channel is not None else []
        channel = channels[-1] if channels else None
        self._scanner.markers, self._scanner.held = self._c.h_text_markers, ""
        prefix = harmony.recipient_prefix
        if recipient is not None and recipient.startswith(prefix) and len(recipient) > len(prefix):
            self._out.start_call(recipient[len(prefix) :])
            self._gauge = JsonDepthGauge(max_depth=self._limits.max_json_depth)
            self._mode = _H_ARGS
            return
        self._mode = _H_TEXT
        if recipient is not None:
            self._field = ""
        elif channel is not None and channel in harmony.reasoning_channels:
            self._field = REASONING
        else:
            self._field = CONTENT

    def _end_harmony_message(self) -> None:
        if self._mode is _H_ARGS:
            self._out.end_call()
        self._enter_content()

    # -- end -------------------------------------------------------------------------------------------
    def _finish(self) -> None:
        out = self._out
        if self._mode is not _BODY:
            # Re-scan the held tail with nothing held back: a short marker there is a marker after all.
            self._final = True
            self._run(self._scanner.flush())
        mode = self._mode
        held = self._scanner.flush()
        if mode is _CONTENT:
            if held:
                self._content(held)
        elif mode is _REASONING:
            if held:
                self._reasoning_text(held)
            self._release_held(as_reasoning=False)
        elif mode is _BODY:
            region = self._region
            assert region is not None and region.body is not None
            region.body.close()
        elif mode is _H_TEXT or mode is _H_ARGS:
            if held:
                self._harmony_text(held)
            if mode is _H_ARGS:
                out.end_call(cut=True)
        elif mode is _HEADER and (self._header + held).strip():
            out.incomplete = True
        if out.holding:
            # whole_calls: the output ended inside a tool region — its held deltas are dropped unsent and
            # the region's text is content, as written.
            region = self._region
            assert region is not None
            out.drop()
            self._mode = _CONTENT
            self._content("".join(region.raw))
        out.cut_open_calls()


def _opens_reasoning(reasoning: Reasoning, prefix: str | None) -> bool:
    if prefix is None:
        return reasoning.open_by_default
    last_start = max((prefix.rfind(m) for m in reasoning.starts), default=-1)
    if last_start < 0:
        return False
    last_end = max((prefix.rfind(m) for m in reasoning.ends), default=-1)
    return last_start > last_end
