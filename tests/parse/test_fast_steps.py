"""The engine's armed steps (a chunk taken in one step when it cannot change more than the step knows) against
the full machine: every place a chunk can be cut, markers split at every position, a chunk that is exactly a
marker's beginning, control characters and lone surrogates in content, reasoning, JSON and XML values.

The reference is the whole output fed at once, which never takes an armed step. Beyond the message, the joined
text of every delta field must be the same (argument text as written, not only its decoded value).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.parse.deltas import accumulate, without_flags
from turnkit.errors import LimitExceededError
from turnkit.parse import FormatSpec, JsonCalls, Reasoning, ToolRegion, XmlParams, load_format

ODD = "\x00\x01\x1b\u2028\udc80\xa0"
"""NUL, control characters, a JSON-escaped line separator, a lone surrogate and a no-break space."""

TOOLS = [
    {"type": "function", "function": {"name": "f", "parameters": {"properties": {"s": {"type": "string"}}}}},
]


def _brackets(name: str, description: str, function_close: str) -> FormatSpec:
    """XML-style parameters whose markers do not start with '<'."""
    body = XmlParams(
        function_open="[f=",
        name_ends=("]",),
        param_open="[p=",
        key_ends=(("]", ""),),
        param_close="[/p]",
        function_close=function_close,
    )
    return FormatSpec(
        name=name, description=description, tools=(ToolRegion(open="[call]", close="[/call]", body=body),)
    )


BRACKETS = _brackets("brackets", "[call][f=NAME][p=K]V[/p][/f][/call]: XML-style parameters", "[/f]")
PREFIXED_CLOSE = _brackets(
    "prefixed_close",
    "[call][f=NAME][p=K]V[/p][p=end]: the function's close marker begins with the parameter opening",
    "[p=end]",
)

NESTED = FormatSpec(
    name="nested",
    description="markers that begin longer ones ('<c' of '<call>', '<r' of '<rr>'): a chunk ending in '<ca' holds a "
    "complete marker that may still become the longer one",
    reasoning=(Reasoning(starts=("<r", "<rr>"), ends=("</r>",)),),
    tools=(ToolRegion(open="<call>", close="</call>", body=JsonCalls()), ToolRegion(open="<c", body=JsonCalls())),
)

CASES: list[tuple[str | FormatSpec, str | None, list[dict[str, Any]] | None, str]] = [
    # JSON calls: keys, names and argument strings that cross chunks, escapes, brackets inside strings.
    (
        "hermes",
        None,
        None,
        f'Hi {ODD}<tool_call>\n{{"name": "f", "arguments": {{"a": "x\\"}}{ODD}", "b": [1, {{"c": "]"}}]}}}}\n'
        '</tool_call>\n<tool_call>{"arguments": {"q": 1}, "name": "g"}</tool_call> bye',
    ),
    # Member keys taken in one step: spaces around the colon, stray commas, an escaped key, an id member, a key
    # that is no member the call knows, and an object that is no call (given back as content).
    (
        "hermes",
        None,
        None,
        '<tool_call>{ "name" :"f" ,, "id": "c1",\t"na\\u006de": "x", "arguments"\n:\n {"k": [1]} , "zz" : 2 }'
        '</tool_call><tool_call>{"a": 1, "b" : "c"}</tool_call> end',
    ),
    # The call object's opening with its first key taken in one step: whitespace and stray commas around ``{``, a
    # wrapping tag and a fence before it, a first key longer than a name may be; and a named call (``NAME[ARGS]``,
    # decoded by a delegate) whose arguments' ``{"k`` is the delegate's, not a call object's opening.
    (
        "hermes",
        None,
        None,
        '<tool_call> \n{ ,"name": "f", "arguments": {}}</tool_call><tool_call><json>\n{"name": "g", "arguments": '
        '{"a": 1}}</json></tool_call> ```json\n{"name": "h", "arguments": {}}``` <tool_call>{"' + "k" * 520 + '": 1}'
        "</tool_call>",
    ),
    ("mistral_args", None, None, '[TOOL_CALLS]f[ARGS]{"abcdef": 1}'),
    # A member's value begun right after its key's colon, in the chunk that has the colon: a call in an envelope
    # (read by a nested walker), an id and a value that end in that chunk.
    ("generic", None, None, '{"tool_calls": [{"name": "f", "id": "c", "arguments": {"a": 1}, "x": 2}], "n": 1}'),
    # Streamed arguments followed by the call object's end: a lone object (the body ends there), objects in a list,
    # one after another (``repeat``), with a separator, and arguments written before the name (given at the end).
    (
        "jamba",
        None,
        None,
        '<tool_calls>[{"name": "f", "arguments": {"a": 1} }, {"name": "g", "arguments": {}}]</tool_calls>',
    ),
    (
        "minimax_m1",
        None,
        None,
        '<tool_calls>\n{"name": "f", "arguments": {"a": [1]}}\n{"name": "g", "arguments": {}}\n</tool_calls>',
    ),
    ("llama3_json", None, None, '{"name": "f", "parameters": {"a": "x"} } ; {"name": "g", "parameters": {}} done'),
    (
        "hermes",
        None,
        None,
        '<tool_call>{"arguments": {"a": 1}, "name": "f"}</tool_call> <tool_call>{"name": "g", "arguments": {}}x'
        '<tool_call>{"name": "h", "arguments": "{\\"a\\": 1}", "arguments": {"b": 2}}</tool_call>',
    ),
    # A region that is no call after all (its text is given back as content), then a call.
    ("hermes", None, None, '<tool_call>[see docs] x</tool_call> <tool_call>{"name": "h", "arguments": {}}</tool_call>'),
    # XML parameters: untyped and string-typed values, close markers that close and one that does not.
    (
        "qwen3_coder_xml",
        None,
        TOOLS,
        f"<think>r {ODD}</think>\nok <tool_call>\n<function=f>\n<parameter=s>\n a{ODD} \n\xa0b \n</parameter>\n"
        "<parameter=n>\n12\n</parameter>\n<parameter=t>\nx </parameter> y\n</parameter>\n</function>\n"
        "</tool_call>\n<tool_call>\n<function=f>\n<parameter=s>\n\n</parameter>\n</function>\n</tool_call>",
    ),
    (BRACKETS, None, TOOLS, "[call][f=f][p=s]hello [x] world[/p][p=n]2[/p][/f][/call] after"),
    (PREFIXED_CLOSE, None, TOOLS, "[call][f=f][p=s]a[/p]\n[p=n]2[/p] [p=end][/call] b"),
    ("seed_oss", None, TOOLS, "<seed:tool_call>\n<function=f>\n<parameter=s>\n a \n\n</parameter>\n</function>"),
    # Reasoning held until its end marker, and reasoning open from the prompt.
    ("think", None, None, f"<think>\n a {ODD} <thi </think>\n\n b <think> c"),
    ("deepseek_r1", "<think>\n", None, f"still {ODD} thinking</think> answer <"),
    # A marker's beginning after text holds a shorter complete marker ('<c' in '<ca'): held until it decides.
    (NESTED, None, None, 'a <ca b <call>{"name": "f", "arguments": {}}</call> <c{"name": "g"} <rr>x</r> y<rz</r>'),
]


def _run(fmt: str | FormatSpec, prefix: str | None, tools: list[dict[str, Any]] | None, pieces: list[str]) -> list[Any]:
    parser = load_format(fmt).stream(prefix=prefix, tools=tools)
    deltas = []
    for piece in pieces:
        deltas.extend(parser.feed(piece))
    deltas.extend(parser.close())
    return [deltas, dict(parser.message)]


def _texts(deltas: list[dict[str, Any]]) -> dict[str, str]:
    """Every delta field's text joined as written (content, reasoning, each call's arguments)."""
    out: dict[str, str] = {}
    for delta in deltas:
        for field in ("content", "reasoning_content"):
            out[field] = out.get(field, "") + delta.get(field, "")
        for fragment in delta.get("tool_calls", []):
            key = f"call {fragment['index']}"
            out[key] = out.get(key, "") + fragment.get("function", {}).get("arguments", "")
    return out


def _cuttings(text: str) -> list[tuple[str, list[str]]]:
    out = [(f"size {n}", [text[i : i + n] for i in range(0, len(text), n)]) for n in (1, 2, 3, 4, 5, 7)]
    out += [(f"cut at {i}", [text[:i], text[i:]]) for i in range(1, len(text))]
    # three pieces around every position: a marker's beginning alone in one chunk
    out += [(f"alone {i}", [text[: i - 1], text[i - 1 : i + 2], text[i + 2 :]]) for i in range(2, len(text) - 2)]
    return out


IDS = [case[0].name if isinstance(case[0], FormatSpec) else case[0] for case in CASES]


@pytest.mark.parametrize(("fmt", "prefix", "tools", "text"), CASES, ids=IDS)
def test_every_cutting_matches_the_whole(
    fmt: str | FormatSpec, prefix: str | None, tools: list[dict[str, Any]] | None, text: str
) -> None:
    whole_deltas, whole_message = _run(fmt, prefix, tools, [text])
    assert accumulate(whole_deltas) == without_flags(whole_message)
    texts = _texts(whole_deltas)
    for name, pieces in _cuttings(text):
        deltas, message = _run(fmt, prefix, tools, pieces)
        assert message == whole_message, name
        assert _texts(deltas) == texts, name


def test_marker_beginning_alone_is_held_in_every_mode() -> None:
    """A chunk that is exactly a marker's beginning releases nothing, in content, reasoning and after a body."""
    parser = load_format("hermes").stream()
    assert parser.feed("a ") == [{"content": "a"}]
    assert parser.feed("<tool_c") == []
    assert parser.feed("all>") == []
    assert parser.feed('{"name": "f", "arguments": {}}') != []
    assert parser.feed("<") == []  # after the body: the region's close marker may follow
    assert parser.feed("/tool_call>") == []
    parser = load_format("think").stream()
    assert parser.feed("<think>x ") == [{"reasoning_content": "x"}]
    assert parser.feed("</thi") == []
    assert parser.feed("nk") == []
    assert parser.feed(">y") == [{"content": "y"}]


