"""``ChatTemplate(prefix_cache=True)``: a conversation that grows renders exactly as a cold render of it.

The prefix cache remembers each iteration of a template's top-level loops (see ``render/_fragments.py``). A
remembered iteration must give the text (and the failure, and the budget use) running it gives: every test
here renders conversations as they grow, with one remembering template, and compares each render with a fresh
template that remembers nothing.
"""

from __future__ import annotations

import copy
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.corpora import CORPORA, corpus_path
from tests.render.conversations import cases, function_tool_cases
from tests.render.reference import SPECIAL_TOKENS, stop_clocks
from tests.render.test_differential import _template_files
from tests.render.test_differential_properties import CONVERSATION, OPTIONS, TEMPLATES
from turnkit import ChatTemplate, Limits, TemplateError, TemplateLimitError
from turnkit.limits import DEFAULT_LIMITS
from turnkit.render import _sandbox
from turnkit.render._fragments import _MEMO_ENTRIES, fragment_loops
from turnkit.render._sandbox import sandbox_for


@pytest.fixture(autouse=True)
def _stopped_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    stop_clocks(monkeypatch)


def _outcome(template: ChatTemplate, conversation: Any, options: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", template.render(copy.deepcopy(conversation), **_copy(options))
    except TemplateError as exc:
        return "error", exc.code


def _copy(options: dict[str, Any]) -> dict[str, Any]:
    return {k: (list(v) if k == "tools" else copy.deepcopy(v)) for k, v in options.items()}


def _grown_renders_match(source: str, conversations: list[tuple[list[dict[str, Any]], dict[str, Any]]]) -> int:
    """Render every prefix of every conversation with one prefix-caching template; each must equal a cold
    render. Returns how many iterations the cache remembered (so a test can show it was used)."""
    try:
        warm = ChatTemplate(source, special_tokens=SPECIAL_TOKENS, prefix_cache=True)
    except TemplateError:
        return 0
    cold = ChatTemplate(source, special_tokens=SPECIAL_TOKENS)
    for conversation, options in conversations:
        for end in [*range(1, len(conversation) + 1), len(conversation)]:  # the last one twice: all remembered
            prefix = conversation[:end]
            assert _outcome(warm, prefix, options) == _outcome(cold, prefix, options), (end, options)
        warm._memos.clear()  # the whole-render memo would answer a repeated input before the loops run
    return sum(len(memo.entries) for memo in _fragment_memos(warm))


def _fragment_memos(template: ChatTemplate) -> list[Any]:
    compiled = template._compiled.get("default")
    if compiled is None or isinstance(compiled, TemplateError):
        return []
    module = compiled.root_render_func.__globals__
    return [value for name, value in module.items() if name.startswith("tk_fragments_")]


@pytest.mark.corpus
@pytest.mark.parametrize("path", _template_files())
def test_grown_conversations_render_as_cold_ones(path: Path | None) -> None:
    corpus_path("templates")
    assert path is not None
    source = path.read_text(encoding="utf-8")
    conversations = [(conversation, options) for _, conversation, options in cases() + function_tool_cases()]
    _grown_renders_match(source, conversations)


def test_the_bundled_template_remembers_its_loops() -> None:
    from importlib.resources import files

    source = files("turnkit").joinpath("data", "chatml-tools.jinja").read_text(encoding="utf-8")
    conversations = [(conversation, options) for _, conversation, options in cases()]
    assert _grown_renders_match(source, conversations) > 0


@pytest.mark.corpus
@pytest.mark.parametrize("name", TEMPLATES)
def test_random_grown_conversations_render_as_cold_ones(name: str) -> None:
    corpus_path("templates")
    source = (CORPORA / "templates" / name).read_text(encoding="utf-8")

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(st.tuples(CONVERSATION, OPTIONS), min_size=1, max_size=3))
    def check(conversations: list[tuple[list[dict[str, Any]], dict[str, Any]]]) -> None:
        # one conversation grown from the next: later ones share earlier ones' prefixes
        grown = []
        so_far: list[dict[str, Any]] = []
        for conversation, options in conversations:
            so_far = so_far + conversation
            grown.append((so_far, options))
        _grown_renders_match(source, grown)

    check()


