"""The render memo: an unchanged input gives the text already built; any change to the input is a new render."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from turnkit import ChatTemplate, TemplateError
from turnkit.render._spans import TRACKER, SpanTracker

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi", "meta": {"n": 1, "x": 1.0, "flag": True}},
]
TEMPLATE = (
    "{% for m in messages %}[{{ m.role }}] {{ m.content }} {{ m.meta | tojson if m.meta is defined }}\n{% endfor %}"
    "{% for t in tools or [] %}{{ t | tojson }}{% endfor %}{{ extra }}"
)


def _memo(template: ChatTemplate) -> Any:
    return template._memos["default"]


def test_an_unchanged_input_is_rendered_twice_at_most() -> None:
    template = ChatTemplate(TEMPLATE)
    first = template.render(CHAT)
    assert len(_memo(template).entries) == 0  # met once: no key computed, nothing kept
    second = template.render(copy.deepcopy(CHAT))
    assert second == first and len(_memo(template).entries) == 1  # met again: kept
    assert template.render(copy.deepcopy(CHAT)) is second  # same content, other objects: the same text
    assert len(_memo(template).entries) == 1


def test_inputs_met_once_cost_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    import turnkit.render._template as module

    keys = []
    real = module._memo_key
    monkeypatch.setattr(module, "_memo_key", lambda *args: keys.append(args) or real(*args))
    template = ChatTemplate(TEMPLATE)
    for n in range(300):  # a batch of distinct conversations, then a growing chat
        template.render([*CHAT, {"role": "user", "content": f"question {n}"}])
        template.render(CHAT + [{"role": "user", "content": "turn"}] * n)
    assert keys == [] and len(_memo(template).entries) == 0
    template.render([*CHAT, {"role": "user", "content": "question 7"}])  # an earlier one again: keyed, kept
    assert len(keys) == 1 and len(_memo(template).entries) == 1


@pytest.mark.parametrize(
    "change",
    [
        lambda chat: chat[1].update(content="Hello"),
        lambda chat: chat[1]["meta"].update(n=True),  # 1 == True, but tojson prints them differently
        lambda chat: chat[1]["meta"].update(x=1),  # 1.0 == 1
        lambda chat: chat[1]["meta"].update(n=1.0),
        lambda chat: chat[1].update(meta=dict(reversed(list(chat[1]["meta"].items())))),  # key order
        lambda chat: chat.append({"role": "user", "content": "more"}),
    ],
)
def test_any_change_to_the_input_is_seen(change: Any) -> None:
    template = ChatTemplate(TEMPLATE)
    chat = copy.deepcopy(CHAT)
    template.render(chat)
    template.render(chat)
    change(chat)  # mutated in place: the memo keys on content, never on identity
    assert template.render(chat) == template.render(chat) == ChatTemplate(TEMPLATE).render(chat)
    assert len(_memo(template).entries) == 2


def test_every_argument_is_part_of_the_key() -> None:
    template = ChatTemplate(TEMPLATE, special_tokens={"extra": "E"})
    tool = {"type": "function", "function": {"name": "f"}}
    for kwargs in ({}, {"tools": [tool]}, {"extra": "X"}, {"add_generation_prompt": True}, {"extra": "E"}):
        fresh = ChatTemplate(TEMPLATE, special_tokens={"extra": "E"})  # an empty memo: a real render
        assert template.render(CHAT, **kwargs) == fresh.render(CHAT, **kwargs)


def test_function_tools_follow_their_function() -> None:
    def f(city: str) -> str:
        """Weather.

        Args:
            city: The city.
        """
        return city

    template = ChatTemplate(TEMPLATE)
    first = template.render(CHAT, tools=[f])
    f.__doc__ = "Wind.\n\nArgs:\n    city: The city.\n"
    second = template.render(CHAT, tools=[f])
    assert "Wind." in second and first != second


@pytest.mark.parametrize("source", ["{{ strftime_now('%S.%f') }}", "{{ [1, 2, 3] | random }}", "{{ lipsum(1) }}"])
def test_templates_reading_the_clock_or_randomness_are_never_memoised(source: str) -> None:
    template = ChatTemplate(source)
    template.render(CHAT)
    assert template._memos["default"] is None


def test_inputs_that_are_not_plain_data_are_not_memoised() -> None:
    class Role(str):
        pass

    template = ChatTemplate(TEMPLATE)
    chat = [{"role": Role("user"), "content": "Hi"}]
    assert template.render(chat) == "[user] Hi \n"
    assert len(_memo(template).entries) == 0


def test_failures_are_not_memoised() -> None:
    template = ChatTemplate("{{ raise_exception('no') if messages | length > 1 else 'ok' }}")
    for _ in range(2):
        with pytest.raises(TemplateError, match="no"):
            template.render(CHAT)
    assert len(template._memos["default"].entries) == 0


def test_generation_span_tracking_bypasses_the_memo() -> None:
    template = ChatTemplate("{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}")
    template.render(CHAT)
    tracker = SpanTracker()
    token = TRACKER.set(tracker)
    try:
        template.render(CHAT)
    finally:
        TRACKER.reset(token)
    assert tracker.renders == [[(0, 9), (9, 11)]]


def test_the_same_conversation_decoded_again_is_a_hit() -> None:
    import json

    template = ChatTemplate(TEMPLATE)
    text = json.dumps(CHAT)
    template.render(json.loads(text))
    second = template.render(json.loads(text))
    assert template.render(json.loads(text)) is second  # a server decoding the same history per request


def test_shared_parts_are_keyed_by_reference_not_expanded() -> None:
    from turnkit.render._template import _memo_key

    part: Any = "x"
    for _ in range(40):  # 2**40 leaves if expanded
        part = [part, part]
    key = _memo_key("default", [{"role": "user", "tree": part}], None, None, False, False, {})
    assert key is not None and len(key) < 2_000


def test_threads_share_one_memo() -> None:
    """Renders from several threads (a threaded server) fill and evict the memo and its fingerprints at once."""
    import threading

    template = ChatTemplate(TEMPLATE)
    chats = [[*CHAT, {"role": "user", "content": f"q{n % 1500}"}] for n in range(3000)]  # past both bounds
    expected = {chat[-1]["content"]: ChatTemplate(TEMPLATE).render(chat) for chat in chats[:1500]}
    failures: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for chat in chats[offset:] + chats[:offset]:
                assert template.render(chat) == expected[chat[-1]["content"]]
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(offset,)) for offset in (0, 700, 1400, 2100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert 0 < len(_memo(template).entries) <= 256


def test_the_fifo_memo_evicts_oldest_first_within_both_bounds() -> None:
    from turnkit.render._memo import FifoMemo

    memo: FifoMemo[str] = FifoMemo(max_entries=3, max_bytes=100, max_text=50)
    for n in range(5):
        memo.put(("key", n), f"text {n}", f"text {n}", key_size=10)  # a tuple key: its size is given
    assert list(memo.entries) == [("key", 2), ("key", 3), ("key", 4)]  # 3 entries at most, the oldest out
    memo.put(b"b" * 40, "x" * 40, "x" * 40)  # a bytes key sizes itself: 80 bytes, so only one other fits
    assert list(memo.entries) == [("key", 4), b"b" * 40]
    memo.put(("key", 4), "again", "again", key_size=10)  # a key already kept keeps its place and value
    assert memo.get(("key", 4)) == "text 4"
    memo.put("too long", "y" * 51, "y" * 51, key_size=1)  # a text past max_text is not kept
    assert "too long" not in memo.entries
    for n in range(10_000):  # evicting stays cheap and consistent (the order is a deque, not the dict's front)
        memo.put(n, "", "", key_size=1)
    assert list(memo.entries) == [9_997, 9_998, 9_999]


def test_a_loop_remembered_by_position_takes_the_place_of_the_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``prefix_cache=True`` a template whose message loop is remembered by position replays a repeated
    input's every iteration, so it pays no fingerprint for the memo; one whose loops are only keyed keeps it."""
    import turnkit.render._template as module

    fingerprints = []
    real = module._fingerprint
    monkeypatch.setattr(module, "_fingerprint", lambda chat: fingerprints.append(chat) or real(chat))
    source = "{% for m in messages %}{% if m.role %}[{{ m.role }}] {{ m.content }}{% endif %};{% endfor %}"
    by_position = ChatTemplate(source, prefix_cache=True)
    for _ in range(3):
        assert by_position.render(copy.deepcopy(CHAT)) == ChatTemplate(source).render(CHAT)
    assert _memo(by_position) is None
    assert len(fingerprints) == 3  # the three fresh templates' renders only
    keyed = ChatTemplate(source.replace("in messages", "in messages[1:]"), prefix_cache=True)
    for _ in range(3):
        assert keyed.render(copy.deepcopy(CHAT)) == "[user] Hi;"
    assert len(fingerprints) == 6 and len(_memo(keyed).entries) == 1
