"""``MultiTaggedContentParser``: each field between its own tags, collected into one dict.

Easier for weak models than one JSON object: code and prose need no escaping. Fields marked
``parse_json`` are decoded as JSON (strictly: ``true`` becomes ``True``; a missing or garbled
value is an error the model is told about).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from turnkit._args import check_fields, expect, expect_items, fail_value
from turnkit._held import held_tail
from turnkit._json import pointer_join
from turnkit.errors import OutputParseError, UsageError
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.outputs._base import DictFilterMixin, KeySelection, ParserBase
from turnkit.outputs._feedback import reply_error
from turnkit.outputs._fences import ends_in_string, find_fence, find_outside_strings
from turnkit.outputs._json_repair import load_json_reply
from turnkit.outputs._response import ModelResponse, Repair, as_response
from turnkit.outputs._schema import ReplySchema, SchemaSpec, expect_schema_spec
from turnkit.outputs._size import check_size
from turnkit.outputs._streaming import JsonPreview, ReplyStream, TextSoFar

if TYPE_CHECKING:
    from turnkit.structured import Op

__all__ = ["MultiTaggedContentParser", "TaggedContent", "TaggedReplyStream", "find_tag"]

_INSTRUCTION = "Respond with specific tags as outlined below{json_required_hint}\n{tag_lines_format}"
_JSON_REQUIRED_HINT = ', and the content between {} MUST be valid JSON (e.g. true, 3, "text", [...] or {{...}}):'
_SCHEMA_SUFFIX = (
    "\nThe contents of the tags, read as a JSON dictionary keyed by {names}, MUST follow this schema: \n{schema}"
)


_MTCP = "MultiTaggedContentParser"


@dataclass(slots=True)
class TaggedContent:
    """One field: its key ``name``, the tags around it, a hint for the model, and whether it is JSON."""

    name: str
    tag_begin: str
    content_hint: str
    tag_end: str
    parse_json: bool = False

    def __post_init__(self) -> None:
        check_fields(self)
        if not self.tag_begin or not self.tag_end:
            raise UsageError(f"TaggedContent {self.name!r} needs non-empty tag_begin and tag_end")

    def __str__(self) -> str:
        return f"{self.tag_begin}{self.content_hint}{self.tag_end}"


def find_tag(text: str, tag: str, start: int = 0) -> tuple[int, bool]:
    """``(index, exact)`` of ``tag`` in ``text`` from ``start``: exact first, then ignoring case; -1 if absent."""
    index = text.find(tag, start)
    if index >= 0:
        return index, True
    match = re.compile(re.escape(tag), re.IGNORECASE).search(text, start)
    return (match.start(), False) if match else (-1, True)


class MultiTaggedContentParser(ParserBase, DictFilterMixin):
    """Asks for several tagged fields; ``parsed`` is ``{name: content}`` in the order the fields were given."""

    def __init__(
        self,
        *tagged_contents: TaggedContent,
        keys_to_memory: KeySelection = True,
        keys_to_content: KeySelection = True,
        keys_to_metadata: KeySelection = False,
        keys_allow_missing: Sequence[str] | None = None,
        schema: SchemaSpec | None = None,
        limits: Limits | None = None,
    ) -> None:
        expect_items(tagged_contents, TaggedContent, name="tagged_contents", func="MultiTaggedContentParser")
        if not tagged_contents:
            raise fail_value("needs one or more TaggedContent objects", name="tagged_contents", func=_MTCP)
        expect_items(keys_allow_missing, str, name="keys_allow_missing", func=_MTCP, none=True)
        expect_schema_spec(schema, func=_MTCP)
        expect(limits, Limits, name="limits", func=_MTCP, none=True)
        names = [t.name for t in tagged_contents]
        if len(set(names)) != len(names):
            raise UsageError(f"TaggedContent names must be unique, got {names}")
        DictFilterMixin.__init__(
            self, keys_to_memory=keys_to_memory, keys_to_content=keys_to_content, keys_to_metadata=keys_to_metadata
        )
        self.tagged_contents = list(tagged_contents)
        self.keys_allow_missing = list(keys_allow_missing) if keys_allow_missing is not None else None
        self.limits = limits = limits or DEFAULT_LIMITS
        self.schema = ReplySchema(schema, limits=limits) if schema is not None else None
        if self.schema is not None:
            for tagged in self.tagged_contents:
                types = self.schema.property_types(tagged.name)
                if not tagged.parse_json and types is not None and "string" not in types:
                    raise UsageError(
                        f"the schema expects {' or '.join(sorted(types))} for {tagged.name!r}, but its tag content "
                        "is read as a string; set parse_json=True on that TaggedContent",
                        code="schema",
                    )
        json_tags = ", ".join(f"{t.tag_begin} and {t.tag_end}" for t in self.tagged_contents if t.parse_json)
        self.format_instruction = _INSTRUCTION.format(
            json_required_hint=_JSON_REQUIRED_HINT.format(json_tags) if json_tags else ": ",
            tag_lines_format="\n".join(str(t) for t in self.tagged_contents),
        )
        if self.schema is not None:
            self.format_instruction += _SCHEMA_SUFFIX.format(
                names=", ".join(repr(n) for n in names), schema=self.schema.text
            )

    def parse(self, response: ModelResponse | str) -> ModelResponse:
        """Set ``parsed`` to ``{name: content}``; raise ``OutputParseError`` naming a missing tag.

        The reply is read left to right: the earliest opening tag of a field not yet read starts
        that field, and its content runs to its closing tag. A tag mentioned inside another
        field's content is therefore content, not a new field.
        """
        response = as_response(response)
        text = response.text or ""
        check_size(text, self.limits)
        repairs: list[Repair] = []
        found = self._scan(text, repairs)
        result: dict[str, Any] = {}
        for tagged in self.tagged_contents:
            if tagged.name not in found:
                if self.keys_allow_missing is not None and tagged.name in self.keys_allow_missing:
                    continue
                raise reply_error(
                    "missing_tag",
                    f"the tag {tagged.tag_begin} (for {tagged.name!r}) is missing",
                    text,
                    position=len(text),
                    pointer=pointer_join("", tagged.name),
                    hint=f"Include this line: {tagged}",
                )
            content, offset = found[tagged.name]
            if tagged.parse_json:
                result[tagged.name] = self._decode(text, tagged, content, offset, repairs)
            else:
                result[tagged.name] = content
        validated = None
        if self.schema is not None:
            result, validated = self.schema.validate(result, text)
        response.parsed = result
        response.validated = validated
        response.repairs_applied = list(dict.fromkeys(repairs))
        return response

    def stream(self) -> TaggedReplyStream:
        """A push parser previewing ``{name: content so far}``; ``close()`` gives ``parse``'s result."""
        return TaggedReplyStream(self, self.tagged_contents)

    def _scan(self, text: str, repairs: list[Repair]) -> dict[str, tuple[str, int]]:
        """``{name: (content, offset)}`` for every field found, reading the reply left to right.

        Opening tags are matched exactly; fields still missing after that are looked for again
        ignoring case (``tag_case``).
        """
        scan_repairs: list[Repair] = []
        found = self._scan_once(text, scan_repairs, set())
        missing = {t.name for t in self.tagged_contents} - found.keys()
        if missing:
            retry_repairs: list[Repair] = [Repair.TAG_CASE]
            retry = self._scan_once(text, retry_repairs, missing)
            if len(retry) > len(found):
                found, scan_repairs = retry, retry_repairs
        repairs.extend(scan_repairs)
        return found

    def _scan_once(self, text: str, repairs: list[Repair], fold: set[str]) -> dict[str, tuple[str, int]]:
        found: dict[str, tuple[str, int]] = {}
        next_at: dict[str, int] = {}  # cached position of each unread field's opening tag
        cursor = 0
        while len(found) < len(self.tagged_contents):
            best: tuple[int, TaggedContent] | None = None
            for tagged in self.tagged_contents:
                if tagged.name in found:
                    continue
                index = next_at.get(tagged.name, -1)
                if index < cursor:
                    if tagged.name in fold:
                        index = find_tag(text, tagged.tag_begin, cursor)[0]
                    else:
                        index = text.find(tagged.tag_begin, cursor)
                    next_at[tagged.name] = index = index if index >= 0 else len(text) + 1
                if index <= len(text) and (best is None or index < best[0]):
                    best = (index, tagged)
            if best is None:
                break
            begin, tagged = best
            start = begin + len(tagged.tag_begin)
            end, exact = -1, True
            if tagged.parse_json:  # a closing tag inside a JSON string is content ({"x": "[/A]"})
                end = find_outside_strings(text, tagged.tag_end, start)
            if end < 0:
                end, exact = find_tag(text, tagged.tag_end, start)
            if end >= 0:
                if not exact:
                    repairs.append(Repair.TAG_CASE)
                found[tagged.name] = (text[start:end], start)
                cursor = end + len(tagged.tag_end)
                continue
            # Never closed: the content runs to the next unread field's opening tag, or to the end.
            end = len(text)
            for other in self.tagged_contents:
                if other is not tagged and other.name not in found:
                    index = text.find(other.tag_begin, start)
                    if 0 <= index < end:
                        end = index
            repairs.append(Repair.UNCLOSED_TAG)
            content = text[start:end]
            found[tagged.name] = ((content.rstrip() if end == len(text) else content), start)
            cursor = end
        return found

    def _decode(self, text: str, tagged: TaggedContent, content: str, offset: int, repairs: list[Repair]) -> Any:
        region, region_offset = content, offset
        if "```" in content:
            fence = find_fence(content, "json")
            if fence is not None:
                region, region_offset = content[fence.start : fence.end], offset + fence.start
        hint = f"The content between {tagged.tag_begin} and {tagged.tag_end} MUST be JSON (field {tagged.name!r})."
        try:
            value, json_repairs = load_json_reply(
                region, reply=text, offset=region_offset, limits=self.limits, hint=hint
            )
        except OutputParseError as exc:
            if exc.pointer is not None or not exc.retryable:
                raise
            raise reply_error(
                exc.code,
                f"field {tagged.name!r} ({tagged.tag_begin}...{tagged.tag_end}): {exc.message}",
                text,
                position=exc.position,
                pointer=pointer_join("", tagged.name),
                hint=hint,
            ) from None
        repairs.extend(json_repairs)
        return value


