"""transformers 5.23, built offline, as the reference renderer for differential tests."""

from __future__ import annotations

import functools
import warnings
from datetime import datetime
from typing import Any

import pytest

SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}


class StoppedClock(datetime):
    """``datetime`` stopped at one instant."""

    @classmethod
    def now(cls, tz: Any = None) -> StoppedClock:
        return cls(2026, 11, 25, 12, 0, 0, tzinfo=tz)


def stop_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stop ``strftime_now``'s clock in turnkit and in transformers: templates that print the time to the second
    (Hunyuan's ``%H:%M:%S``) would differ whenever a second ends between two renders compared."""
    from turnkit.render import _sandbox

    monkeypatch.setattr(_sandbox, "datetime", StoppedClock)
    try:
        from transformers.utils import chat_template_utils
    except ImportError:
        return
    monkeypatch.setattr(chat_template_utils, "datetime", StoppedClock)


@functools.cache
def reference_tokenizer() -> Any:
    """A transformers tokenizer with only special tokens: enough to run its apply_chat_template for real."""
    pytest.importorskip("transformers")
    with warnings.catch_warnings():
        # transformers warns at import that PyTorch is absent; rendering does not need it.
        warnings.simplefilter("ignore")
        import tokenizers
        from tokenizers.models import WordLevel
        from transformers import PreTrainedTokenizerFast
        from transformers.utils import logging

    logging.set_verbosity_error()
    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS.values())}
    backend = tokenizers.Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    return PreTrainedTokenizerFast(tokenizer_object=backend, **SPECIAL_TOKENS)


def reference_render(conversation: Any, chat_template: Any, **kwargs: Any) -> tuple[str, Any]:
    """('ok', text) or ('error', exception) from transformers' apply_chat_template(..., tokenize=False)."""
    tokenizer = reference_tokenizer()
    if isinstance(chat_template, dict):
        tokenizer.chat_template = chat_template
        template_arg = kwargs.pop("template_name", None)
    else:
        tokenizer.chat_template = None
        template_arg = chat_template
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            text = tokenizer.apply_chat_template(conversation, chat_template=template_arg, tokenize=False, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any failure is the reference's answer
        return "error", exc
    return "ok", text
