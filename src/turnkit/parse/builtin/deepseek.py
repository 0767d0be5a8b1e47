"""DeepSeek R1 / V3 / V3.1 / V3.2: tool-call sections with full-width special tokens, <think> reasoning."""

from __future__ import annotations

from turnkit.parse._spec import FormatSpec, JsonArgs, Reasoning, Section, ToolRegion, XmlParams
from turnkit.parse.builtin._tokens import (
    DS_CALL_BEGIN,
    DS_CALL_END,
    DS_CALLS_BEGIN,
    DS_CALLS_END,
    DS_SEP,
    DSML,
    THINK,
    THINK_END,
)
from turnkit.parse.builtin.think import THINK_TAGS

R1_CALL = ToolRegion(
    open=DS_CALL_BEGIN,
    close=DS_CALL_END,
    body=JsonArgs(name_ends=("\n",), name_prefix="function" + DS_SEP, fence=True),
)

FORMATS = (
    FormatSpec(
        name="deepseek_r1",
        description="DeepSeek-R1: <think> reasoning, a call section of `function SEP NAME` with fenced JSON",
        aliases=("deepseek_v3",),
        reasoning=(THINK_TAGS,),
        sections=(Section(open=DS_CALLS_BEGIN, close=DS_CALLS_END, calls=(R1_CALL,)),),
        # Some R1 distills write a short section opener and go straight to the call.
        tools=(ToolRegion(open="<｜tool▁calls｜>", close=DS_CALL_END, body=R1_CALL.body),),
        discard=(DS_CALLS_END,),
    ),
    FormatSpec(
        name="deepseek_v3_1",
        description="DeepSeek V3.1: a call section of NAME SEP {json} calls",
        aliases=("deepseekv31",),
        reasoning=(THINK_TAGS,),
        sections=(
            Section(
                open=DS_CALLS_BEGIN,
                close=DS_CALLS_END,
                calls=(ToolRegion(open=DS_CALL_BEGIN, close=DS_CALL_END, body=JsonArgs(name_ends=(DS_SEP,))),),
            ),
        ),
    ),
    FormatSpec(
        name="deepseek_v3_2_dsml",
        description='DeepSeek V3.2 DSML: invoke/parameter tags, string="true" marks raw text values',
        aliases=("deepseekv32",),
        reasoning=(THINK_TAGS,),
        tools=(
            ToolRegion(
                open=f"<{DSML}function_calls>",
                close=f"</{DSML}function_calls>",
                body=XmlParams(
                    function_open=f'<{DSML}invoke name="',
                    name_ends=('">',),
                    param_open=f'<{DSML}parameter name="',
                    key_ends=(('" string="true">', "string"), ('" string="false">', "json"), ('">', "")),
                    param_close=f"</{DSML}parameter>",
                    function_close=f"</{DSML}invoke>",
                ),
            ),
        ),
    ),
    FormatSpec(
        name="deepseek_v3_reasoning",
        description="DeepSeek V3 with thinking: reasoning only between <think> tags",
        aliases=("deepseekv3",),
        reasoning=(Reasoning(starts=(THINK,), ends=(THINK_END,)),),
    ),
)
