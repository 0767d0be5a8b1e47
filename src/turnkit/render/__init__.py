"""Rendering conversations into prompts: the hardened Jinja sandbox and chat templates."""

from __future__ import annotations

from turnkit.render._template import ChatTemplate, apply_chat_template
from turnkit.render._tokenize import ChatTokenizer, DoubleBosWarning

__all__ = ["ChatTemplate", "ChatTokenizer", "DoubleBosWarning", "apply_chat_template"]
