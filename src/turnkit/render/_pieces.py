"""Encoding rendered prompts piece by piece: the text between special tokens, each distinct piece encoded once.

``tokenizers`` first splits a text at its added tokens matched on the raw text (``normalized=False``: the special
tokens a template writes), makes each of them one token, and then normalises, pre-tokenises and encodes every
piece between them on its own. So a piece gives the same tokens wherever it appears, and training data repeats
pieces in every row (the system prompt, the tool schemas, role headers). :class:`PieceEncoder` makes that split
itself (leftmost-longest, as tokenizers' matcher does), encodes each distinct piece of a batch once, keeps them in
a bounded memo across batches and joins the ids.

That is exact only when nothing in the tokenizer depends on where a piece sits in the whole text;
:func:`inexact_reason` checks the configuration (added tokens that strip neighbouring whitespace or match single
words, Metaspace's ``prepend_scheme="first"``, BPE dropout, ``encode_special_tokens``; for the offsets masks are
read from, a ByteLevel/RoBERTa post-processor trimming offsets with ``add_prefix_space``). Where it fails, callers
encode whole texts. The differential tests compare every result with ``Tokenizer.encode`` on the whole text.

A new piece of a byte-level BPE tokenizer's text is encoded from a memo of its pre-tokens where that is exact
(:mod:`turnkit.render._pretokens`), else by ``tokenizers``.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from turnkit.render._pretokens import PreTokenEncoder, TokenMemo, component_config, plan

__all__ = ["PieceEncoder", "inexact_reason"]

_MEMO_TOKENS = 1 << 18
"""Token ids the memo holds at most (a few MB) before it starts over: memory stays flat on any input."""


def _components(node: Any, key: str) -> Iterator[dict[str, Any]]:
    """``node`` and, for a ``Sequence``, its members (recursively)."""
    if not isinstance(node, dict):
        return
    yield node
    for child in node.get(key) or ():
        yield from _components(child, key)


def inexact_reason(backend: Any, *, offsets: bool) -> str | None:
    """Why encoding piece by piece could differ from encoding the whole text (``None``: it cannot).

    ``offsets``: masks are wanted, so the token offsets must be the same too, not only the ids.
    """
    if getattr(backend, "encode_special_tokens", False):
        return "encode_special_tokens is set (special tokens are not split out)"
    contents: set[str] = set()
    for token in backend.get_added_tokens_decoder().values():
        if token.normalized:
            continue  # matched inside each piece, after normalisation: the same in a piece as in the whole
        if token.lstrip or token.rstrip or token.single_word:
            return f"the added token {token.content!r} strips whitespace or matches single words"
        if not token.content or token.content in contents:
            return f"the added token {token.content!r} is empty or duplicated"
        contents.add(token.content)
    if type(backend.model).__name__ == "BPE" and getattr(backend.model, "dropout", None):
        return "BPE dropout is random"
    for node in _components(component_config(backend.pre_tokenizer), "pretokenizers"):
        if node.get("type") == "Metaspace" and node.get("prepend_scheme") == "first":
            return "Metaspace prepend_scheme='first' treats the piece at the start of the text differently"
    if offsets:
        for node in _components(component_config(backend.post_processor), "processors"):
            if node.get("type") in ("ByteLevel", "RobertaProcessing") and node.get("trim_offsets", True):
                if node.get("add_prefix_space", True):
                    return "the post-processor trims the first token's offsets differently (add_prefix_space)"
    return None


class PieceEncoder:
    """Token ids (and assistant masks) of whole texts, from the distinct pieces between special tokens.

    Not thread-safe: the caller holds its tokenizer's lock around :meth:`encode`.
    """

    def __init__(self, backend: Any, mask: Callable[[Any, Sequence[tuple[int, int]]], list[int]]) -> None:
        self._backend = backend
        self._mask = mask  # generation_mask: the tokens of an encoding that overlap spans
        tokens = {t.content: i for i, t in backend.get_added_tokens_decoder().items() if not t.normalized}
        self._ids = tokens
        ordered = sorted(tokens, key=len, reverse=True)  # at one position the longest wins, as in tokenizers
        self._split = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._memo = TokenMemo(_MEMO_TOKENS)
        found = plan(backend)
        stops = {t.content for t in backend.get_added_tokens_decoder().values() if t.normalized}
        if backend.normalizer is not None:
            stops |= {backend.normalizer.normalize_str(stop) for stop in stops}
        self.pretokens = PreTokenEncoder(backend, found, sorted(stops)) if isinstance(found, tuple) else None
        """New pieces' ids from a memo of pre-tokens, where that is exact (:mod:`turnkit.render._pretokens`)."""

    def segments(self, text: str) -> list[tuple[int, int, int | None, str]]:
        """``(start, end, id, text)`` of each added token (its ``id``) and each piece between (``None``), in order."""
        out: list[tuple[int, int, int | None, str]] = []
        at = 0
        if self._split is not None:
            ids = self._ids
            for match in self._split.finditer(text):
                start, end = match.span()
                if start > at:
                    out.append((at, start, None, text[at:start]))
                token = match.group()
                out.append((start, end, ids[token], token))
                at = end
        if at < len(text):
            out.append((at, len(text), None, text[at:]))
        return out

    def encode(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[tuple[int, int]]] | None = None,
        *,
        mask_bytes: bool = False,
    ) -> list[tuple[list[int], list[int] | bytes | None] | None]:
        """``(ids, mask)`` per text: ``mask`` marks the tokens overlapping the text's ``spans`` (as ``mask`` does),
        ``None`` without ``spans``; with ``mask_bytes`` as ``bytes`` (a byte a token: it is built so, and a list of
        as many ints costs more to make than everything else here does with it). A text whose mask this cannot
        give exactly (a zero-width token at the end of a piece a span partly covers) is ``None``: encode it whole.

        Only pieces a span partly covers need token offsets (``encode_batch``); new pieces that no span reaches,
        or that one span covers, are encoded without (``encode_batch_fast``, about a third faster, same ids).
        """
        memo = self._memo.entries
        known: dict[str, list[int]] = {}  # this call's pieces and their ids
        new: dict[str, None] = {}  # pieces neither in the memo nor encoded yet
        located: dict[str, None] = {}  # pieces a span partly covers: encoded with offsets
        rows = []
        for index, text in enumerate(texts):
            segments = self.segments(text)
            live = [(s, e) for s, e in spans[index] if e > s] if spans is not None else []
            kinds: list[int] | None = None  # per segment: 0 unmarked, 1 marked, 2 by the piece's offsets
            if spans is not None:
                kinds = []
                for start, end, token, piece in segments:
                    if not live:
                        kind = 0
                    elif token is not None:
                        kind = 0
                        for s, e in live:  # a loop, not any(): cheaper over a text's few spans
                            if s < end and e > start:
                                kind = 1
                                break
                    else:
                        kind = _coverage(start, end, live)
                        if kind == 2:
                            located[piece] = None
                    kinds.append(kind)
            for _, _, token, piece in segments:
                if token is None and piece not in known:
                    hit = memo.get(piece)
                    if hit is None:
                        new[piece] = None
                    else:
                        known[piece] = hit
            rows.append((segments, live, kinds))
        fresh: dict[str, Any] = {}  # pieces a span partly covers: their Encoding, or their tokens' starts and ends
        pretokens = self.pretokens
        if pretokens is not None:
            for piece in located:
                bounds = pretokens.locate(piece)
                if bounds is not None:
                    fresh[piece] = bounds[1:]
                    if piece not in known:
                        known[piece] = bounds[0]
                        self._memo.remember(piece, bounds[0])
            for piece in new:
                if piece not in known:
                    piece_ids = pretokens.encode(piece)
                    if piece_ids is not None:
                        known[piece] = piece_ids
                        self._memo.remember(piece, piece_ids)
        backend = self._backend
        for pieces, offsets in (
            ([p for p in located if p not in fresh], True),
            ([p for p in new if p not in located and p not in known], False),
        ):
            if not pieces:
                continue
            encode = backend.encode_batch if offsets else getattr(backend, "encode_batch_fast", backend.encode_batch)
            for piece, encoding in zip(pieces, encode(pieces, add_special_tokens=False), strict=True):
                if offsets:
                    fresh[piece] = encoding
                if piece not in known:
                    known[piece] = encoding.ids
                    self._memo.remember(piece, known[piece])
        results: list[tuple[list[int], list[int] | bytes | None] | None] = []
        for segments, live, kinds in rows:
            ids: list[int] = []
            if kinds is None:
                for _, _, token, piece in segments:
                    if token is None:
                        ids.extend(known[piece])
                    else:
                        ids.append(token)
                results.append((ids, None))
                continue
            mask = bytearray()
            exact = True
            for (start, end, token, piece), kind in zip(segments, kinds, strict=True):
                if token is not None:
                    ids.append(token)
                    mask.append(kind)
                    continue
                piece_ids = known[piece]
                ids.extend(piece_ids)
                if kind != 2:
                    mask += _FILL[kind] * len(piece_ids)
                    continue
                encoding = fresh[piece]
                local = [(max(s - start, 0), min(e, end) - start) for s, e in live if s < end and e > start]
                if isinstance(encoding, tuple):  # offsets in bytes of UTF-8 (see PreTokenEncoder.locate)
                    if not piece.isascii():
                        local = [(len(piece[:s].encode()), len(piece[:e].encode())) for s, e in local]
                    mask += _overlaps(encoding[0], encoding[1], local)
                    continue
                last = encoding.token_to_chars(len(piece_ids) - 1) if piece_ids else None
                if last is not None and last[0] == last[1] == end - start:
                    exact = False  # a zero-width token at the piece's end: only the whole text says
                    break
                mask += bytes(self._mask(encoding, local))
            results.append((ids, bytes(mask) if mask_bytes else list(mask)) if exact else None)
        return results


