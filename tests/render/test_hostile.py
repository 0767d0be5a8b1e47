"""Hostile chat templates: sandbox escapes are refused, resource bombs stop fast, small and with a typed error."""

from __future__ import annotations

import time
import tracemalloc

import pytest

import turnkit
from turnkit import (
    ChatTemplate,
    Limits,
    TemplateError,
    TemplateLimitError,
    TemplateSecurityError,
    apply_chat_template,
)

CHAT = [{"role": "user", "content": "hi"}]

ESCAPES = {
    "class-mro-subclasses": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "cycler-globals": "{{ cycler.__init__.__globals__.os }}",
    "joiner-globals": "{{ joiner.__init__.__globals__['os'] }}",
    "namespace-globals": "{{ namespace.__init__.__globals__.sys }}",
    "lipsum-globals": "{{ lipsum.__globals__['os'].popen('id').read() }}",
    "range-self": "{{ range.__self__.globals }}",
    "raise-exception-globals": "{{ raise_exception.__globals__['jinja2'] }}",
    "self-context": "{{ self._TemplateReference__context.environment }}",
    "attr-filter": "{{ ''|attr('__class__')|attr('__mro__') }}",
    "str-format-walk": "{{ '{0.__class__.__mro__}'.format('') }}",
    "str-format-map-walk": "{{ '{x.__class__.__init__.__globals__}'.format_map({'x': ''}) }}",
    "format-filter-walk": "{{ '%s'|format(''.__class__.__mro__) }}",
    "list-append": "{% set _ = messages.append({'role': 'system'}) %}{{ messages|length }}",
    "dict-update": "{% set _ = messages[0].update({'role': 'system'}) %}{{ messages[0].role }}",
    "dict-global-class": "{{ dict.__class__.__init__.__globals__ }}",
    "namespace-dunder-set": "{% set ns = namespace() %}{% set ns.__class__ = 1 %}",
    "namespace-underscore-init": "{{ namespace(_secret=1) }}",
    "namespace-private-dict": "{% set ns = namespace(a=1) %}{{ ns._Namespace__attrs.update }}",
    "namespace-value-class": "{% set ns = namespace(a='x') %}{{ ns.a.__class__.__mro__ }}",
    "loop-class": "{% for m in messages %}{{ loop.__class__.__init__.__globals__ }}{% endfor %}",
    "macro-globals": "{% macro m() %}{% endmacro %}{{ m.__call__.__globals__ }}",
    "mro-via-getitem": "{{ ''['__class__']['__mro__'] }}",
    "map-attribute": "{{ messages|map(attribute='__class__')|map(attribute='__mro__')|list }}",
    "selectattr": "{{ messages|selectattr('__class__.__init__.__globals__')|list }}",
    "sort-attribute": "{{ messages|sort(attribute='__class__.__mro__')|first }}",
    # a loop over more than 1024 items is counted by a generator (shorter ones are counted up front)
    "generator-frame": "{{ (range(2000)|_turnkit_loop).gi_frame.f_globals }}",
    "format-index-walk": "{{ '{0[__class__]}'.format('') }}",
    "include": "{% include 'secrets.txt' %}",
    "import": "{% import 'os' as os %}",
}


@pytest.mark.parametrize("source", list(ESCAPES.values()), ids=list(ESCAPES))
def test_sandbox_escapes_are_refused(source: str) -> None:
    # Refused means: a TemplateSecurityError, or (as in transformers) the unsafe attribute is an undefined value
    # that prints as nothing and fails on any further use. Either way nothing of Python's internals comes out.
    try:
        text = apply_chat_template(CHAT, source)
    except TemplateSecurityError:
        return
    except TemplateError as exc:
        text = str(exc).lower()
        assert "undefined" in text or "unsafe" in text or "no loader" in text, exc
        return
    assert text.strip() in {"", "1"}, text


def test_unsafe_attribute_prints_nothing() -> None:
    # As in transformers: an unsafe attribute is an undefined value, which prints as nothing.
    assert apply_chat_template(CHAT, "[{{ ''.__class__ }}]") == "[]"


