"""``detect_format``: the built-in format for a chat template, from the template's own markers."""

from __future__ import annotations

from pathlib import Path

import pytest

import turnkit
from tests.corpora import corpus_path
from turnkit.parse import format_markers, load_format

SAMPLE = {
    # Templates without output records in the corpus, where one format clearly applies.
    "Qwen-Qwen3-0.6B.jinja": "hermes",
    "Qwen-Qwen2.5-7B-Instruct.jinja": "hermes",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": "hermes",
    "moonshotai-Kimi-K2.jinja": "kimi_k2",
    "Kimi-K2-Instruct.jinja": "kimi_k2",
    "meta-llama-Llama-3.2-3B-Instruct.jinja": "llama3_json",
    "meta-llama-Llama-3.3-70B-Instruct.jinja": "llama3_builtin",
    "google-gemma-4-31B-it-interleaved.jinja": "gemma4",
    "stepfun-ai-Step-3.5-Flash.jinja": "qwen3_coder_xml",
    "minja/Qwen-Qwen3-Coder-30B-A3B-Instruct.jinja": "qwen3_coder_xml",
    "huggingface.js/deepseek-ai-DeepSeek-R1.jinja": "deepseek_r1",
    "huggingface.js/zai-org-GLM-5.1.jinja": "glm45",
    "huggingface.js/ai21labs-AI21-Jamba-Large-1.6.jinja": "jamba",
    "huggingface.js/CohereForAI-c4ai-command-r-v01.jinja": "command_r_plus",
    "huggingface.js/mistralai-Mistral-7B-Instruct-v0.3.jinja": "mistral_nemo",
    "vllm/tool_chat_template_functiongemma.jinja": "functiongemma",
    "vllm/tool_chat_template_granite_20b_fc.jinja": "granite_20b_fc",
    "vllm/tool_chat_template_internlm2_tool.jinja": "internlm",
    "vllm/tool_chat_template_apertus.jinja": "apertus",
    "vllm/tool_chat_template_phi4_mini.jinja": "firefunction_v2",
    "vllm/tool_chat_template_deepseekv31.jinja": "deepseek_v3_1",
    "vllm/tool_chat_template_llama4_json.jinja": "llama3_json",
    "chujiezheng/granite-3.0-instruct.jinja": "granite",
    "llama-cpp-rwkv-world.jinja": "think",
    "llama-cpp-lfm2.jinja": "lfm2_pythonic",  # prompt-side markers only: it never writes a tool call back
    "huggingface.js/LiquidAI-LFM2.5-VL-450M.jinja": "lfm2_pythonic",
    "vllm/template_chatml.jinja": "generic",
    "microsoft-Phi-3.5-mini-instruct.jinja": "generic",
}


@pytest.mark.corpus
def test_every_template_with_output_records_detects_a_format_that_parses_them() -> None:
    from tests.parse.detect_report import KNOWN_MISSES, outcomes, table

    results = outcomes()
    assert len(results) >= 280
    misses = {o.template for o in results if not o.ok}
    assert misses == set(KNOWN_MISSES), sorted(misses)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "formats.md").read_text(encoding="utf-8")
    assert table(results) in doc, "docs/formats.md detection table is stale: python -m tests.parse.detect_report"


@pytest.mark.corpus
@pytest.mark.parametrize(("template", "expected"), sorted(SAMPLE.items()))
def test_templates_without_records(template: str, expected: str) -> None:
    detection = turnkit.detect_format(corpus_path("templates") / template)
    assert detection.format == expected, detection.reason


def test_markers_come_from_the_declarations() -> None:
    hermes = format_markers(load_format("hermes").spec)
    assert "<tool_call>" in hermes and "</tool_call>" in hermes
    assert "<|tool_call_argument_begin|>" in format_markers(load_format("kimi_k2").spec)
    assert "<｜tool▁sep｜>" in format_markers(load_format("deepseek_r1").spec)


def test_template_text_and_reason() -> None:
    template = (
        "{% for m in messages %}{{ m.content }}{% if m.tool_calls %}[TOOL_CALLS]{{ m.tool_calls | tojson }}"
        "{% endif %}{% endfor %}"
    )
    detection = turnkit.detect_format(template)
    assert detection.format in {"mistral_nemo", "mistral_args", "magistral"}
    assert "[TOOL_CALLS]" in detection.markers and "[TOOL_CALLS]" in detection.reason
    assert detection.source == "markers" and detection


def test_no_markers_falls_back_to_generic() -> None:
    detection = turnkit.detect_format("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}")
    assert detection.format == "generic" and detection.source == "fallback"
    assert "fallback" in detection.reason


