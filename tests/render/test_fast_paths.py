"""The code generator's inline fast paths and the per-tool-set caches give what transformers 5.23 gives.

Each fast path is an exact-type test in front of the sandbox call it replaces; these templates hit both sides
of every test (plain dicts, lists and strings, and the values that must take the sandbox call: missing keys,
keys named like dict methods, out-of-range indexes, Markup, namespaces, long strings, non-string output).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.render.reference import reference_render
from turnkit import ChatTemplate, Limits, TemplateError, TemplateLimitError, get_json_schema

pytestmark = pytest.mark.reference

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "  Be brief.  ", "items": "an item", "n": 3},
    {"role": "user", "content": "Hi", "meta": {"keys": [1, 2], "get": "g", "x": None}},
    {"role": "assistant", "content": "x" * 5000},
]

EXPRESSIONS = [
    "{{ messages[0].role }}|{{ messages[0]['role'] }}|{{ messages[0].missing }}|{{ messages[0]['missing'] }}",
    "{{ messages[0].missing is defined }}|{{ messages[0]['content'] is string }}|{{ messages[1].meta.x }}",
    "{{ messages[0].items is callable }}|{{ messages[0]['items'] }}|{{ messages[1].meta.keys is callable }}"
    "|{{ messages[1].meta['get'] }}",
    "{{ messages[0]['items'] is defined }}|{{ messages[1]['meta']['keys'] }}",
    "{{ messages[-1].role }}|{{ messages[-3].role }}|{{ messages[-4] }}|{{ messages[3] }}|{{ messages[0][0] }}",
    "{{ 'abc'[0] }}|{{ 'abc'[-1] }}|{{ messages[1].meta.keys[1] }}|{{ messages[0]['n'] }}",
    "{{ messages[0].content.strip() }}|{{ messages[0].content.lstrip(' B') }}|{{ messages[0].role.upper() }}",
    "{{ messages[0].content.startswith('  B') }}|{{ messages[0].content.endswith(('.', '  ')) }}",
    "{{ messages[0].get('role') }}|{{ messages[0].get('nope', 'dflt') }}|{{ messages[1].meta.get('keys') }}",
    "{{ messages[0].items() | list }}|{{ messages[1].meta.keys() | list }}|{{ messages[1].meta.values() | list }}",
    "{% set ns = namespace(a='x ') %}{{ ns.a.strip() }}|{{ ns.a }}|{{ ns.missing }}",
    "{{ ('a'|safe).upper() }}|{{ ('<b>'|safe) + '<i>' }}|{{ '<b>' + ('<i>'|safe) }}",
    "{{ messages[0].role + '!' }}|{{ messages[0].n + 1 }}|{{ (messages[2].content + 'y')|length }}",
    "{{ [1] + [2] }}|{{ messages[0].role + messages[1].role }}|{{ 1.5 + 1 }}",
    "{{ messages[0].n }}|{{ messages[1].meta }}|{{ none }}|{{ messages[1].meta.x }}|{{ [messages[0].role] }}",
    "{% for m in messages %}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{% endfor %}",
    "{% for m in messages %}{{ loop.previtem.role if loop.previtem is defined }}{{ loop.nextitem is defined }}"
    "{% endfor %}",
    "{% for m in messages %}{% for k in m %}{{ k }},{% endfor %}{% if loop.index == 2 %}{% break %}{% endif %}"
    "{% endfor %}",
    "{% macro f(m) %}{{ m.role }}:{{ m.get('content', '')[:5] }}{% endmacro %}{% for m in messages %}{{ f(m) }}"
    "{% endfor %}",
    "{% set loop = messages[0] %}{{ loop.role }}",
    "{{ messages[0].missing.deeper }}",
    "{{ messages[0].role + 1 }}",
    "{{ messages[0].role.nope() }}",
    "{{ messages[5].role }}",
    # ``+``/``~`` chains: all strings and short (inline), a non-string, Markup, an undefined, long operands and
    # long constants (the sized filter), an operand that fails (the same error, after the ones before it ran)
    "{{ messages[0].role + ':' + messages[1].role + '|' }}{{ messages[0].role ~ messages[0].n ~ '|' ~ none }}",
    "{{ 'a' + messages[0].n + 'b' }}",
    "{{ messages[0].role ~ messages[0].missing ~ '|' }}{{ messages[0].role + messages[0].missing + '|' }}",
    "{{ ('<b>'|safe) + messages[0].role + '<i>' }}|{{ ('<b>'|safe) ~ messages[0].role ~ '<i>' }}",
    "{{ (messages[2].content + '|' + messages[0].role)|length }}|{{ ('x' ~ messages[2].content ~ 'y')|length }}",
    "{{ ('" + "y" * 4095 + "' + messages[0].role + 'z')|length }}|{{ ('" + "y" * 4100 + "' ~ 'a' ~ 'b')|length }}",
    "{{ 'a' + 'b' + 'c' }}|{{ 1 ~ 2 ~ 3 }}|{{ [1] + [2] + [3] }}",
    "{{ messages[0].role + messages[0].missing.deeper + 'x' }}",
    # ``trim``: short strings inline; long ones, Markup, numbers, undefined values and arguments take the filter
    "{{ messages[0].content | trim }}|{{ (messages[2].content ~ '  ') | trim | length }}|{{ ('  <b> '|safe) | trim }}"
    "|{{ messages[0].n | trim }}|{{ messages[0].missing | trim }}|{{ messages[0].content | trim('. ') }}",
    "{{ messages[0].missing.deeper | trim }}",
    # namespace attributes: plain values, other values (jinja2's checks), missing, underscored
    "{% set ns = namespace(a=1, b=none) %}{% set ns.c = [1] %}{% set ns.d = ('<x>'|safe) %}{% set ns.a = ns.a + 1 %}"
    "{{ ns.a }}|{{ ns.b }}|{{ ns.c }}|{{ ns.d }}|{{ ns.missing is defined }}|{{ ns._Namespace__attrs is defined }}"
    "|{{ ns.__class__ is defined }}|{{ ns.d.upper() }}",
    "{% set ns = namespace() %}{% set ns.x = 1 %}{{ ns.x }}{{ ns.missing.deeper }}",
    # inline tests, each on both sides: Markup is a string, none and an undefined value are different things
    "{{ messages[0].content is string }}{{ messages[0].n is string }}{{ ('a'|safe) is string }}"
    "{{ messages[0].missing is string }}{{ messages[1].meta.x is string }}",
    "{{ messages[0].missing is defined }}{{ messages[0].role is defined }}{{ messages[1].meta.x is defined }}"
    "{{ messages[0].missing is not defined }}{{ messages[0].role is undefined }}{{ none is undefined }}",
    "{{ messages[1].meta.x is none }}{{ messages[0].missing is none }}{{ messages[0].n is not none }}"
    "{{ false is none }}{{ 0 is none }}",
    # ``tojson`` of a string: short ones inline (either side of 682 characters, escapes that grow 6 times),
    # and what is not a str (Markup, dicts, none, undefined values) through the filter
    "{{ messages[0].content | tojson }}|{{ ('x' * 682) | tojson | length }}|{{ ('x' * 683) | tojson | length }}",
    "{{ ('\x01' * 682) | tojson | length }}|{{ ('\x01' * 683) | tojson | length }}"
    "|{{ ('é\"' * 700) | tojson | length }}",
    "{{ ('<b>'|safe) | tojson }}|{{ messages[1].meta | tojson }}|{{ none | tojson }}",
    "{{ messages[0].missing | tojson }}",
    # printed fast paths: the print's str test sits in the fallback branch only, so each fallback is printed here
    # with a value that is no str (a number, a list, Markup) or too long for the fast branch; a constant operand
    # of ``+`` on either side is written untested
    "{{ '!' + messages[0].role }}|{{ messages[0].role + '!' }}|{{ (messages[2].content + '!') }}"
    "|{{ '<' + ('b'|safe) }}|{{ ('<b>'|safe) + '>' }}|{{ [1] + [2] }}|{{ 1 + 2.5 }}|{{ messages[0].n + 1 }}",
    "{{ messages[0].n | trim }}|{{ ('  <b> '|safe) | trim }}|{{ (messages[2].content ~ ' ') | trim }}"
    "|{{ messages[1].meta | tojson }}|{{ (messages[2].content ~ '\"') | tojson }}",
    "{{ 1 + 2 + 3 }}|{{ [1] + [2] + [3] }}|{{ ('<b>'|safe) + messages[0].role + '<i>' }}|{{ 1 ~ 2 ~ none }}"
    "|{{ messages[2].content ~ messages[0].role ~ '|' }}",
    "{{ messages[0].n + '!' }}",
    "{{ '!' + messages[0].n }}",
    "{{ messages[0].missing + '!' }}",
    # ``namespace(...)`` called directly: keyword and positional arguments, in a loop, the name rebound (the
    # sandbox's call), an argument that is a call (not inlined), underscored names refused
    "{% set ns = namespace(a=1, b=messages[0].role) %}{% set ns2 = namespace({'c': 2}, d=3) %}"
    "{{ ns.a }}{{ ns.b }}{{ ns2.c }}{{ ns2.d }}{% for m in messages %}{% set n = namespace(r=m.role) %}"
    "{{ n.r }}{% endfor %}{% set x = namespace(s=messages[0].content.strip()) %}{{ x.s }}",
    "{% set namespace = dict %}{% set ns = namespace(a=1) %}{{ ns }}",
    "{% set ns = namespace(_a=1) %}{{ ns._a }}",
    "{% set ns = namespace({'_a': 1}) %}",
    "{% set ns = namespace({1: 2}) %}{{ ns[1] is defined }}",
    # ``-``, ``/`` and ``//`` compile to the Python operator (nothing to size), on both sides of every failure
    "{{ messages[0].n - 1 }}|{{ 7 / 2 }}|{{ messages[0].n // 2 }}|{{ 1.5 - messages[0].n }}|{{ -messages[0].n }}"
    "|{{ (messages | length) - 1 - 1 }}|{{ 2 ** 3 - 2 * 3 / 4 // 1 }}",
    "{{ messages[0].role - 1 }}",
    "{{ messages[0].n / 0 }}",
    "{{ messages[0].n // 0 }}",
    "{{ messages[0].missing - 1 }}",
]


def _matches_transformers(source: str, conversation: list[dict[str, Any]] = CHAT) -> None:
    """Rendering ``conversation`` gives transformers' text, or fails where transformers fails."""
    ours = _ours(source, conversation)
    theirs = reference_render(copy.deepcopy(conversation), source)
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "ok":
        assert ours[1] == theirs[1]


