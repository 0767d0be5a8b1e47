"""Tokenised rendering: the ``input_ids``, ``attention_mask`` and ``assistant_masks`` transformers 5.23 returns.

``apply_chat_template(..., tokenize=True)`` renders the text, then encodes it with a ``tokenizers`` tokenizer the
way transformers' fast tokenizers do (``add_special_tokens=False``: the template writes the special tokens itself;
the backend's own truncation and padding, set per call). Assistant masks come from the character spans of the
``{% generation %}`` blocks. transformers maps a span to tokens with ``char_to_token`` on its first and last
character, which goes wrong when either character belongs to no token (whitespace a pre-tokenizer drops, offsets
trimmed by a post-processor): the span is then dropped with every later one, or the mask runs to the end of the
sequence (transformers issue #47325). turnkit marks exactly the tokens whose characters overlap a span.

``tokenizers`` is an optional dependency (``pip install 'turnkit[tokenize]'``), imported only here.
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnkit._args import expect, expect_int
from turnkit._extras import require
from turnkit.errors import TemplateError, TokenizerError
from turnkit.render._pieces import PieceEncoder, inexact_reason
from turnkit.render._spans import TRACKER, SpanTracker

if TYPE_CHECKING:
    from turnkit.render._template import ChatTemplate, Conversation

__all__ = [
    "ChatTokenizer",
    "DoubleBosWarning",
    "TokenizerSpec",
    "generation_mask",
    "render_with_spans",
    "tokenize_chat",
]

TokenizerSpec = Any
"""What ``tokenizer=`` accepts: a path to ``tokenizer.json`` or to a model folder, a ``tokenizers.Tokenizer``,
or a :class:`ChatTokenizer`."""

# transformers' "no maximum length": model_max_length at or past this means unknown.
_HUGE = int(1e29)
_PADDING = {True: "longest", False: None, "longest": "longest", "max_length": "max_length", "do_not_pad": None}
_TRUNCATION = {
    True: "longest_first",
    False: None,
    "longest_first": "longest_first",
    "only_first": "longest_first",
    "do_not_truncate": None,
}


class DoubleBosWarning(UserWarning):
    """``add_special_tokens=True`` put a second BOS token in front of a prompt whose template already wrote one."""


class ChatTokenizer:
    """A ``tokenizers.Tokenizer`` with the settings transformers reads beside it (``tokenizer_config.json``).

    The backend is a private copy: per-call truncation and padding are set on it under a lock, never on the
    caller's object.
    """

    __slots__ = (
        "_backend",
        "_fast",
        "_lock",
        "_pieces",
        "padding_side",
        "truncation_side",
        "model_max_length",
        "pad_token",
        "bos_token",
        "source",
    )

    def __init__(
        self,
        tokenizer: Any,
        *,
        padding_side: str = "right",
        truncation_side: str = "right",
        model_max_length: int | None = None,
        pad_token: str | None = None,
        bos_token: str | None = None,
        source: str | None = None,
    ) -> None:
        expect(padding_side, str, name="padding_side", func="ChatTokenizer")
        expect(truncation_side, str, name="truncation_side", func="ChatTokenizer")
        expect_int(model_max_length, name="model_max_length", func="ChatTokenizer", minimum=0, none=True)
        expect(pad_token, str, name="pad_token", func="ChatTokenizer", none=True)
        expect(bos_token, str, name="bos_token", func="ChatTokenizer", none=True)
        expect(source, str, name="source", func="ChatTokenizer", none=True)
        tokenizers = _tokenizers()
        if not isinstance(tokenizer, tokenizers.Tokenizer):
            raise TokenizerError(f"expected a tokenizers.Tokenizer, got {type(tokenizer).__name__}")
        backend = tokenizers.Tokenizer.from_str(tokenizer.to_str())
        backend.no_truncation()
        backend.no_padding()
        self._backend = backend
        self._fast = hasattr(backend, "encode_batch_fast")  # tokenizers >= 0.21
        self._lock = threading.Lock()
        self._pieces: dict[bool, PieceEncoder | None] = {}
        for name, side in (("padding_side", padding_side), ("truncation_side", truncation_side)):
            if side not in ("left", "right"):
                raise TokenizerError(f"{name} must be 'left' or 'right', got {side!r}")
        self.padding_side = padding_side
        self.truncation_side = truncation_side
        self.model_max_length = model_max_length if model_max_length is not None and model_max_length < _HUGE else None
        self.pad_token = pad_token
        self.bos_token = bos_token
        self.source = source

    @classmethod
    def load(cls, spec: TokenizerSpec, *, special_tokens: Mapping[str, Any] | None = None) -> ChatTokenizer:
        """A tokenizer from a ``tokenizer.json`` path, a model folder, a ``tokenizers.Tokenizer`` or itself."""
        if isinstance(spec, ChatTokenizer):
            return spec
        special = dict(special_tokens or {})
        if isinstance(spec, str | os.PathLike):
            path = Path(spec)
            folder = path if path.is_dir() else path.parent
            file = path / "tokenizer.json" if path.is_dir() else path
            if not file.is_file():
                raise TokenizerError(
                    f"no tokenizer.json at {os.fspath(file)!r}: tokenized rendering needs one "
                    "(turnkit reads tokenizer.json only, never sentencepiece or vocab files)"
                )
            config = _read_config(folder / "tokenizer_config.json")
            tokenizers = _tokenizers()
            try:
                backend = tokenizers.Tokenizer.from_file(os.fspath(file))
            except Exception as exc:  # noqa: BLE001 - tokenizers raises plain Exception on bad files
                raise TokenizerError(f"cannot load the tokenizer {os.fspath(file)!r}: {exc}") from exc
            for key in ("pad_token", "bos_token"):
                if key not in special and isinstance(config.get(key), str):
                    special[key] = config[key]
            max_length = config.get("model_max_length")
            return cls(
                backend,
                padding_side=str(config.get("padding_side", "right")),
                truncation_side=str(config.get("truncation_side", "right")),
                model_max_length=int(max_length) if isinstance(max_length, int | float) else None,
                pad_token=_token_text(special.get("pad_token")),
                bos_token=_token_text(special.get("bos_token")),
                source=os.fspath(file),
            )
        return cls(
            spec, pad_token=_token_text(special.get("pad_token")), bos_token=_token_text(special.get("bos_token"))
        )

    @property
    def backend(self) -> Any:
        """The ``tokenizers.Tokenizer`` (a private copy)."""
        return self._backend

    def __reduce__(self) -> tuple[Any, ...]:
        state = (
            self._backend,
            self.padding_side,
            self.truncation_side,
            self.model_max_length,
            self.pad_token,
            self.bos_token,
            self.source,
        )
        return (_rebuild, state)

    def encode(
        self,
        texts: Sequence[str],
        *,
        add_special_tokens: bool = False,
        padding: bool | str = False,
        truncation: bool | str = False,
        max_length: int | None = None,
        padding_side: str | None = None,
        offsets: bool = True,
    ) -> list[Any]:
        """``tokenizers.Encoding`` per text, truncated and padded as transformers' fast tokenizers do.

        Several texts are encoded by ``encode_batch`` (Rust threads, without the GIL, unless
        ``TOKENIZERS_PARALLELISM=false``). ``offsets=False`` skips character offsets (``encode_batch_fast``:
        the same ids, about a third faster; the encodings' offsets are then all ``(0, 0)``, so no masks).
        """
        pad = _option(padding, _PADDING, "padding")
        truncate = _option(truncation, _TRUNCATION, "truncation")
        if max_length is None and (truncate or pad == "max_length"):
            max_length = self.model_max_length
        if truncate and max_length is None:
            truncate = None  # transformers: "no maximum length ... Default to no truncation"
        if pad == "max_length" and max_length is None:
            raise TokenizerError("padding='max_length' needs max_length= (the tokenizer has no model_max_length)")
        pad_id: int | None = None
        if pad is not None:
            if self.pad_token is None:
                raise TokenizerError(
                    "asked to pad, but the tokenizer has no pad token: pass pad_token= as a "
                    "special token or set it in tokenizer_config.json"
                )
            pad_id = self._backend.token_to_id(self.pad_token)
            if pad_id is None:
                raise TokenizerError(f"the pad token {self.pad_token!r} is not in the tokenizer's vocabulary")
        texts = texts if isinstance(texts, list) else list(texts)
        with self._lock:
            backend = self._backend
            try:
                if truncate:
                    backend.enable_truncation(max_length, stride=0, strategy=truncate, direction=self.truncation_side)
                if pad is not None:
                    backend.enable_padding(
                        direction=padding_side or self.padding_side,
                        pad_id=pad_id,
                        pad_type_id=0,
                        pad_token=self.pad_token,
                        length=max_length if pad == "max_length" else None,
                        pad_to_multiple_of=None,
                    )
                if not offsets and self._fast:
                    result: list[Any] = backend.encode_batch_fast(texts, add_special_tokens=add_special_tokens)
                elif len(texts) == 1:  # no thread-pool round trip for one text
                    result = [backend.encode(texts[0], add_special_tokens=add_special_tokens)]
                else:
                    result = backend.encode_batch(texts, add_special_tokens=add_special_tokens)
                return result
            except Exception as exc:  # noqa: BLE001 - tokenizers raises plain Exception
                raise TokenizerError(f"tokenizing failed: {exc}") from exc
            finally:
                if truncate:
                    backend.no_truncation()
                if pad is not None:
                    backend.no_padding()

    def encode_plain(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[tuple[int, int]]] | None = None,
        *,
        mask_bytes: bool = False,
    ) -> list[tuple[list[int], list[int] | bytes | None]]:
        """``(ids, mask)`` per text, without special tokens, truncation or padding: what batch rendering needs.

        ``mask`` is :func:`generation_mask` of the text's ``spans`` (``None`` without ``spans``), as ``bytes`` with
        ``mask_bytes`` (what the batch writers take). The distinct pieces between special tokens are encoded once
        and remembered (:mod:`turnkit.render._pieces`) when the tokenizer's configuration makes that exact; else
        each text is encoded whole. Same result either way.
        """
        texts = texts if isinstance(texts, list) else list(texts)
        masks = spans is not None
        with self._lock:
            if masks not in self._pieces:
                exact = inexact_reason(self._backend, offsets=masks) is None
                self._pieces[masks] = PieceEncoder(self._backend, generation_mask) if exact else None
            pieces = self._pieces[masks]
            found: list[tuple[list[int], list[int] | bytes | None] | None] = [None] * len(texts)
            try:
                if pieces is not None:
                    found = pieces.encode(texts, spans, mask_bytes=mask_bytes)
            except Exception as exc:  # noqa: BLE001 - tokenizers raises plain Exception
                raise TokenizerError(f"tokenizing failed: {exc}") from exc
        missing = [index for index, result in enumerate(found) if result is None]
        if missing:
            encodings = self.encode([texts[index] for index in missing], offsets=masks)
            for index, encoding in zip(missing, encodings, strict=True):
                mask = generation_mask(encoding, spans[index]) if spans is not None else None
                found[index] = (encoding.ids, bytes(mask) if mask_bytes and mask is not None else mask)
        return [result for result in found if result is not None]


def _rebuild(
    backend: Any,
    padding_side: str,
    truncation_side: str,
    model_max_length: int | None,
    pad_token: str | None,
    bos_token: str | None,
    source: str | None,
) -> ChatTokenizer:
    return ChatTokenizer(
        backend,
        padding_side=padding_side,
        truncation_side=truncation_side,
        model_max_length=model_max_length,
        pad_token=pad_token,
        bos_token=bos_token,
        source=source,
    )


def _tokenizers() -> Any:
    return require("tokenizers", "tokenize", purpose="tokenized rendering")


def _token_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def _read_config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TokenizerError(f"cannot read {os.fspath(path)!r}: {exc}") from exc
    return config if isinstance(config, dict) else {}


def _option(value: Any, table: Mapping[Any, str | None], name: str) -> str | None:
    try:
        return table[value]
    except (KeyError, TypeError):
        raise TokenizerError(f"{name}={value!r} is not one of {sorted(map(repr, table))}") from None


_PROBE = 8
"""Characters tried at each edge of a span for a covering token before the mask falls back to every offset."""


def generation_mask(encoding: Any, spans: Sequence[tuple[int, int]]) -> list[int]:
    """1 for every token of ``encoding`` whose characters overlap a ``(start, end)`` span, else 0.

    Tokens the post-processor or padding added (no sequence id) are never marked; a zero-width token counts
    when it sits inside a span.

    Each span costs a few ``char_to_token`` / ``token_to_chars`` calls in Rust (the first and last tokens covering
    it, then the neighbours sharing its edge characters: a character split over several byte-level tokens,
    zero-width tokens); the offsets of the whole sequence are never read back into Python. Token offsets are in
    text order (tokenizers keeps them so). When no token covers the first or last few characters of a span, it
    falls back to :func:`overlap_mask`, which reads every offset; the two give the same mask.
    """
    count = len(encoding)
    if not spans:
        return [0] * count
    mask = bytearray(count)
    char_to_token = encoding.char_to_token
    token_to_chars = encoding.token_to_chars
    for start, end in spans:
        if end <= start:
            continue
        first = None
        at = start
        for at in range(start, min(end, start + _PROBE)):
            first = char_to_token(at)
            if first is not None:
                break
        if first is None:
            return overlap_mask(encoding, spans)
        last = None
        for char in range(end - 1, max(at, end - _PROBE) - 1, -1):
            last = char_to_token(char)
            if last is not None:
                break
        if last is None:
            return overlap_mask(encoding, spans)
        before = first - 1
        while before >= 0:  # zero-width tokens just before, inside the span
            chars = token_to_chars(before)
            if chars is None or chars[0] != chars[1] or not start <= chars[0] < end:
                break
            before -= 1
        after = last + 1
        while after < count:  # tokens sharing the last character, zero-width tokens inside the span
            chars = token_to_chars(after)
            if chars is None or chars[0] >= end or (chars[0] == chars[1] and chars[0] < start):
                break
            after += 1
        mask[before + 1 : after] = b"\x01" * (after - before - 1)
    return list(mask)


def overlap_mask(encoding: Any, spans: Sequence[tuple[int, int]]) -> list[int]:
    """:func:`generation_mask` from every token's offsets (any offsets, in order or not)."""
    offsets = encoding.offsets
    if not spans:
        return [0] * len(offsets)
    length = max(max((end for _, end in offsets), default=0), max(end for _, end in spans)) + 1
    inside = bytearray(length)
    for start, end in spans:
        if end > start:
            inside[start:end] = b"\x01" * (end - start)
    find = inside.find
    return [
        0 if sequence is None else (1 if (find(1, start, end) >= 0 if end > start else inside[start]) else 0)
        for sequence, (start, end) in zip(encoding.sequence_ids, offsets, strict=True)
    ]


def transformers_mask(encoding: Any, spans: Sequence[tuple[int, int]]) -> list[int]:
    """The mask transformers 5.23 computes (``char_to_token`` on each span's first and last character).

    Kept to document and test the deviation; turnkit returns :func:`generation_mask`.
    """
    mask = [0] * len(encoding.ids)
    for start_char, end_char in spans:
        start = encoding.char_to_token(start_char)
        end = encoding.char_to_token(end_char - 1)
        if start is None:
            break
        for token in range(start, end + 1 if end else len(mask)):
            mask[token] = 1
    return mask


def tokenize_chat(
    template: ChatTemplate,
    conversation: Conversation | Sequence[Conversation],
    *,
    tokenizer: TokenizerSpec | None,
    render: Callable[..., Any],
    return_dict: bool,
    return_assistant_tokens_mask: bool,
    return_tensors: str | None,
    padding: bool | str,
    truncation: bool | str,
    max_length: int | None,
    add_special_tokens: bool,
    continue_final_message: bool | str,
) -> Any:
    """Render ``conversation`` with ``render`` and tokenize it; the shapes transformers 5.23 returns."""
    if return_assistant_tokens_mask and not return_dict:
        raise TemplateError(
            "return_assistant_tokens_mask=True requires return_dict=True (and tokenize=True)", code="template_input"
        )
    if return_assistant_tokens_mask and continue_final_message:
        raise TemplateError(
            "continue_final_message is not compatible with return_assistant_tokens_mask", code="template_input"
        )
    if return_tensors not in (None, "np", "pt"):
        raise TokenizerError(f"return_tensors must be None, 'np' or 'pt', got {return_tensors!r}")
    chat_tokenizer = (
        template.tokenizer
        if tokenizer is None
        else ChatTokenizer.load(tokenizer, special_tokens=template.special_tokens)
    )
    if chat_tokenizer is None:
        raise TokenizerError(
            "tokenize=True needs a tokenizer: pass tokenizer= (a tokenizer.json path, a model "
            "folder or a tokenizers.Tokenizer), or load the template with "
            "ChatTemplate.from_pretrained from a folder that has tokenizer.json"
        )
    tracker = SpanTracker() if return_assistant_tokens_mask else None
    token = TRACKER.set(tracker)
    try:
        rendered = render()
    finally:
        TRACKER.reset(token)
    batched = not isinstance(rendered, str)
    texts: list[str] = list(rendered) if batched else [rendered]
    plain = not add_special_tokens and _option(padding, _PADDING, "padding") is None
    if plain and _option(truncation, _TRUNCATION, "truncation") is None:
        # no special tokens, truncation or padding: the memo of pieces between special tokens applies
        encoded = chat_tokenizer.encode_plain(texts, tracker.renders if tracker is not None else None)
        input_ids = [ids for ids, _ in encoded]
        attention = [[1] * len(ids) for ids in input_ids]
        masks = [mask for _, mask in encoded]
    else:
        encodings = chat_tokenizer.encode(
            texts,
            add_special_tokens=add_special_tokens,
            padding=padding,
            truncation=truncation,
            max_length=max_length,
            offsets=tracker is not None,
        )
        if add_special_tokens:
            _warn_double_bos(chat_tokenizer, texts, encodings)
        input_ids = [e.ids for e in encodings]
        attention = [e.attention_mask for e in encodings]
        if tracker is not None:
            masks = [generation_mask(e, spans) for e, spans in zip(encodings, tracker.renders, strict=True)]
    if not return_dict:
        value: Any = input_ids if batched else input_ids[0]
        return _tensor(value if batched or return_tensors is None else [value], return_tensors)
    out: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention}
    if tracker is not None:
        out["assistant_masks"] = masks
    if not batched and return_tensors is None:
        return {key: value[0] for key, value in out.items()}
    return {key: _tensor(value, return_tensors) for key, value in out.items()}


