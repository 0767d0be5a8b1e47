"""Llama 3.x JSON calls, Llama 3.1 builtin ``<|python_tag|>`` calls, and pythonic calls (Llama 3.2 / 4)."""

from __future__ import annotations

from turnkit.parse._spec import FormatSpec, JsonCalls, Pythonic, ToolRegion
from turnkit.parse.builtin._tokens import EOM, EOT, PYTHON_TAG

LLAMA_JSON = JsonCalls(args_keys=("parameters", "arguments"), require_args=True, separators=";")
"""Llama 3 writes several calls as ``{...}; {...}``: the ``;`` is framing (vLLM splits the calls on it)."""

FORMATS = (
    FormatSpec(
        name="llama3_json",
        description='{"name": ..., "parameters": {...}} (optionally after <|python_tag|>)',
        aliases=("llama_3_x", "llama3"),
        tools=(
            ToolRegion(open='{"name"', keep_open=True, body=LLAMA_JSON),
            ToolRegion(open='{"type"', keep_open=True, body=LLAMA_JSON),
            ToolRegion(open=PYTHON_TAG, body=LLAMA_JSON),
        ),
        ends=(EOT, EOM),
    ),
    FormatSpec(
        name="llama3_builtin",
        description='<|python_tag|>python.call(code="...") or a JSON call',
        tools=(
            ToolRegion(open=PYTHON_TAG, body=Pythonic(bracketed=False, name_suffix=".call")),
            ToolRegion(open='{"name"', keep_open=True, body=LLAMA_JSON),
        ),
        ends=(EOT, EOM),
    ),
    FormatSpec(
        name="pythonic",
        description="[NAME(k=v), ...] at the start of the output (Llama 3.2, Llama 4)",
        aliases=("llama4_pythonic", "llama3_2_pythonic"),
        tools=(
            ToolRegion(open="<|python_start|>", close="<|python_end|>", body=Pythonic()),
            ToolRegion(open="[", keep_open=True, at_start=True, body=Pythonic()),
        ),
        ends=(EOT, EOM),
    ),
)
