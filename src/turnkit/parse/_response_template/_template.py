"""Loading and validating a ``response_template``: transformers 5.23 ``chat_parsing/response_templates.py``, ported.

Everything transformers checks when it loads a template is checked here, with the same rules; in addition,
what transformers only finds at the first parse is checked at load time too (content-parser arguments: a
``tag_pattern`` that does not compile or lacks a ``key`` group, a ``value_parser`` naming no parser, malformed
``string_delims``). Every failure is a :class:`~turnkit.ResponseTemplateError` whose ``key`` names the entry
(``fields.tool_calls.open_pattern``) and whose message says why.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import regex

from turnkit.errors import ResponseTemplateError
from turnkit.parse._response_template._content import CONTENT_PARSERS, PLACEHOLDER
from turnkit.parse._response_template._keys import FIELD_KEYS, TEMPLATE_KEYS

__all__ = ["ResponseTemplate", "ResponseTemplateField", "load_response_template"]


@dataclass(frozen=True)
class ResponseTemplateField:
    name: str
    open_re: Any
    open_literals: list[str] | None
    open_literal_can_extend: bool
    close_re: Any
    close_literals: list[str] | None
    close_literal_can_extend: bool
    content: str
    content_args: dict[str, Any]
    repeats: bool
    join: str | None
    optional: bool
    transform: Any
    transform_each: bool


@dataclass(frozen=True)
class ResponseTemplate:
    """A validated, compiled ``response_template`` (build it with :func:`load_response_template`)."""

    spec: dict[str, Any]
    """A private copy of the template as given."""
    defaults: dict[str, Any]
    fields: dict[str, ResponseTemplateField]
    start_anchor_re: Any
    implicit: str | None
    start_anchor_literals: list[str] | None
    reads_ahead: bool = False
    """An open/close pattern may assert something about the text after its match (``$``, ``\\b``, lookahead): a
    match found in part of the output can change when more text follows."""
    reads_behind: bool = False
    """An open/close pattern may look before where its search starts (``^``, ``\\b``, lookbehind): the parser
    must keep the text it has consumed."""


_SYNTAX = regex.compile(
    r"""\\(?P<esc>.)
    | \[\^?\]?(?:\\.|[^\]\\])*\]     # a character class: its ^ and $ are literal
    | \(\?(?P<look><?[=!])
    | (?P<anchor>[\^$])
    """,
    regex.VERBOSE | regex.DOTALL,
)
_AHEAD = frozenset({"$", "=", "!", *(f"\\{c}" for c in "bBZzmM")})
_BEHIND = frozenset({"^", "<=", "<!", *(f"\\{c}" for c in "bBAGmM")})


def _context(patterns: list[Any]) -> tuple[bool, bool]:
    """``reads_ahead`` and ``reads_behind`` of the open/close patterns (a conservative scan of their source)."""
    ahead = behind = False
    for compiled in patterns:
        for m in _SYNTAX.finditer(compiled.pattern):
            token = f"\\{m.group('esc')}" if m.group("esc") else m.group("look") or m.group("anchor")
            ahead |= token in _AHEAD
            behind |= token in _BEHIND
    return ahead, behind


def _error(key: str, reason: str) -> ResponseTemplateError:
    return ResponseTemplateError(f"response_template {key}: {reason}", key=key)


def _compile(key: str, pattern: Any) -> Any:
    if not isinstance(pattern, str):
        raise _error(key, f"must be a regex string, got {type(pattern).__name__}")
    try:
        return regex.compile(pattern, regex.DOTALL)
    except (regex.error, ValueError, TypeError, OverflowError) as exc:
        raise _error(key, f"invalid regex: {exc}") from exc


def _compile_anchor(scope: str, field: dict[str, Any], literal_key: str, pattern_key: str) -> tuple[Any, Any, bool]:
    if literal_key in field and pattern_key in field:
        raise _error(f"{scope}.{literal_key}", f"cannot specify both '{literal_key}' and '{pattern_key}'")
    if literal_key in field:
        key = f"{scope}.{literal_key}"
        raw = field[literal_key]
        if isinstance(raw, str):
            literals = [raw]
        elif isinstance(raw, list):
            if not raw:
                raise _error(key, "the list must contain at least one literal")
            if not all(isinstance(s, str) for s in raw):
                raise _error(key, "the list must contain only strings")
            literals = list(dict.fromkeys(raw))
        else:
            raise _error(key, f"must be a string or list of strings, got {type(raw).__name__}")
        if any(s == "" for s in literals):
            raise _error(key, "literals cannot be empty strings")
        ordered = sorted(literals, key=len, reverse=True)
        can_extend = any(a != b and a.startswith(b) for a in literals for b in literals)
        return regex.compile("|".join(regex.escape(s) for s in ordered), regex.DOTALL), literals, can_extend
    if pattern_key in field:
        return _compile(f"{scope}.{pattern_key}", field[pattern_key]), None, False
    return None, None, False


def _check_transform(key: str, transform: Any) -> None:
    if isinstance(transform, dict):
        for k, v in transform.items():
            _check_transform(f"{key}.{k}", v)
    elif isinstance(transform, list):
        for i, v in enumerate(transform):
            _check_transform(f"{key}.{i}", v)
    elif isinstance(transform, str) and PLACEHOLDER.search(transform) and not PLACEHOLDER.fullmatch(transform):
        raise _error(
            key,
            f"transform string {transform!r} mixes a {{placeholder}} with literal text; use either a whole-string "
            'placeholder (e.g. "{content}") or a plain literal',
        )


def _check_content_args(key: str, content: str, args: Any) -> None:
    """What transformers only finds at parse time, checked now."""
    if not isinstance(args, dict):
        raise _error(key, f"must be a dict, got {type(args).__name__}")
    if content == "xml-inline":
        if "tag_pattern" not in args:
            raise _error(f"{key}.tag_pattern", "is required by the xml-inline parser")
        compiled = _compile(f"{key}.tag_pattern", args["tag_pattern"])
        if "key" not in compiled.groupindex:
            raise _error(f"{key}.tag_pattern", "must have a named group 'key' (and usually 'value')")
    if content == "json":
        delims = args.get("string_delims", [])
        if not isinstance(delims, list) or not all(
            isinstance(d, list | tuple) and len(d) == 2 and all(isinstance(x, str) and x for x in d) for d in delims
        ):
            raise _error(f"{key}.string_delims", "must be a list of [open, close] pairs of non-empty strings")
    if content in ("xml-inline", "kv-lines"):
        for name in ("line_sep", "kv_sep"):
            if name in args and (not isinstance(args[name], str) or not args[name]):
                raise _error(f"{key}.{name}", "must be a non-empty string")
        parser = args.get("value_parser")
        if parser is not None:
            if not isinstance(parser, dict):
                raise _error(f"{key}.value_parser", f"must be a dict, got {type(parser).__name__}")
            name = parser.get("name", "text")
            if name not in CONTENT_PARSERS:
                raise _error(f"{key}.value_parser.name", f"unknown content parser {name!r}")
            _check_content_args(f"{key}.value_parser.args", name, parser.get("args", {}))


def _build_field(name: str, field: Any) -> ResponseTemplateField:
    scope = f"fields.{name}"
    if not isinstance(field, dict):
        raise _error(scope, f"must be a dict, got {type(field).__name__}")
    if unknown := set(field) - FIELD_KEYS:
        raise _error(scope, f"unknown keys {sorted(unknown)}")
    content = field.get("content", "text")
    if not isinstance(content, str) or content not in CONTENT_PARSERS:
        raise _error(f"{scope}.content", f"unknown content parser {content!r}; available: {sorted(CONTENT_PARSERS)}")
    open_re, open_literals, open_can_extend = _compile_anchor(scope, field, "open", "open_pattern")
    close_re, close_literals, close_can_extend = _compile_anchor(scope, field, "close", "close_pattern")
    join = field.get("join")
    if join is not None and not isinstance(join, str):
        raise _error(f"{scope}.join", f"must be a string, got {type(join).__name__}")
    if join is not None and not field.get("repeats", False):
        raise _error(f"{scope}.join", "requires 'repeats': true")
    transform = field.get("transform")
    transform_each = field.get("transform_each", False)
    if not isinstance(transform_each, bool):
        raise _error(f"{scope}.transform_each", f"must be a bool, got {type(transform_each).__name__}")
    if transform_each and transform is None:
        raise _error(f"{scope}.transform_each", "is set but no transform was provided")
    if transform is not None:
        _check_transform(f"{scope}.transform", transform)
    else:
        captured: set[str] = set()
        for compiled in (open_re, close_re):
            if compiled is not None:
                captured |= set(compiled.groupindex)
        if captured:
            raise _error(
                scope,
                f"open_pattern/close_pattern declares named group(s) {sorted(captured)}, but the field has no "
                "'transform'; named captures only reach the output through a transform",
            )
    content_args = field.get("content_args", {})
    _check_content_args(f"{scope}.content_args", content, content_args)
    return ResponseTemplateField(
        name=name,
        open_re=open_re,
        open_literals=open_literals,
        open_literal_can_extend=open_can_extend,
        close_re=close_re,
        close_literals=close_literals,
        close_literal_can_extend=close_can_extend,
        content=content,
        content_args=content_args,
        repeats=field.get("repeats", False),
        join=join,
        optional=field.get("optional", True),
        transform=transform,
        transform_each=transform_each,
    )


def load_response_template(spec: Any) -> ResponseTemplate:
    """Validate and compile a ``response_template`` dict, as transformers 5.23 does when it loads one."""
    if isinstance(spec, ResponseTemplate):
        return spec
    if not isinstance(spec, dict):
        raise _error("(root)", f"must be a dict, got {type(spec).__name__}")
    spec = copy.deepcopy(spec)
    version = spec.get("version", 1)
    if version != 1:
        raise _error("version", f"unsupported version {version!r} (only 1)")
    if unknown := set(spec) - TEMPLATE_KEYS:
        raise _error("(root)", f"unknown keys {sorted(unknown)}")
    if not isinstance(spec.get("defaults", {}), dict):
        raise _error("defaults", "must be a dict")
    fields_raw = spec.get("fields", {})
    if not isinstance(fields_raw, dict) or not fields_raw:
        raise _error("fields", "must be a non-empty dict")
    fields = {name: _build_field(name, raw) for name, raw in fields_raw.items()}
    implicit = [name for name, f in fields.items() if f.open_re is None]
    if len(implicit) > 1:
        raise _error(
            "fields",
            "at most one field may omit 'open'/'open_pattern' (it becomes the implicit-open / leftover sink); "
            f"found: {', '.join(implicit)}",
        )
    start_re, start_literals, _ = _compile_anchor("(root)", spec, "start_anchor", "start_anchor_pattern")
    if start_re is None:
        raise _error("start_anchor", "must define 'start_anchor' or 'start_anchor_pattern'")
    ahead, behind = _context(
        [
            compiled
            for f in fields.values()
            for compiled, literals in ((f.open_re, f.open_literals), (f.close_re, f.close_literals))
            if compiled is not None and literals is None
        ]
    )
    return ResponseTemplate(
        spec=spec,
        defaults=copy.deepcopy(spec.get("defaults", {})),
        fields=fields,
        start_anchor_re=start_re,
        implicit=implicit[0] if implicit else None,
        start_anchor_literals=start_literals,
        reads_ahead=ahead,
        reads_behind=behind,
    )
