"""Kimi K2: a tool-call section of ``functions.NAME:IDX`` calls with JSON arguments; the raw name is the id."""

from __future__ import annotations

from turnkit.parse._spec import FormatSpec, JsonArgs, Reasoning, Section, ToolRegion
from turnkit.parse.builtin._tokens import LFM_TOOL_CALL_END, THINK, THINK_END
from turnkit.parse.builtin.think import THINK_TAGS

KIMI_SECTION = "<|tool_calls_section_begin|>"

KIMI_CALL = ToolRegion(
    open="<|tool_call_begin|>",
    close=LFM_TOOL_CALL_END,  # the same spelling as LFM2's call end
    body=JsonArgs(
        name_ends=("<|tool_call_argument_begin|>",), name_prefix="functions.", name_cut=":", id_from_name=True
    ),
)

FORMATS = (
    FormatSpec(
        name="kimi_k2",
        description="a tool-call section of functions.NAME:0 calls, each with JSON arguments",
        reasoning=(THINK_TAGS,),
        calls_in_reasoning=True,
        tools=(KIMI_CALL,),
        sections=(
            Section(
                open=KIMI_SECTION,
                close="<|tool_calls_section_end|>",
                calls=(KIMI_CALL,),
            ),
        ),
    ),
    FormatSpec(
        name="kimi_k2_reasoning",
        description="Kimi K2 thinking, reasoning only: output starts inside <think> (vLLM's reasoning parser)",
        reasoning=(Reasoning(starts=(THINK,), ends=(THINK_END,), open_by_default=True, ends_kept=(KIMI_SECTION,)),),
    ),
)