def test_constants_are_folded() -> None:
    template = (
        "{% set t = '<|tool_call_start|>' %}{% for m in messages %}{{ t + m.content }}"
        "{{ '<|tool_call_end|>' }}{% endfor %}"
    )
    assert turnkit.detect_format(template).format == "lfm2_pythonic"


def test_files_and_folders(tmp_path: Path) -> None:
    text = (
        "{{ '<minimax:tool_call>' }}{{ '<invoke name=\"' }}{{ '<parameter name=\"' }}"
        "</parameter></invoke></minimax:tool_call>"
    )
    path = tmp_path / "t.jinja"
    path.write_text(text, encoding="utf-8")
    assert turnkit.detect_format(path).format == "minimax_m2"
    assert turnkit.detect_format(str(path)).format == "minimax_m2"
    folder = tmp_path / "model"
    turnkit.write_model_folder(folder, chat_template=text)
    assert turnkit.detect_format(folder).format == "minimax_m2"


def test_not_a_template(tmp_path: Path) -> None:
    with pytest.raises(turnkit.NotATemplateError, match="not a chat template"):
        turnkit.detect_format("hello world")
    (tmp_path / "notes.txt").write_text("plain text", encoding="utf-8")
    with pytest.raises(turnkit.NotATemplateError, match="not a Jinja chat template"):
        turnkit.detect_format(tmp_path / "notes.txt")
    with pytest.raises(turnkit.NotATemplateError):
        turnkit.detect_format(tmp_path / "missing.jinja")
    with pytest.raises(turnkit.ArgumentTypeError, match="'template_or_folder'"):
        turnkit.detect_format(42)  # type: ignore[arg-type]
    (tmp_path / "empty").mkdir()
    with pytest.raises(turnkit.TemplateNotFoundError):
        turnkit.detect_format(tmp_path / "empty")
    assert issubclass(turnkit.NotATemplateError, turnkit.TemplateError)


LIST_OF_TOOLS = (
    "{% if tools %}List of tools: [{% for t in tools %}{{ t | tojson }}{% endfor %}]{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
)


def test_prompt_side_markers_are_evidence_when_no_output_marker_is_written() -> None:
    detection = turnkit.detect_format(LIST_OF_TOOLS)
    assert detection.format == "lfm2_pythonic" and detection.source == "markers"
    assert detection.prompt_markers == ("List of tools:",) and detection.markers == ()
    assert "prompt-side" in detection.reason and "List of tools:" in detection.reason
    assert detection.candidates == ("lfm2_json",)
    # Without them the same template is the generic fallback.
    assert turnkit.detect_format(LIST_OF_TOOLS.replace("List of tools:", "Tools:")).source == "fallback"


def test_output_markers_outrank_prompt_side_markers() -> None:
    hermes = LIST_OF_TOOLS + "{% for c in tool_calls %}<tool_call>{{ c | tojson }}</tool_call>{% endfor %}"
    detection = turnkit.detect_format(hermes)
    assert detection.format == "hermes" and detection.prompt_markers == ()
    assert "lfm2_pythonic" not in detection.candidates  # a prompt-only match is not a candidate beside output ones
    lfm2 = LIST_OF_TOOLS + "<|tool_call_start|>[{{ call }}]<|tool_call_end|>"
    detection = turnkit.detect_format(lfm2)
    assert detection.format == "lfm2_pythonic" and detection.prompt_markers == ("List of tools:",)
    assert "<|tool_call_start|>" in detection.markers and "prompt-side" in detection.reason
    # The shared call end alone (Kimi K2 spells it too) is not a whole LFM2 call: prompt markers decide.
    assert turnkit.detect_format(LIST_OF_TOOLS + "<|tool_call_end|>").format == "lfm2_pythonic"


def test_prompt_side_markers_name_the_family_of_a_reasoning_block() -> None:
    reasoning = LIST_OF_TOOLS.replace("{{ m.content }}", "<think>{{ m.reasoning_content }}</think>{{ m.content }}")
    detection = turnkit.detect_format(reasoning)
    assert detection.format == "lfm2_pythonic" and detection.markers == ("<think>", "</think>")
    assert "think" in detection.candidates  # the reasoning-only format fits too, less specifically
    assert turnkit.detect_format(reasoning.replace("List of tools:", "Tools:")).format != "lfm2_pythonic"


def test_prompt_side_markers_are_declared_apart_and_ignored_by_the_parser() -> None:
    spec = load_format("lfm2_pythonic").spec
    assert "List of tools:" in spec.prompt_markers
    assert not set(spec.prompt_markers) & set(format_markers(spec))
    text = "<|tool_response_start|>x<|tool_response_end|> List of tools: [] ok"
    assert load_format("lfm2_pythonic").parse(text)["content"] == text
