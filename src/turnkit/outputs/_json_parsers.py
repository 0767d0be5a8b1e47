"""``MarkdownJsonObjectParser`` and ``MarkdownJsonDictParser``: JSON in a ```json fenced block."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from turnkit._args import expect, expect_items
from turnkit._json import pointer_join
from turnkit.errors import OutputParseError
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.outputs._base import DictFilterMixin, KeySelection, ParserBase
from turnkit.outputs._feedback import reply_error
from turnkit.outputs._fences import ends_in_string, find_fence, find_outside_strings
from turnkit.outputs._json_repair import load_json_reply
from turnkit.outputs._response import ModelResponse, Repair, as_response
from turnkit.outputs._schema import ReplySchema, SchemaSpec, expect_schema_spec, is_pydantic_model
from turnkit.outputs._size import check_size
from turnkit.outputs._streaming import JsonPreview, ReplyStream

if TYPE_CHECKING:
    from turnkit.structured import Op

__all__ = ["JsonReplyStream", "MarkdownJsonDictParser", "MarkdownJsonObjectParser", "extract_json"]

_OBJECT_INSTRUCTION = (
    "You should respond a json object in a json fenced code block as follows:\n```json\n{content_hint}\n```"
)
_SCHEMA_SUFFIX = "\nThe generated JSON {what} MUST follow this schema: \n{schema}"
_FENCE_HINT = "Respond with the JSON in a ```json fenced code block."

# A JSON preview starts after a fence opener outside a double-quoted string, or at a bracket that begins
# a line; quotes are followed (escapes skipped, a line break ends a string) to tell where a fence is one.
_LINE_BRACKET = re.compile(r"\n[ \t]*[\[{]")
_MAX_CARRY = 64
_JSON_LANGUAGES = frozenset({"", "json", "jsonc", "json5", "javascript", "js"})


def hint_text(content_hint: Any) -> str:
    """A content hint as prompt text: strings verbatim, anything else as compact JSON."""
    if isinstance(content_hint, str):
        return content_hint
    return json.dumps(content_hint, ensure_ascii=False)


def extract_json(text: str, *, want_object: bool, limits: Limits) -> tuple[Any, list[Repair]]:
    """The JSON value of a reply: from its ```json block, any block, or the bare text (in that order)."""
    check_size(text, limits)
    fence = find_fence(text, "json")
    if fence is not None:
        region = text[fence.start : fence.end]
        extra = [] if fence.closed else [Repair.UNCLOSED_FENCE]
        if fence.language_matched:
            value, repairs = load_json_reply(
                region, reply=text, offset=fence.start, want_object=want_object, limits=limits, hint=_FENCE_HINT
            )
            return value, extra + repairs
        try:
            value, repairs = load_json_reply(
                region, reply=text, offset=fence.start, want_object=want_object, limits=limits, hint=_FENCE_HINT
            )
            return value, [Repair.UNTAGGED_FENCE, *extra, *repairs]
        except OutputParseError as fenced_error:
            try:
                value, repairs = load_json_reply(text, reply=text, want_object=want_object, limits=limits)
            except OutputParseError:
                raise fenced_error from None
            return value, [Repair.NO_FENCE, *repairs]
    value, repairs = load_json_reply(text, reply=text, want_object=want_object, limits=limits, hint=_FENCE_HINT)
    return value, [Repair.NO_FENCE, *repairs]


class MarkdownJsonObjectParser(ParserBase):
    """Asks for a JSON value in a ```json block; ``parsed`` is the decoded value (any JSON type).

    With ``schema=`` (a Pydantic model class or a JSON schema) the instruction shows the schema
    and the value is validated strictly.
    """

    name: str = "json block"
    tag_begin: str = "```json"
    tag_end: str = "```"
    content_hint: str = "{your_json_object}"
    _what = "object"

    def __init__(
        self, content_hint: Any = None, *, schema: SchemaSpec | None = None, limits: Limits | None = None
    ) -> None:
        expect_schema_spec(schema, func=type(self).__name__)
        expect(limits, Limits, name="limits", func=type(self).__name__, none=True)
        limits = limits or DEFAULT_LIMITS
        if schema is None and is_pydantic_model(content_hint):
            schema, content_hint = content_hint, None  # AgentScope accepts a model class as the hint
        self.schema = ReplySchema(schema, limits=limits) if schema is not None else None
        if content_hint is not None:
            self.content_hint = hint_text(content_hint)
        elif self.schema is not None and self._what == "dictionary":
            self.content_hint = "{a_JSON_dictionary}"
        self.limits = limits
        self.format_instruction = _OBJECT_INSTRUCTION.format(content_hint=self.content_hint)
        if self.schema is not None:
            self.format_instruction += _SCHEMA_SUFFIX.format(what=self._what, schema=self.schema.text)

    def parse(self, response: ModelResponse | str) -> ModelResponse:
        """Set ``parsed`` to the JSON value of the reply; raise ``OutputParseError`` if there is none."""
        response = as_response(response)
        text = response.text or ""
        value, repairs = extract_json(text, want_object=self._what == "dictionary", limits=self.limits)
        value = self._check(value, text)
        validated = None
        if self.schema is not None:
            value, validated = self.schema.validate(value, text)
        response.parsed = value
        response.validated = validated
        response.repairs_applied = repairs
        return response

    def stream(self) -> JsonReplyStream:
        """A push parser previewing the JSON value as the reply arrives; ``close()`` gives ``parse``'s result."""
        return JsonReplyStream(self)

    def _check(self, value: Any, text: str) -> Any:
        return value