@pytest.mark.parametrize(
    ("source", "qualifies"),
    [
        ("{% for m in messages %}{% if m %}{{ m.content }}{% endif %}{% endfor %}", True),
        ("{% for m in messages %}{{ f(m) }}{% endfor %}", True),
        # a body that only prints, without calls, costs less to run than to key
        ("{% for m in messages %}{{ m.content }}{% endfor %}", False),
        ("{% for t in tools %}{{ (t | tojson) + '\\n' }}{% endfor %}", False),
        (
            "{% for m in messages %}{% if m %}{{ loop.index }}{{ loop.last }}{{ loop.nextitem }}{% endif %}"
            "{% endfor %}",
            True,
        ),
        ("{% if x %}{% for m in messages %}{% if m %}{{ m.role }}{% endif %}{% endfor %}{% endif %}", True),
        # a random item or an identity test: two renders of equal inputs may differ
        ("{% for m in messages %}{% if m %}{{ m.content | random }}{% endif %}{% endfor %}", False),
        ("{% for m in messages %}{% if m is sameas x %}.{% endif %}{% endfor %}", False),
        ("{% macro f(m) %}{{ [1, 2] | random }}{% endmacro %}{% for m in messages %}{{ f(m) }}{% endfor %}", False),
        ("{% for m in messages %}{% for c in m.content %}{% break %}{% endfor %}{% endfor %}", True),
        ("{% for m in messages %}{% if m.role %}{% break %}{% endif %}{% endfor %}", False),
        ("{% for m in messages %}{% continue %}{% endfor %}", False),
        ("{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}", False),
        ("{% for m in messages %}{{ loop.changed(m.role) }}{% endfor %}", False),
        ("{% for m in messages %}{{ loop }}{% endfor %}", False),
        ("{% for m in messages %}{{ loop.cycle('a', 'b') }}{% endfor %}", True),
        ("{% for m in messages %}{% macro f() %}{% endmacro %}{% endfor %}", False),
        ("{% macro f(ns) %}{% set ns.x = 1 %}{% endmacro %}{% for m in messages %}{{ m }}{% endfor %}", False),
        ("{% for m in messages recursive %}{{ m }}{% endfor %}", False),
        ("{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}", False),
        ("{% macro g() %}{% generation %}x{% endgeneration %}{% endmacro %}{% for m in messages %}{% endfor %}", False),
        ("{% macro f() %}{% for m in messages %}{{ m }}{% endfor %}{% endmacro %}{{ f() }}", False),
    ],
)
def test_which_loops_are_remembered(source: str, qualifies: bool) -> None:
    assert bool(fragment_loops(sandbox_for(DEFAULT_LIMITS).parse(source))) is qualifies


CHAT = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]


@pytest.mark.parametrize(
    "source",
    [
        # a joiner and a macro are read by the body; the joiner cannot be keyed, so nothing is remembered
        "{% set j = joiner('|') %}{% for m in messages %}{{ j() }}{{ m.content }}{% endfor %}",
        "{% macro f(m) %}<{{ m.content }}>{% endmacro %}{% for m in messages %}{{ f(m) }}{% endfor %}",
        "{% set ns = namespace(sys='S') %}{% for m in messages %}{% if m %}{{ ns.sys }}{{ m.content }}{{ x }}"
        "{% endif %}{% endfor %}",
        "{% for m in messages %}{% if m %}{{ loop.previtem.content if loop.previtem is defined }}{{ loop.revindex }}"
        "{% endif %}{% endfor %}",
        "{% for m in messages %}{% set x = m.content %}{{ x }}{{ y }}{% endfor %}{% set y = 1 %}",
        # the loop's own sequence read again (keyed per position) and a slice of it (keyed per value)
        "{% for m in messages %}{% if m %}{{ loop.index0 }}{{ loop.length }}{{ loop.previtem }}{{ x }}{% endif %}"
        "{% endfor %}",
        "{% for m in messages[1:] %}{% if m %}{{ loop.first }}{{ loop.nextitem }}{{ x }}{% endif %}{% endfor %}",
        "{% for m in messages | reverse %}{% if m %}{{ loop.last }}{{ m.content }}{{ x }}{% endif %}{% endfor %}",
        # a name stored in the body but read before (the context's value, as the body reads it)
        "{% for m in messages %}{% if m.role == 'user' %}{% set x = 'set' %}{% endif %}{{ x }}{% endfor %}",
        # a nested loop's variable shadows x inside that loop only; a set binds x from the next statement only
        "{% for m in messages %}{% if m %}{% for x in [m.content] %}{{ x }}{% endfor %}{{ x }}{% endif %}{% endfor %}",
        "{% for m in messages %}{% if m %}{% for c in [m] %}{% set y = x %}{% set x = c.content %}{{ x }}{{ y }}"
        "{% endfor %}{% endif %}{% endfor %}",
    ],
)
def test_values_the_body_reads_are_part_of_the_key(source: str) -> None:
    warm = ChatTemplate(source, prefix_cache=True)
    for x in ("1", "2", "1"):
        for end in (1, 2, 3, 3):
            expected = ChatTemplate(source).render(CHAT[:end], x=x)
            assert warm.render(CHAT[:end], x=x) == expected
            warm._memos.clear()
    if "joiner" not in source:
        assert sum(len(memo.entries) for memo in _fragment_memos(warm)) > 0  # the cache was used


