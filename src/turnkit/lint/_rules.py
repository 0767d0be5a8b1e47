"""The portability rules: each one a stable code, a severity, a one-line hint, and a check over the Jinja AST.

What each rule calls unportable was found by rendering the construct in minijinja 2 (the Rust engine of TGI and
mistral.rs, with the ``pycompat`` method shims those servers enable) and @huggingface/jinja 0.5 (transformers.js);
``tests/lint/test_engine_facts.py`` renders every listed construct again under both engines and fails when a fact
no longer holds. Severity: ``error`` = renders differently or fails in at least one of those engines;
``warning`` = renders the same there but is Python-only or leaks into the prompt; ``info`` = style.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from turnkit._args import check_fields
from turnkit.lint._finding import Severity

__all__ = ["RULES", "Rule"]


@dataclass(frozen=True, slots=True)
class Rule:
    """A lint rule: ``code``, ``severity``, a short ``title``, the fix ``hint`` and a bad/good example."""

    code: str
    severity: Severity
    title: str
    hint: str
    bad: str
    good: str

    def __post_init__(self) -> None:
        check_fields(self)


_RULES = (
    Rule(
        "TK100",
        "error",
        "the template does not parse",
        "fix the Jinja syntax error at this line",
        "{% if x %}never closed",
        "{% if x %}closed{% endif %}",
    ),
    Rule(
        "TK101",
        "error",
        "Python method that minijinja or @huggingface/jinja lacks",
        "use the filter or operator named in the message",
        "{{ ', '.join(names) }}",
        "{{ names|join(', ') }}",
    ),
    Rule(
        "TK102",
        "warning",
        "Python method (works in minijinja with pycompat and in @huggingface/jinja only)",
        "use the filter named in the message; other Jinja engines have no Python methods",
        "{{ message.content.strip() }}",
        "{{ message.content|trim }}",
    ),
    Rule(
        "TK103",
        "error",
        "strip/lstrip/rstrip with an argument: @huggingface/jinja ignores it",
        "@huggingface/jinja strips all whitespace whatever the argument; use |trim when whitespace is meant",
        "{{ content.rstrip('\\n') }}",
        "{{ content|trim }}",
    ),
    Rule(
        "TK104",
        "error",
        "printf-style '%' formatting on a string",
        "minijinja and @huggingface/jinja have no '%' on strings: build the text with ~",
        "{{ 'Tool %s' % name }}",
        "{{ 'Tool ' ~ name }}",
    ),
    Rule(
        "TK105",
        "error",
        "string repetition with '*'",
        "@huggingface/jinja cannot multiply a string: write the string out",
        "{{ '=' * 3 }}",
        "{{ '===' }}",
    ),
    Rule(
        "TK106",
        "error",
        "filter that minijinja or @huggingface/jinja lacks",
        "use a filter every engine has (message says which engine lacks this one)",
        "{{ tools|length|string|center(9) }}",
        "{{ tools|length }}",
    ),
    Rule(
        "TK107",
        "error",
        "test that minijinja or @huggingface/jinja lacks",
        "use ==, <, 'in', or a portable test (defined, none, string, number, mapping, sequence...)",
        "{% if n is divisibleby 2 %}even{% endif %}",
        "{% if n % 2 == 0 %}even{% endif %}",
    ),
    Rule(
        "TK108",
        "error",
        "global function that minijinja or @huggingface/jinja lacks",
        "build the value with a literal ({'a': 1}) or a namespace instead",
        "{% set d = dict(a=1) %}{{ d.a }}",
        "{% set d = {'a': 1} %}{{ d.a }}",
    ),
    Rule(
        "TK109",
        "error",
        "syntax that minijinja or @huggingface/jinja cannot parse",
        "rewrite with portable syntax (message names the construct and the engine)",
        "{% if 0 < n < 3 %}few{% endif %}",
        "{% if 0 < n and n < 3 %}few{% endif %}",
    ),
    Rule(
        "TK110",
        "error",
        "comparing a list or dict literal with ==",
        "@huggingface/jinja compares lists by identity: compare the length and elements instead",
        "{% if roles == ['user'] %}u{% endif %}",
        "{% if roles|length == 1 and roles[0] == 'user' %}u{% endif %}",
    ),
    Rule(
        "TK111",
        "error",
        "iterating message content that may be a string",
        "@huggingface/jinja cannot loop over or filter a string: check 'is string' first",
        "{% for part in message.content %}{{ part.text }}{% endfor %}",
        "{% if message.content is string %}{{ message.content }}{% else %}"
        "{% for part in message.content %}{{ part.text }}{% endfor %}{% endif %}",
    ),
    Rule(
        "TK112",
        "error",
        "looping over tools or documents without checking they were given",
        "transformers fails on a loop over none (minijinja renders nothing): wrap it in {% if tools %}",
        "{% for tool in tools %}{{ tool|tojson }}{% endfor %}",
        "{% if tools %}{% for tool in tools %}{{ tool|tojson }}{% endfor %}{% endif %}",
    ),
    Rule(
        "TK201",
        "error",
        "printing a boolean or none",
        "@huggingface/jinja prints true/false and an empty string for none: print strings instead",
        "{{ message.content is string }}",
        "{{ 'yes' if message.content is string else 'no' }}",
    ),
    Rule(
        "TK202",
        "error",
        "printing (or adding to text) a dict or list without tojson",
        "Python prints repr ({'a': 1}), @huggingface/jinja prints JSON: use |tojson",
        "{{ tool.function.parameters }}",
        "{{ tool.function.parameters|tojson }}",
    ),
    Rule(
        "TK203",
        "info",
        "Python-style literal True/False/None",
        "write true/false/none, the spelling every Jinja engine documents",
        "{% set ns = namespace(found=False) %}{{ ns.found }}",
        "{% set ns = namespace(found=false) %}",
    ),
    Rule(
        "TK301",
        "error",
        "|tojson output differs between engines",
        "minijinja escapes < > & ' in strings (\\u003c...); @huggingface/jinja writes 1.0 as 1: keep such values "
        "out of tojson or accept the difference",
        "{{ tools|tojson }}",
        "(no portable spelling: the difference is in the engines)",
    ),
    Rule(
        "TK302",
        "error",
        "|tojson with sort_keys, ensure_ascii or separators",
        "minijinja's tojson takes only indent: drop the argument",
        "{{ tools|tojson(ensure_ascii=false) }}",
        "{{ tools|tojson }}",
    ),
    Rule(
        "TK401",
        "warning",
        "indentation between tags leaks into the prompt",
        "add '-' to the tag before the indentation ({%- ... %} or {{- ... }})",
        "{% for m in messages %}\n    {{ m.content }}\n{% endfor %}",
        "{%- for m in messages %}\n    {{- m.content }}\n{%- endfor %}",
    ),
    Rule(
        "TK501",
        "warning",
        "add_generation_prompt is never read",
        "add {% if add_generation_prompt %}<assistant header>{% endif %} at the end",
        "{% for m in messages %}{{ m.content }}{% endfor %}",
        "{% for m in messages %}{{ m.content }}{% endfor %}{% if add_generation_prompt %}A:{% endif %}",
    ),
    Rule(
        "TK502",
        "info",
        "tools are never read",
        "render the tool schemas when 'tools' is given, or document that the model has no tool use",
        "{% for m in messages %}{{ m.content }}{% endfor %}",
        "{% if tools %}{{ tools|tojson }}{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}",
    ),
    Rule(
        "TK601",
        "warning",
        "calls an undefined function to fail",
        "use raise_exception('...'): every engine defines it and the caller sees your message",
        "{{ raise('no system role') }}",
        "{{ raise_exception('no system role') }}",
    ),
    Rule(
        "TK602",
        "info",
        "strftime_now makes the prompt depend on the date",
        "pass the date as a variable (transformers and servers define strftime_now; plain minijinja does not)",
        "{{ strftime_now('%d %b %Y') }}",
        "{{ date_string }}",
    ),
    Rule(
        "TK901",
        "error",
        "renders differently under another engine",
        "see the rules flagged near the first difference; the snippets show both renders",
        "(found by rendering: --engines minijinja,hf-jinja)",
        "",
    ),
)

RULES: dict[str, Rule] = {rule.code: rule for rule in _RULES}


def iter_rules() -> Iterator[Rule]:
    """Every rule, in code order."""
    return iter(_RULES)