class MarkdownJsonDictParser(MarkdownJsonObjectParser, DictFilterMixin):
    """Asks for a JSON dictionary in a ```json block; ``to_content`` / ``to_memory`` / ``to_metadata`` route keys."""

    content_hint: str = "{your_json_dictionary}"
    _what = "dictionary"

    def __init__(
        self,
        content_hint: Any = None,
        *,
        required_keys: Sequence[str] | None = None,
        keys_to_memory: KeySelection = True,
        keys_to_content: KeySelection = True,
        keys_to_metadata: KeySelection = False,
        schema: SchemaSpec | None = None,
        limits: Limits | None = None,
    ) -> None:
        expect_items(required_keys, str, name="required_keys", func=type(self).__name__, none=True)
        MarkdownJsonObjectParser.__init__(self, content_hint, schema=schema, limits=limits)
        DictFilterMixin.__init__(
            self, keys_to_memory=keys_to_memory, keys_to_content=keys_to_content, keys_to_metadata=keys_to_metadata
        )
        self.required_keys = list(required_keys or [])

    def _check(self, value: Any, text: str) -> Any:
        if not isinstance(value, dict):
            kind = {list: "an array", str: "a string", bool: "a boolean"}.get(type(value), "a scalar")
            raise reply_error(
                "wrong_type",
                f"a JSON dictionary (object) was expected, but the JSON is {kind}",
                text,
                position=0,
                hint="Respond with one JSON object: {...}.",
            )
        missing = [k for k in self.required_keys if k not in value]
        if missing:
            names = ", ".join(repr(k) for k in missing)
            present = ", ".join(repr(k) for k in list(value)[:20])
            raise reply_error(
                "missing_key",
                f"the JSON dictionary lacks required key{'s' if len(missing) > 1 else ''} {names}"
                f" (found {'keys ' + present if present else 'an empty object'})",
                text,
                pointer=pointer_join("", missing[0]),
                hint=f"Include every required key: {', '.join(self.required_keys)}.",
            )
        return value


class JsonReplyStream(ReplyStream):
    """Preview of a JSON reply: the value inside the ```json block (or a bare JSON value) as it grows.

    The preview starts at the first fence whose language is ``json`` (or none), skipping blocks in
    other languages, or at a ``{`` / ``[`` that begins a line when no fence came first.
    """

    _SEEK, _INFO, _SKIP_BLOCK, _JSON = range(4)

    def __init__(self, parser: ParserBase) -> None:
        super().__init__(parser)
        self._json: JsonPreview | None = None
        self._dead = False
        self._state = self._SEEK
        self._carry = "\n"  # the start of the reply counts as the start of a line
        self._quoted = False  # inside a double-quoted string of the prose being skipped

    @property
    def value(self) -> Any:
        return self._json.stream.value if self._json is not None else None

    @property
    def done(self) -> bool:
        """Whether the previewed JSON value is complete."""
        return self._json is not None and self._json.stream.done

    def _stop_preview(self) -> None:
        self._dead = True

    def _preview(self, chunk: str) -> list[Op]:
        if self._dead:
            return []
        if self._state == self._JSON:
            return self._push(chunk)
        text = self._carry + chunk
        self._carry = ""
        while text:
            if self._state == self._SEEK:
                fence = find_outside_strings(text, "```", quoted=self._quoted)
                match = _LINE_BRACKET.search(text, 0, fence if fence >= 0 else len(text))
                if match is None and fence < 0:
                    # Keep what could still begin a match: trailing backticks, a newline and indentation,
                    # or a backslash escaping the next piece's first character.
                    tail = text[-_MAX_CARRY:]
                    newline = tail.rfind("\n")
                    if newline >= 0 and not tail[newline + 1 :].strip(" \t"):
                        self._carry = tail[newline:]
                    elif (len(text) - len(text.rstrip("\\"))) % 2:
                        self._carry = "\\"
                    else:
                        self._carry = tail[len(tail.rstrip("`")) :][-2:]
                    self._quoted = ends_in_string(text[: len(text) - len(self._carry)], self._quoted)
                    return []
                self._quoted = False
                if match is None:
                    self._state = self._INFO
                    text = text[fence + 3 :]
                else:
                    return self._start(text[match.end() - 1 :])
            elif self._state == self._INFO:
                newline = text.find("\n")
                if newline < 0:
                    if len(text) > _MAX_CARRY:  # an inline block: "```json {...}```"
                        return self._start(text)
                    self._carry = text
                    return []
                info = text[:newline].strip().lower()
                if info in _JSON_LANGUAGES:
                    return self._start(text[newline + 1 :])
                self._state = self._SKIP_BLOCK
                text = text[newline + 1 :]
            else:  # inside a block in another language: wait for its closing fence
                close = text.find("```")
                if close < 0:
                    self._carry = text[len(text.rstrip("`")) :][-2:]
                    return []
                self._state = self._SEEK
                text = text[close + 3 :]
        return []

    def _start(self, text: str) -> list[Op]:
        self._state = self._JSON
        self._json = JsonPreview(skip_prefix=True)
        return self._push(text)

    def _push(self, text: str) -> list[Op]:
        assert self._json is not None
        return self._json.feed(text)
