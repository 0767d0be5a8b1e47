"""Guessing a template's output format from the markers its text writes: a short, conservative table."""

from __future__ import annotations

__all__ = ["SIGNATURES", "guess_format"]

# (format name, markers that must all occur in the template text); the first match wins, so the more
# specific signatures come before the ones they contain.
SIGNATURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("gpt_oss", ("<|channel|>", "<|message|>", "<|start|>")),
    ("qwen3_coder_xml", ("<tool_call>", "<function=", "<parameter=")),
    ("glm45", ("<tool_call>", "<arg_key>", "<arg_value>")),
    ("minimax_m2", ("<minimax:tool_call>",)),
    ("kimi_k2", ("<|tool_calls_section_begin|>", "<|tool_call_begin|>")),
    ("seed_oss", ("<seed:tool_call>",)),
    ("longcat", ("<longcat_tool_call>",)),
    ("command_r7b", ("<|START_ACTION|>",)),
    ("functiongemma", ("<start_function_call>",)),
    ("gemma4", ("<|tool_call>",)),
    ("granite", ("<|tool_call|>",)),
    ("nemotron_v2", ("<TOOLCALL>",)),
    ("hermes", ("<tool_call>", "</tool_call>")),
    ("think", ("<think>", "</think>")),
)


def guess_format(template_text: str) -> str | None:
    """The built-in format whose markers the template writes, or None when turnkit cannot tell."""
    for name, markers in SIGNATURES:
        if all(marker in template_text for marker in markers):
            return name
    return None