def test_the_same_scope_objects_reuse_their_parts_only_when_they_never_change() -> None:
    """A loop remembered by position reuses the key parts of the last scope while its values are the same objects,
    for values that never change only (a string, an undefined name, a sandbox global): the caller's documents (the
    render adopts them as they are), the same list changed in place between two renders, are keyed again, and a
    name defined later is no longer undefined."""
    source = (
        "{% for m in messages %}{% if m %}{{ m.content }}{{ documents | tojson }}{{ raise_exception is defined }}"
        "{{ s }}{{ later }};{% endif %}{% endfor %}"
    )
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    documents = [{"text": "1"}]
    for text, later in (("1", {}), ("2", {}), ("2", {"later": "L"}), ("2", {})):
        documents[0]["text"] = text
        options = {"documents": documents, "s": "S", **later}
        assert warm.render(CHAT, **options) == cold.render(CHAT, **options)
    assert _traces(warm)[0].k == len(CHAT)  # remembered, an undefined name among its scope
    assert _fragment_memos(warm)[0].last_scope is None  # (the documents' part is their pickle: never reused)
    source = source.replace("{{ documents | tojson }}", "")
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    for options in ({"s": "S"}, {"s": "S"}, {"s": "T"}, {"s": "T", "later": "L"}, {"s": "T"}):
        assert warm.render(CHAT, **options) == cold.render(CHAT, **options)
    assert _fragment_memos(warm)[0].last_scope is not None


@pytest.mark.parametrize(("limit", "fits"), [(43, False), (44, True)])
def test_a_remembered_iteration_counts_its_loops(limit: int, fits: bool) -> None:
    # each message's body runs 10 iterations and the message loop one per message: 3 messages count 33, 4 count
    # 44, remembered or not (a replay charges what its iteration charged, no more, no less)
    source = "{% for m in messages %}{% for i in range(10) %}.{% endfor %}{% endfor %}"
    limits = Limits(max_loop_iterations=limit)
    warm = ChatTemplate(source, limits=limits, prefix_cache=True)
    chat = [{"role": "user", "content": str(n)} for n in range(4)]
    assert warm.render(chat[:3]) == "." * 30
    if fits:
        assert warm.render(chat) == ChatTemplate(source, limits=limits).render(chat) == "." * 40
        assert _traces(warm)[0].k == 3  # (replayed)
        return
    with pytest.raises(TemplateLimitError) as cold:
        ChatTemplate(source, limits=limits).render(chat)
    with pytest.raises(TemplateLimitError) as remembered:
        warm.render(chat)
    assert remembered.value.code == cold.value.code == "template_loops"


@pytest.mark.parametrize("by_position", [True, False])
def test_an_iteration_that_needed_the_input_allowance_is_not_kept(by_position: bool) -> None:
    """A string over ``max_sequence_length`` is allowed up to twice the render's input more: the first message's
    text passes in a conversation whose second message is long, and fails alone (a smaller input), remembered or
    not."""
    loop = "messages" if by_position else "messages[0:]"
    source = f"{{% for m in {loop} %}}{{% if m %}}{{{{ m.content * 5 }}}};{{% endif %}}{{% endfor %}}"
    limits = Limits(max_sequence_length=100)
    warm = ChatTemplate(source, limits=limits, prefix_cache=True)
    first, second = {"role": "user", "content": "a" * 150}, {"role": "user", "content": "b" * 150}
    assert warm.render([first, second]) == ChatTemplate(source, limits=limits).render([first, second])
    with pytest.raises(TemplateLimitError) as cold:
        ChatTemplate(source, limits=limits).render([first])
    with pytest.raises(TemplateLimitError) as remembered:
        warm.render([first])
    assert remembered.value.code == cold.value.code == "template_size"


