"""Rendering conversations into prompts: the hardened Jinja sandbox, chat templates and model folders."""

from __future__ import annotations

from turnkit.render._model_folder import ModelFolder, read_model_folder, write_model_folder
from turnkit.render._template import ChatTemplate, apply_chat_template
from turnkit.render._tokenize import ChatTokenizer, DoubleBosWarning

__all__ = [
    "ChatTemplate",
    "ChatTokenizer",
    "DoubleBosWarning",
    "ModelFolder",
    "apply_chat_template",
    "read_model_folder",
    "write_model_folder",
]