BOMBS = {
    "str-repeat": "{{ 'a' * 10**9 }}",
    "str-repeat-literal": "{{ 'a' * 1000000000 }}",
    "list-repeat": "{{ [1, 2, 3] * 10**9 }}",
    "list-repeat-nested": "{% set x = [0] * 1000 %}{{ [x] * 100000000 }}",
    "huge-range": "{% for i in range(10**9) %}{% endfor %}",
    "huge-range-list": "{{ range(10**12)|list|length }}",
    "power-tower": "{{ 10**(10**10) }}",
    "power-tower-right": "{{ 2**(2**(2**(2**(2**2)))) }}",
    "int-multiply": "{% set ns = namespace(n=3) %}{% for i in range(100) %}{% set ns.n = ns.n * ns.n %}{% endfor %}",
    "lipsum": "{{ lipsum(10**7) }}",
    "lipsum-words": "{{ lipsum(1000, max=10**7) }}",
    "macro-recursion": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "recursive-loop": "{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}",
    "nested-loops": "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
    "nested-loops-shared": "{% set r = range(100000) %}{% for a in r %}{% for b in r %}{% for c in r %}"
    "{% endfor %}{% endfor %}{% endfor %}",
    "nested-literal-loops": "{% for a in ["
    + ",".join(["0"] * 1000)
    + "] %}{% for b in ["
    + ",".join(["0"] * 1000)
    + "] %}{% for c in ["
    + ",".join(["0"] * 1000)
    + "] %}{% endfor %}{% endfor %}"
    "{% endfor %}",
    "center": "{{ 'a'|center(10**9) }}",
    "center-method": "{{ 'a'.center(10**9) }}",
    "ljust-method": "{{ 'a'.ljust(999999999) }}",
    "zfill-method": "{{ '1'.zfill(999999999) }}",
    "join-separator": "{{ range(100000)|join('x' * 100000) }}",
    "join-method": "{{ ('x' * 100000).join(['a'] * 100000) }}",
    "replace-filter": "{{ ('a' * 100000)|replace('a', 'b' * 100000) }}",
    "replace-method": "{{ ('a' * 100000).replace('', 'b' * 1000) }}",
    "expandtabs": "{{ ('\t' * 100000).expandtabs(100000) }}",
    "indent": "{{ ('\n' * 100000)|indent(100000, true, true) }}",
    "printf-width": "{{ '%999999999d' % 1 }}",
    "printf-star": "{{ '%*d' % (999999999, 1) }}",
    "format-filter-width": "{{ '%999999999s'|format('x') }}",
    "str-format-width": "{{ '{:>999999999}'.format(1) }}",
    "str-format-nested-width": "{{ '{:>{}}'.format(1, 999999999) }}",
    "batch-fill": "{{ [1]|batch(10**8, 0)|list }}",
    "slice-count": "{{ [1]|slice(10**8)|list }}",
    "sum-lists": "{% set x = [[0] * 1000] * 1000 %}{{ (x * 10)|sum(start=[])|length }}",
    "tojson-indent": "{{ ([[[0] * 100] * 100] * 100)|tojson(indent=100) }}",
    "pprint-shared": "{% set a = ['x' * 100000] %}{% set b = [a, a, a, a] %}{% set c = [b, b, b, b] %}"
    "{% set d = [c, c, c, c] %}{{ d|pprint }}",
    "print-shared": "{% set a = ['x' * 100000] %}{% set b = [a, a, a, a] %}{% set c = [b, b, b, b] %}"
    "{% set d = [c, c, c, c] %}{{ d }}",
    "concat-shared": "{% set a = ['x' * 100000] %}{% set b = [a, a, a, a] %}{% set c = [b, b, b, b] %}"
    "{% set d = [c, c, c, c] %}{{ 'x' ~ d }}",
    "string-shared": "{% set a = ['x' * 100000] %}{% set b = [a, a, a, a] %}{% set c = [b, b, b, b] %}"
    "{% set d = [c, c, c, c] %}{{ d|string|length }}",
    "deep-chain-over-shared": "{% set ns = namespace(x=['x' * 1000]) %}{% for i in range(40) %}"
    "{% set ns.x = [ns.x, ns.x] %}{% endfor %}{% for i in range(250) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}",
    "wordwrap-long-word": "{{ ('a' * 1000000)|wordwrap(1) }}",
    "wordwrap-long-text": "{{ ('a ' * 400000)|wordwrap(3) }}",
    "map-million": "{% set x = [0] * 1000000 %}{% for i in range(20) %}{% set y = x|map('string')|list %}{% endfor %}",
    "sort-million": "{% set x = [0] * 1000000 %}{% for i in range(20) %}{{ (x|sort(attribute='real'))|length }}"
    "{% endfor %}",
    "escape-retained": "{% set s = '&' * 999999 %}"
    + "".join("{% set e" + str(i) + " = s|escape %}" for i in range(40)),
    "join-shared": "{% set a = 'x' * 1000000 %}{{ [a, a, a, a, a, a, a, a, a, a]|join }}",
    "concat-doubling": "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}",
    "plus-doubling": "{% set ns = namespace(s=['ab']) %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
    "{% endfor %}",
    "macro-doubling": "{% macro f(s, n) %}{% if n %}{{ f(s ~ s, n - 1) }}{% endif %}{% endmacro %}{{ f('ab', 60) }}",
    "output-cap": "{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}",
    "output-cap-literal": "{% for i in range(1000000) %}0123456789012345678901234567890123456789{% endfor %}",
    "captured-block": "{% set x %}{% for i in range(1000) %}{{ 'y' * 100000 }}{% endfor %}{% endset %}",
    "captured-macro": "{% macro m() %}{% for i in range(1000) %}{{ 'y' * 100000 }}{% endfor %}{% endmacro %}"
    "{% set x = m() %}",
    "retained-copies": "".join("{% set a" + str(i) + " = 'x' * 999999 %}" for i in range(80)),
    "retained-lists": "".join("{% set a" + str(i) + " = [0] * 999999 %}" for i in range(80)),
    "split-retained": "{% set s = 'ab ' * 333333 %}"
    + "".join("{% set l" + str(i) + " = s.split(' ') %}" for i in range(20)),
    "list-of-wide-chars": "{% set s = '\u4e00' * 999999 %}"
    + "".join("{% set l" + str(i) + " = s|list %}" for i in range(20)),
}