def test_templates_cannot_reach_the_cache() -> None:
    warm = ChatTemplate("{% for m in messages %}{{ m.content }}{% endfor %}[{{ tk_fragments_0 }}]", prefix_cache=True)
    assert warm.render(CHAT) == "abc[]"
    assert warm.render(CHAT) == "abc[]"


def test_prefix_cache_must_be_a_bool() -> None:
    with pytest.raises(TypeError):
        ChatTemplate("x", prefix_cache="yes")  # type: ignore[arg-type]


@pytest.mark.corpus
def test_how_many_corpus_templates_have_a_remembered_loop() -> None:
    """The counts docs/render.md gives (a loop over ``messages`` or its usual slice ``loop_messages``)."""
    import jinja2.nodes as nodes

    root = corpus_path("templates")
    sandbox = sandbox_for(DEFAULT_LIMITS)
    counts = [0, 0, 0]
    for path in sorted(root.rglob("*.jinja")):
        loops = fragment_loops(sandbox.parse(path.read_text(encoding="utf-8")))
        over_messages = [
            loop
            for loop in loops
            if any(
                n.name in ("messages", "loop_messages")
                for n in [loop.iter, *loop.iter.find_all(nodes.Name)]
                if isinstance(n, nodes.Name)
            )
        ]
        clean = [
            loop
            for loop in over_messages
            if not any(n.name == "messages" for stmt in loop.body for n in stmt.find_all(nodes.Name))
        ]
        for i, found in enumerate((loops, over_messages, clean)):
            counts[i] += bool(found)
    assert counts == [118, 117, 100]


VARIANTS: list[Any] = [1, 1.0, True, 0.0, -0.0, "1", [1], (1,), {"a": 1, "b": 2}, {"b": 2, "a": 1}, [1.0], False]


@pytest.mark.parametrize("where", ["message", "variable"])
def test_equal_values_of_other_types_or_order_are_other_keys(where: str) -> None:
    # 1 == 1.0 == True, 0.0 == -0.0, a dict equal to one in another order, a list equal to none of them: each
    # prints differently, so a key that compared them with == would replay the wrong text
    source = (
        "{% for m in messages %}{% if m %}{{ m.content }}|{{ m.content | tojson }}|{{ x }}|{{ x | tojson }};"
        "{% endif %}{% endfor %}"
    )
    warm = ChatTemplate(source, prefix_cache=True)
    cold = ChatTemplate(source)
    for value in [*VARIANTS, *VARIANTS[::-1]]:
        chat = [{"role": "user", "content": value if where == "message" else "c"}, {"role": "user", "content": "d"}]
        x = value if where == "variable" else 0
        assert warm.render(chat, x=x) == cold.render(chat, x=x), value
        warm._memos.clear()
    assert sum(len(memo.entries) for memo in _fragment_memos(warm)) > 0


def test_per_position_keys_are_the_keys_an_iteration_builds() -> None:
    """A plain loop over the sequence its keys were built from takes ``keys[index0]``: the very tuple the generic
    path builds from the iteration's values (see LoopKeys)."""
    from jinja2.runtime import Undefined

    from turnkit.render._fragments import LoopKeys, key_pickler
    from turnkit.render._inputs import plain_messages

    trusted: set[int] = set()
    messages = plain_messages([{"role": "user", "content": str(n)} for n in range(4)], trusted)
    layout = ("index0", "last", "length", "previtem", "nextitem")
    for sequence in (messages, ["a", 1, 2.0, None], ("only",)):
        keys = LoopKeys(("scope value", 3), key_pickler({}), trusted, sequence, layout)
        length = len(sequence)
        for i, item in enumerate(sequence):
            previous = sequence[i - 1] if i else Undefined()
            following = sequence[i + 1] if i + 1 < length else Undefined()
            parts = (keys.piece(item), i, i == length - 1, length, keys.piece(previous), keys.piece(following))
            assert keys.keys[i] == (keys.scope, *parts)
            assert [type(a) for a in keys.keys[i]] == [type(b) for b in (keys.scope, *parts)]


