"""Gemma 4: ``<|channel>thought`` reasoning and ``<|tool_call>call:NAME{k:<|"|>v<|"|>}<tool_call|>`` calls."""

from __future__ import annotations

from turnkit.parse._spec import FormatSpec, KeyedDict, Reasoning, ToolRegion
from turnkit.parse.builtin._tokens import GEMMA_CHANNEL, GEMMA_CHANNEL_END

GEMMA_THOUGHT = Reasoning(starts=(GEMMA_CHANNEL + "thought", GEMMA_CHANNEL), ends=(GEMMA_CHANNEL_END,))

FORMATS = (
    FormatSpec(
        name="gemma4",
        description="Gemma 4: a thought channel, call:NAME{key:value} calls with special-token string quotes",
        reasoning=(GEMMA_THOUGHT,),
        tools=(
            ToolRegion(open="<|tool_call>", close="<tool_call|>", body=KeyedDict(name_prefix="call:", quote='<|"|>')),
        ),
        discard=GEMMA_THOUGHT.ends,
        ends=("<turn|>",),
    ),
    FormatSpec(
        name="gemma4_reasoning",
        description="Gemma 4, vLLM's reasoning parser: <|channel>[thought]...<channel|>; a stray end marker dropped",
        # The streaming reading of vLLM's parser (it matches 16 of the 20 vLLM records, 13 when open by default):
        # reasoning only inside the channel, the "thought\n" label dropped, whitespace kept around the block.
        reasoning=(Reasoning(starts=(GEMMA_CHANNEL + "thought\n", *GEMMA_THOUGHT.starts), ends=GEMMA_THOUGHT.ends),),
        discard=GEMMA_THOUGHT.ends,
        strip=False,
    ),
    FormatSpec(
        name="gemma4_reasoning_complete",
        description="Gemma 4, vLLM's reasoning parser on a complete output: text before a bare <channel|> is reasoning",
        # vLLM's non-streaming reading: the output starts in an implicit block that is reasoning only if
        # <channel|> follows (held back until then, else content); <|channel> at the start opens reasoning.
        reasoning=(
            Reasoning(
                starts=(GEMMA_CHANNEL + "thought\n", *GEMMA_THOUGHT.starts),
                ends=GEMMA_THOUGHT.ends,
                open_by_default=True,
                implicit_needs_end=True,
            ),
        ),
        discard=GEMMA_THOUGHT.ends,
        strip=False,
    ),
)
