"""The streaming extraction engine: one push parser for every format declaration.

:class:`StreamParser` is built from a :class:`~turnkit.parse._spec.FormatSpec`. It moves between
regions (content, reasoning, tool-call sections and bodies, harmony headers) when it meets a marker,
holding back only a tail that could still become a marker, and hands tool-call bodies to the decoder
of their argument encoding. ``feed`` returns the OpenAI-style deltas that the new text settled;
``close`` ends the output. A complete parse is a new parser, one ``feed``, ``close``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from turnkit.errors import LimitExceededError, UsageError
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.messages import AssistantMessage
from turnkit.parse._bodies import REJECT, Body, ToolTypes, make_body
from turnkit.parse._emit import Delta, Emitter
from turnkit.parse._json_scan import JsonDepthGauge
from turnkit.parse._markers import MarkerScanner, MarkerSet
from turnkit.parse._spec import FormatSpec, Reasoning, Section, ToolRegion

__all__ = ["StreamParser", "tool_types"]

_CONTENT, _REASONING, _SECTION, _BODY, _AFTER, _HEADER, _H_TEXT, _H_ARGS, _DONE = range(9)
_MAX_HEADER = 4096
_RECIPIENT = re.compile(r"to=(\S+?)(?=\s|<\||$)")
_CHANNEL = re.compile(r"<\|channel\|>\s*(\w+)")
_LOOSE_BODY = re.compile(r"<\|channel\|>\s*(\w+)\s+(.*)$", re.DOTALL)


class _Compiled:
    """Marker tables of one declaration, computed once per format."""

    def __init__(self, spec: FormatSpec) -> None:
        self.spec = spec
        actions: dict[str, tuple[str, Any]] = {}
        for reasoning in spec.reasoning:
            for marker in reasoning.starts:
                actions.setdefault(marker, ("reasoning", reasoning))
        for region in spec.tools:
            actions.setdefault(region.open, ("tool", region))
        for section in spec.sections:
            actions.setdefault(section.open, ("section", section))
        for marker in spec.discard:
            actions.setdefault(marker, ("discard", None))
        for marker in spec.ends:
            actions.setdefault(marker, ("end", None))
        harmony = spec.harmony
        if harmony is not None:
            for marker in harmony.header_opens:
                actions.setdefault(marker, ("header", marker))
            for marker in harmony.ends:
                actions.setdefault(marker, ("discard", None))
            for marker in harmony.header_starts:
                actions.setdefault(marker, ("header_at_start", marker))
        self.content_actions = actions
        self.content_markers = MarkerSet(actions)
        in_reasoning = [m for m, (kind, _t) in actions.items() if kind in ("tool", "section")]
        if not spec.calls_in_reasoning:
            in_reasoning = []
        self.reasoning_markers = {
            id(r): MarkerSet(r.ends + r.starts + r.ends_kept + spec.ends + tuple(in_reasoning)) for r in spec.reasoning
        }
        self.section_markers = {
            id(s): MarkerSet([c.open for c in s.calls] + ([s.close] if s.close else [])) for s in spec.sections
        }
        self.close_markers: dict[int, MarkerSet] = {}
        for region in list(spec.tools) + [c for s in spec.sections for c in s.calls]:
            reopen = getattr(region.body, "function_open", None)
            markers = [m for m in (region.close, reopen) if m]
            self.close_markers[id(region)] = MarkerSet(markers)
        if harmony is not None:
            self.header_markers = MarkerSet([harmony.message, *harmony.ends])
            self.h_text_markers = MarkerSet([*harmony.ends, *harmony.header_opens])


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


class StreamParser:
    """Push parser for one model output: ``feed(text) -> deltas``, ``close() -> deltas``."""

    def __init__(
        self,
        spec: FormatSpec,
        *,
        prefix: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.spec = spec
        self._c = _compiled(spec)
        self._limits = limits
        self._types = tool_types(tools)
        self._out = Emitter(strip=spec.strip, id_pattern=spec.ids)
        self._closed = False
        self._size = 0
        self._mode = _CONTENT
        self._scanner = MarkerScanner(self._c.content_markers)
        self._reasoning: Reasoning | None = None
        self._reasoning_fresh = False
        self._held: list[str] | None = None  # raw text of a block that is reasoning only if an end follows
        self._held_reasoning: list[str] = []  # the same text as reasoning (opening markers left out)
        self._region_raw: list[str] = []  # whole_calls: the held region's text as written
        self._section: Section | None = None
        self._region: ToolRegion | None = None
        self._body: Body | None = None
        self._header = ""
        self._field = "content"
        self._at_start = True
        self._final = False
        self._resume: Reasoning | None = None
        self._enter_initial(prefix)
        self._prefix_pending = spec.content_prefix if spec.content_prefix_with_output else ""
        if spec.content_prefix and not spec.content_prefix_with_output:  # returned by the first feed (or close)
            self._content(spec.content_prefix)

    # -- public -------------------------------------------------------------------------------------
    def feed(self, text: str) -> list[Delta]:
        """Parse the next piece of output; returns the deltas it settled (possibly none)."""
        if self._closed:
            raise UsageError("feed() after close(): this stream parser is finished")
        self._size += len(text)
        if self._size > self._limits.max_input_chars:
            raise LimitExceededError(
                f"model output longer than max_input_chars={self._limits.max_input_chars}",
                position=self._limits.max_input_chars,
            )
        if self._prefix_pending and text:
            self._content(self._prefix_pending)
            self._prefix_pending = ""
        if self._out.holding:
            self._region_raw.append(text)
        elif self._mode == _BODY and text:
            body = self._body
            if body is not None:
                fast = body.fast(text)
                if fast is not None:
                    return fast
        self._run(text)
        return self._out.take()

    def close(self) -> list[Delta]:
        """End of output: release held text, close open regions (flagging truncation)."""
        if self._closed:
            return []
        self._closed = True
        self._finish()
        return self._out.take()

    @property
    def message(self) -> AssistantMessage:
        """The message the deltas so far add up to (arguments decoded for finished calls)."""
        return self._out.message()

    @property
    def incomplete(self) -> bool:
        """Whether the output was cut off inside a region (known for sure only after ``close``)."""
        return bool(self.message.get("incomplete"))

    # -- set-up ---------------------------------------------------------------------------------------
    def _enter_initial(self, prefix: str | None) -> None:
        harmony = self.spec.harmony
        if harmony is not None and prefix is not None and prefix.rstrip().endswith(harmony.starts_in_header_after):
            self._mode = _HEADER
            self._header = ""
            self._scanner = MarkerScanner(self._c.header_markers)
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
        self._scanner = MarkerScanner(self._c.reasoning_markers[id(reasoning)])
        self._held = [opening] if held else None
        self._held_reasoning = []

    def _reasoning_text(self, text: str, *, marker: bool = False) -> None:
        """Reasoning text — or, while the block waits for its end marker, held back (``marker``: an opening
        marker, which is content text if the block is released as content, never reasoning text)."""
        if self._held is None:
            self._out.text("reasoning_content", text)
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
            self._out.text("reasoning_content", "".join(self._held_reasoning))
        else:
            self._out.boundary("reasoning_content")
            self._content("".join(held))
        self._held_reasoning = []

    def _enter_content(self) -> None:
        if self._resume is not None:
            reasoning, self._resume = self._resume, None
            self._enter_reasoning(reasoning)
            self._reasoning_fresh = False
            return
        self._mode = _CONTENT
        self._scanner = MarkerScanner(self._c.content_markers)

    # -- the machine ------------------------------------------------------------------------------------
    def _run(self, text: str) -> None:
        out = self._out
        while text:
            mode = self._mode
            if mode == _CONTENT:
                before, marker, text = self._scanner.scan(text, self._final)
                if before:
                    self._content(before)
                if marker is None:
                    return
                text = self._content_marker(marker, text)
            elif mode == _REASONING:
                before, marker, text = self._scanner.scan(text, self._final)
                reasoning = self._reasoning
                assert reasoning is not None
                if before:
                    self._reasoning_text(before)
                    if before.strip():
                        self._reasoning_fresh = False
                if marker is None:
                    return
                if marker in reasoning.starts:
                    if self._reasoning_fresh:
                        if self._held is not None and not reasoning.needs_end and self._held[0] == "":
                            # implicit_needs_end only: an opening marker at the start opens an explicit block
                            self._release_held(as_reasoning=True)
                        elif self._held is not None:
                            self._reasoning_text(marker, marker=True)
                        continue
                    self._reasoning_text(marker)
                    continue
                if marker in reasoning.ends_kept:
                    self._release_held(as_reasoning=True)
                    out.boundary("reasoning_content")
                    self._enter_content()
                    self._content(marker)
                    continue
                if marker not in reasoning.ends and marker not in self.spec.ends:
                    if self._held is not None:
                        self._release_held(as_reasoning=False)
                        self._enter_content()
                    else:
                        self._resume = reasoning
                    text = self._content_marker(marker, text)
                    continue
                self._release_held(as_reasoning=marker in reasoning.ends)
                out.boundary("reasoning_content")
                if marker in self.spec.ends:
                    self._mode = _DONE
                    return
                self._enter_content()
            elif mode == _SECTION:
                _before, marker, text = self._scanner.scan(text, self._final)
                if marker is None:
                    return
                section = self._section
                assert section is not None
                if marker == section.close:
                    self._enter_content()
                    continue
                call_region = next(c for c in section.calls if c.open == marker)
                text = self._enter_body(call_region, marker, text)
            elif mode == _BODY:
                text = self._body_feed(text)
            elif mode == _AFTER:
                before, marker, text = self._scanner.scan(text, self._final)
                region = self._region
                assert region is not None
                if marker is None:
                    if before.strip():
                        held = self._scanner.flush()
                        self._leave_region()
                        text = before + held
                    continue
                if before.strip():
                    self._leave_region()
                    text = before + marker + text
                    continue
                if marker == region.close:
                    self._leave_region()
                else:
                    self._mode = _BODY
                    self._body = make_body(region.body, out, self._types, self._limits.max_json_depth, region.close)
                    text = marker + text
            elif mode == _HEADER:
                before, marker, text = self._scanner.scan(text, self._final)
                self._header += before
                if len(self._header) > _MAX_HEADER:
                    out.incomplete = True
                    self._mode = _DONE
                    return
                if marker is None:
                    return
                self._route_header(marker)
            elif mode == _H_TEXT or mode == _H_ARGS:
                before, marker, text = self._scanner.scan(text, self._final)
                if before:
                    if mode == _H_ARGS:
                        self._gauge.feed(before)
                        out.args(before)
                    elif self._field:
                        out.text(self._field, before)
                if marker is None:
                    return
                self._end_harmony_message()
                if marker in self._c.content_actions:
                    text = self._content_marker(marker, text)
            else:
                return

    def _content(self, text: str) -> None:
        if self._at_start and text.strip():
            self._at_start = False
        self._out.text("content", text)

    def _content_marker(self, marker: str, text: str) -> str:
        kind, target = self._c.content_actions[marker]
        if kind == "reasoning":
            self._out.boundary("content")
            self._enter_reasoning(target, held=target.needs_end, opening=marker)
        elif kind == "tool":
            region: ToolRegion = target
            if region.at_start and not self._at_start:
                self._content(marker)
                return text
            self._out.boundary("content")
            return self._enter_body(region, marker, text)
        elif kind == "section":
            self._out.boundary("content")
            self._section = target
            self._mode = _SECTION
            self._scanner = MarkerScanner(self._c.section_markers[id(target)])
        elif kind == "end":
            self._mode = _DONE
        elif kind == "header_at_start" and not self._at_start:
            self._content(marker)
        elif kind in ("header", "header_at_start"):
            self._out.boundary("content")
            self._mode = _HEADER
            self._header = marker
            self._scanner = MarkerScanner(self._c.header_markers)
        return text

    def _enter_body(self, region: ToolRegion, marker: str, text: str) -> str:
        if self.spec.whole_calls and not self._out.holding:
            self._out.hold()
            self._region_raw = [marker, text]
        self._region = region
        self._mode = _BODY
        self._at_start = False
        self._body = make_body(region.body, self._out, self._types, self._limits.max_json_depth, region.close)
        self._body_opened = marker
        self._body_calls = len(self._out.calls)
        self._body_fed: list[str] | None = []
        if region.keep_open:
            return marker + text
        return text

    def _body_feed(self, text: str) -> str:
        body = self._body
        region = self._region
        assert body is not None and region is not None
        fed = self._body_fed
        if fed is not None:
            if len(self._out.calls) != self._body_calls:
                fed = self._body_fed = None  # a call started: the body can no longer reject
            else:
                fed.append(text)
        rest = body.feed(text)
        if rest is None:
            return ""
        if rest is REJECT:
            # Not a tool call after all: the region's text is content (the marker is not re-scanned).
            self._body = None
            self._return_to_container()
            self._content(self._body_opened)
            raw = "".join(fed or [])
            return raw[len(self._body_opened) :] if region.keep_open else raw
        self._body = None
        if region.close is None:
            self._leave_region()
        else:
            self._mode = _AFTER
            self._scanner = MarkerScanner(self._c.close_markers[id(region)])
        return rest

    def _leave_region(self) -> None:
        self._out.release()
        region = self._region
        self._region = None
        if region is not None and self._section is not None and region in self._section.calls:
            self._mode = _SECTION
            self._scanner = MarkerScanner(self._c.section_markers[id(self._section)])
        else:
            self._section = None
            self._enter_content()

    def _return_to_container(self) -> None:
        self._out.release()
        self._region = None
        self._section = None
        self._enter_content()

    # -- harmony -------------------------------------------------------------------------------------
    def _route_header(self, marker: str) -> None:
        harmony = self.spec.harmony
        assert harmony is not None
        header = self._header
        self._header = ""
        if marker != harmony.message:
            # A header ended without <|message|> (non-strict harmony): the text after the channel is the body.
            loose = _LOOSE_BODY.search(header)
            if loose is not None and loose.group(2).strip():
                field = "reasoning_content" if loose.group(1) in harmony.reasoning_channels else "content"
                self._out.text(field, loose.group(2))
            self._enter_content()
            return
        recipients = [r for r in _RECIPIENT.findall(header) if r not in harmony.self_recipients]
        recipient = recipients[-1] if recipients else None
        channels = _CHANNEL.findall(header)
        channel = channels[-1] if channels else None
        self._scanner = MarkerScanner(self._c.h_text_markers)
        if recipient is not None and recipient.startswith(harmony.recipient_prefix) and len(recipient) > len(
            harmony.recipient_prefix
        ):
            name = recipient[len(harmony.recipient_prefix) :]
            self._out.start_call(name)
            self._gauge = JsonDepthGauge(max_depth=self._limits.max_json_depth)
            self._mode = _H_ARGS
            return
        self._mode = _H_TEXT
        if recipient is not None:
            self._field = ""
        elif channel is not None and channel in harmony.reasoning_channels:
            self._field = "reasoning_content"
        else:
            self._field = "content"

    def _end_harmony_message(self) -> None:
        if self._mode == _H_ARGS:
            self._out.end_call()
        elif self._field:
            self._out.boundary(self._field)
        self._enter_content()

    # -- end -------------------------------------------------------------------------------------------
    def _finish(self) -> None:
        out = self._out
        if self._mode != _BODY:
            # Re-scan the held tail with nothing held back: a short marker there is a marker after all.
            self._final = True
            self._run(self._scanner.flush())
        mode = self._mode
        held = self._scanner.flush()
        if mode == _CONTENT:
            if held:
                self._content(held)
        elif mode == _REASONING:
            if held:
                self._reasoning_text(held)
            self._release_held(as_reasoning=False)
        elif mode == _BODY:
            body = self._body
            assert body is not None
            body.close()
        elif mode == _H_TEXT:
            if held and self._field:
                out.text(self._field, held)
        elif mode == _H_ARGS:
            if held:
                self._gauge.feed(held)
                out.args(held)
            out.end_call()
        elif mode == _HEADER and (self._header + held).strip():
            out.incomplete = True
        if out.holding:
            # whole_calls: the output ended inside a tool region — its held deltas are dropped unsent and
            # the region's text is content, as written.
            out.drop()
            self._mode = _CONTENT
            self._content("".join(self._region_raw))
        out.boundary("content")
        out.boundary("reasoning_content")


def _opens_reasoning(reasoning: Reasoning, prefix: str | None) -> bool:
    if prefix is None:
        return reasoning.open_by_default
    last_start = max((prefix.rfind(m) for m in reasoning.starts), default=-1)
    if last_start < 0:
        return False
    last_end = max((prefix.rfind(m) for m in reasoning.ends), default=-1)
    return last_start > last_end
