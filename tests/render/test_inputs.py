"""Input normalisation, template choice and options: the same text as transformers 5.23, or both fail."""

from __future__ import annotations

import copy
import dataclasses
import enum
from typing import Any

import pytest

from tests.render.conversations import CALL, CALL_JSON_ARGS, RESULT, SYSTEM, TOOLS, USER, get_time, get_weather
from tests.render.reference import SPECIAL_TOKENS, reference_render
from turnkit import (
    ArgumentTypeError,
    ChatTemplate,
    TemplateError,
    TemplateNotFoundError,
    ToolSchemaError,
    apply_chat_template,
)

pytestmark = pytest.mark.reference

# Prints everything the template sees, so any difference in the data shows up in the text.
DUMP = (
    "{{ bos_token }}{% for m in messages %}{{ m|tojson }}|{{ m }}\n{% endfor %}"
    "tools={{ tools|tojson }}|docs={{ documents|tojson }}|gen={{ add_generation_prompt }}"
    "{% if extra is defined %}|extra={{ extra|tojson }}|{{ extra }}{% endif %}"
    "{% if enable_thinking is defined %}|think={{ enable_thinking }}{% endif %}{{ eos_token }}"
)


class Color(str, enum.Enum):  # noqa: UP042 - the (str, Enum) mix-in callers really use
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@dataclasses.dataclass
class Point:
    x: int
    y: float | None


class Opaque:
    pass


def _both(conversation: Any, template: Any = DUMP, **options: Any) -> tuple[Any, Any]:
    try:
        source: Any = template
        ours: Any = (
            "ok",
            ChatTemplate(source, special_tokens=SPECIAL_TOKENS).render(
                copy.deepcopy(conversation), **copy.deepcopy(options)
            ),
        )
    except (TemplateError, ArgumentTypeError) as exc:  # a wrong argument fails at the door
        ours = ("error", exc)
    theirs = reference_render(copy.deepcopy(conversation), template, **copy.deepcopy(options))
    return ours, theirs


def _same(ours: Any, theirs: Any) -> None:
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "ok":
        assert ours[1] == theirs[1]


SHARED = {"k": [1, 2]}


class Thermometer:
    def read(self, room: str) -> float:
        """
        Read the temperature of a room.

        Args:
            room: The room's name
        """
        return 20.0


def undocumented(x: int) -> int:
    return x


NONE_MESSAGE = {"role": "user", "content": "x", "name": None, "meta": {"k": [1, {"v": None}]}}

CASES: dict[str, tuple[Any, dict[str, Any]]] = {
    "none-values-dropped": ([{"role": "user", "content": "hi", "name": None, "tool_calls": None}], {}),
    "nested-none-kept": ([{"role": "user", "content": [{"type": "text", "text": "a", "image": None}]}], {}),
    "str-enum": ([{"role": "user", "content": Color.RED}], {}),
    "int-enum": ([{"role": "user", "content": "x", "level": Level.HIGH}], {}),
    "dataclass": ([{"role": "user", "content": "x", "point": Point(1, None)}], {}),
    "opaque-object": ([{"role": "user", "content": "x", "blob": Opaque()}], {}),
    "tuple-and-int-keys": ([{"role": "user", "content": "x", "pair": (1, "a"), "map": {1: "one"}}], {}),
    "bytes-and-set": ([{"role": "user", "content": "x", "b": b"raw", "s": {1}}], {}),
    "shared-parts": ([{"role": "user", "content": "x", "a": SHARED, "b": SHARED}], {}),
    # a message with None values: a new dict of the others, which are adopted as they are when plain and
    # rebuilt when not (shared, another type, the same message twice)
    "none-with-nested-values": ([{"role": "assistant", "content": None, "tool_calls": [CALL["tool_calls"][0]]}], {}),
    "none-with-shared-parts": ([{"role": "user", "content": "x", "a": SHARED, "n": None, "b": SHARED}], {}),
    "none-with-other-types": ([{"role": "user", "content": None, "e": [Color.RED], "p": Point(1, 2)}], {}),
    "none-message-twice": ([NONE_MESSAGE, NONE_MESSAGE], {}),
    "dict-args": ([USER, CALL, RESULT], {"tools": TOOLS}),
    "json-string-args": ([USER, CALL_JSON_ARGS, RESULT], {"tools": TOOLS}),
    "function-tools": ([USER], {"tools": [get_weather, get_time]}),
    "mixed-tools": ([USER], {"tools": [TOOLS[0], get_time]}),
    "empty-tools": ([USER], {"tools": []}),
    "method-tool": ([USER], {"tools": [Thermometer().read]}),
    "undocumented-function-tool": ([USER], {"tools": [undocumented]}),
    "documents": ([USER], {"documents": [{"title": "t", "text": "x", "n": None}]}),
    "extra-kwargs": ([USER], {"extra": {"a": [1, (2, 3)], "e": Color.RED}, "enable_thinking": False}),
    "kwarg-overrides-special-token": ([USER], {"bos_token": "<BOS>"}),
    "generation-prompt": ([SYSTEM, USER], {"add_generation_prompt": True}),
    "reasoning-aliases": ([USER, {"role": "assistant", "content": "a", "reasoning": "r"}], {}),
    "thinking-alias": ([USER, {"role": "assistant", "content": "a", "thinking": "t", "reasoning_content": None}], {}),
    "batched": ([[USER], [SYSTEM, USER]], {"add_generation_prompt": True}),
    "continue-final": ([USER, {"role": "assistant", "content": "Hello wor"}], {"continue_final_message": True}),
    "continue-final-trailing-space": (
        [USER, {"role": "assistant", "content": "Hello "}],
        {"continue_final_message": True},
    ),
    "continue-final-blocks": (
        [USER, {"role": "assistant", "content": [{"type": "text", "text": "Hel"}]}],
        {"continue_final_message": True},
    ),
    "continue-reasoning": (
        [USER, {"role": "assistant", "content": "", "reasoning_content": "Let me"}],
        {"continue_final_message": "reasoning_content"},
    ),
    # failures: both must fail
    "empty-conversation": ([], {}),
    "message-not-a-dict": (["hello"], {}),
    "conversation-not-a-list": ("hello", {}),
    "continue-and-generation": ([USER], {"continue_final_message": True, "add_generation_prompt": True}),
    "continue-missing-field": ([USER], {"continue_final_message": "thinking"}),
    "continue-field-not-in-template": ([USER], {"continue_final_message": "name"}),
    "documents-not-dicts": ([USER], {"documents": ["text"]}),
    "tool-not-a-function": ([USER], {"tools": ["get_weather"]}),
    "messages-kwarg": ([USER], {"messages": []}),
}


