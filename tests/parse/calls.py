"""One well-formed tool call per tool region of a declaration, built from the declaration's own markers.

Tests use it to run the same case over every built-in format: ``sample_calls(spec, args)`` gives, for each
way the format can write a call, an output whose call is named ``f`` with ``args`` (JSON text) as its
arguments. Regions whose call cannot be written that way (a kept open marker the body does not start with)
are skipped.
"""

from __future__ import annotations

import json

from turnkit.parse import FormatSpec, JsonArgs, JsonCalls, KeyedDict, Pythonic, ToolRegion, XmlParams

NAME = "f"
TOOLS = [{"type": "function", "function": {"name": NAME, "parameters": {"properties": {"a": {"type": "object"}}}}}]
"""Tool definitions typing the parameter ``a`` as an object (XML values are typed by the schema)."""


def _json_calls(body: JsonCalls, args: str) -> str:
    if body.name_is_key:
        return f'{{"{NAME}": {args}}}'
    return f'{{"{body.name_keys[0]}": "{NAME}", "{body.args_keys[0]}": {args}}}'


def _json_args(body: JsonArgs, args: str) -> str:
    return f"{body.name_prefix}{NAME}{body.name_ends[0]}{args}"


def _body_text(region: ToolRegion, args: str) -> str | None:
    """The body of one call in the region's encoding; ``None`` when ``args`` cannot be written in it."""
    body = region.body
    if isinstance(body, JsonCalls):
        return _json_calls(body, args)
    if isinstance(body, JsonArgs):
        return _json_args(body, args)
    value = json.loads(args).get("a") if args.startswith("{") else None
    if value is None:
        return None
    if isinstance(body, XmlParams):
        key_end = next((m for m, kind in body.key_ends if kind != "string"), None)
        if key_end is None:
            return None
        return (
            f"{body.function_open or ''}{NAME}{body.name_ends[0]}{body.param_open}a{key_end}{body.value_open or ''}"
            f"{json.dumps(value)}{body.param_close}{body.function_close or ''}"
        )
    if isinstance(body, Pythonic):
        call = f"{NAME}{body.name_suffix}(a={json.dumps(value)})"
        return f"[{call}]" if body.bracketed else call
    if isinstance(body, KeyedDict):
        return f"{body.name_prefix}{NAME}{{a:{json.dumps(value)}}}"
    return None


def _region_text(region: ToolRegion, args: str) -> str | None:
    body = _body_text(region, args)
    if body is None:
        return None
    if region.keep_open:
        return body if body.startswith(region.open) else None
    return f"{region.open}{body}{region.close or ''}"


def sample_calls(spec: FormatSpec, args: str) -> list[str]:
    """Outputs holding one call ``f(args)``: one per tool region (and section) the format declares."""
    out = [text for region in spec.tools if (text := _region_text(region, args)) is not None]
    for section in spec.sections:
        for region in section.calls:
            text = _region_text(region, args)
            if text is not None:
                out.append(f"{section.open}{text}{section.close or ''}")
    opened = next((r for r in spec.reasoning if r.open_by_default), None)
    if opened is not None:  # the output starts in reasoning: end it first
        out = [opened.ends[0] + text for text in out]
    harmony = spec.harmony
    if harmony is not None:
        out.append(
            f"{harmony.header_opens[0]}assistant to={harmony.recipient_prefix}{NAME}{harmony.message}{args}"
            f"{harmony.ends[0]}"
        )
    return out


def json_argument_formats() -> list[str]:
    """Built-in formats whose calls carry JSON arguments (JSON call objects, ``NAME{json}`` or harmony)."""
    from turnkit.parse import list_formats, load_format

    names = []
    for name in list_formats():
        spec = load_format(name).spec
        regions = [*spec.tools, *(c for s in spec.sections for c in s.calls)]
        if spec.harmony is not None or any(isinstance(r.body, (JsonCalls, JsonArgs)) for r in regions):
            names.append(name)
    return names
