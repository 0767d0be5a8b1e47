"""OpenAI gpt-oss (harmony): header-routed messages; ``analysis`` is reasoning, ``to=functions.X`` a call."""

from __future__ import annotations

from turnkit.parse._spec import FormatSpec, Harmony
from turnkit.parse.builtin._tokens import HARMONY_END

START = "<|start|>"
CHANNEL = "<|channel|>"
RECIPIENT = "to="

FORMATS = (
    FormatSpec(
        name="gpt_oss",
        description="<|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>commentary to=functions.X",
        aliases=("openai", "harmony"),
        harmony=Harmony(
            header_opens=(START, CHANNEL),
            message="<|message|>",
            ends=(HARMONY_END, "<|call|>", "<|return|>"),
            reasoning_channels=("analysis",),
            recipient_prefix="functions.",
            starts_in_header_after=START + "assistant",
            header_starts=(RECIPIENT,),
            self_recipients=("assistant",),
            channel=CHANNEL,
            recipient=RECIPIENT,
        ),
    ),
)