def _prefixed(ops: list[Op], prefix: str) -> list[Op]:
    return [{**op, "path": prefix + op["path"]} for op in ops]


class TaggedReplyStream(ReplyStream):
    """Preview of a tagged reply: ``{name: content so far}``, JSON fields as partial JSON values."""

    def __init__(self, parser: ParserBase, tagged_contents: list[TaggedContent]) -> None:
        expect_items(tagged_contents, TaggedContent, name="tagged_contents", func="TaggedReplyStream")
        super().__init__(parser)
        self._fields = tagged_contents
        self._seen: set[str] = set()
        self._open: TaggedContent | None = None
        self._buf = ""
        self._value: dict[str, Any] = {}
        self._parts: dict[str, TextSoFar] = {}
        self._dirty: set[str] = set()
        self._json: dict[str, JsonPreview] = {}
        self._stopped = False
        self._announced = False
        self._quoted = False  # inside a JSON string of the open parse_json field (as far as it was emitted)
        self._longest_begin = max(len(t.tag_begin) for t in tagged_contents)

    @property
    def value(self) -> dict[str, Any]:
        for name in self._dirty:
            self._value[name] = self._parts[name].value
        self._dirty.clear()
        for name, preview in self._json.items():
            if preview.stream.started:
                self._value[name] = preview.stream.value
        return self._value

    def _stop_preview(self) -> None:
        self._stopped = True

    def _preview(self, chunk: str) -> list[Op]:
        if self._stopped:
            return []
        self._buf += chunk
        ops: list[Op] = []
        if not self._announced:
            self._announced = True
            ops.append({"op": "add", "path": "", "value": {}})
        while True:
            if self._open is None:
                if not self._find_open():
                    break
            elif not self._read_open(ops):
                break
        return ops

    def _find_open(self) -> bool:
        best: tuple[int, TaggedContent] | None = None
        for tagged in self._fields:
            if tagged.name in self._seen:
                continue
            index = self._buf.find(tagged.tag_begin)
            if index >= 0 and (best is None or index < best[0]):
                best = (index, tagged)
        if best is None:
            self._buf = self._buf[-(self._longest_begin - 1) :] if self._longest_begin > 1 else ""
            return False
        index, tagged = best
        self._buf = self._buf[index + len(tagged.tag_begin) :]
        self._seen.add(tagged.name)
        self._open = tagged
        if tagged.parse_json:
            self._json[tagged.name] = JsonPreview(skip_prefix=False)
        return True

    def _read_open(self, ops: list[Op]) -> bool:
        tagged = self._open
        assert tagged is not None
        if tagged.parse_json:  # a closing tag inside a JSON string is content, as in parse()
            end = find_outside_strings(self._buf, tagged.tag_end, quoted=self._quoted)
        else:
            end = self._buf.find(tagged.tag_end)
        if end >= 0:
            self._emit(tagged, self._buf[:end], ops)
            self._buf = self._buf[end + len(tagged.tag_end) :]
            self._open = None
            self._quoted = False
            return True
        safe = len(self._buf) - held_tail(self._buf, tagged.tag_end)
        if tagged.parse_json and safe > 0:
            head = self._buf[:safe]
            if (len(head) - len(head.rstrip("\\"))) % 2:  # an escape continues in the next piece
                safe -= 1
            self._quoted = ends_in_string(self._buf[:safe], self._quoted)
        if safe > 0:
            self._emit(tagged, self._buf[:safe], ops)
            self._buf = self._buf[safe:]
        return False

    def _emit(self, tagged: TaggedContent, text: str, ops: list[Op]) -> None:
        name = tagged.name
        path = pointer_join("", name)
        preview = self._json.get(name)
        if preview is not None:
            ops.extend(_prefixed(preview.feed(text), path))
            return
        if name not in self._parts:
            self._parts[name] = TextSoFar(text)
            self._value[name] = text
            ops.append({"op": "add", "path": path, "value": text})
        elif text:
            self._parts[name].append(text)
            self._dirty.add(name)
            ops.append({"op": "append", "path": path, "value": text})
