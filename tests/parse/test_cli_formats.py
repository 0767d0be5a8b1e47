"""``turnkit formats`` through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.clirun import run_cli
from turnkit.parse import list_formats

QWEN_CODER = (
    "{% for m in messages %}{{ m.content }}{% for c in m.tool_calls %}<tool_call>\n<function={{ c.function.name }}>"
    "<parameter=x>1</parameter></function></tool_call>{% endfor %}{% endfor %}"
)


def test_table_lists_every_format_with_aliases_and_markers() -> None:
    out = run_cli("formats")
    assert out.returncode == 0, out.stderr
    for name in list_formats():
        assert f"\n{name} " in out.stdout, name
    assert "aliases: hermes_2_pro" in out.stdout and "<|python_tag|>" in out.stdout
    assert 'prompt:  "List of tools:" "<|tool_list_start|>"' in out.stdout


def test_json() -> None:
    out = run_cli("formats", "--format", "json")
    rows = json.loads(out.stdout)
    assert sorted(r["name"] for r in rows) == list_formats()
    kimi = next(r for r in rows if r["name"] == "kimi_k2")
    assert "<|tool_calls_section_begin|>" in kimi["markers"] and kimi["prompt_markers"] == []
    lfm2 = next(r for r in rows if r["name"] == "lfm2_pythonic")
    assert "List of tools:" in lfm2["prompt_markers"] and "List of tools:" not in lfm2["markers"]


def test_detect_template_file_and_folder(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja"
    path.write_text(QWEN_CODER, encoding="utf-8")
    out = run_cli("formats", "--detect", str(path))
    assert out.returncode == 0, out.stderr
    assert "format: qwen3_coder_xml" in out.stdout and "why: " in out.stdout and "<parameter=" in out.stdout
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "chat_template.jinja").write_text(QWEN_CODER, encoding="utf-8")
    data = json.loads(run_cli("formats", "--detect", str(folder), "--format", "json").stdout)
    assert data["format"] == "qwen3_coder_xml" and data["source"] == "markers"


def test_detect_shows_prompt_side_evidence(tmp_path: Path) -> None:
    path = tmp_path / "lfm2.jinja"
    path.write_text(
        "{% if tools %}List of tools: <|tool_list_start|>[{{ tools | tojson }}]<|tool_list_end|>{% endif %}"
        "{% for m in messages %}{{ m.content }}{% endfor %}",
        encoding="utf-8",
    )
    out = run_cli("formats", "--detect", str(path))
    assert out.returncode == 0, out.stderr
    assert "format: lfm2_pythonic" in out.stdout and "markers: (none)" in out.stdout
    assert 'prompt markers: "List of tools:" "<|tool_list_start|>" "<|tool_list_end|>"' in out.stdout
    data = json.loads(run_cli("formats", "--detect", str(path), "--format", "json").stdout)
    assert data["prompt_markers"] == ["List of tools:", "<|tool_list_start|>", "<|tool_list_end|>"]


def test_detect_rejects_a_non_template(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("hello", encoding="utf-8")
    out = run_cli("formats", "--detect", str(tmp_path / "x.txt"))
    assert out.returncode == 2 and "not a Jinja chat template" in out.stderr


def test_help() -> None:
    out = run_cli("formats", "--help")
    assert out.returncode == 0 and "--detect" in out.stdout
