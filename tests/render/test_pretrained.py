"""ChatTemplate.from_pretrained / save_pretrained over local model folders, and ``turnkit render --model``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirun import run_cli
from turnkit import ChatTemplate, TemplateNotFoundError

TEMPLATE = "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}{% endfor %}"
CHAT = [{"role": "user", "content": "hi"}]


def _folder(tmp_path: Path, config: dict[str, object]) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def test_reads_template_and_special_tokens(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path,
        {
            "chat_template": TEMPLATE,
            "bos_token": {
                "content": "<s>",
                "lstrip": False,
                "normalized": False,
                "rstrip": False,
                "single_word": False,
                "special": True,
                "__type": "AddedToken",
            },
            "eos_token": "</s>",
        },
    )
    template = ChatTemplate.from_pretrained(folder)
    assert template.render(CHAT) == "<s>[user]hi</s>"
    assert template.render(CHAT, eos_token="<|end|>") == "<s>[user]hi<|end|>"


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    original = ChatTemplate(
        {"default": TEMPLATE, "tool_use": "T{{ tools|length }}"},
        special_tokens={"bos_token": "<s>", "eos_token": "</s>"},
    )
    original.save_pretrained(tmp_path / "saved")
    loaded = ChatTemplate.from_pretrained(tmp_path / "saved")
    assert loaded.names == ["default", "tool_use"]
    assert loaded.render(CHAT) == original.render(CHAT) == "<s>[user]hi</s>"
    assert loaded.render(CHAT, tools=[]) == "T0"


def test_folder_without_template(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"bos_token": "<s>"})
    with pytest.raises(TemplateNotFoundError, match="no chat template"):
        ChatTemplate.from_pretrained(folder)
    with pytest.raises(TemplateNotFoundError):
        ChatTemplate.from_pretrained(tmp_path / "missing")


def test_cli_model_folder_and_name(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path,
        {
            "chat_template": [
                {"name": "default", "template": TEMPLATE},
                {"name": "plain", "template": "{{ messages|length }} message"},
            ],
            "bos_token": "<s>",
            "eos_token": "</s>",
        },
    )
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps(CHAT), encoding="utf-8")
    out = run_cli("render", "--model", str(folder), "--messages", str(messages))
    assert (out.returncode, out.stdout) == (0, "<s>[user]hi</s>\n"), out.stderr
    out = run_cli("render", "--model", str(folder), "--messages", str(messages), "--name", "plain")
    assert (out.returncode, out.stdout) == (0, "1 message\n"), out.stderr
    out = run_cli("render", "--model", str(tmp_path / "nope"), "--messages", str(messages))
    assert out.returncode == 2 and "Traceback" not in out.stderr and "does not exist" in out.stderr