def _warn_double_bos(tokenizer: ChatTokenizer, texts: Sequence[str], encodings: Sequence[Any]) -> None:
    bos = tokenizer.bos_token
    if not bos:
        return
    bos_id = tokenizer.backend.token_to_id(bos)
    for text, encoding in zip(texts, encodings, strict=True):
        ids = [i for i, s in zip(encoding.ids, encoding.sequence_ids, strict=True) if s is not None or i == bos_id]
        if text.startswith(bos) and len(ids) >= 2 and ids[0] == ids[1] == bos_id:
            warnings.warn(
                f"add_special_tokens=True added a second {bos!r} in front of a prompt the template already starts "
                "with it; leave add_special_tokens=False (the default, as transformers does)",
                DoubleBosWarning,
                stacklevel=4,
            )
            return


def _tensor(value: Any, kind: str | None) -> Any:
    if kind is None:
        return value
    if isinstance(value, list) and value and isinstance(value[0], list) and len({len(row) for row in value}) > 1:
        raise TokenizerError(
            "cannot make a tensor of sequences of different lengths: pass padding=True "
            "(and truncation=True to cap them)"
        )
    if kind == "np":
        numpy = require("numpy", None, purpose="return_tensors='np'")
        return numpy.asarray(value)
    torch = require("torch", None, purpose="return_tensors='pt'")
    return torch.tensor(value)


def render_with_spans(render: Callable[[], str]) -> tuple[str, list[tuple[int, int]]]:
    """Call ``render`` (one conversation) and return its text with the ``{% generation %}`` spans."""
    tracker = SpanTracker()
    token = TRACKER.set(tracker)
    try:
        text = render()
    finally:
        TRACKER.reset(token)
    return text, tracker.renders[0] if tracker.renders else []
