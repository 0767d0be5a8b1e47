"""Property tests: arbitrary JSON text, arbitrary chunking.

Prefix consistency (checked after every feed): let ``F`` be the final value and ``P`` the open
path (``s.incomplete``, a chain of pointers from the root). The interim value ``V`` is consistent
with ``F`` when, recursively from the root,

* a value whose pointer is not on ``P`` equals the final value at that pointer exactly (type included);
* an open string is a prefix of the final string;
* an open array is a prefix of the final array (same length or shorter), all items but the last
  equal, the last consistent; an open object holds a prefix of the final keys in the final order,
  all values but the last equal, the last consistent.

Plus: applying each feed's operations to a mirror reproduces ``V`` exactly, operations are never
modified after they are returned, the wire form round-trips, coalescing keeps the effect,
``annotated()`` marks exactly the open objects, and the closed value equals ``json.loads``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from turnkit.errors import TurnkitError
from turnkit.structured import JsonStream, OpDecoder, OpEncoder, apply_patch, coalesce_ops

_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}

# Text with every kind of character: ASCII, Latin, Hangul, CJK, emoji and other astral planes.
_chars = st.one_of(
    st.characters(codec="utf-8", exclude_categories=["Cs"]),
    st.sampled_from('"\\/\b\f\n\r\t\x00\x1f\x7f가나다한국어😀🍽️🏠𝄞\u2028\u2029\ufeff'),
)


@st.composite
def _string_token(draw: st.DrawFn) -> str:
    """A JSON string literal, each character written raw, as a short escape or as \\u escape(s)."""
    chars = draw(st.lists(_chars, max_size=12))
    out = ['"']
    for ch in chars:
        how = draw(st.integers(0, 3))
        if ch in _SHORT and (how < 2 or ch in '"\\' and how == 2):
            out.append(_SHORT[ch])
        elif how == 3 or ord(ch) < 0x20 or ch in '"\\':
            code = ord(ch)
            if code > 0xFFFF:
                code -= 0x10000
                hi, lo = 0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)
                out.append(f"\\u{hi:04x}\\u{lo:04X}")
            else:
                out.append(f"\\u{code:04x}")
        elif how == 2 and ch == "/":
            out.append("\\/")
        else:
            out.append(ch)
    if draw(st.integers(0, 9)) == 0:
        out.append(draw(st.sampled_from(["\\ud800", "\\udfff", "\\uDBFFx", "\\ud83d\\u0041"])))  # lone surrogates
    out.append('"')
    return "".join(out)


_number_token = st.one_of(
    st.from_regex(r"\A-?(0|[1-9][0-9]{0,20})(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?\Z", fullmatch=True),
    st.integers().map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
_ws = st.sampled_from(["", "", "", " ", "\n", "\t", "\r\n  "])
_scalar = st.one_of(_string_token(), _number_token, st.sampled_from(["true", "false", "null"]))


@st.composite
def _wrap(
    draw: st.DrawFn,
    children: st.SearchStrategy[list[str]],
    *,
    is_object: bool,
    key: st.SearchStrategy[str] | None = None,
) -> str:
    items = draw(children)
    w = draw(_ws)
    if is_object:
        keys = [draw(_string_token() if key is None else key) for _ in items]
        members = [f"{w}{k}{draw(_ws)}:{draw(_ws)}{v}{w}" for k, v in zip(keys, items, strict=True)]
        return "{" + ",".join(members) + (w if not items else "") + "}"
    return "[" + ",".join(f"{w}{v}{w}" for v in items) + (w if not items else "") + "]"


_json_text = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        _wrap(st.lists(inner, max_size=5), is_object=False),
        _wrap(st.lists(inner, max_size=5), is_object=True),
    ),
    max_leaves=25,
)


# Objects with duplicate keys (the later value replaces the earlier: a ``replace`` operation).
_duplicate_keys = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        _wrap(st.lists(inner, max_size=5), is_object=False),
        _wrap(st.lists(inner, max_size=5), is_object=True, key=st.sampled_from(['"a"', '"b"', '"a~/"', '""'])),
    ),
    max_leaves=25,
)


@st.composite
def _deep(draw: st.DrawFn) -> str:
    """Deep nesting: a leaf inside up to 120 random arrays and objects."""
    text = draw(_json_text)
    for _ in range(draw(st.integers(1, 120))):
        if draw(st.booleans()):
            text = "[" + text + "]"
        else:
            text = '{"k' + str(draw(st.integers(0, 9))) + '":' + text + "}"
    return text


@st.composite
def _document(draw: st.DrawFn) -> str:
    text = draw(st.one_of(_json_text, _json_text, _deep()))
    return draw(_ws) + text + draw(_ws)


@st.composite
def _chunked(draw: st.DrawFn, documents: st.SearchStrategy[str] | None = None) -> tuple[str, list[str]]:
    text = draw(_document() if documents is None else documents)
    mode = draw(st.integers(0, 3))
    if mode == 0:
        return text, list(text)
    if mode == 1:
        return text, [text]
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=max(1, len(text) // 2))))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    assume(len(set(keys)) == len(keys))  # duplicate keys change a value after the fact (last wins)
    return dict(pairs)


def _exact(a: Any, b: Any) -> bool:
    return json.dumps(a) == json.dumps(b)


def _child(container: Any, token: str) -> Any:
    return container[int(token)] if isinstance(container, list) else container[token]


def _check_consistent(value: Any, final: Any, open_path: list[str]) -> None:
    """The prefix-consistency check from the module docstring, driven by the open path."""
    if not open_path:
        assert _exact(value, final)
        return
    assert open_path[0] == ""
    for parent, child in zip(open_path, open_path[1:], strict=False):
        assert child.startswith(parent + "/") and "/" not in child[len(parent) + 1 :]
    node, target = value, final
    depth = 0
    while True:
        inner_path = open_path[depth + 1] if depth + 1 < len(open_path) else None
        if isinstance(node, str):
            assert inner_path is None and isinstance(target, str) and target.startswith(node)
            return
        if isinstance(node, list):
            assert isinstance(target, list) and len(node) <= len(target)
            open_slot: Any = len(node) - 1 if inner_path is not None else None
            for i, item in enumerate(node):
                if i != open_slot:
                    assert _exact(item, target[i])
        else:
            assert isinstance(node, dict) and isinstance(target, dict)
            keys = list(node)
            assert keys == list(target)[: len(keys)]
            open_slot = keys[-1] if inner_path is not None else None
            for key in keys:
                if key != open_slot:
                    assert _exact(node[key], target[key])
        if inner_path is None:
            return
        token = inner_path.rsplit("/", 1)[1].replace("~1", "/").replace("~0", "~")
        assert str(open_slot) == token or (isinstance(node, dict) and open_slot == token)
        node, target = _child(node, token), _child(target, token)
        depth += 1


def _strip_markers(value: Any, marker: str, opened: list[str], path: str = "") -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == marker:
                opened.append(path)
                child_keys = list(item)
                assert len(child_keys) <= 1 and all(item[k] is True for k in child_keys)
                continue
            out[key] = _strip_markers(item, marker, opened, path + "/" + key.replace("~", "~0").replace("/", "~1"))
        return out
    if isinstance(value, list):
        return [_strip_markers(v, marker, opened, f"{path}/{i}") for i, v in enumerate(value)]
    return value


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_chunked())
def test_any_json_any_chunking(case: tuple[str, list[str]]) -> None:
    text, pieces = case
    final = json.loads(text, object_pairs_hook=_no_duplicates)
    s = JsonStream()
    encoder, decoder = OpEncoder(), OpDecoder()
    mirror: Any = None
    emitted: list[tuple[list[Any], str]] = []
    for piece in pieces:
        ops = s.feed(piece)
        emitted.append((ops, json.dumps(ops)))
        before = mirror
        mirror = apply_patch(mirror, ops)
        assert _exact(mirror, s.value)
        assert _exact(apply_patch(before, coalesce_ops(ops)), mirror)
        assert decoder.decode(encoder.encode(ops)) == ops
        if s.started:
            _check_consistent(s.value, final, s.incomplete)
            opened: list[str] = []
            stripped = _strip_markers(s.annotated(marker="\x00p"), "\x00p", opened)
            assert _exact(stripped, s.value)
            objects_open = [p for p in s.incomplete if isinstance(_resolve(s.value, p), dict)]
            assert sorted(opened) == sorted(objects_open)
    ops = s.close()
    mirror = apply_patch(mirror, ops)
    assert s.done and s.incomplete == []
    assert _exact(s.value, final) and _exact(mirror, final)
    for ops_then, dumped in emitted:
        assert json.dumps(ops_then) == dumped  # operations are never modified after they are returned
    all_ops = [op for batch, _ in emitted for op in batch] + ops
    assert _exact(apply_patch(None, coalesce_ops(all_ops)), final)


def _outcome(call: Callable[[], Any]) -> Any:
    """What ``call()`` returns, or the type of the error it raises."""
    try:
        return call()
    except TurnkitError as exc:
        return type(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_chunked(st.one_of(_document(), _duplicate_keys)), st.booleans())
def test_feed_encoded_writes_what_the_encoder_writes(case: tuple[str, list[str]], skip_prefix: bool) -> None:
    """The parser's own wire form is OpEncoder's, byte for byte, for any document (duplicate keys and
    ``skip_prefix`` included) and any chunking; a piece with no operation gives ``""``."""
    text, pieces = case
    if skip_prefix:
        pieces = ["Here it is: ", *pieces, " (done)"]
    plain, encoded = JsonStream(skip_prefix=skip_prefix), JsonStream(skip_prefix=skip_prefix)
    encoder = OpEncoder()

    def encode(ops: list[Any]) -> str:
        return encoder.encode(ops) if ops else ""

    for piece in pieces:  # (with skip_prefix a string may hold the "[" it starts at: an error, the same one)
        assert _outcome(lambda p=piece: encoded.feed_encoded(p)) == _outcome(lambda p=piece: encode(plain.feed(p)))
    assert _outcome(encoded.close_encoded) == _outcome(lambda: encode(plain.close()))


def _resolve(value: Any, pointer: str) -> Any:
    if pointer == "":
        return value
    for token in pointer[1:].split("/"):
        value = _child(value, token.replace("~1", "/").replace("~0", "~"))
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_invalid_prefix_or_mutation_is_rejected_never_wrong(data: st.DataObject) -> None:
    """A corrupted document either parses to json.loads's value or is rejected; never a different value."""
    text = data.draw(_document())
    pos = data.draw(st.integers(0, len(text)))
    junk = data.draw(st.sampled_from(["", ",", "]", "}", "\\", '"', "x", "0", "-", ".", ":", "\x01", "NaN", "{"]))
    broken = text[:pos] + junk + text[pos + data.draw(st.integers(0, 2)) :]
    try:  # NaN and Infinity are not JSON (json.loads accepts them, JsonStream must not)
        expected: Any = json.loads(broken, parse_constant=_refuse_constant)
        valid = True
    except ValueError:
        valid = False
    s = JsonStream()
    try:
        for ch in broken:
            s.feed(ch)
        s.close()
    except ValueError:  # ParseError, IncompleteInputError
        assert not valid, broken
        return
    except Exception as exc:  # LimitExceededError only for depth, which the documents stay under
        raise AssertionError(f"unexpected {exc!r}") from exc
    assert valid and _exact(s.value, expected), broken