_MEMORY_BUDGET = 64 * 2**20


@pytest.mark.parametrize("source", list(BOMBS.values()), ids=list(BOMBS))
def test_resource_bombs_stop_fast_and_small(source: str) -> None:
    template = ChatTemplate(source)
    start = time.process_time()  # CPU seconds: other processes' load on a shared machine does not count
    with pytest.raises((TemplateLimitError, TemplateSecurityError)):
        template.render(CHAT)
    elapsed = time.process_time() - start
    assert elapsed < 0.9, f"took {elapsed:.2f} s"

    tracemalloc.start()
    try:
        with pytest.raises((TemplateLimitError, TemplateSecurityError)):
            template.render(CHAT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < _MEMORY_BUDGET, f"peak {peak / 2**20:.1f} MiB"


def test_left_associative_power_is_harmless() -> None:
    # Jinja's ** is left-associative: 10**10**10 is (10**10)**10, a 101-digit number, as in transformers.
    assert apply_chat_template(CHAT, "{{ 10**10**10 }}") == str((10**10) ** 10)


def test_limits_are_configurable() -> None:
    source = "{% for i in range(n) %}{{ i }}{% endfor %}"
    assert len(ChatTemplate(source).render(CHAT, n=50_000)) > 50_000
    with pytest.raises(TemplateLimitError, match="max_range"):
        ChatTemplate(source, limits=Limits(max_range=1000)).render(CHAT, n=50_000)
    with pytest.raises(TemplateLimitError, match="max_output_chars"):
        ChatTemplate(source, limits=Limits(max_output_chars=1000)).render(CHAT, n=50_000)
    with pytest.raises(TemplateLimitError, match="max_loop_iterations"):
        ChatTemplate(source, limits=Limits(max_loop_iterations=100)).render(CHAT, n=50_000)
    with pytest.raises(TemplateLimitError, match="max_sequence_length"):
        ChatTemplate("{{ 'a' * 2000 }}", limits=Limits(max_sequence_length=1000)).render(CHAT)
    with pytest.raises(TemplateLimitError, match="max_call_depth"):
        ChatTemplate(
            "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(20) }}",
            limits=Limits(max_call_depth=10),
        ).render(CHAT)
    assert (
        ChatTemplate("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(20) }}").render(CHAT) == ""
    )


@pytest.mark.parametrize(
    "slow",
    [
        "{% for i in range(100000) %}{% for j in range(100) %}{{ j }}{% endfor %}{% endfor %}",
        # only short loops, each counted when it starts: the clock is read as their count passes 1,024s
        "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in 'abcdefghij' %}{% for m in 'abcdefghij' %}"
        "{% endfor %}{% endfor %}{% endfor %}{% endfor %}",
    ],
)
def test_time_budget(slow: str) -> None:
    limits = Limits(render_timeout_s=0.05, max_loop_iterations=10**9, max_output_chars=10**9)
    start = time.perf_counter()
    with pytest.raises(TemplateLimitError, match="time budget"):
        ChatTemplate(slow, limits=limits).render(CHAT)
    assert time.perf_counter() - start < 0.5


def test_big_real_conversation_is_not_a_bomb() -> None:
    # A long conversation through a concatenating template stays within the input-scaled allocation budget.
    template = ChatTemplate(
        "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}"
        "{% endfor %}"
    )
    conversation = [{"role": "user", "content": "word " * 20_000} for _ in range(30)]
    text = template.render(conversation)
    assert len(text) > 30 * 100_000


def test_budgets_are_per_render_across_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    limits = Limits(max_loop_iterations=5_000)
    busy = ChatTemplate("{% for i in range(4000) %}{% endfor %}{{ messages[0].content }}", limits=limits)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: busy.render(CHAT), range(16)))
    assert results == ["hi"] * 16  # 16 x 4000 iterations in total, but each render has its own budget