def _ours(source: str, conversation: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", ChatTemplate(source).render(copy.deepcopy(conversation), **kwargs)
    except TemplateError as exc:
        return "error", exc


@pytest.mark.parametrize("source", EXPRESSIONS)
def test_fast_paths_match_transformers(source: str) -> None:
    _matches_transformers(source)


def test_a_missing_key_prints_nothing_and_fails_on_use() -> None:
    template = ChatTemplate("[{{ messages[0].nope }}][{{ messages[0]['nope'] }}]")
    assert template.render(CHAT) == "[][]"
    with pytest.raises(TemplateError, match="nope"):
        ChatTemplate("{{ messages[0].nope.x }}").render(CHAT)


TOOLS_TEMPLATE = "{% for t in tools %}{{ t | tojson }}\n{% endfor %}{{ messages[0].content }}"


def test_a_tool_set_changed_in_place_is_seen() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    tools = [tool]
    template = ChatTemplate(TOOLS_TEMPLATE)
    template._memos["default"] = None  # every call renders (the tool-set cache is what is tested)
    first = template.render(CHAT, tools=tools)
    tool["function"]["name"] = "g"
    second = template.render(CHAT, tools=tools)
    assert '"name": "g"' in second and second != first
    assert second == reference_render(copy.deepcopy(CHAT), TOOLS_TEMPLATE, tools=tools)[1]
    tool["function"]["name"] = "f"
    assert template.render(CHAT, tools=tools) == first


def test_tool_sets_of_other_types_are_not_confused() -> None:
    template = ChatTemplate(TOOLS_TEMPLATE)
    template._memos["default"] = None
    for value in (1, 1.0, True, "1", [1], {"1": 1}, None, 1):
        tools = [{"a": value}]
        assert (
            template.render(CHAT, tools=tools) == reference_render(copy.deepcopy(CHAT), TOOLS_TEMPLATE, tools=tools)[1]
        )


MUTATIONS: list[Callable[[dict[str, Any]], object]] = [
    # in-place changes that keep the tool set == to what it was (1 -> 1.0 -> True -> 1, 0.0 -> -0.0, a list
    # -> a tuple and back, a key moved to the end), so only an exact check sees them; then a nested value
    lambda t: t["function"]["parameters"].__setitem__("n", 1.0),
    lambda t: t["function"]["parameters"].__setitem__("n", True),
    lambda t: t["function"]["parameters"].__setitem__("n", 1),
    lambda t: t["function"]["parameters"].__setitem__("z", -0.0),
    lambda t: t["function"].__setitem__("tags", ("a", "b")),
    lambda t: t["function"].__setitem__("tags", ["a", "b"]),
    lambda t: t["function"].__setitem__("name", t["function"].pop("name")),
    lambda t: t["function"]["parameters"]["properties"]["city"].__setitem__("type", "integer"),
]


def test_a_tool_set_changed_in_place_to_an_equal_value_of_another_type_is_seen() -> None:
    tool: dict[str, Any] = {
        "type": "function",
        "function": {
            "name": "f",
            "tags": ["a", "b"],
            "parameters": {"type": "object", "n": 1, "z": 0.0, "properties": {"city": {"type": "string"}}},
        },
    }
    tools = [tool]
    source = TOOLS_TEMPLATE + "{% for t in tools %}|{{ t.function.tags }}{% endfor %}"  # a tuple prints as one
    template = ChatTemplate(source)
    template._memos["default"] = None
    before = template.render(CHAT, tools=tools)
    for mutate in MUTATIONS:
        mutate(tool)
        after = template.render(CHAT, tools=tools)
        assert after == reference_render(copy.deepcopy(CHAT), source, tools=tools)[1]
        assert after != before
        before = after


def test_tool_sets_sharing_a_part_render_as_unshared_ones() -> None:
    unit = {"type": "string", "enum": ["c", "f"]}
    shared = [{"name": name, "parameters": {"unit": unit}} for name in ("a", "b")]
    unshared = copy.deepcopy(shared)
    unshared[1]["parameters"]["unit"] = copy.deepcopy(unit)
    template = ChatTemplate(TOOLS_TEMPLATE)
    template._memos["default"] = None
    expected = reference_render(copy.deepcopy(CHAT), TOOLS_TEMPLATE, tools=shared)[1]
    for tools in (shared, unshared, shared):
        assert template.render(CHAT, tools=tools) == expected


def test_function_tool_text_follows_the_function() -> None:
    def probe(city: str) -> str:
        """
        Look up a city.

        Args:
            city: The city
        """
        return city

    template = ChatTemplate(TOOLS_TEMPLATE)
    template._memos["default"] = None
    first = template.render(CHAT, tools=[probe])
    assert first == template.render(CHAT, tools=[probe])
    assert first.startswith(__import__("json").dumps(get_json_schema(probe), ensure_ascii=False))
    probe.__doc__ = probe.__doc__.replace("Look up", "Find")  # type: ignore[union-attr]
    assert "Find a city" in template.render(CHAT, tools=[probe])


@pytest.mark.parametrize(
    "printed",
    [
        "t | tojson",
        "t | tojson(indent=4)",
        "t | tojson(indent='  ', sort_keys=true)",
        "t | tojson(separators=[',', ':'])",
        "t | tojson(ensure_ascii=true)",
        # constant arguments are looked up in the schema's JSON cache inline; these take the filter's own checks
        "t | tojson(false, 2)",
        "t | tojson(ensure_ascii=1, sort_keys=1)",
        "t | tojson(separators=(',', ':'))",
        "t | tojson(4, indent=4)",
        "t | tojson(nope=1)",
        "t | tojson(false, 2, none, false, 1)",
    ],
)
def test_tool_json_with_any_arguments_matches_transformers(printed: str) -> None:
    tools = [{"type": "function", "function": {"name": "météo", "parameters": {"b": 1, "a": [1.5, None]}}}]
    source = f"{{% for t in tools %}}{{{{ {printed} }}}}|{{{{ t | tojson }}}}\n{{% endfor %}}"
    template = ChatTemplate(source)
    template._memos["default"] = None
    expected = reference_render(copy.deepcopy(CHAT), source, tools=tools)
    if expected[0] == "error":  # arguments the filter refuses: refused every time
        for _ in range(2):
            with pytest.raises(TemplateError):
                template.render(CHAT, tools=tools)
        return
    assert template.render(CHAT, tools=tools) == expected[1]
    assert template.render(CHAT, tools=tools) == expected[1]  # the second time from the tool set's JSON cache


def test_tool_json_of_another_argument_type_is_not_taken_from_the_cache() -> None:
    # indent=4.0 equals indent=4 as a cache key, but json.dumps refuses a float indent (as transformers does)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"a": 1}}}]
    source = "{% for t in tools %}{{ t | tojson(indent=4) }}{% endfor %}{{ tools[0] | tojson(indent=x) if x }}"
    for x in (None, 4.0):
        expected = reference_render(copy.deepcopy(CHAT), source, tools=tools, x=x)
        ours = _ours(source, CHAT, tools=tools, x=x)
        assert ours[0] == expected[0], (ours, expected)
        if ours[0] == "ok":
            assert ours[1] == expected[1]
    assert expected[0] == "error"  # the float indent fails, after the int indent filled the cache


@pytest.mark.parametrize("size", [10, 5000])
def test_tool_json_printed_inline_matches_transformers(size: int) -> None:
    # a private schema's text once built is printed inline when short; a long one takes the filter (it is charged)
    tools = [{"type": "function", "function": {"name": "f", "description": "d" * size}}, {"name": "g"}]
    source = "{% for t in tools %}{{ t | tojson }}{{ t.function | tojson if t.function is defined }}\n{% endfor %}"
    template = ChatTemplate(source)
    template._memos["default"] = None
    expected = reference_render(copy.deepcopy(CHAT), source, tools=tools)
    assert expected[0] == "ok"
    for _ in range(3):
        assert template.render(CHAT, tools=tools) == expected[1]


def test_json_inline_keeps_the_size_limit() -> None:
    # a string the template built, five times the input's: over the limit even with the input's allowance
    template = ChatTemplate(
        "{{ (messages[0].content ~ messages[0].content ~ messages[0].content ~ "
        "messages[0].content ~ messages[0].content) | tojson }}",
        limits=Limits(max_sequence_length=10),
    )
    assert template.render([{"role": "user", "content": "ab"}]) == '"ababababab"'
    with pytest.raises(TemplateLimitError, match="tojson"):
        template.render([{"role": "user", "content": "x" * 100}])


@pytest.mark.parametrize(
    "source",
    [
        "{% macro f(m, sep='-') %}{{ m.role }}{{ sep }}{{ caller() if caller is defined }}{% endmacro %}"
        "{% for m in messages %}{{ f(m) }}{{ f(m, sep='+') }}{% call f(m) %}[{{ m.content[:3] }}]{% endcall %}"
        "{% endfor %}",
        "{% macro f(n) %}{{ n }}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}",
        "{% macro f() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, a=3) }}",
        "{% macro f(a) %}{{ a }}{% endmacro %}{{ f(1, 2) }}",
        # positional calls (the macro's function called directly): all, some (defaults), none; keywords; in a loop
        "{% macro f(a, b=2, c='x') %}{{ a }}{{ b }}{{ c }};{% endmacro %}{{ f(1) }}{{ f(1, 3) }}{{ f(1, 3, 4) }}"
        "{{ f(1, c=5) }}{{ f() }}{% for m in messages %}{{ f(m.role, loop.index) }}{% endfor %}",
        "{% macro f(caller) %}{{ caller }}{% endmacro %}{{ f(1) }}{{ f() }}",
        "{% macro f(a) %}{{ a }}{{ varargs }}{% endmacro %}{{ f(1, 2, 3) }}{{ f() }}",
        "{% macro f(a) %}{{ a }}{{ kwargs }}{% endmacro %}{{ f(1) }}{{ f(1, b=2) }}",
        "{% macro f(a) %}{{ a }}{{ caller() if caller is defined }}{% endmacro %}{{ f(1) }}"
        "{% call f(2) %}c{% endcall %}",
        "{% macro f(a) %}{{ a.x }}{% endmacro %}{{ f({'x': 1}) }}{{ f(none) }}",
        "{% macro f(a) %}{{ a }}{% endmacro %}{{ f(b=1) }}",
    ],
)
def test_macro_calls_match_transformers(source: str) -> None:
    _matches_transformers(source)


def test_tool_sets_from_many_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    template = ChatTemplate(TOOLS_TEMPLATE)
    template._memos["default"] = None

    def render(n: int) -> str:
        tools = [{"type": "function", "function": {"name": f"f{n % 100}"}}]  # more tool sets than the cache keeps
        return template.render(CHAT, tools=tools)

    with ThreadPoolExecutor(4) as pool:
        texts = list(pool.map(render, range(400)))
    assert all(f'"name": "f{n % 100}"' in text for n, text in enumerate(texts))


# ``tojson`` of a container of the render's input (adopted as it is, or rebuilt from shared parts or other types):
# the shared encoder without cycle detection; of anything else (built by the template, a namespace): a fresh one
TREE_JSON = (
    "{{ messages[1].meta | tojson }}|{{ messages[1].meta['keys'] | tojson }}|{{ messages | tojson }}"
    "|{{ messages[3].calls | tojson }}|{{ dict(a=[1, 2.5]) | tojson }}|{{ [messages[0].role, none] | tojson }}"
    "|{{ messages[1].meta.get('nope', {'b': true}) | tojson }}"
)
SHARED = {"name": "f", "arguments": {"x": [1, -0.0, True]}}
TREE_CHAT = [*CHAT, {"role": "assistant", "content": "c", "calls": [SHARED, SHARED, ("t", 1.0)]}]


def test_tojson_of_input_containers_matches_transformers() -> None:
    _matches_transformers(TREE_JSON, TREE_CHAT)


def test_tojson_takes_the_shared_encoder_only_for_input_containers(monkeypatch: pytest.MonkeyPatch) -> None:
    from turnkit.render import _sandbox

    encoded: list[Any] = []
    tree_encoder = _sandbox._TREE_ENCODER
    monkeypatch.setattr(_sandbox, "_TREE_ENCODER", lambda value, level: encoded.append(value) or tree_encoder(value, 0))
    chat = copy.deepcopy(TREE_CHAT)
    ChatTemplate(TREE_JSON).render(chat)
    # the caller's own meta dict and list (adopted), the conversation, and the rebuilt copy of the shared calls
    assert encoded[0] is chat[1]["meta"] and encoded[1] is chat[1]["meta"]["keys"]
    assert encoded[3] == chat[3]["calls"] and encoded[3] is not chat[3]["calls"]
    assert len(encoded) == 4  # not the dicts and lists the template built


@pytest.mark.parametrize(
    ("source", "fast"),
    [
        ("{% set ns = namespace(a=1, b=messages[0].role) %}", True),
        ("{% set ns = namespace() %}", True),
        ("{% set ns = namespace({'a': 1}) %}", False),
        ("{% set ns = namespace({'a': 1}, b=2) %}", False),
        ("{% set ns = namespace(_a=1) %}", False),
        ("{% set ns = namespace(a=1, _b=2) %}", False),
    ],
)
def test_keyword_namespaces_are_built_from_their_dict(source: str, fast: bool) -> None:
    # keywords only, none underscored: the namespace of their dict; anything else: the class's own checks
    generated = ChatTemplate(source)._sandbox.compile(source, raw=True)
    assert ("tk_new_namespace(" in generated) is fast
    _matches_transformers(source + "{{ ns }}|{% set ns.c = 3 %}{{ ns.c }}|{{ ns.a }}|{{ ns.b }}|{{ ns._a }}")
