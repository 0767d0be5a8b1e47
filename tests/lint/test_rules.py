"""Each rule flags its bad example and not its good one; more hand-written cases for the subtle ones."""

from __future__ import annotations

import pytest

from turnkit import LintFinding, lint
from turnkit.lint import RULES

_HEADER = "{% if add_generation_prompt %}{% endif %}{% if tools %}{% endif %}"
STATIC = [rule for rule in RULES.values() if rule.code not in ("TK901",)]


def codes(source: str) -> list[str]:
    return [finding.code for finding in lint(source)]


@pytest.mark.parametrize("rule", STATIC, ids=lambda rule: rule.code)
def test_bad_example_is_flagged(rule):
    source = rule.bad if rule.code in ("TK501", "TK502") else _HEADER + rule.bad
    if rule.code == "TK100":
        source = rule.bad
    found = [f for f in lint(source) if f.code == rule.code]
    assert found, codes(source)
    assert all(f.severity == rule.severity for f in found)


@pytest.mark.parametrize("rule", [r for r in STATIC if r.code not in ("TK301",)], ids=lambda rule: rule.code)
def test_good_example_is_clean(rule):
    assert rule.code not in codes(_HEADER + rule.good)


POSITIVE = [
    ("TK101", "{{ messages|length|string.zfill(3) if false else 'x'.zfill(3) }}"),
    ("TK101", "{% for m in messages %}{{ loop.cycle('a', 'b') }}{% endfor %}"),
    ("TK102", "{% for k, v in tools[0].items() %}{% endfor %}"),
    ("TK103", "{{ messages[0].content.strip('\\n') }}"),
    ("TK104", "{{ '%s: %s' % (a, b) }}"),
    ("TK105", "{{ x * '-' }}"),
    ("TK106", "{{ names|map('upper')|join }}"),
    ("TK106", "{{ x|no_such_filter }}"),
    ("TK107", "{% if x is no_such_test %}{% endif %}"),
    ("TK109", "{{ 1e3 }}"),
    ("TK109", "{% raw %}{{{% endraw %}"),
    ("TK109", "{% with a = 1 %}{{ a }}{% endwith %}"),
    ("TK109", "{% generation %}{{ x }}{% endgeneration %}"),
    ("TK110", "{% if x != {} %}{% endif %}"),
    ("TK111", "{{ message.content|first }}"),
    ("TK112", "{% for d in documents %}{{ d.text }}{% endfor %}"),
    ("TK201", "{{ None }}"),
    ("TK201", "{{ 'a' ~ (x == 1) }}"),
    ("TK202", "{{ message['tool_calls'] }}"),
    ("TK202", "{{ tools|string }}"),
    ("TK202", "{% set s = 'args: ' + call.arguments %}"),
    ("TK202", "{{ names|sort }}"),
    ("TK203", "{% if x == None %}{% endif %}"),
    ("TK401", "{% if x %}\n  {{ x }}\n{% endif %}"),
    ("TK601", "{{ assert(false) }}"),
    ("TK602", "{{ strftime_now('%Y') }}"),
]
NEGATIVE = [
    ("TK101", "{% macro m(x) %}{{ x }}{% endmacro %}{{ m('a') }}"),
    ("TK101", "{% set ns = namespace(a=1) %}{{ ns.a }}"),
    ("TK102", "{{ x|trim|upper }}"),
    ("TK103", "{{ x.strip() }}"),
    ("TK104", "{{ n % 2 }}"),
    ("TK105", "{{ n * 2 }}"),
    ("TK106", "{{ names|map(attribute='name')|join(', ') }}"),
    ("TK107", "{% if x is not none and x is string and x is defined %}{% endif %}"),
    ("TK109", "{{ 1.5 }}{% if a < b and b < c %}{% endif %}"),
    ("TK110", "{% if x == 'a' %}{% endif %}"),
    (
        "TK111",
        "{% if message.content is string %}{{ message.content }}{% else %}"
        "{% for p in message.content %}{{ p.text }}{% endfor %}{% endif %}",
    ),
    ("TK112", "{% if tools %}{% for t in tools %}{{ t|tojson }}{% endfor %}{% endif %}"),
    ("TK112", "{% set tools = tools or [] %}{% for t in tools %}{% endfor %}"),
    ("TK112", "{% macro render(tools) %}{% for t in tools %}{% endfor %}{% endmacro %}"),
    ("TK201", "{{ 'yes' if x is string else 'no' }}"),
    ("TK202", "{% if arguments is string %}{{ arguments }}{% else %}{{ arguments|tojson }}{% endif %}"),
    ("TK202", "{{ message.content }}"),
    ("TK203", "{% if x == none or y == true %}{% endif %}"),
    ("TK401", "{%- if x %}\n  {{- x }}\n{%- endif %}"),
    ("TK401", "{{ a }}\n{{ b }}"),
    ("TK601", "{{ raise_exception('no') }}{{ range(3)|list|length }}"),
]


@pytest.mark.parametrize(("code", "source"), POSITIVE)
def test_positive(code, source):
    assert code in codes(_HEADER + source)


@pytest.mark.parametrize(("code", "source"), NEGATIVE)
def test_negative(code, source):
    assert code not in codes(_HEADER + source)


def test_line_and_column_point_at_the_token():
    source = "{% if add_generation_prompt %}\n{{ tools }}{% endif %}\n  {{- x.strip() ~ y.strip() }}"
    found = [f for f in lint(source) if f.code in ("TK102", "TK202")]
    assert [(f.code, f.line, f.column) for f in found] == [("TK202", 2, 4), ("TK102", 3, 9), ("TK102", 3, 21)]


def test_syntax_error_is_a_finding_with_its_line():
    (finding,) = lint("{% if x %}\n{{ x }}\n{% endfor %}")
    assert (finding.code, finding.severity, finding.line) == ("TK100", "error", 3)


def test_finding_formats_like_a_compiler():
    finding = LintFinding("TK102", "warning", "m", "h", 3, 7, path="t.jinja")
    assert finding.format() == "t.jinja:3:7: TK102 warning: m (hint: h)"
    assert finding.to_dict() == {
        "code": "TK102",
        "severity": "warning",
        "message": "m",
        "hint": "h",
        "line": 3,
        "column": 7,
        "path": "t.jinja",
    }


def test_named_templates_are_each_linted(tmp_path):
    (tmp_path / "chat_template.jinja").write_text("{{ x.strip() }}", encoding="utf-8")
    (tmp_path / "additional_chat_templates").mkdir()
    (tmp_path / "additional_chat_templates" / "tool_use.jinja").write_text("{{ '%s' % x }}", encoding="utf-8")
    found = {(f.template, f.code) for f in lint(tmp_path)}
    assert ("default", "TK102") in found and ("tool_use", "TK104") in found
    assert all(f.path == str(tmp_path) for f in lint(tmp_path))


def test_unknown_engine_is_a_usage_error():
    from turnkit import UsageError

    with pytest.raises(UsageError):
        lint("x", engines=["jinja-go"])


def test_import_turnkit_does_not_import_minijinja():
    import subprocess
    import sys

    code = "import sys, turnkit; turnkit.lint('{{ x }}'); print('minijinja' in sys.modules)"
    from tests.corpora import REPO_ROOT

    env = {**__import__("os").environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "False"


def test_docs_describe_every_rule():
    from tests.corpora import REPO_ROOT

    text = (REPO_ROOT / "docs" / "portability.md").read_text(encoding="utf-8")
    for code, rule in RULES.items():
        assert f"### {code} ({rule.severity})" in text, code
