"""The OpenAI stream's fast path (``_Wire.events`` over ``Run.batches``) writes exactly the bytes of the plain
reference encoding (``_Wire.delta`` + ``_Wire.chunk`` per delta of ``async for delta in run``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.serve.fakes import PiecesBackend
from turnkit import TurnkitError
from turnkit.serve import ChatRequest, Gateway, ServeError, embedded_template
from turnkit.serve.protocols.openai_chat import _error_event, _stream, _Wire

MODES = ("both", "reasoning_content", "reasoning", "none")

# Text with what JSON escapes (quotes, backslashes, control characters), non-ASCII and astral characters.
_texts = st.text(
    alphabet=st.one_of(
        st.sampled_from(['"', "\\", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "é", "—", "😀", "\u2028", " "]),
        st.characters(blacklist_categories=("Cs",)),
    ),
    max_size=12,
)
_calls = st.one_of(
    st.builds(
        lambda i, name, args: {
            "tool_calls": [
                {"index": i, "id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
            ]
        },
        st.integers(0, 3),
        _texts,
        _texts,
    ),
    st.builds(
        lambda i, args: {"tool_calls": [{"index": i, "function": {"arguments": args}}]}, st.integers(0, 3), _texts
    ),
)
_deltas = st.lists(
    st.one_of(
        st.builds(lambda t: {"content": t}, _texts),
        st.builds(lambda t: {"reasoning_content": t}, _texts),
        st.builds(lambda a, b: {"content": a, "reasoning_content": b}, _texts, _texts),
        st.just({"role": "assistant", "content": ""}),
        _calls,
    ),
    max_size=6,
)


def _gateway(mode: str, backend: Any = None, name: str = 'bench "model" é') -> Gateway:
    return Gateway(
        embedded_template(),
        "hermes",
        backend or PiecesBackend([]),
        served_model_name=name,
        reasoning_field=mode,  # type: ignore[arg-type]
    )


def _reference(wire: _Wire, deltas: list[dict[str, Any]]) -> bytes:
    return b"".join(wire.chunk(m) for d in deltas if (m := wire.delta(d)) is not None)


@settings(max_examples=300, deadline=None)
@given(deltas=_deltas, mode=st.sampled_from(MODES))
def test_events_equal_the_reference_encoding(deltas: list[dict[str, Any]], mode: str) -> None:
    wire = _Wire(_gateway(mode))
    assert wire.events(deltas) == _reference(wire, deltas)


OUTPUTS = [
    '<think>plan\n"it"</think>\nHello, \\ world — é 😀 \x01',
    'Sure.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa\\"ris"}}\n</tool_call>',
    '<think>x</think><tool_call>{"name": "nope", "arguments": {"a": 1}}</tool_call> and text after',
    "plain content only, ending in spaces   ",
]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False)]


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=25, deadline=None)
@given(output=st.sampled_from(OUTPUTS), cuts=st.lists(st.integers(0, 200), max_size=12))
def test_stream_bytes_equal_the_reference(mode: str, output: str, cuts: list[int]) -> None:
    pieces = _split(output, cuts)
    chat = ChatRequest(messages=[{"role": "user", "content": "x"}], tools=TOOLS)

    async def fast() -> tuple[bytes, _Wire]:
        gateway = _gateway(mode, PiecesBackend(pieces))
        wire = _Wire(gateway)
        run = gateway.run(chat)
        await run.start()
        return b"".join([piece async for piece in _stream(run, wire, True)]), wire

    async def reference(wire: _Wire) -> bytes:
        run = _gateway(mode, PiecesBackend(pieces)).run(chat)
        out = [wire.chunk({"role": "assistant", "content": ""})]
        async for delta in run:
            mapped = wire.delta(delta)
            if mapped is not None:
                out.append(wire.chunk(mapped))
        out += [wire.final(run), wire.usage_chunk(run.usage), b"data: [DONE]\n\n"]
        return b"".join(out)

    got, wire = asyncio.run(fast())
    assert got == asyncio.run(reference(wire))


def test_batches_flatten_to_the_deltas() -> None:
    pieces = _split(OUTPUTS[0] + OUTPUTS[2], list(range(0, 200, 3)))
    chat = ChatRequest(messages=[{"role": "user", "content": "x"}], tools=TOOLS)

    async def go() -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
        batches = [batch async for batch in _gateway("both", PiecesBackend(pieces)).run(chat).batches()]
        deltas = [delta async for delta in _gateway("both", PiecesBackend(pieces)).run(chat)]
        return batches, deltas

    batches, deltas = asyncio.run(go())
    assert all(batches) and [d for batch in batches for d in batch] == deltas
    assert any(len(batch) > 1 for batch in batches)


class _Failing:
    """A parser that raises on its ``fail_at``-th feed (0-based) and otherwise delegates."""

    def __init__(self, parser: Any, fail_at: int) -> None:
        self.parser, self.fail_at, self.fed = parser, fail_at, 0

    def feed(self, text: str) -> list[dict[str, Any]]:
        self.fed += 1
        if self.fed > self.fail_at:
            raise TurnkitError("broken output")
        result: list[dict[str, Any]] = self.parser.feed(text)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.parser, name)


@pytest.mark.parametrize("fail_at", [0, 1, 2])
def test_a_parse_error_is_the_same_bytes_as_the_reference(fail_at: int) -> None:
    pieces = ["Hello", " there", " world", " again"]
    chat = ChatRequest(messages=[{"role": "user", "content": "x"}])

    async def go() -> tuple[list[bytes], bytes]:
        gateway = _gateway("both", PiecesBackend(pieces))
        wire = _Wire(gateway)
        run = gateway.run(chat)
        run._parser = _Failing(run._parser, fail_at)  # type: ignore[assignment]
        await run.start()
        writes = [piece async for piece in _stream(run, wire, False)]
        run = gateway.run(chat)
        run._parser = _Failing(run._parser, fail_at)  # type: ignore[assignment]
        expected = [wire.chunk({"role": "assistant", "content": ""})]
        try:
            async for delta in run:
                expected.append(wire.chunk(delta))
        except ServeError as exc:
            expected.append(_error_event(exc))
        return writes, b"".join(expected)

    writes, expected = asyncio.run(go())
    assert b"".join(writes) == expected
    assert b'"code": "output_error"' in writes[-1]


def test_writes_are_coalesced() -> None:
    """The role chunk goes out with the first backend chunk's deltas; the end (finish, usage, [DONE]) at once."""
    chat = ChatRequest(messages=[{"role": "user", "content": "x"}])

    async def go() -> list[bytes]:
        gateway = _gateway("both", PiecesBackend(["Hello", " world"]))
        run = gateway.run(chat)
        await run.start()
        return [piece async for piece in _stream(run, _Wire(gateway), True)]

    writes = asyncio.run(go())
    assert [w.count(b"data: ") for w in writes] == [2, 1, 3]
    assert b'"role":"assistant"' in writes[0] and b'"content":"Hello"' in writes[0]
    assert writes[-1].endswith(b"data: [DONE]\n\n")