def test_a_body_reading_the_clock_is_run_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = iter(range(10, 60))

    class MovingClock(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> MovingClock:
            return cls(2026, 11, 25, 12, 0, next(ticks), tzinfo=tz)

    monkeypatch.setattr(_sandbox, "datetime", MovingClock)
    warm = ChatTemplate(
        "{% for m in messages %}{% if m %}{{ strftime_now('%S') }}{{ m.content }}{% endif %}{% endfor %}",
        prefix_cache=True,
    )
    assert warm.render(CHAT) == "10a11b12c"
    assert warm.render(CHAT) == "13a14b15c"
    assert sum(len(memo.entries) for memo in _fragment_memos(warm)) == 0


def test_the_output_limit_holds_for_remembered_iterations() -> None:
    source = "{% for m in messages %}{% if m %}{{ m.content * 10 }}{% endif %}{% endfor %}"
    limits = Limits(max_output_chars=1000)
    chat = [{"role": "user", "content": "x" * 100} for _ in range(4)]
    # 1,000 characters per message, each message allowing 200 more (twice the input): the second one fails
    _grown_renders_match(source, [(chat, {})])
    warm = ChatTemplate(source, limits=limits, prefix_cache=True)
    cold = ChatTemplate(source, limits=limits)
    for end in (1, 2, 1, 2, 3):
        assert _outcome(warm, chat[:end], {}) == _outcome(cold, chat[:end], {})
    assert _outcome(warm, chat[:2], {}) == ("error", "template_output")


def test_names_the_body_binds_before_reading_them_are_not_keyed() -> None:
    """A nested loop's variable, and a name ``set`` at the head of a nested loop's body, are not read when the loop
    starts: jinja2 would then resolve them at every iteration (a dictionary lookup per name and iteration)."""
    source = (
        "{% for m in messages %}{% if m %}{% for c in m.content %}{% set d = c %}{{ d }}{% endfor %}{% endif %}"
        "{% endfor %}"
    )
    code = sandbox_for(DEFAULT_LIMITS, fragments=True).compile(source, raw=True)
    assert "tk_resume(tk_fragments_0, ()," in code
    assert "resolve('c')" not in code and "resolve('d')" not in code
    warm = ChatTemplate(source, prefix_cache=True)
    assert warm.render(CHAT) == warm.render(CHAT) == ChatTemplate(source).render(CHAT) == "abc"


# -- loops remembered by position (a plain variable's list: see _fragments.Resume) ------------------------------


def _traces(template: ChatTemplate) -> list[Any]:
    """The position traces of the template's remembered loops, most recent first."""
    return [trace for memo in _fragment_memos(template) for trace in getattr(memo, "traces", [])]


@pytest.mark.parametrize(
    ("source", "ordered"),
    [
        # the body reads items only: the order of a message's keys cannot show
        ("{% for m in messages %}{% if m.role %}{{ m.role }}:{{ m['content'] }};{% endif %}{% endfor %}", False),
        # the body prints the message, its items or its JSON: the order shows, and is part of the match
        ("{% for m in messages %}{% if m %}{{ m | tojson }};{% endif %}{% endfor %}", True),
        (
            "{% for m in messages %}{% if m %}{% for k, v in m.items() %}{{ k }}={{ v }},{% endfor %}{% endif %}"
            "{% endfor %}",
            True,
        ),
        ("{% for m in messages %}{% if m %}{{ m }}{% endif %}{% endfor %}", True),
        ("{% for m in messages %}{% if loop.previtem %}{{ loop.previtem | tojson }}{% endif %}{% endfor %}", True),
    ],
)
def test_a_message_in_another_key_order_matches_only_where_the_order_cannot_show(source: str, ordered: bool) -> None:
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    first = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    reordered = [{"content": "a", "role": "user"}, {"content": "b", "role": "assistant"}]
    assert warm.render(first) == cold.render(first)
    before = _traces(warm)[0].entries[0]
    assert warm.render(reordered) == cold.render(reordered)
    assert (_traces(warm)[0].entries[0] is before) is not ordered  # the same entry replayed, or the body run again


@pytest.mark.parametrize("value", ["1", 1, 1.0, True, 0.0, -0.0, [1], (1,), {"a": "1"}, None])
def test_a_message_matches_only_a_copy_of_the_same_types_and_values(value: Any) -> None:
    """Only the remembered message's exact content replays its text: each pair of values here is == equal (1,
    1.0, True; 0.0, -0.0; a list and a tuple) or prints alike, and each prints differently somewhere."""
    source = "{% for m in messages %}{% if m %}{{ m.content }}|{{ m.content | tojson }};{% endif %}{% endfor %}"
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    for other in ["1", 1, 1.0, True, 0.0, -0.0, [1], (1,), {"a": "1"}, None, value]:
        for chat in ([{"role": "user", "content": value}], [{"role": "user", "content": other}]):
            chat = [*chat, {"role": "user", "content": "next"}]
            assert _outcome(warm, chat, {}) == _outcome(cold, chat, {}), (value, other)
            warm._memos.clear()
    assert sum(len(memo.entries) for memo in _fragment_memos(warm)) > 0


def test_a_str_subclass_is_not_its_plain_string() -> None:
    import enum

    class Role(enum.StrEnum):
        USER = "user"

    source = "{% for m in messages %}{% if m %}{{ m.role }};{% endif %}{% endfor %}"
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    for role in ("user", Role.USER, "user", Role.USER):
        chat = [{"role": role, "content": "a"}, {"role": "user", "content": "b"}]
        assert warm.render(chat) == cold.render(chat)
        warm._memos.clear()


def test_a_message_changed_in_place_after_a_render_is_not_matched() -> None:
    source = "{% for m in messages %}{% if m %}{{ m.content }};{% endif %}{% endfor %}"
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    chat: list[dict[str, Any]] = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    assert warm.render(chat) == "a;b;"
    chat[0]["content"] = "changed"  # the caller's own dict, which the render adopted as it was
    assert warm.render(chat) == cold.render(chat) == "changed;b;"
    chat[0]["extra"] = "x"
    chat[1]["content"] = 1
    assert warm.render(chat) == cold.render(chat) == "changed;1;"


def test_items_the_template_built_are_matched_by_their_exact_parts() -> None:
    # a loop over a list of scalars: no item is a dict of strings, each matches by its key part
    source = "{% for x in xs %}{% if x is not none %}{{ x }}|{{ x | tojson }};{% endif %}{% endfor %}"
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    for xs in ([1, 1.0, True], [True, 1, 1.0], [0.0, -0.0], [-0.0, 0.0], [1, 1.0, True, "1"], ["1", 1]):
        assert warm.render(CHAT, xs=xs) == cold.render(CHAT, xs=xs)
        warm._memos.clear()


def test_a_tuple_of_plain_items_matches_as_a_list_does() -> None:
    # a tuple of the caller's plain dicts is trusted as the messages' list is, but never equals the list of copies:
    # its prefix is matched item by item, up to the whole tuple
    source = "{% for x in xs %}{% if x %}{{ x.a.upper() }}{{ loop.index }};{% endif %}{% endfor %}"
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    for xs in [({"a": "x"}, {"a": "y"}), ({"a": "x"}, {"a": "y"}), ({"a": "x"}, {"a": "y"}, {"a": "z"})]:
        assert warm.render(CHAT, xs=xs) == cold.render(CHAT, xs=xs)
        warm._memos.clear()
    assert [entry[0] for entry in _traces(warm)[0].entries] == ["X1;", "Y2;", "Z3;"]


def test_a_trace_keeps_at_most_its_bound_of_iterations() -> None:
    source = "{% for m in messages %}{% if m %}{{ m.content }};{% endif %}{% endfor %}"
    warm = ChatTemplate(source, prefix_cache=True)
    chat = [{"role": "user", "content": str(n)} for n in range(_MEMO_ENTRIES + 3)]
    assert warm.render(chat) == warm.render(chat) == ChatTemplate(source).render(chat)
    assert len(_traces(warm)[0].entries) == _MEMO_ENTRIES


def test_an_item_the_template_built_is_never_matched_by_equality() -> None:
    """Only the render's plain inputs are matched by ``==``: a dict the template built can equal a kept copy and
    print otherwise (its string is ``Markup``, which ``escape`` leaves as it is)."""
    source = (
        "{% if safe %}{% set items = [{'content': messages[0].content | safe}] %}{% else %}"
        "{% set items = messages %}{% endif %}{% for m in items %}{% if m %}{{ m.content | e }};{% endif %}{% endfor %}"
    )
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    chat = [{"content": "a<b"}]
    for safe in (False, True, False):
        assert warm.render(chat, safe=safe) == cold.render(chat, safe=safe)
    assert cold.render(chat, safe=True) == "a<b;"


def test_an_item_with_keys_other_than_strings_is_kept_by_its_key_part() -> None:
    """A dict of the caller's whose keys are numbers is not kept as a copy (``{1: "x"} == {True: "x"}``)."""
    source = "{% for d in items %}{% if d %}{{ d | tojson }};{% endif %}{% endfor %}"
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    for key in (1, True, 1.0, 1):
        items = [{key: "x"}]
        assert warm.render(CHAT, items=items) == cold.render(CHAT, items=items)
    assert cold.render(CHAT, items=[{True: "x"}]) == '{"true": "x"};'


def test_what_follows_an_iteration_is_matched_only_when_it_read_it() -> None:
    """``loop.last`` read by the tool messages only: a grown conversation reruns the previous last message only
    when it is a tool message; the others are replayed (the same entry object)."""
    source = (
        "{% for m in messages %}{% if m.role == 'tool' %}[{{ m.content }}{% if loop.last %} end{% endif %}]"
        "{% else %}{{ m.content }};{% endif %}{% endfor %}"
    )
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    chat = [
        {"role": "user", "content": "a"},
        {"role": "tool", "content": "t"},
        {"role": "user", "content": "b"},
        {"role": "user", "content": "c"},
    ]
    assert warm.render(chat[:2]) == cold.render(chat[:2]) == "a;[t end]"
    kept = list(_traces(warm)[0].entries)
    assert warm.render(chat[:3]) == cold.render(chat[:3]) == "a;[t]b;"
    entries = _traces(warm)[0].entries
    assert entries[0] is kept[0] and entries[1] is not kept[1]  # the tool message read loop.last: run again
    kept = list(entries)
    assert warm.render(chat) == cold.render(chat) == "a;[t]b;c;"
    assert all(a is b for a, b in zip(_traces(warm)[0].entries[:3], kept, strict=True))


def test_two_conversations_served_in_turn_each_find_their_own_run() -> None:
    source = "{% for m in messages %}{% if m %}{{ loop.index }}{{ m.content }};{% endif %}{% endfor %}"
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    system = {"role": "system", "content": "s"}
    one = [system, *({"role": "user", "content": f"one {n}"} for n in range(4))]
    two = [system, *({"role": "user", "content": f"two {n}"} for n in range(4))]
    for end in range(2, 5):
        for chat in (one, two):
            assert warm.render(chat[:end]) == cold.render(chat[:end])
    assert len(_traces(warm)) == 2
    first = _traces(warm)[1].entries  # conversation one's, published before two's
    assert warm.render(one) == cold.render(one)
    assert all(a is b for a, b in zip(_traces(warm)[0].entries[: len(first)], first, strict=True))


def test_a_tool_call_changed_in_a_nested_field_is_not_matched() -> None:
    """A message with tool calls is matched by its exact key part: a nested value changed in place, or a nested
    dict's keys reordered (which ``tojson`` shows), runs the body again."""
    source = (
        "{% for m in messages %}{% if m.tool_calls %}{{ m.tool_calls[0].function.arguments | tojson }}"
        "{% else %}{{ m.content }}{% endif %};{% endfor %}"
    )
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    arguments: dict[str, Any] = {"city": "Paris", "unit": "c"}
    call = {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": arguments}}]}
    chat: list[dict[str, Any]] = [{"role": "user", "content": "a"}, call]
    assert warm.render(chat) == cold.render(chat)
    for change in ("value", "order"):
        if change == "value":
            arguments["city"] = "Lyon"
        else:
            arguments.pop("city")
            arguments["city"] = "Lyon"  # the same content, the keys in another order
        grown = [*chat, {"role": "user", "content": change}]
        assert warm.render(grown) == cold.render(grown)
        assert "Lyon" in warm.render(grown)


def test_traces_published_by_threads_at_once_stay_exact() -> None:
    """Runs publish their traces without a lock: a race may drop a trace (the last store wins), never mix two.
    Threads render conversations that share a prefix and grow differently; every render equals a cold one."""
    import sys
    import threading

    source = (
        "{% for m in messages %}{% if m %}{{ loop.index }}{{ m.content }}{% if loop.last %}.{% endif %};{% endif %}"
        "{% endfor %}"
    )
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    system = {"role": "system", "content": "s"}
    failures: list[Any] = []

    def serve(thread: int) -> None:
        chat = [system]
        for turn in range(30):
            chat = [*chat, {"role": "user", "content": f"{turn % 3}"}]  # what other threads render too
            if turn % (4 + thread) == 3:
                chat = chat[:2]  # start over
            if warm.render(chat) != cold.render(chat):
                failures.append((thread, chat))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, inside the runs' own code too
    try:
        threads = [threading.Thread(target=serve, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures
    assert _traces(warm)


def test_a_trace_grows_in_an_order_a_reader_in_another_thread_can_follow() -> None:
    """A run in another thread matches a published trace's copies (and keys), then reads its entries and future
    positions: the owner adds a future position before its entry, and an entry before its key and its copy."""
    from turnkit.render._fragments import Resume

    broken: list[str] = []

    class Watched(Resume):
        __slots__ = ()

        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            if self.scope is None:
                return
            owner = self

            class Entries(list):  # type: ignore[type-arg]
                def append(self, entry: Any) -> None:
                    if entry[3] and len(self) not in owner.future:
                        broken.append("an entry before its future position")
                    super().append(entry)

            class Copies(list):  # type: ignore[type-arg]
                def append(self, copy: Any) -> None:
                    if len(owner.entries) <= len(self) or owner.keys is not None and len(owner.keys) <= len(self):
                        broken.append("a copy before its entry or key")
                    super().append(copy)

            self.entries, self.copies = Entries(self.entries), Copies(self.copies)

    source = "{% for m in messages %}{% if m %}{{ m | tojson }}{% if loop.last %}.{% endif %}{% endif %}{% endfor %}"
    warm = ChatTemplate(source, prefix_cache=True)
    warm.render(CHAT)
    warm._compiled["default"].root_render_func.__globals__["tk_resume"] = Watched
    for end in (1, 2, 3, 2, 3):
        assert warm.render(CHAT[:end]) == ChatTemplate(source).render(CHAT[:end])
        warm._memos.clear()
    assert _traces(warm)[0].keys is not None  # (the body shows the order: keys are kept too)
    assert not broken


def test_a_trace_holds_at_most_its_bytes_counting_every_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that continues a trace takes over its size (counting at most the one entry it does not replay):
    the trace's entries never hold more than the bound."""
    from turnkit.render import _fragments

    monkeypatch.setattr(_fragments, "_TRACE_BYTES", 2_000)  # about four of these iterations
    source = "{% for m in messages %}{% if m %}{{ m.content }};{% endif %}{% endfor %}"
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    chat = [{"role": "user", "content": str(n % 10) * 50} for n in range(12)]
    for end in range(1, len(chat) + 1):
        assert warm.render(chat[:end]) == cold.render(chat[:end])
        trace = _traces(warm)[0]
        assert sum(entry[4] for entry in trace.entries if entry is not None) <= trace.size <= 2_000
    assert 0 < len(trace.entries) < len(chat)


_CALLS: list[Any] = [
    [{"id": "1", "function": {"name": "f", "arguments": {"a": "x", "b": None}}}],
    [{"function": {"name": "f", "arguments": {"a": "x", "b": None}}, "id": "1"}],  # a call's keys reordered
    [{"id": "1", "function": {"name": "f", "arguments": {"b": None, "a": "x"}}}],  # nested keys reordered
    [{"id": "1", "function": {"arguments": {"a": "x", "b": None}, "name": "f"}}],
    [{"id": "1", "function": {"name": "f", "arguments": {"a": "x", "b": "None"}}}],
    [{"id": "1", "function": {"name": "f", "arguments": {"a": ["x"], "b": None}}}],
    [{"id": "1", "function": {"name": "f", "arguments": {"a": "x", "b": None, "c": "y"}}}],
    [{"id": "1", "function": {"name": "f", "arguments": {"a": 1, "b": None}}}],  # not strings: its key part
    [{"id": "1", "function": {"name": "f", "arguments": {"a": "x", "b": None}}}] * 2,
]


@pytest.mark.parametrize("calls", _CALLS)
def test_a_tool_call_matches_only_the_same_strings_in_the_same_nested_order(calls: Any) -> None:
    """A message of nested dicts and lists of strings and None, once matched by its pickle, is matched by a deep
    copy (``_Tree``): by == and by the key order of every nested dict with several keys, which ``tojson`` shows."""
    from turnkit.render._fragments import _Tree

    source = (
        "{% for m in messages %}{% if m.tool_calls %}{{ m.tool_calls | tojson }}{% endif %}/{{ m.content }};"
        "{% endfor %}"
    )
    warm, cold = ChatTemplate(source, prefix_cache=True), ChatTemplate(source)
    for other in [*_CALLS, calls]:
        for tool_calls in (calls, other):
            chat = [{"role": "assistant", "content": None, "tool_calls": tool_calls}, {"role": "user", "content": "b"}]
            assert warm.render(copy.deepcopy(chat)) == cold.render(copy.deepcopy(chat)), (calls, other)
    numbers = calls is _CALLS[7]  # (the last render's first message is this one, matched by its pickle before)
    assert isinstance(_traces(warm)[0].copies[0], _Tree) is not numbers