@pytest.mark.parametrize(
    "source",
    [
        "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}",
        "{{ " + "[" * 5000 + "]" * 5000 + " }}",
        "{% if 1 %}" * 3000 + "{% endif %}" * 3000,
        "{{ 1" + " + 1" * 20000 + " }}",
    ],
    ids=["parens", "brackets", "nested-ifs", "long-sum"],
)
def test_absurd_nesting_is_a_template_error(source: str) -> None:
    start = time.perf_counter()
    try:
        text = ChatTemplate(source).render(CHAT)
    except TemplateError:
        text = None
    assert text in (None, "", "[]", "1", "20001")
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("where", ["content", "tools", "documents", "kwarg"])
def test_inputs_that_share_their_parts_are_bounded(where: str) -> None:
    """``x = [x, x]`` forty times is tiny in memory and 2**40 values once copied: refused, not copied forever."""
    shared: list[object] = ["a"]
    for _ in range(40):
        shared = [shared, shared]
    conversation = [{"role": "user", "content": shared if where == "content" else "hi"}]
    options: dict[str, object] = {
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"x": shared}}}],
        "documents": [{"x": shared}],
        "kwarg": {"extra": shared},
        "content": {},
    }[where]
    kwargs = options if where == "kwarg" else ({where: options} if where != "content" else {})
    with pytest.raises(turnkit.TemplateLimitError, match="lists and dicts"):
        turnkit.apply_chat_template(conversation, "{{ messages|length }}", **kwargs)


@pytest.mark.parametrize("where", ["content", "tools", "documents", "kwarg"])
def test_inputs_that_contain_themselves_are_a_template_error(where: str) -> None:
    """A dict that holds itself (a JSON schema's ``$ref`` resolved in place) is a typed error, not a bare
    ``RecursionError``."""
    cyclic: dict[str, object] = {"type": "object"}
    cyclic["properties"] = {"self": cyclic}
    conversation = [{"role": "user", "content": [cyclic] if where == "content" else "hi"}]
    options: dict[str, object] = {
        "tools": [{"type": "function", "function": {"name": "f", "parameters": cyclic}}],
        "documents": [cyclic],
        "kwarg": {"extra": cyclic},
        "content": {},
    }[where]
    kwargs = options if where == "kwarg" else ({where: options} if where != "content" else {})
    with pytest.raises(TemplateError, match="refers to itself") as caught:
        turnkit.apply_chat_template(conversation, "{{ messages|length }}", **kwargs)
    assert caught.value.code == "template_input"
