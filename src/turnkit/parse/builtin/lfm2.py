"""LFM2 / LFM2.5: ``<|tool_call_start|>[NAME(k=v)]<|tool_call_end|>`` (pythonic) or a JSON list."""

from __future__ import annotations

from turnkit.parse._spec import FormatSpec, JsonCalls, Pythonic, ToolRegion
from turnkit.parse.builtin._tokens import LFM_TOOL_CALL_END, LFM_TOOL_CALL_START
from turnkit.parse.builtin.think import THINK_TAGS

# What every LFM2 chat template writes before the tool list ("List of tools: [...]", some inside
# <|tool_list_start|>...<|tool_list_end|>) and around tool results; several templates never write a tool call
# back, so these are the family's only markers there.
PROMPT_MARKERS = (
    "List of tools:",
    "<|tool_list_start|>",
    "<|tool_list_end|>",
    "<|tool_response_start|>",
    "<|tool_response_end|>",
)

FORMATS = (
    FormatSpec(
        name="lfm2_pythonic",
        description="<|tool_call_start|>[NAME(k=v), ...]<|tool_call_end|>",
        aliases=("lfm2",),
        reasoning=(THINK_TAGS,),
        tools=(ToolRegion(open=LFM_TOOL_CALL_START, close=LFM_TOOL_CALL_END, body=Pythonic()),),
        prompt_markers=PROMPT_MARKERS,
    ),
    FormatSpec(
        name="lfm2_json",
        description='<|tool_call_start|>[{"name": ..., "arguments": {...}}]<|tool_call_end|>',
        aliases=("lfm2_with_json_tools",),
        reasoning=(THINK_TAGS,),
        tools=(ToolRegion(open=LFM_TOOL_CALL_START, close=LFM_TOOL_CALL_END, body=JsonCalls()),),
        prompt_markers=PROMPT_MARKERS,
    ),
)
