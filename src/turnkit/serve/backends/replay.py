"""A backend that replays recorded model outputs: no model needed (demos, tests, benchmarks)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from turnkit._args import check_fields, expect, expect_items, fail_value
from turnkit.serve._errors import BadRequestError
from turnkit.serve.backends._base import BackendChunk, SamplingParams, Usage

__all__ = ["ReplayBackend", "ReplayRecord"]


@dataclass(frozen=True, slots=True)
class ReplayRecord:
    """``output`` is streamed ``chunk`` characters at a time when ``match`` occurs in the prompt (or is None).

    ``delay`` (seconds between chunks) overrides the backend's for this record."""

    output: str
    match: str | None = None
    chunk: int = 4
    finish_reason: str = "stop"
    delay: float | None = None

    def __post_init__(self) -> None:
        check_fields(self)


class ReplayBackend:
    """Streams the first record whose ``match`` occurs in the rendered prompt (or that has no ``match``).

    Usage is counted one completion token per chunk and one prompt token per whitespace-separated word.
    ``delay`` (seconds) is slept between chunks. Like a real backend, the output ends before the first ``stop``
    string (not included, ``finish_reason`` "stop") unless ``max_tokens`` (one token per chunk) ends it
    first ("length").
    """

    def __init__(self, records: Sequence[ReplayRecord], *, delay: float = 0.0) -> None:
        expect_items(records, ReplayRecord, name="records", func="ReplayBackend", accepts="a list of ReplayRecord")
        expect(delay, (int, float), name="delay", func="ReplayBackend", accepts="a number of seconds")
        if not records:
            raise fail_value("needs at least one record", name="records", func="ReplayBackend")
        self.records = tuple(records)
        self.delay = delay

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, delay: float = 0.0) -> ReplayBackend:
        """Read JSONL records ``{"match": "...", "output": "...", "chunk": 4}``; a bad file raises ValueError."""
        records = []
        with open(path, encoding="utf-8") as file:
            for number, line in enumerate(file, start=1):
                if not line.strip():
                    continue
                try:
                    raw = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: invalid JSON: {exc.msg}") from exc
                records.append(_record(raw, f"{path}:{number}"))
        if not records:
            raise ValueError(f'{path}: no replay records (expected JSON lines with an "output")')
        return cls(records, delay=delay)

    def choose(self, prompt: str) -> ReplayRecord:
        for record in self.records:
            if record.match is None or record.match in prompt:
                return record
        raise BadRequestError("no replay record matches this prompt", param="messages", code="no_replay_match")

    async def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[BackendChunk]:
        record = self.choose(prompt)
        text, size = record.output, record.chunk
        finish = record.finish_reason
        limit = None if params.max_tokens is None else params.max_tokens * size
        stops = [at for at in (text.find(stop) for stop in params.stop or () if stop) if at >= 0]
        if stops and (limit is None or min(stops) < limit):
            text, finish = text[: min(stops)], "stop"
        elif limit is not None and limit < len(text):
            text, finish = text[:limit], "length"
        pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
        usage = Usage(prompt_tokens=len(prompt.split()), completion_tokens=len(pieces))
        last = len(pieces) - 1
        delay = self.delay if record.delay is None else record.delay
        for i, piece in enumerate(pieces):
            if i == last:
                yield BackendChunk(piece, finish, usage)
            else:
                yield BackendChunk(piece)
                await asyncio.sleep(delay)


def _record(raw: Any, where: str) -> ReplayRecord:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a replay record must be a JSON object")
    unknown = set(raw) - {"match", "output", "chunk", "finish_reason", "delay"}
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    output, match, chunk = raw.get("output"), raw.get("match"), raw.get("chunk", 4)
    finish = raw.get("finish_reason", "stop")
    if not isinstance(output, str):
        raise ValueError(f'{where}: "output" must be a string')
    if match is not None and not isinstance(match, str):
        raise ValueError(f'{where}: "match" must be a string')
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
        raise ValueError(f'{where}: "chunk" must be a positive integer')
    if finish not in ("stop", "length"):
        raise ValueError(f'{where}: "finish_reason" must be "stop" or "length"')
    delay = raw.get("delay")
    if delay is not None and (isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0):
        raise ValueError(f'{where}: "delay" must be a number of seconds ≥ 0')
    return ReplayRecord(output=output, match=match, chunk=chunk, finish_reason=finish, delay=delay)