def test_xml_string_argument_text_does_not_depend_on_the_chunking() -> None:
    """Whitespace held at the end of a string value is escaped like the value (a no-break space stays as it
    is): the argument text, not only its decoded value, is the same whole and per character."""
    text = "<tool_call>\n<function=f>\n<parameter=s>\nab\n\xa0cd ef\n</parameter>\n</function>\n</tool_call>"
    whole, _ = _run("qwen3_coder_xml", None, TOOLS, [text])
    per_char, _ = _run("qwen3_coder_xml", None, TOOLS, list(text))
    assert _texts(per_char) == _texts(whole)
    assert _texts(whole)["call 0"] == '{"s": "ab\\n\xa0cd ef"}'


def test_text_then_a_marker_beginning_releases_the_text_and_holds_the_beginning() -> None:
    """A chunk whose tail, from its first possible marker character, only begins a marker: the text before it is
    released at once and the tail held, in content, after a body and inside an XML value; when the next chunk
    breaks the marker the held tail is text."""
    parser = load_format("hermes").stream()
    assert parser.feed("z ") == [{"content": "z"}]
    assert parser.feed("a <b <tool_c") == [{"content": " a <b"}]  # ("<b <tool_c" is no marker's beginning)
    assert parser.feed("x <") == [{"content": " <tool_cx"}]
    assert parser.feed('tool_call>{"name": "f", "arguments": {}}  </tool') != []
    assert parser.feed("_call> b") == [{"content": "  b"}]
    parser = load_format("qwen3_coder_xml").stream()
    assert parser.feed("<tool_call>\n<function=f>\n<parameter=a>\n1 <b </param") != []
    assert parser.feed("x\n</parameter>\n</fun") == []
    assert parser.feed("ction>\n</tool_call>") == [
        {"tool_calls": [{"index": 0, "function": {"arguments": '"1 <b </paramx"}'}}]}
    ]


