"""Why each known corpus failure fails: one short reason per record (used by make_xfail and the report)."""

from __future__ import annotations

IMPLICIT = (
    "implicit reasoning: the source labels text reasoning only if an end marker shows up later (or "
    "its fixtures disagree on the same text); an append-only stream labels text when it arrives"
)
TRUNCATED = (
    "truncated/invalid call: vLLM returns the raw text as content; turnkit has already streamed the "
    "call's first fragment, reports it with its raw arguments and incomplete: true"
)
ECHO = "llama.cpp quirk: re-inserts prompt text (<think> / reasoning prefill) into the parsed message"
FENCE = (
    "legacy llama.cpp Hermes 2 Pro fallback: a call inside a Markdown code fence; not declared, fences "
    "are ordinary content"
)
KEEP_TEXT = "vLLM drops text around calls (content null / trailing text removed); turnkit keeps what the model wrote"

REASONS: dict[str, str] = {
    "llama.cpp:10": "llama.cpp keeps Python string escapes raw (\\\\n); turnkit decodes the Python literal",
    "llama.cpp:25": ECHO,
    "llama.cpp:41": "json_schema response format: llama.cpp strips a Markdown fence around a JSON answer",
    "llama.cpp:98": "llama.cpp keeps the value's trailing newline inside <parameter> for this Seed-OSS case",
    "llama.cpp:193": ECHO,
    "llama.cpp:194": ECHO,
    "llama.cpp:241": "conflicting fixtures: the same partial output is expected as raw content here, empty in :242",
    "llama.cpp:247": "id written after the arguments in a generic envelope: the call was announced with a generated id",
    "llama.cpp:250": FENCE,
    "llama.cpp:261": FENCE,
    "llama.cpp:262": FENCE,
    "llama.cpp:263": FENCE,
    "llama.cpp:264": FENCE,
    "llama.cpp:265": FENCE,
    "llama.cpp:266": FENCE,
    "llama.cpp:280": "partial fenced JSON after content: llama.cpp drops the fence tail; turnkit keeps it as content",
    "llama.cpp:296": "functionary v3.2 `python` call with raw code (not JSON) arguments: not declared",
    "llama.cpp:297": "functionary v3.2 `python` call with raw code (not JSON) arguments: not declared",
    "llama.cpp:302": ECHO,
    "llama.cpp:327": "partial output ending in '{': llama.cpp hides a possible JSON start; turnkit shows it",
    "llama.cpp:338": "llama.cpp hides a call whose arguments are incomplete; turnkit streams it (incomplete: true)",
    "llama.cpp:339": "llama.cpp hides a call until <|call|> arrives in partial mode; turnkit streams it",
    "llama.cpp:366": "thinking forced open, calls written without </think>: llama.cpp calls the text content",
    "llama.cpp:407": "llama.cpp joins content segments around a reasoning block with an extra newline",
    "llama.cpp:408": "llama.cpp joins content segments around a reasoning block with an extra newline",
    "llama.cpp:461": "JSON integers stay exact (10**60); llama.cpp gives a float",
    "vllm:10": KEEP_TEXT,
    "vllm:42": TRUNCATED,
    "vllm:77": TRUNCATED,
    "vllm:139": TRUNCATED,
    "vllm:140": KEEP_TEXT,
    "vllm:143": TRUNCATED,
    "vllm:153": "a JSON object with a name but no parameters: vLLM treats it as text, turnkit as a call with {}",
    "vllm:186": "vLLM's MiniMax-M1 parser fails on pretty-printed JSON (expects no call); turnkit parses it",
    "vllm:193": KEEP_TEXT,
    "vllm:315": "the test configures a second end marker (<alt:end>) that the splitter here is not given",
    "vllm:340": IMPLICIT,
    "vllm:342": IMPLICIT,
    "vllm:344": IMPLICIT,
    "vllm:350": IMPLICIT,
    "vllm:351": IMPLICIT,
    "vllm:356": TRUNCATED,
    "vllm:361": "unclosed <think> in vLLM's GLM parser stays content; turnkit reads it as reasoning",
    "vllm:367": IMPLICIT,
    "vllm:371": IMPLICIT,
    "vllm:380": IMPLICIT,
    "vllm:381": IMPLICIT,
    "vllm:388": "Kimi reasoning ended by a tool section: vLLM keeps the section marker text in content",
    "vllm:423": IMPLICIT,
    "vllm:424": IMPLICIT,
    "vllm:438": "vLLM's Qwen3 reasoning parser ends reasoning at <tool_call> and keeps the call text as content",
    "vllm:439": "vLLM's Qwen3 reasoning parser ends reasoning at <tool_call> and keeps the call text as content",
    "vllm:465": "previous-turn reasoning echoed in the output: vLLM discards the text between turns",
}
