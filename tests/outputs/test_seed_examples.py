"""Every example of the seed (output-parsers.zh.md), run as written; expected texts are AgentScope's."""

from __future__ import annotations

import pytest

from turnkit.outputs import (
    DictFilterMixin,
    MarkdownCodeBlockParser,
    MarkdownJsonDictParser,
    MarkdownJsonObjectParser,
    ModelResponse,
    MultiTaggedContentParser,
    ParseError,
    ParserBase,
    TaggedContent,
)


def werewolf_tagged_parser() -> MultiTaggedContentParser:
    return MultiTaggedContentParser(
        TaggedContent(name="thought", tag_begin="[THOUGHT]", content_hint="what you thought", tag_end="[/THOUGHT]"),
        TaggedContent(name="speak", tag_begin="[SPEAK]", content_hint="what you speak", tag_end="[/SPEAK]"),
        TaggedContent(
            name="finish_discussion",
            tag_begin="[FINISH_DISCUSSION]",
            content_hint="true/false, whether the discussion is finished",
            tag_end="[/FINISH_DISCUSSION]",
            parse_json=True,
        ),
    )


def test_code_block_format_instruction() -> None:
    parser = MarkdownCodeBlockParser(language_name="python", content_hint="your python code")
    # AgentScope's template ("as follows: \n"); the seed's rendering drops the colon (see docs).
    assert parser.format_instruction == (
        "You should generate python code in a python fenced code block as follows: \n```python\nyour python code\n```"
    )


def test_code_block_default_hint() -> None:
    parser = MarkdownCodeBlockParser("python")
    assert "```python\n${your_python_code}\n```" in parser.format_instruction


def test_code_block_parse() -> None:
    parser = MarkdownCodeBlockParser(language_name="python", content_hint="your python code")
    res = parser.parse(
        ModelResponse(
            text="""The following is generated python code
```python
print("Hello world!")
```
"""
        )
    )
    assert res.parsed == 'print("Hello world!")'
    assert res.repairs_applied == []


def test_filter_semantics_example() -> None:
    parser = MarkdownJsonDictParser(
        content_hint={"thought": "what you thought", "speak": "what you speak"},
        keys_to_content="speak",
        keys_to_memory=["thought", "speak"],
    )
    example_dict = {"thought": "abc", "speak": "def"}
    assert parser.to_content(example_dict) == "def"
    assert parser.to_memory(example_dict) == {"thought": "abc", "speak": "def"}
    assert parser.to_metadata(example_dict) is None


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (False, None),
        (True, {"thought": "t", "speak": "s", "finish_discussion": True}),
        ("speak", "s"),
        (["finish_discussion"], {"finish_discussion": True}),
        (["speak", "thought"], {"speak": "s", "thought": "t"}),
    ],
)
def test_filter_false_true_str_list(keys: object, expected: object) -> None:
    parsed = {"thought": "t", "speak": "s", "finish_discussion": True}
    parser = MarkdownJsonDictParser(keys_to_content=keys, keys_to_memory=keys, keys_to_metadata=keys)  # type: ignore[arg-type]
    assert parser.to_content(parsed) == expected
    assert parser.to_memory(parsed) == expected
    assert parser.to_metadata(parsed) == expected


def test_filter_defaults() -> None:
    parsed = {"a": 1}
    for parser in (MarkdownJsonDictParser(), werewolf_tagged_parser()):
        assert parser.to_content(parsed) == parsed
        assert parser.to_memory(parsed) == parsed
        assert parser.to_metadata(parsed) is None


def test_filter_missing_keys() -> None:
    parser = MarkdownJsonDictParser(keys_to_content=["a", "b"], keys_to_memory="b")
    with pytest.raises(ParseError) as info:
        parser.to_content({"a": 1})
    assert info.value.code == "missing_key"
    assert parser.to_content({"a": 1}, allow_missing=True) == {"a": 1}
    with pytest.raises(ParseError):
        parser.to_memory({"a": 1})
    assert parser.to_memory({"a": 1}, allow_missing=True) is None


def test_werewolf_dict_parser_flow() -> None:
    parser = MarkdownJsonDictParser(
        content_hint={
            "thought": "what you thought",
            "speak": "what you speak",
            "finish_discussion": "whether the discussion is finished",
        },
        keys_to_content="speak",
        keys_to_memory=["thought", "speak"],
        keys_to_metadata=["finish_discussion"],
    )
    reply = (
        "```json\n"
        '{"thought": "The others didn\'t realize I was a werewolf. I should end the discussion soon.",'
        ' "speak": "I agree with you.", "finish_discussion": true}\n```'
    )
    res = parser.parse(reply)
    assert parser.to_memory(res.parsed) == {
        "thought": "The others didn't realize I was a werewolf. I should end the discussion soon.",
        "speak": "I agree with you.",
    }
    assert parser.to_content(res.parsed) == "I agree with you."
    assert parser.to_metadata(res.parsed) == {"finish_discussion": True}
    # to_* also accept the response itself
    assert parser.to_content(res) == "I agree with you."