@pytest.mark.parametrize(("conversation", "options"), list(CASES.values()), ids=list(CASES))
def test_matches_transformers(conversation: Any, options: dict[str, Any]) -> None:
    _same(*_both(conversation, **options))


def test_cases_really_render() -> None:
    # guard against a vacuous differential: the success cases succeed on both sides
    ok = [name for name, (conv, opts) in CASES.items() if _both(conv, **opts)[1][0] == "ok"]
    assert len(ok) >= 21, ok  # the continue-final cases need a template that names the field: tested below


CONTINUE_TEMPLATE = (
    "{% for m in messages %}<{{ m.role }}>{% if m.reasoning_content %}[{{ m.reasoning_content }}]{% endif %}"
    "{{ m.content if m.content is string else m.content[0].text }}</{{ m.role }}>\n{% endfor %}"
)


@pytest.mark.parametrize(
    "case", ["continue-final", "continue-final-trailing-space", "continue-final-blocks", "continue-reasoning"]
)
def test_continue_final_message_with_a_template_that_keeps_it(case: str) -> None:
    conversation, options = CASES[case]
    ours, theirs = _both(conversation, CONTINUE_TEMPLATE, **options)
    assert ours[0] == "ok", ours
    _same(ours, theirs)


NAMED = {
    "default": "D:{% for m in messages %}{{ m.content }}{% endfor %}",
    "tool_use": "T:{{ tools|length }}",
    "rag": "R:{{ documents|length }}",
}


@pytest.mark.parametrize(
    ("templates", "options"),
    [
        (NAMED, {}),
        (NAMED, {"tools": TOOLS}),
        (NAMED, {"template_name": "rag", "documents": [{"title": "a", "text": "b"}]}),
        (NAMED, {"template_name": "default", "tools": TOOLS}),
        ({"tool_use": NAMED["tool_use"], "rag": NAMED["rag"]}, {}),
        ({"tool_use": NAMED["tool_use"], "rag": NAMED["rag"]}, {"tools": TOOLS}),
        ({"default": NAMED["default"], "broken": "{% for %}"}, {}),
    ],
)
def test_template_choice_matches_transformers(templates: dict[str, str], options: dict[str, Any]) -> None:
    _same(*_both([USER], templates, **options))


def test_no_default_template_is_a_clear_error() -> None:
    template = ChatTemplate({"tool_use": "x", "rag": "y"})
    with pytest.raises(TemplateNotFoundError, match="none is named 'default'"):
        template.render([USER])
    with pytest.raises(TemplateNotFoundError, match="no chat template named 'nope'"):
        template.render([USER], template_name="nope")


def test_apply_chat_template_function_and_batches() -> None:
    text = apply_chat_template([USER], "{{ bos_token }}{{ messages[0].content }}", bos_token="<s>")
    assert text == "<s>What's the weather in Paris?"
    assert apply_chat_template([[USER], [USER]], "{{ messages|length }}") == ["1", "1"]
    assert apply_chat_template([USER], NAMED, tools=TOOLS) == "T:2"


def test_caller_data_is_never_modified() -> None:
    conversation = [USER, {"role": "assistant", "content": "Hello wor", "reasoning": "r"}]
    before = copy.deepcopy(conversation)
    apply_chat_template(conversation, CONTINUE_TEMPLATE, continue_final_message=True)
    apply_chat_template(conversation, DUMP)
    assert conversation == before