_FILL = (b"\x00", b"\x01")


def _overlaps(starts: list[int], ends: list[int], spans: Sequence[tuple[int, int]]) -> bytearray:
    """1 for each token overlapping a non-empty span, the tokens given by their starts and ends (in text order, no
    zero-width token): what :func:`~turnkit.render._tokenize.generation_mask` gives on such offsets. Offsets and
    spans may both be in UTF-8 bytes instead of characters: a token from the character holding its first byte to
    the one holding its last overlaps the characters ``[s, e)`` exactly when its bytes overlap theirs."""
    mask = bytearray(len(ends))
    for start, end in spans:
        first, last = bisect_right(ends, start), bisect_left(starts, end) - 1
        mask[first : last + 1] = b"\x01" * max(last + 1 - first, 0)
    return mask


def _coverage(start: int, end: int, spans: Sequence[tuple[int, int]]) -> int:
    """How the spans cover the piece ``[start, end)``, zero-width tokens at its end included. 0: no token of it
    can be marked (every span ends by its start or starts past its end); 1: every token is marked (one span starts
    by its start and ends past its end); 2: it depends on the tokens' offsets."""
    kind = 0
    for s, e in spans:  # a plain loop: two generator expressions cost more than the few spans a text has
        if e > start and s <= end:
            if s <= start and e > end:
                return 1
            kind = 2
    return kind