def test_dict_parser_hint_dict_or_string() -> None:
    as_dict = MarkdownJsonDictParser(content_hint={"thought": "what you thought", "speak": "what you speak"})
    hint = '{\n  "thought": "what you thought",\n  "speak": "what you speak",\n}'
    as_str = MarkdownJsonDictParser(content_hint=hint)
    assert as_dict.format_instruction == (
        "You should respond a json object in a json fenced code block as follows:\n```json\n"
        '{"thought": "what you thought", "speak": "what you speak"}\n```'
    )
    assert as_str.format_instruction == (
        f"You should respond a json object in a json fenced code block as follows:\n```json\n{hint}\n```"
    )
    assert MarkdownJsonDictParser().format_instruction.endswith("```json\n{your_json_dictionary}\n```")


def test_tagged_format_instruction_exact() -> None:
    assert werewolf_tagged_parser().format_instruction == (
        "Respond with specific tags as outlined below, and the content between [FINISH_DISCUSSION] and "
        '[/FINISH_DISCUSSION] MUST be valid JSON (e.g. true, 3, "text", [...] or {...}):\n'
        "[THOUGHT]what you thought[/THOUGHT]\n"
        "[SPEAK]what you speak[/SPEAK]\n"
        "[FINISH_DISCUSSION]true/false, whether the discussion is finished[/FINISH_DISCUSSION]"
    )


def test_tagged_format_instruction_without_json_tags() -> None:
    parser = MultiTaggedContentParser(TaggedContent("a", "<a>", "hint", "</a>"))
    assert parser.format_instruction == "Respond with specific tags as outlined below: \n<a>hint</a>"


def test_tagged_format_instruction_names_every_json_tag() -> None:
    parser = MultiTaggedContentParser(
        TaggedContent("a", "<a>", "x", "</a>", parse_json=True),
        TaggedContent("b", "<b>", "y", "</b>"),
        TaggedContent("c", "<c>", "z", "</c>", parse_json=True),
    )
    assert parser.format_instruction.startswith(
        "Respond with specific tags as outlined below, and the content between <a> and </a>, <c> and </c> "
        'MUST be valid JSON (e.g. true, 3, "text", [...] or {...}):\n'
    )


def test_tagged_parse_werewolf() -> None:
    res_dict = werewolf_tagged_parser().parse(
        ModelResponse(
            text="""As a werewolf, I should keep pretending to be a villager
[THOUGHT]The others didn't realize I was a werewolf. I should end the discussion soon.[/THOUGHT]
[SPEAK]I agree with you.[/SPEAK]
[FINISH_DISCUSSION]true[/FINISH_DISCUSSION]
"""
        )
    )
    assert res_dict.parsed == {
        "thought": "The others didn't realize I was a werewolf. I should end the discussion soon.",
        "speak": "I agree with you.",
        "finish_discussion": True,
    }
    assert list(res_dict.parsed) == ["thought", "speak", "finish_discussion"]
    assert res_dict.repairs_applied == []


def test_json_object_parser_example() -> None:
    parser = MarkdownJsonObjectParser(content_hint="{A list of numbers.}")
    assert parser.format_instruction == (
        "You should respond a json object in a json fenced code block as follows:\n```json\n{A list of numbers.}\n```"
    )
    res = parser.parse(
        ModelResponse(
            text="""Yes, here is the generated list
```json
[1,2,3,4,5]
```
"""
        )
    )
    assert type(res.parsed) is list
    assert res.parsed == [1, 2, 3, 4, 5]
    assert MarkdownJsonObjectParser().format_instruction.endswith("```json\n{your_json_object}\n```")


def test_parse_accepts_plain_string_and_mutates_response() -> None:
    parser = MarkdownJsonObjectParser()
    response = ModelResponse(text='```json\n{"a": 1}\n```')
    assert parser.parse(response) is response
    assert response.parsed == {"a": 1}
    assert parser.parse('```json\n{"a": 2}\n```').parsed == {"a": 2}


def test_custom_parser_from_seed() -> None:
    class UpperParser(ParserBase, DictFilterMixin):
        format_instruction = "Answer as KEY=VALUE lines."

        def __init__(self) -> None:
            DictFilterMixin.__init__(self, keys_to_content="ANSWER", keys_to_metadata=True)

        def parse(self, response: ModelResponse | str) -> ModelResponse:
            response = response if isinstance(response, ModelResponse) else ModelResponse(text=response)
            body = self._extract_first_content_by_tag(response, "<kv>", "</kv>")
            response.parsed = dict(line.split("=", 1) for line in body.strip().splitlines())
            return response

    parser = UpperParser()
    res = parser.parse("<kv>\nANSWER=42\nWHY=because\n</kv>")
    assert parser.to_content(res.parsed) == "42"
    assert parser.to_metadata(res.parsed) == {"ANSWER": "42", "WHY": "because"}
    with pytest.raises(ParseError) as info:
        parser.parse("no tags")
    assert info.value.code == "missing_tag"
    assert "<kv>" in info.value.feedback and "</kv>" in info.value.feedback


def test_parser_base_is_abstract() -> None:
    with pytest.raises(TypeError):
        ParserBase()  # type: ignore[abstract]
