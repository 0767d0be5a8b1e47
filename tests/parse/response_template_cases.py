"""Response templates for the differential tests against transformers 5.23.

``SHIPPED``: the templates transformers 5.23 itself ships (``transformers/cli/serving/utils.py``
``_RESPONSE_TEMPLATE_FALLBACKS``), read from the installed package so they cannot drift. ``REEXPRESSED``: the six
real-model formats transformers' ``tests/utils/test_chat_parsing.py`` re-expresses (Cohere, ERNIE, gpt-oss,
SmolLM3, Qwen3, Gemma 4), written here in the 5.23 shape (``transform`` for ``assemble``, ``transform_each`` for
the JMESPath list reshaping, ``json`` with dialect knobs for ``json-lax``, a ``start_anchor`` each).
"""

from __future__ import annotations

from typing import Any


def shipped() -> dict[str, dict[str, Any]]:
    from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS

    return {types[0]: template for types, template in _RESPONSE_TEMPLATE_FALLBACKS.items()}


CALL = {"type": "function", "function": "{content}"}
NAMED_CALL = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}

REEXPRESSED: dict[str, dict[str, Any]] = {
    "cohere": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
        "fields": {
            "content": {"open": "<|START_RESPONSE|>", "close_pattern": r"(?:<\|END_RESPONSE\|>|$)"},
            "thinking": {"open": "<|START_THINKING|>", "close_pattern": r"(?:<\|END_THINKING\|>|$)"},
            "tool_calls": {
                "open": "<|START_ACTION|>",
                "close_pattern": r"(?:<\|END_ACTION\|>|$)",
                "content": "json",
                "transform": {"type": "function", "function": {"name": "{tool_name}", "arguments": "{parameters}"}},
                "transform_each": True,
            },
        },
    },
    "ernie": {
        "defaults": {"role": "assistant"},
        "start_anchor": "Assistant: ",
        "fields": {
            "thinking": {"open_pattern": r"(?:^|<think>\s*)", "close": "</think>"},
            "content": {"open": "<response>\n", "close_pattern": r"\n?</response>"},
            "tool_calls": {
                "open": "<tool_call>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "json",
                "transform": CALL,
            },
        },
    },
    "gpt_oss": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|start|>assistant",
        "fields": {
            "thinking": {"open": "<|channel|>analysis<|message|>", "close": "<|end|>"},
            "content": {"open": "<|channel|>final<|message|>", "close": ["<|end|>", "<|return|>"]},
            "tool_calls": {
                "open_pattern": r"<\|channel\|>commentary to=functions\.(?P<name>\w+).*?<\|message\|>",
                "close": "<|call|>",
                "repeats": True,
                "content": "json",
                "transform": NAMED_CALL,
            },
        },
    },
    "smollm3": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "thinking": {"open": "<think>", "close": "</think>"},
            "tool_calls": {
                "open": "<tool_call>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "json",
                "transform": CALL,
            },
            "content": {"close_pattern": r"(?:<\|im_end\|>|$)"},
        },
    },
    "qwen3": {
        "defaults": {"role": "assistant"},
        "start_anchor_pattern": r"<\|im_start\|>assistant\n",
        "fields": {
            "thinking": {"open": "<think>", "close": "</think>"},
            "tool_calls": {
                "open_pattern": r"<tool_call>\s*<function=(?P<name>\w+)>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": r"<parameter=(?P<key>\w+)>\s*(?P<value>.*?)\s*</parameter>",
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": NAMED_CALL,
            },
        },
    },
    "gemma4": {
        "defaults": {"role": "assistant"},
        "start_anchor": ["<|turn>model\n", "<tool_response|>"],
        "fields": {
            "thinking": {"open": "<|channel>thought\n", "close": "<channel|>"},
            "tool_calls": {
                "open_pattern": r"<\|tool_call>call:(?P<name>\w+)",
                "close": "<tool_call|>",
                "repeats": True,
                "content": "json",
                "content_args": {"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]},
                "transform": NAMED_CALL,
            },
        },
    },
}

# Templates written for the streaming tests: their fields stream as text (a join field, a field without a close
# marker, the implicit field when nothing closes), beside tool calls given when complete. Valid 5.23 templates:
# the differential runs them too.
STREAMING: dict[str, dict[str, Any]] = {
    "calls_to_the_end": {  # Mistral-like: content, then [TOOL_CALLS] and JSON up to the end of the output
        "defaults": {"role": "assistant"},
        "start_anchor": "[/INST]",
        "fields": {
            "content": {},
            "tool_calls": {"open": "[TOOL_CALLS]", "content": "json", "content_args": {"allow_non_json": True}},
        },
    },
    "joined_reasoning_and_answer": {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>", "repeats": True, "join": "\n\n"},
            "tool_calls": {
                "open": "<tool_call>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "json",
                "content_args": {"allow_non_json": True},
            },
            "content": {"open": "<answer>"},
        },
    },
    "plain_unstripped": {
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {"content": {"content_args": {"strip": False}}},
    },
}

# Corpus format labels whose outputs each template is meant for (the differential also runs every template
# over every corpus output; these are the ones where the parse is expected to find something).
FAMILIES = {
    "qwen2": ("hermes", "qwen2_5", "qwen3"),
    "qwen3_5": ("qwen3_coder_xml", "qwen3coder", "qwen3_xml"),
    "gemma4": ("gemma4",),
    "cohere": ("command_r7b",),
    "ernie": ("ernie45",),
    "gpt_oss": ("gpt_oss", "openai"),
    "smollm3": ("hermes",),
    "qwen3": ("qwen3_coder_xml",),
}

HANDWRITTEN = [
    "",
    "Hello there.",
    "<think>plan</think>Answer<|im_end|>",
    "<think>\nplan\n</think>\n\nAnswer<|im_end|>\n<|endoftext|>",
    '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>\n<tool_call>\n{"name": "g", "arguments": {}}\n'
    "</tool_call><|im_end|>",
    "Text before <tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n"
    "</parameter>\n</function>\n</tool_call><|im_end|>",
    '<tool_call>{"name": broken</tool_call>',
    "<think>unclosed reasoning",
    '<|channel>thought\nweighing<channel|>Sure.<|tool_call>call:get{city:<|"|>Paris<|"|>,n:2}<tool_call|><turn|>',
    '<|START_THINKING|>hmm<|END_THINKING|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": "t", '
    '"parameters": {"x": "7"}}]<|END_ACTION|>',
    "<|START_RESPONSE|>Plain answer<|END_RESPONSE|>",
    "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>done<|return|>",
    "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>commentary to=functions.f "
    '<|constrain|>json<|message|>{"a": "b"}<|call|>',
    "I think</think>\n\n<response>\nHi!\n</response>\n</s>",
    "<tool_call>\n<function=f>\n<parameter=x>\n[1, 2]\n</parameter>\n</function>\n</tool_call>",
    '\x01\x02 sentinel <|tool_call>call:f{a:<|"|>\x01<|"|>}<tool_call|>',
]

# Tools whose parameter schemas type tool-call arguments (transformers coerces strings by them).
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "x": {"type": ["number", "null"]},
                    "a": {"type": "integer"},
                },
            },
        },
    }
    for name in ("f", "get_weather", "t", "get")
]


PREFIXES = [
    "",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    "<|turn>user\nhi<turn|>\n<|turn>model\n",
    "<|start|>user<|message|>hi<|end|><|start|>assistant",
]