def test_function_tool_schemas_are_cached_but_fresh_functions_are_seen() -> None:
    template = ChatTemplate("{{ tools[0].function.description }}")
    assert template.render([USER], tools=[get_weather]) == "Get the current weather in a city."

    def get_weather_v2(city: str) -> str:
        """
        Weather, version two.

        Args:
            city: The city
        """
        return city

    assert template.render([USER], tools=[get_weather_v2]) == "Weather, version two."
    get_weather_v2.__doc__ = "Changed.\n\n    Args:\n        city: The city\n"
    assert template.render([USER], tools=[get_weather_v2]) == "Changed."


BIG_TEMPLATE = (
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
    "{% set echo = m.content ~ '|' %}{{ echo|length }}{% endfor %}"
    "{% for d in documents %}{{ d|tojson(indent=2) }}{{ [d.text, d.text]|join('\\n')|length }}{% endfor %}"
)


def test_long_conversation_renders_like_transformers() -> None:
    # Strings and prompts longer than the fixed per-operation and output limits are fine when the input is that
    # long: only templates that blow a small input up are stopped.
    long_text = "Lorem ipsum dolor sit amet. " * 60_000  # 1.7 M characters
    conversation = [{"role": "user", "content": long_text}, {"role": "assistant", "content": long_text}]
    documents = [{"title": "t", "text": long_text}]
    ours, theirs = _both(conversation, BIG_TEMPLATE, documents=documents)
    assert ours[0] == "ok", ours
    assert len(ours[1]) > 5_000_000
    _same(ours, theirs)


def test_runtime_errors_name_the_template_line() -> None:
    with pytest.raises(TemplateError, match=r"TypeError: .* \(template line 3\)"):
        apply_chat_template([USER], "{{ bos_token }}\n{% set x = 1 %}\n{{ x + 'a' }}")


def test_bad_tools_fail_as_template_errors() -> None:
    with pytest.raises(TemplateError, match="tool 'undocumented'") as info:
        apply_chat_template([USER], "x", tools=[undocumented])
    assert isinstance(info.value.__cause__, ToolSchemaError) and info.value.code == "tool_schema"
    with pytest.raises(TemplateError, match="tools must be JSON schemas") as info:
        apply_chat_template([USER], "x", tools=[len])
    assert info.value.code == "tool_type"


def test_messages_are_adopted_in_one_pass() -> None:
    from collections import OrderedDict

    from turnkit.render._inputs import plain_messages

    calls = [{"id": "c", "function": {"name": "f", "arguments": {"x": 1}}}]
    plain = {"role": "user", "content": "x"}
    with_none = {"role": "assistant", "content": None, "tool_calls": calls}
    other_type = {"role": "assistant", "content": None, "meta": OrderedDict(a=1)}
    messages = plain_messages([plain, with_none, other_type, plain], set())
    assert messages[0] is plain  # plain: used as it is
    assert messages[1] == {"role": "assistant", "tool_calls": calls} and messages[1]["tool_calls"] is calls
    assert type(messages[2]["meta"]) is dict and messages[2]["meta"] == {"a": 1}  # not plain: rebuilt
    assert messages[3] == plain and messages[3] is not plain  # met twice: the second is a copy (a tree)
    assert with_none["content"] is None  # the caller's message is untouched


def test_render_keys_reuse_one_pickler_per_thread() -> None:
    import io
    import threading

    from turnkit.render._inputs import PlainPickler, plain_key

    def fresh(value: Any) -> bytes:
        buffer = io.BytesIO()
        PlainPickler(buffer, 5).dump(value)
        return buffer.getvalue()

    shared = [1]
    values = [[{"a": 1, "b": [1.5, True, None]}], ("t", 1), [shared, shared], {"k": "v" * 70000}]
    keys = [plain_key(value, 1 << 20) for value in values]
    assert keys == [fresh(value) for value in values]
    assert plain_key([Color.RED], 1 << 20) is None  # refused mid-dump: that pickler is dropped
    assert plain_key({"k": "v" * 200}, 100) is None  # too big
    assert [plain_key(value, 1 << 20) for value in values] == keys  # the reused one starts clean

    results: list[list[bytes | None]] = []

    def worker() -> None:
        results.append([plain_key(value, 1 << 20) for value in values * 50])

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(result == keys * 50 for result in results)


def test_adopted_messages_drop_only_their_own_none_values() -> None:
    from turnkit.render._inputs import plain_messages

    nested = {"x": None, "y": [None, 1]}
    chat = [
        {"role": "user", "content": "a", "meta": copy.deepcopy(nested)},  # a None inside, none of its own: as it is
        {"role": "assistant", "content": None, "meta": nested},  # its own None dropped, the items kept as they are
        {"role": "user", "content": "b"},
    ]
    trusted: set[int] = set()
    messages = plain_messages(chat, trusted)
    assert messages[0] is chat[0] and messages[2] is chat[2]
    assert messages[1] == {"role": "assistant", "meta": nested} and messages[1]["meta"] is nested
    assert id(messages[1]) in trusted
