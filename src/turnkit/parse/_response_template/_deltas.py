"""The deltas of a response-template stream: which fields may be given before the output ends, and when.

transformers' semantics decide when a value is final. A later region of a field replaces its value
(``Hi<tool_call>...</tool_call>Bye`` has ``content`` ``"Bye"``), an empty value is dropped at the end, a
``json``/``int`` value exists only once its region closes and tool arguments are typed then. So a field is
given early only where the template's structure proves its value can only grow (:func:`field_modes`):

- ``items``: a repeating field without ``join`` appends one value per region, given as a one-item list when
  its region closes (tool calls, as soon as each is complete);
- ``text``: ``text`` content without a ``transform``, not in ``defaults``, that is appended to (``repeats``
  with ``join``: each region's text after the join) or has one region only (an explicit field without a
  close marker: once open, nothing but the end of the output ends it; the implicit field without a close
  marker when no explicit field has one either): given as it arrives, with the whitespace ``strip`` would
  remove held back until text after it shows it is inside;
- ``final``: every other field, given once, in the last delta, with its final value.

Deltas join as a client would add them up: a key's first delta sets it, a later string is appended to it and
a later list extends it (a ``final`` key comes once). The first delta holds ``defaults`` that are not fields.

A template whose marker patterns could match differently once more text follows (``$``, ``\\b``, lookahead:
``ResponseTemplate.reads_ahead``) is not fed chunk by chunk: there,
transformers' own ``ResponseParser`` ends with a dict that depends on the chunking (SmolLM3's
``(?:<|im_end|>|$)`` closes ``content`` before a newline that is the last character fed), so the stream keeps
the text and parses it whole at close.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from turnkit.parse._response_template._template import ResponseTemplate, ResponseTemplateField

__all__ = ["DeltaWriter", "field_modes"]

Mode = Literal["text", "items", "final"]


def _single_region(field: ResponseTemplateField, template: ResponseTemplate) -> bool:
    if field.close_re is not None:
        return False
    if field.open_re is not None:
        return True
    return all(f.close_re is None for f in template.fields.values() if f.open_re is not None)


def field_modes(template: ResponseTemplate) -> dict[str, Mode]:
    """When each field's value may be given (see the module)."""
    modes: dict[str, Mode] = {}
    for name, f in template.fields.items():
        if name in template.defaults:
            modes[name] = "final"
        elif f.repeats and f.join is None:
            modes[name] = "items"
        elif f.content == "text" and f.transform is None and (f.join is not None or _single_region(f, template)):
            modes[name] = "text"
        else:
            modes[name] = "final"
    return modes


class DeltaWriter:
    """Turns the parser's events (``region_open``/``region_chunk``/``region_close``) into deltas."""

    __slots__ = ("_modes", "_fields", "_opening", "_joined", "_lead", "_held", "_started")

    def __init__(self, template: ResponseTemplate) -> None:
        self._modes = field_modes(template)
        self._fields = template.fields
        self._opening = {k: copy.deepcopy(v) for k, v in template.defaults.items() if k not in template.fields}
        self._joined: set[str] = set()  # join fields with a closed region: the next one starts with the join
        self._lead = True  # the open text region has shown no text yet (its leading whitespace is dropped)
        self._held: list[str] = []  # its trailing whitespace, given when more text follows
        self._started = False

    def feed(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not events and self._started:
            return []
        out: list[dict[str, Any]] = []
        if not self._started:
            self._started = True
            if self._opening:
                out.append(copy.deepcopy(self._opening))
        for event in events:
            name = event["field"]
            mode = self._modes[name]
            if mode == "final":
                continue
            kind = event["type"]
            if mode == "items":
                if kind == "region_close":
                    _add(out, name, [copy.deepcopy(event["value"])])
            elif kind == "region_open":
                self._lead, self._held = True, []
                join = self._fields[name].join
                if join and name in self._joined:
                    _add(out, name, join)
            elif kind == "region_chunk":
                self._text(out, name, event["text"])
            else:
                self._joined.add(name)
        return out

    def _text(self, out: list[dict[str, Any]], name: str, text: str) -> None:
        if not self._fields[name].content_args.get("strip", True):
            _add(out, name, text)
            return
        if self._lead:
            text = text.lstrip()
            if not text:
                return
            self._lead = False
        core = text.rstrip()
        if core:
            _add(out, name, "".join(self._held) + core)
            self._held = [text[len(core) :]]
        else:
            self._held.append(text)

    def close(self, events: list[dict[str, Any]], message: dict[str, Any]) -> list[dict[str, Any]]:
        """The last deltas: the close's events, then every ``final`` value of ``message`` in one delta."""
        out = self.feed(events)
        last = {
            k: copy.deepcopy(v)
            for k, v in message.items()
            if k not in self._opening and self._modes.get(k, "final") == "final"
        }
        if last:
            out.append(last)
        return out


def _add(out: list[dict[str, Any]], name: str, value: str | list[Any]) -> None:
    """Append a delta, merged into the previous one when that holds only more of the same key."""
    if out and len(out[-1]) == 1 and name in out[-1] and type(out[-1][name]) is type(value):
        out[-1][name] = out[-1][name] + value
    else:
        out.append({name: value})
