"""Content parsers of a response-template field: transformers 5.23 ``chat_parsing/content_parsers.py``, ported.

Each parser turns the captured text of one region into a value. Differences from the reference are only
that every regular expression runs with a time budget (:class:`_Clock`) and that failures raise turnkit
errors; results are identical.
"""

from __future__ import annotations

import json
from time import monotonic as _now
from typing import Any

import regex

from turnkit.errors import ParseError, RegexTimeoutError

__all__ = ["CONTENT_PARSERS", "STREAMABLE_PARSERS", "Clock", "parse_content", "process_field"]


class Clock:
    """The time budget of one parse or stream: ``per_call`` for each regex, ``total`` for all of them together.

    ``total`` counts the time spent running them, not the time since the parse began: a stream's pauses
    between chunks (the model generating) are not work.
    """

    __slots__ = ("per_call", "total", "spent")

    def __init__(self, per_call: float, total: float) -> None:
        self.per_call = per_call
        self.total = total
        self.spent = 0.0

    def run(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        left = self.total - self.spent
        if left <= 0:
            raise RegexTimeoutError(f"response template: regular expressions ran past {self.total} s in total")
        start = _now()
        try:
            return fn(*args, timeout=self.per_call if self.per_call < left else left, **kwargs)
        except TimeoutError as exc:
            raise RegexTimeoutError(f"response template: {what} ran past its time budget") from exc
        finally:
            self.spent += _now() - start


def _text(text: str, args: dict[str, Any], clock: Clock) -> str:
    return text.strip() if args.get("strip", True) else text


def _int(text: str, args: dict[str, Any], clock: Clock) -> int:
    return int(_text(text, args, clock))


def _float(text: str, args: dict[str, Any], clock: Clock) -> float:
    return float(_text(text, args, clock))


def _bool(text: str, args: dict[str, Any], clock: Clock) -> bool:
    return _text(text, args, clock).lower() in ("true", "1")


_LAX_OPEN, _LAX_CLOSE = "\x01", "\x02"
_UNQUOTED_KEY = regex.compile(r"(?<=[{,])(\w+):")


def _json(text: str, args: dict[str, Any], clock: Clock) -> Any:
    string_delims = args.get("string_delims", [])
    unquoted_keys = args.get("unquoted_keys", False)
    if string_delims and (_LAX_OPEN in text or _LAX_CLOSE in text):
        raise ParseError("json: input contains reserved sentinel characters (\\x01/\\x02); cannot parse safely.")
    working = text
    captured: list[str] = []
    for open_d, close_d in string_delims:
        pattern = regex.compile(regex.escape(open_d) + r"(.*?)" + regex.escape(close_d), regex.DOTALL)

        def _capture(m: Any) -> str:
            captured.append(m.group(1))
            return f"{_LAX_OPEN}{len(captured) - 1}{_LAX_CLOSE}"

        working = clock.run("json string_delims", pattern.sub, _capture, working)
    if unquoted_keys:
        working = clock.run("json unquoted_keys", _UNQUOTED_KEY.sub, r'"\1":', working)
    for i, s in enumerate(captured):
        working = working.replace(f"{_LAX_OPEN}{i}{_LAX_CLOSE}", json.dumps(s))
    try:
        return json.loads(working)
    except json.JSONDecodeError as e:
        if args.get("allow_non_json"):
            return _text(text, args, clock)
        if working == text:
            raise ParseError(f"json parser could not parse region as JSON.\nContent: {text!r}\nError: {e}") from e
        raise ParseError(
            f"json: could not parse after dialect transforms.\nOriginal: {text!r}\nTransformed: {working!r}\nError: {e}"
        ) from e


def _sub_parse(raw: str, value_parser: dict[str, Any] | None, clock: Clock) -> Any:
    if value_parser is None:
        return raw
    return parse_content(raw, value_parser.get("name", "text"), value_parser.get("args", {}), clock)


def _xml_inline(text: str, args: dict[str, Any], clock: Clock) -> dict[str, Any]:
    tag_pattern = args.get("tag_pattern")
    if tag_pattern is None:
        raise ParseError("xml-inline: 'tag_pattern' content_arg is required")
    value_parser = args.get("value_parser")
    merge = args.get("merge_duplicates", False)
    compiled = regex.compile(tag_pattern, regex.DOTALL)
    out: dict[str, Any] = {}
    for m in clock.run("xml-inline tag_pattern", compiled.finditer, text):
        groups = m.groupdict()
        key = groups.get("key")
        if key is None:
            raise ParseError(f"xml-inline: tag_pattern must have a named group 'key'. Pattern: {tag_pattern}")
        value = _sub_parse(groups.get("value", ""), value_parser, clock)
        if key in out and merge:
            if not isinstance(out[key], list):
                out[key] = [out[key]]
            out[key].append(value)
        else:
            out[key] = value
    return out


def _kv_lines(text: str, args: dict[str, Any], clock: Clock) -> dict[str, Any]:
    line_sep = args.get("line_sep", "\n")
    kv_sep = args.get("kv_sep", ":")
    value_parser = args.get("value_parser")
    out: dict[str, Any] = {}
    for line in text.split(line_sep):
        line = _text(line, args, clock)
        if not line or kv_sep not in line:
            continue
        k, v = line.split(kv_sep, 1)
        k, v = _text(k, args, clock), _text(v, args, clock)
        out[k] = _sub_parse(v, value_parser, clock)
    return out


CONTENT_PARSERS: dict[str, Any] = {
    "text": _text,
    "int": _int,
    "float": _float,
    "bool": _bool,
    "json": _json,
    "xml-inline": _xml_inline,
    "kv-lines": _kv_lines,
}
STREAMABLE_PARSERS = frozenset({"text", "int", "float", "bool"})


def parse_content(text: str, name: str, args: dict[str, Any], clock: Clock) -> Any:
    try:
        return CONTENT_PARSERS[name](text, args, clock)
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        if isinstance(exc, ParseError):
            raise
        raise ParseError(f"response template: content parser {name!r} failed: {exc}") from exc


PLACEHOLDER = regex.compile(r"\{(\w+(?:\.\w+)*)\}")


def apply_transform(transform: Any, scope: dict[str, Any]) -> Any:
    if isinstance(transform, dict):
        return {k: apply_transform(v, scope) for k, v in transform.items()}
    if isinstance(transform, list):
        return [apply_transform(v, scope) for v in transform]
    if not isinstance(transform, str):
        return transform
    whole = PLACEHOLDER.fullmatch(transform)
    if not whole:
        return transform
    path = whole.group(1)
    root, *keys = path.split(".")
    if root not in scope:
        raise ParseError(f"transform placeholder '{{{path}}}' is not defined. Available: {sorted(scope)}")
    value = scope[root]
    for key in keys:
        if not isinstance(value, dict):
            raise ParseError(f"transform placeholder '{{{path}}}' cannot index into {type(value).__name__} at '{key}'")
        if key not in value:
            raise ParseError(f"transform placeholder '{{{path}}}' is missing key '{key}'. Available: {sorted(value)}")
        value = value[key]
    return value


def process_field(body: str, field: Any, captures: dict[str, Any], clock: Clock) -> Any:
    value = parse_content(body, field.content, field.content_args, clock)
    if field.transform is None:
        return value
    if field.transform_each:
        if not isinstance(value, list):
            raise ParseError(
                f"Field '{field.name}': transform_each requires the parsed content to be a list, "
                f"got {type(value).__name__}."
            )
        out = []
        for item in value:
            if not isinstance(item, dict):
                raise ParseError(
                    f"Field '{field.name}': transform_each requires each list element to be a dict, "
                    f"got {type(item).__name__}."
                )
            out.append(apply_transform(field.transform, {**captures, **item}))
        return out
    return apply_transform(field.transform, {**captures, "content": value})