def test_remembered_argument_chunks_read_as_new_ones_and_stay_bounded() -> None:
    """JSON-call chunks are remembered by text (``_json_scan.QUOTES`` inside the arguments, each edge pattern's
    ``seen`` at keys and colons): a second stream of the same chunks (all remembered) gives what the first gave, and
    streams of ever new chunks leave each table at its bound."""
    from turnkit.parse._bodies import json_calls
    from turnkit.parse._json_scan import QUOTES, REMEMBERED, REMEMBERED_CHUNK

    edges = (json_calls._KEY_START, json_calls._NEXT_KEY_START, json_calls._OBJECT_KEY_START)
    tables = [QUOTES, *(edge.seen for edge in (*edges, json_calls._COLON_MARK, json_calls._KEY_END))]
    for table in tables:
        table.clear()
    text = '<tool_call>\n{"name": "f", "id": "i", "arguments": {"a": "x\\"", "b": ["{", 2], "c": "\\\\", "d": "y"}}\n'
    for cut in (1, 2, 3, 5):
        pieces = [text[i : i + cut] for i in range(0, len(text), cut)]
        first, first_message = _run("hermes", None, None, pieces)
        again, again_message = _run("hermes", None, None, pieces)
        assert again == first and again_message == first_message
        assert first_message["tool_calls"][0]["function"]["arguments"] == {
            "a": 'x"',
            "b": ["{", 2],
            "c": "\\",
            "d": "y",
        }
    assert all(tables)
    for n in range(REMEMBERED // 50 + 2):
        words = [f' "k{n}_{i}": "v",' for i in range(60)]
        _run("hermes", None, None, ['<tool_call>\n{"name": "f", "arguments": {', *words, ' "z": 1}}'])
        keys = [piece for i in range(50) for piece in (f' "k{n}_{i}', '": ', "1,")]
        _run("hermes", None, None, ['<tool_call>\n{"name": "f",', *keys, ' "arguments": {}}'])
    for table in (QUOTES, json_calls._KEY_START.seen):
        assert len(table) == REMEMBERED
    for table in tables:
        assert all(len(chunk) <= REMEMBERED_CHUNK for chunk in table)


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(st.text(alphabet='{}[]"\\a ,', max_size=20), min_size=1, max_size=6),
    opening=st.sampled_from(["{", "[", '{"', '["', "[[", "{[{"]),
    max_depth=st.integers(min_value=1, max_value=4),
)
def test_remembered_walks_end_a_value_where_the_scan_does(texts: list[str], opening: str, max_depth: int) -> None:
    """A short chunk's walk inside an object or array, remembered in ``_json_scan.WALKS`` (from either string state),
    gives the scanner's answers and state, and its depth error at the same bracket, as the scan loop."""
    from turnkit.parse import _json_scan

    def run(remembered: int) -> list[object]:
        _json_scan.WALKS.clear()
        saved, _json_scan.REMEMBERED = _json_scan.REMEMBERED, remembered
        scanner = _json_scan.JsonValueScanner(max_depth=max_depth)
        seen: list[object] = []
        try:
            for text in [opening, *texts]:
                seen.append((scanner.feed(text), scanner.depth, scanner.in_string, scanner.escape))
                if seen[-1][0] != -1:  # type: ignore[index]
                    break
        except LimitExceededError as error:
            seen.append(str(error))
        finally:
            _json_scan.REMEMBERED = saved
        return seen

    assert run(len(_json_scan.WALKS) + 10_000) == run(0)
