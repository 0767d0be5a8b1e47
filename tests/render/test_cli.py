"""``turnkit render`` and ``turnkit demo`` through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirun import run_cli
from tests.render.conversations import CALL, RESULT, TOOLS, USER
from turnkit import apply_chat_template

TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% if m.tool_calls %}"
    "{{ m.tool_calls|tojson }}{% endif %}\n{% endfor %}{% if tools %}TOOLS:{{ tools|tojson }}\n{% endif %}"
    "{% if documents %}DOCS:{{ documents|length }}\n{% endif %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
    "{% if flag is defined %}[flag={{ flag|tojson }}]{% endif %}{% if label is defined %}[label={{ label }}]{% endif %}"
)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {
        "template": tmp_path / "t.jinja",
        "messages": tmp_path / "m.json",
        "tools": tmp_path / "tools.json",
        "documents": tmp_path / "docs.json",
        "bad_json": tmp_path / "bad.json",
        "bad_template": tmp_path / "bad.jinja",
        "raising": tmp_path / "raise.jinja",
    }
    paths["template"].write_text(TEMPLATE, encoding="utf-8")
    paths["messages"].write_text(json.dumps([USER, CALL, RESULT]), encoding="utf-8")
    paths["tools"].write_text(json.dumps(TOOLS), encoding="utf-8")
    paths["documents"].write_text(json.dumps([{"title": "a", "text": "b"}]), encoding="utf-8")
    paths["bad_json"].write_text('[{"role": "user",', encoding="utf-8")
    paths["bad_template"].write_text("{% for m in messages %}", encoding="utf-8")
    paths["raising"].write_text("{{ raise_exception('roles must alternate') }}", encoding="utf-8")
    return {name: str(path) for name, path in paths.items()}


def test_render_prints_what_the_api_gives(files: dict[str, str]) -> None:
    out = run_cli(
        "render",
        "--template",
        files["template"],
        "--messages",
        files["messages"],
        "--tools",
        files["tools"],
        "--documents",
        files["documents"],
        "--generation-prompt",
        "--var",
        "flag=true",
        "--var",
        "label=hello world",
        "--var",
        "bos_token=<s>",
    )
    assert out.returncode == 0, out.stderr
    expected = apply_chat_template(
        [USER, CALL, RESULT],
        TEMPLATE,
        tools=TOOLS,
        documents=[{"title": "a", "text": "b"}],
        add_generation_prompt=True,
        flag=True,
        label="hello world",
        bos_token="<s>",
    )
    assert out.stdout == expected + "\n"
    assert "[flag=true]" in out.stdout and "[label=hello world]" in out.stdout


def test_render_reads_stdin_and_continues_final_message(files: dict[str, str]) -> None:
    messages = [USER, {"role": "assistant", "content": "It is"}]
    out = run_cli(
        "render",
        "--template",
        files["template"],
        "--messages",
        "-",
        "--continue-final",
        stdin=json.dumps({"messages": messages}),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.endswith("<|assistant|>It is\n")


def test_render_help() -> None:
    out = run_cli("render", "--help")
    assert out.returncode == 0
    for option in (
        "--template",
        "--model",
        "--messages",
        "--tools",
        "--documents",
        "--generation-prompt",
        "--continue-final",
        "--name",
        "--var",
    ):
        assert option in out.stdout


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        (("--template", "{missing}", "--messages", "{messages}"), "No such file"),
        (("--template", "{template}", "--messages", "{bad_json}"), "not valid JSON"),
        (("--template", "{bad_template}", "--messages", "{messages}"), "does not compile"),
        (("--template", "{raising}", "--messages", "{messages}"), "roles must alternate"),
        (
            ("--template", "{template}", "--messages", "{documents}", "--continue-final", "--generation-prompt"),
            "cannot be used together",
        ),
        (("--template", "{template}", "--messages", "{messages}", "--var", "no-equals"), "KEY=VALUE"),
        (
            ("--template", "{template}", "--messages", "{tools}", "--tools", "{messages}", "--name", "x"),
            "no chat template named",
        ),
        (("--model", "{missing}", "--messages", "{messages}"), "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(files: dict[str, str], case: tuple[str, ...], needle: str) -> None:
    args = [arg.format(missing=files["template"] + ".missing", **files) for arg in case]
    out = run_cli("render", *args)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("turnkit: error: "), out.stderr
    assert needle in lines[0]


def test_missing_template_option_is_a_usage_error() -> None:
    out = run_cli("render", "--messages", "-")
    assert out.returncode == 2 and "Traceback" not in out.stderr


def test_demo_prints_the_tool_round_trip() -> None:
    out = run_cli("demo")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    # the two Python-function tools, as schemas
    assert '"name": "get_current_temperature"' in text and '"name": "get_current_wind_speed"' in text
    assert '"enum": ["celsius", "fahrenheit"]' in text
    # the assistant's tool call and the tool's result
    assert '<tool_call>\n{"name": "get_current_temperature", "arguments": {"location": "Paris, France"' in text
    assert "<tool_response>\n22.0\n</tool_response>" in text
    assert text.startswith("<|im_start|>system\nYou are a weather bot.")
    assert text.endswith("<|im_start|>assistant\n")
