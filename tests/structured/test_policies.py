"""Streaming policies: what a client sees of each field, proved for every chunking and by its operations."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from tests.chunking import chunkings
from tests.structured.streams import run_checked
from turnkit.errors import JsonPatchError, OutputParseError, UsageError
from turnkit.structured import (
    ItemsWhenComplete,
    JsonStream,
    RequireFields,
    Stream,
    StructuredStream,
    WhenComplete,
    WithState,
    apply_patch,
    coalesce_ops,
)
from turnkit.structured._live_document import LiveDocument
from turnkit.structured._policies import compile_plan
from turnkit.structured._policy_filter import CLOSED, PolicyFilter


class Post(BaseModel):
    title: str
    tags: Annotated[list[str], ItemsWhenComplete()]


class Line(BaseModel):
    emoji: Annotated[str, WhenComplete()]
    text: str


class Step(BaseModel):
    kind: Literal["search", "answer"]  # a Literal is shown only when complete by default
    body: str


class Report(BaseModel):
    title: str
    mood: Literal["good", "bad"]
    lines: list[Line]
    steps: list[Annotated[Step, RequireFields("kind")]]
    verdict: Annotated[str, WithState()]
    score: Annotated[float, WithState()]
    notes: Annotated[list[str], Stream()] = []


REPORT = {
    "title": 'Café "Ünïcode" 🍽️ review',
    "mood": "good",
    "lines": [{"emoji": "🍽️", "text": "음식이 맛있어요"}, {"emoji": "🏠", "text": "인테리어가 멋져요\n"}],
    "steps": [{"kind": "search", "body": "looked \\ around"}, {"kind": "answer", "body": "done"}],
    "verdict": "buy it",
    "score": 4.75,
    "notes": ["a", "", "é"],
}
REPORT_TEXT = json.dumps(REPORT, ensure_ascii=False, indent=1)


_run = run_checked


@pytest.mark.parametrize("name,pieces", list(chunkings(REPORT_TEXT, random_cuts=4)))
def test_every_chunking_mirrors_and_ends_at_the_validated_model(name: str, pieces: list[str]) -> None:
    s, snapshots, _ = _run(Report, pieces)
    assert s.done
    assert s.result == Report.model_validate(REPORT)
    final = snapshots[-1]
    assert final["verdict"] == {"state": "complete", "value": "buy it"}
    assert final["score"] == {"state": "complete", "value": 4.75}
    plain = {k: v for k, v in final.items() if k not in ("verdict", "score")}
    assert plain == {k: v for k, v in REPORT.items() if k not in ("verdict", "score")}
    for snap in snapshots:
        _check_report_invariants(snap)


def _check_report_invariants(snap: Any) -> None:
    if snap is None:
        return
    # a field shown only when complete never appears partially
    if "mood" in snap:
        assert snap["mood"] == REPORT["mood"]
    for i, line in enumerate(snap.get("lines", [])):
        if "emoji" in line:
            assert line["emoji"] == REPORT["lines"][i]["emoji"]
        assert REPORT["lines"][i]["text"].startswith(line.get("text", ""))
    # a held-back step appears only once its kind is complete
    for i, step in enumerate(snap.get("steps", [])):
        assert step["kind"] == REPORT["steps"][i]["kind"]
    # streamed text is always a prefix of the final text
    assert str(REPORT["title"]).startswith(snap.get("title", ""))
    # state wrappers exist from the start, in a valid state
    for key in ("verdict", "score"):
        state = snap[key]["state"]
        assert state in ("pending", "incomplete", "complete")
        if state == "pending":
            assert snap[key]["value"] is None
        if key == "score" and state != "pending":
            assert snap[key] == {"state": "complete", "value": 4.75}  # numbers are atomic


def test_seed_example_tags_show_only_complete_items() -> None:
    s = StructuredStream(Post)
    s.feed('{"title": "Hello, world!", "tags": ["python", "ll')
    assert s.value == {"title": "Hello, world!", "tags": ["python"]}
    assert s.feed('m"') == [{"op": "add", "path": "/tags/1", "value": "llm"}]
    assert s.feed("]}") == []
    assert s.close() == []
    assert s.result == Post(title="Hello, world!", tags=["python", "llm"])


def test_title_streams_character_by_character() -> None:
    s = StructuredStream(Post)
    assert s.feed('{"title": "He') == [
        {"op": "add", "path": "", "value": {}},
        {"op": "add", "path": "/title", "value": "He"},
    ]
    assert s.feed("l") == [{"op": "append", "path": "/title", "value": "l"}]


def test_when_complete_field_is_one_add_at_close() -> None:
    pieces = list('{"emoji": "🍽️", "text": "hi"}')
    _, _, batches = _run(Line, pieces)
    emoji_ops = [op for batch in batches for op in batch if op["path"].startswith("/emoji")]
    assert emoji_ops == [{"op": "add", "path": "/emoji", "value": "🍽️"}]
    text_ops = [op["op"] for batch in batches for op in batch if op["path"] == "/text"]
    assert text_ops == ["add", "append", "append"]  # streamed: starts empty, then grows per character


def test_held_back_parent_is_released_whole_when_required_field_is_visible() -> None:
    text = '{"kind": "search", "body": "abc"}'

    class Holder(BaseModel):
        step: Annotated[Step, RequireFields("kind")]

    class Holder2(BaseModel):
        step: Annotated[Step, RequireFields("body")]

    s = StructuredStream(Holder)
    assert s.feed('{"step": {"kind": "sea') == [{"op": "add", "path": "", "value": {}}]
    assert s.value == {}
    assert s.feed('rch", "bo') == [{"op": "add", "path": "/step", "value": {"kind": "search"}}]
    s2 = StructuredStream(Holder2)
    s2.feed('{"step": ' + text[:-4])
    # body is a streamed string: its parent appears as soon as body exists
    assert s2.value == {"step": {"kind": "search", "body": "a"}}


def test_held_back_object_without_its_field_appears_when_complete() -> None:
    class Holder(BaseModel):
        step: Annotated[dict[str, str], RequireFields("kind")]

    s = StructuredStream(Holder)
    s.feed('{"step": {"body": "x"')
    assert s.value == {}
    s.feed("}")
    assert s.value == {"step": {"body": "x"}}


def test_with_state_goes_pending_incomplete_complete() -> None:
    class Answer(BaseModel):
        verdict: Annotated[str, WithState()]
        kind: Annotated[Literal["a", "b"], WithState()]

    s = StructuredStream(Answer)
    s.feed("{")
    assert s.value == {"verdict": {"state": "pending", "value": None}, "kind": {"state": "pending", "value": None}}
    s.feed('"verdict": "ye')
    assert s.value["verdict"] == {"state": "incomplete", "value": "ye"}
    s.feed('s", "kind": "')
    assert s.value["verdict"] == {"state": "complete", "value": "yes"}
    assert s.value["kind"] == {"state": "incomplete", "value": None}  # a Literal's value waits for completion
    s.feed('b"}')
    assert s.value["kind"] == {"state": "complete", "value": "b"}
    s.close()
    assert s.result == Answer(verdict="yes", kind="b")


def test_closed_events_never_reach_the_client() -> None:
    _, _, batches = _run(Report, [REPORT_TEXT])
    assert all(op["op"] in ("add", "replace", "append", "remove") for batch in batches for op in batch)
    assert not any(op["op"] == CLOSED for batch in batches for op in batch)


# ------------------------------------------------------------------------------------------ validation

calls: list[str] = []


def _count(value: str) -> str:
    calls.append(value)
    return value


class Counted(BaseModel):
    first: Annotated[str, AfterValidator(_count)]
    second: Annotated[list[str], AfterValidator(lambda v: [_count(x) for x in v])]
    rest: str


def test_each_field_is_validated_once_when_it_closes() -> None:
    calls.clear()
    s = StructuredStream(Counted)
    s.feed('{"first": "a')
    s.feed("b")
    assert calls == []  # never while partial
    s.feed('"')
    assert calls == ["ab"]  # the feed that closes it
    s.feed(', "second": ["x", "y"')
    assert calls == ["ab"]
    s.feed('], "rest": "z"}')
    assert calls == ["ab", "x", "y"]
    s.close()
    assert calls == ["ab", "x", "y"]  # the model is assembled, not validated again
    assert s.result == Counted(first="ab", second=["x", "y"], rest="z")
    assert s.validations == 4  # first, second, rest, the model


def test_validation_error_names_the_pointer_as_soon_as_the_field_closes() -> None:
    s = StructuredStream(Report)
    with pytest.raises(OutputParseError) as info:
        s.feed('{"title": "t", "mood": "meh", "lines": [')
    assert info.value.pointer == "/mood"
    assert info.value.code == "field_validation"
    assert "/mood" in str(info.value)
    with pytest.raises(UsageError):
        s.feed("]")


def test_validation_error_inside_a_list_item() -> None:
    class Scored(BaseModel):
        items: list[Annotated[int, Field(ge=0)]]

    class Wrapper(BaseModel):
        rows: list[Scored]

    s = StructuredStream(Wrapper)
    with pytest.raises(OutputParseError) as info:
        s.feed('{"rows": [{"items": [1]}, {"items": [2, -3]}, ')
    assert info.value.pointer == "/rows/1/items/1"


def test_missing_required_field_and_forbidden_extra() -> None:
    s = StructuredStream(Line)
    with pytest.raises(OutputParseError) as info:
        s.feed('{"text": "x"}')
    assert info.value.pointer == "" and "emoji" in str(info.value)

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        a: int

    s2 = StructuredStream(Strict)
    with pytest.raises(OutputParseError) as info:
        s2.feed('{"a": 1, "b": 2}')
    assert info.value.pointer == "/b"


def test_model_with_its_own_validators_is_validated_whole_once() -> None:
    seen: list[str] = []

    class Upper(BaseModel):
        name: str

        @field_validator("name")
        @classmethod
        def upper(cls, value: str) -> str:
            seen.append(value)
            return value.upper()

    class Outer(BaseModel):
        inner: Upper
        tail: str

    s = StructuredStream(Outer)
    s.feed('{"inner": {"name": "ab"')
    assert seen == []
    s.feed('}, "tail": "')
    assert seen == ["ab"]
    s.feed('x"}')
    s.close()
    assert seen == ["ab"] and s.result == Outer(inner=Upper(name="AB"), tail="x")


def test_aliases_map_json_keys_to_fields() -> None:
    class Aliased(BaseModel):
        summary_v2: list[str] = Field(alias="summaryV2")

    s = StructuredStream(Aliased)
    s.feed('{"summaryV2": ["a"]}')
    s.close()
    assert s.result == Aliased.model_validate({"summaryV2": ["a"]})


def test_unfinished_document_is_an_error_at_close() -> None:
    s = StructuredStream(Post)
    s.feed('{"title": "x"')
    with pytest.raises(ValueError):
        s.close()


def test_without_validation_result_is_plain_json() -> None:
    s = StructuredStream(Post, validate=False)
    s.feed('{"title": 5, "tags": []}')
    s.close()
    assert s.result == {"title": 5, "tags": []}


# ------------------------------------------------------------------------------------------ JSON schema


def test_policies_from_a_json_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}, "x-turnkit-items": "when-complete"},
            "mood": {"$ref": "#/$defs/Mood"},
            "body": {"type": "string", "x-turnkit-stream": "when-complete"},
            "state": {"type": "string", "x-turnkit-state": True},
        },
        "$defs": {"Mood": {"enum": ["good", "bad"]}},
    }
    s = StructuredStream(schema)
    s.feed('{"title": "He", "tags": ["a", "b')
    assert s.value == {"title": "He", "tags": ["a"], "state": {"state": "pending", "value": None}}
    s.feed('"], "mood": "goo')
    assert "mood" not in s.value
    s.feed('d", "body": "long')
    assert s.value["mood"] == "good" and "body" not in s.value
    s.feed('", "state": "x"}')
    s.close()
    assert s.value["body"] == "long" and s.value["state"] == {"state": "complete", "value": "x"}
    assert s.result == {"title": "He", "tags": ["a", "b"], "mood": "good", "body": "long", "state": "x"}


# ------------------------------------------------------------------------------------------ op level


def test_composite_operations_give_the_same_client_value() -> None:
    """Coalesced parser ops (whole values in one add) must end in the same client value."""
    parser = JsonStream()
    ops = parser.feed(REPORT_TEXT) + parser.close()
    merged = coalesce_ops(ops)
    assert len(merged) < len(ops)
    flt = PolicyFilter(compile_plan(Report))
    out = [op for op in flt.push(merged, []) if op["op"] != CLOSED]
    _, snapshots, _ = _run(Report, list(REPORT_TEXT))
    assert apply_patch(None, out) == snapshots[-1]
    assert flt.result == Report.model_validate(REPORT)


def test_filter_on_hand_made_ops_closes_siblings_in_order() -> None:
    """A held item closes when the next item starts, and is released before it (indices stay aligned)."""

    class Tags(BaseModel):
        tags: Annotated[list[str], ItemsWhenComplete()]

    flt = PolicyFilter(compile_plan(Tags))
    out = flt.push(
        [
            {"op": "add", "path": "", "value": {}},
            {"op": "add", "path": "/tags", "value": ["a"]},
            {"op": "append", "path": "/tags/0", "value": "b"},
            {"op": "add", "path": "/tags/1", "value": "c"},
        ],
        ["", "/tags", "/tags/1"],
    )
    client = [op for op in out if op["op"] != CLOSED]
    assert client == [
        {"op": "add", "path": "", "value": {}},
        {"op": "add", "path": "/tags", "value": []},
        {"op": "add", "path": "/tags/0", "value": "ab"},
    ]


@pytest.mark.parametrize("depth", [1, 100, 500])
def test_deep_nesting_released_at_once(depth: int) -> None:
    """A held value as deep as the parser allows is released whole without running out of stack."""
    doc = "[" * depth + '{"a": "x"}' + "]" * depth
    s = StructuredStream(Annotated[Any, WhenComplete()])
    assert s.feed(doc[: len(doc) // 2]) == [] and s.value is None
    ops = s.feed(doc[len(doc) // 2 :]) + s.close()
    assert [op["path"] for op in ops] == [""] and s.value == json.loads(doc)
    flt = PolicyFilter(compile_plan(Any))
    out = flt.push([{"op": "add", "path": "", "value": json.loads(doc)}], [])
    mirror = LiveDocument()
    for op in out:
        mirror.apply(op)
    assert mirror.value == json.loads(doc)


def test_model_with_unresolved_forward_reference_is_a_clear_error() -> None:
    class Dangling(BaseModel):
        child: Missing  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(UsageError, match="not fully defined") as info:
        StructuredStream(Dangling)
    assert "\n" not in str(info.value)


def test_policy_mistakes_are_reported_when_the_stream_is_built() -> None:
    class BadRequire(BaseModel):
        step: Annotated[Step, RequireFields("knd")]

    class BadItems(BaseModel):
        name: Annotated[str, ItemsWhenComplete()]

    for model in (BadRequire, BadItems):
        with pytest.raises(UsageError) as info:
            StructuredStream(model)
        assert info.value.code == "bad_policy"


def test_with_state_on_list_items_is_shown_bare() -> None:
    class Items(BaseModel):
        xs: list[Annotated[str, WithState()]]

    _, snapshots, _ = _run(Items, list('{"xs": ["ab", "c"]}'))
    assert snapshots[-1] == {"xs": ["ab", "c"]}


def test_stream_override_on_a_literal_shows_its_prefix_and_types_it_as_text() -> None:
    from turnkit.structured import partial_model

    class Loose(BaseModel):
        kind: Annotated[Literal["search", "answer"], Stream()]

    s = StructuredStream(Loose)
    s.feed('{"kind": "sea')
    assert s.value == {"kind": "sea"}
    assert partial_model(Loose).model_validate(s.value).kind == "sea"  # type: ignore[attr-defined]


def test_model_settings_apply_to_fields_validated_alone() -> None:
    class Tidy(BaseModel):
        model_config = ConfigDict(str_strip_whitespace=True, str_to_lower=True)
        name: str
        tags: list[str]

    doc = '{"name": "  Ada ", "tags": [" X "]}'
    s = StructuredStream(Tidy)
    s.feed(doc)
    s.close()
    assert s.result == Tidy.model_validate_json(doc) == Tidy(name="ada", tags=["x"])

    class Strict(BaseModel):
        model_config = ConfigDict(strict=True)
        n: int

    with pytest.raises(OutputParseError) as info:
        StructuredStream(Strict).feed('{"n": 1.0, ')
    assert info.value.pointer == "/n"


def test_values_validate_in_json_mode_like_model_validate_json() -> None:
    import datetime
    import enum

    class Color(enum.Enum):
        RED = "red"

    class Typed(BaseModel):
        model_config = ConfigDict(strict=True)
        when: datetime.datetime
        color: Color
        pair: tuple[int, int]
        ratio: float

    doc = '{"when": "2024-05-01T12:00:00Z", "color": "red", "pair": [1, 2], "ratio": 3}'
    for _, pieces in chunkings(doc):
        s = StructuredStream(Typed)
        for piece in pieces:
            s.feed(piece)
        s.close()
        assert s.result == Typed.model_validate_json(doc)


@pytest.mark.parametrize(
    "schema",
    [
        {"allOf": [{"$ref": "#"}]},
        {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}},
        {"$ref": "http://example.com/x"},
        {"type": "object", "properties": {"a": {"type": "string"}}, "x-turnkit-require": ["b"]},
        {"type": "object", "properties": {"a": {"type": "string", "x-turnkit-stream": "sometimes"}}},
    ],
)
def test_hostile_or_wrong_json_schemas_are_clear_errors(schema: dict[str, Any]) -> None:
    from turnkit.errors import ResponseSchemaError

    with pytest.raises(ResponseSchemaError):
        StructuredStream(schema)


def test_recursive_json_schema_streams_lazily() -> None:
    schema = {
        "$ref": "#/$defs/node",
        "$defs": {"node": {"type": "object", "properties": {
            "name": {"type": "string", "x-turnkit-stream": "when-complete"},
            "left": {"$ref": "#/$defs/node"}, "right": {"$ref": "#/$defs/node"}}}},
    }  # fmt: skip
    s = StructuredStream(schema)
    s.feed('{"left": {"left": {"name": "dee')
    assert s.value == {"left": {"left": {}}}
    s.feed('p"}}, "right": {}}')
    s.close()
    assert s.value == {"left": {"left": {"name": "deep"}}, "right": {}}


class CountedItem(BaseModel):
    name: Annotated[str, AfterValidator(_count)]
    tags: Annotated[list[str], ItemsWhenComplete(), AfterValidator(lambda v: [_count(x) for x in v])]


class CountedDoc(BaseModel):
    items: list[CountedItem]
    title: Annotated[str, AfterValidator(_count)]


COUNTED = {"items": [{"name": "a", "tags": ["x", "y"]}, {"name": "b", "tags": []}], "title": "t"}


@pytest.mark.parametrize("name,pieces", list(chunkings(json.dumps(COUNTED), random_cuts=3)))
def test_validation_count_does_not_depend_on_chunking(name: str, pieces: list[str]) -> None:
    calls.clear()
    s = StructuredStream(CountedDoc)
    for piece in pieces:
        s.feed(piece)
    s.close()
    assert sorted(calls) == sorted(["a", "x", "y", "b", "t"])  # each validator ran exactly once
    assert s.result == CountedDoc.model_validate(COUNTED)


def test_prose_before_the_json_is_skipped() -> None:
    s = StructuredStream(Post, skip_prefix=True)
    s.feed('Here you go:\n```json\n{"title": "Hi", ')
    s.feed('"tags": ["a"]}\n```')
    s.close()
    assert s.result == Post(title="Hi", tags=["a"])


def test_transform_sees_only_what_the_policies_show() -> None:
    from turnkit.structured import PathMap, Transform

    s = StructuredStream(Post, transform=Transform(PathMap("/tags/*", "/labels/*"), keep=False))
    s.feed('{"title": "x", "tags": ["alp')
    assert s.value is None  # the first tag is not complete, so nothing reaches the transform
    s.feed('ha", "be')
    assert s.value == {"labels": ["alpha"]}


class Dup(BaseModel):
    text: str
    kind: Literal["a", "b"]
    state: Annotated[str, WithState()]
    obj: dict[str, int] = {}


DUP = (
    '{"text": "first", "kind": "a", "state": "s1", "obj": {"x": 1}, "text": "second", "kind": "b", '
    '"state": "s2", "obj": {"y": 2}}'
)


@pytest.mark.parametrize("name,pieces", list(chunkings(DUP)))
def test_duplicate_keys_end_like_json_loads(name: str, pieces: list[str]) -> None:
    s, snapshots, _ = _run(Dup, pieces)
    final = json.loads(DUP)
    assert s.result == Dup.model_validate(final)
    assert snapshots[-1] == {**final, "state": {"state": "complete", "value": "s2"}}


def test_hand_made_remove_and_replace() -> None:
    flt = PolicyFilter(compile_plan(Dup))
    out = flt.push(
        [
            {"op": "add", "path": "", "value": {}},
            {"op": "add", "path": "/text", "value": "abc"},
            {"op": "add", "path": "/obj", "value": {}},
            {"op": "add", "path": "/obj/x", "value": 1},
            {"op": "remove", "path": "/obj/x"},
            {"op": "add", "path": "/obj/y", "value": 2},
        ],
        ["", "/obj"],
    )
    client = [op for op in out if op["op"] != CLOSED]
    assert apply_patch(None, client) == {
        "text": "abc", "obj": {"y": 2}, "state": {"state": "pending", "value": None}
    }  # fmt: skip
    with pytest.raises(JsonPatchError):
        flt.push([{"op": "append", "path": "/text", "value": "x"}], ["", "/obj"])  # /text is complete


def test_client_operations_survive_the_wire_form() -> None:
    from turnkit.structured import decode_ops, encode_ops

    s = StructuredStream(Report)
    client: Any = None
    for piece in [*REPORT_TEXT, None]:
        ops = s.feed(piece) if piece is not None else s.close()
        client = apply_patch(client, decode_ops(encode_ops(ops)))
        assert client == s.value


@pytest.mark.parametrize(
    "schema,doc",
    [
        (list[Line], '[{"emoji": "x", "text": "a"}, {"emoji": "y", "text": "bc"}]'),
        (int, "42"),
        (str, '"hello"'),
        (Annotated[str, WhenComplete()], '"hello"'),
        (list[Annotated[Step, WhenComplete()]], '[{"kind": "answer", "body": "b"}]'),
    ],
)
def test_any_root_type(schema: Any, doc: str) -> None:
    for _, pieces in chunkings(doc):
        s, snapshots, _ = _run(schema, pieces)
        assert snapshots[-1] == json.loads(doc)
        assert s.result == TypeAdapter(schema).validate_json(doc)
