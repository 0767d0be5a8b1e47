"""``turnkit lint``: compiler-style output, JSON, exit status 1 on errors, 0 otherwise, 2 on bad usage."""

from __future__ import annotations

import json

from tests.clirun import run_cli

CLEAN = "{%- for m in messages %}{{- m.content }}{%- endfor %}{%- if add_generation_prompt %}A:{%- endif %}"


def test_warnings_only_exit_zero(tmp_path):
    path = tmp_path / "t.jinja"
    path.write_text("{{ messages[0].content.strip() }}" + CLEAN, encoding="utf-8")
    result = run_cli("lint", str(path))
    assert result.returncode == 0, result.stderr
    assert f"{path}:1:24: TK102 warning: " in result.stdout and "(hint: " in result.stdout


def test_error_exit_one_and_json(tmp_path):
    path = tmp_path / "t.jinja"
    path.write_text(CLEAN + "\n{{ 'x' * 3 }}", encoding="utf-8")
    result = run_cli("lint", "--format", "json", str(path))
    assert result.returncode == 1
    findings = json.loads(result.stdout)
    assert {"code": "TK105", "severity": "error", "line": 2, "column": 8, "path": str(path)}.items() <= next(
        f for f in findings if f["code"] == "TK105"
    ).items()


def test_syntax_error_is_a_finding_not_a_crash(tmp_path):
    path = tmp_path / "t.jinja"
    path.write_text("{% if x %}\n{{ x }", encoding="utf-8")
    result = run_cli("lint", str(path))
    assert result.returncode == 1
    assert result.stdout.startswith(f"{path}:2:1: TK100 error: syntax error")


def test_unreadable_input_and_bad_usage_exit_two(tmp_path):
    assert run_cli("lint", str(tmp_path / "missing.jinja")).returncode == 2
    assert run_cli("lint", str(tmp_path)).returncode == 2  # a folder without a chat template
    assert run_cli("lint", "--engines", "jinja-go", str(tmp_path)).returncode == 2
    assert run_cli("lint").returncode == 2


def test_model_folder_and_stdin(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "chat_template": [
                    {"name": "default", "template": CLEAN},
                    {"name": "tool_use", "template": CLEAN + "{{ tools }}"},
                ]
            }
        )
    )
    result = run_cli("lint", str(tmp_path))
    assert result.returncode == 1
    assert f"{tmp_path}[tool_use]:1:102: TK202 error" in result.stdout
    assert f"{tmp_path}[default]:1:1: TK502 info" in result.stdout
    piped = run_cli("lint", "-", stdin="{{ x|sum }}")
    assert piped.returncode == 1 and "<stdin>:1:6: TK106 error" in piped.stdout
