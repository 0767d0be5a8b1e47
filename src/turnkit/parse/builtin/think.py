"""Plain ``<think>...</think>`` reasoning splitting, no tool calls (vLLM's reasoning parsers)."""

from __future__ import annotations

from turnkit.parse._spec import FormatSpec, Reasoning
from turnkit.parse.builtin._tokens import THINK, THINK_END, TOOL_CALL

THINK_TAGS = Reasoning(starts=(THINK,), ends=(THINK_END,))

FORMATS = (
    FormatSpec(
        name="think",
        description="<think>...</think> reasoning, the rest is content",
        aliases=("content_only", "glm45_reasoning", "holo2"),
        reasoning=(THINK_TAGS,),
    ),
    FormatSpec(
        name="think_complete",
        description="<think>...</think> is reasoning only when closed; an unclosed block stays content as written",
        aliases=("glm45_reasoning_complete",),
        # vLLM's non-streaming GLM-4.5 reasoning parser: no </think>, no reasoning. The block is held back
        # until </think> (then reasoning) or the end of output (then content, <think> included).
        reasoning=(Reasoning(starts=(THINK,), ends=(THINK_END,), needs_end=True),),
    ),
    FormatSpec(
        name="think_open",
        description="reasoning until </think>: the prompt already opened <think> (DeepSeek-R1, Qwen3 thinking)",
        aliases=("deepseek_r1_reasoning", "nemotron_v3", "step3p5_reasoning"),
        reasoning=(Reasoning(starts=(THINK,), ends=(THINK_END,), open_by_default=True),),
    ),
    FormatSpec(
        name="hunyuan_a13b",
        description="<think>...</think> then <answer>...</answer> (Hunyuan-A13B)",
        reasoning=(THINK_TAGS,),
        discard=("<answer>", "</answer>"),
    ),
    FormatSpec(
        name="qwen3_reasoning",
        aliases=("qwen3",),
        description="Qwen3 thinking, reasoning only: starts inside <think>; a <tool_call> also ends reasoning",
        reasoning=(Reasoning(starts=(THINK,), ends=(THINK_END,), open_by_default=True, ends_kept=(TOOL_CALL,)),),
    ),
)
