"""The seed's code blocks, copied verbatim, run unmodified against turnkit.

Only the package name differs: ``agentscope.parsers`` and ``agentscope.models`` are aliased to
``turnkit.outputs`` for the duration of the test, and ``ModelResponse`` is in scope, as the seed
assumes. Each block's printed output is checked against what AgentScope's source code would print
(AgentScope itself is not installed here); the seed's rendered outputs contain typos and show
``res.parsed`` where the code prints the response (see docs/outputs.md). The two agent-framework
fragments of the seed (``DictDialogAgent``, ``reply``) need AgentScope's agents; examples/werewolf.py
plays that flow instead.
"""

from __future__ import annotations

import contextlib
import io
import sys
import textwrap
import types
from collections.abc import Callable

import pytest

import turnkit.outputs

# fmt: off
SEED_BLOCKS = [
    # 1. MarkdownCodeBlockParser: init, format instruction, parse
    '''
    from agentscope.parsers import MarkdownCodeBlockParser

    parser = MarkdownCodeBlockParser(language_name="python", content_hint="your python code")
    ''',
    '''
  print(parser.format_instruction)
    ''',
    '''
    res = parser.parse(
        ModelResponse(
            text="""The following is generated python code
    ```python
    print("Hello world!")
    ```
    """
        )
    )

    print(res.parsed)
    ''',
    # 2. The key-routing example
    '''
    parser = MarkdownJsonDictParser(
       content_hint={
           "thought": "what you thought",
           "speak": "what you speak",
       },
       keys_to_content="speak",
       keys_to_memory=["thought", "speak"],
    )

    example_dict = {"thought": "abc", "speak": "def"}
    print(parser.to_content(example_dict))  # def
    print(parser.to_memory(example_dict))   # {"thought": "abc", "speak": "def"}
    print(parser.to_metadata(example_dict)) # None
    ''',
    # 3. MarkdownJsonDictParser with a dict or a string hint
    '''
    from agentscope.parsers import MarkdownJsonDictParser

    # 字典
    MarkdownJsonDictParser(
        content_hint={
          "thought": "what you thought",
          "speak": "what you speak",
        }
    )
    # 或字符串
    MarkdownJsonDictParser(
        content_hint="""{
      "thought": "what you thought",
      "speak": "what you speak",
    }"""
    )
    ''',
    # 4. MultiTaggedContentParser
    '''
from agentscope.parsers import MultiTaggedContentParser, TaggedContent
parser = MultiTaggedContentParser(
  TaggedContent(
    name="thought",
    tag_begin="[THOUGHT]",
    content_hint="what you thought",
    tag_end="[/THOUGHT]"
  ),
  TaggedContent(
    name="speak",
    tag_begin="[SPEAK]",
    content_hint="what you speak",
    tag_end="[/SPEAK]"
  ),
  TaggedContent(
    name="finish_discussion",
    tag_begin="[FINISH_DISCUSSION]",
    content_hint="true/false, whether the discussion is finished",
    tag_end="[/FINISH_DISCUSSION]",
    parse_json=True,         # 我们希望这个字段的内容直接被解析成 True 或 False 的 Python 布尔值
  )
)

print(parser.format_instruction)
    ''',
    '''
res_dict = parser.parse(
    ModelResponse(text="""As a werewolf, I should keep pretending to be a villager
[THOUGHT]The others didn't realize I was a werewolf. I should end the discussion soon.[/THOUGHT]
[SPEAK]I agree with you.[/SPEAK]
[FINISH_DISCUSSION]true[/FINISH_DISCUSSION]
"""
    )
)

print(res_dict)
    ''',
    # 5. MarkdownJsonObjectParser
    '''
from agentscope.parsers import MarkdownJsonObjectParser

parser = MarkdownJsonObjectParser(
  content_hint="{A list of numbers.}"
)

print(parser.format_instruction)
    ''',
    '''
res = parser.parse(
    ModelResponse(text="""Yes, here is the generated list
```json
[1,2,3,4,5]
```
"""
    )
)

print(type(res))
print(res)
    ''',
    # 6. The ParserBase sketch of the custom-parser section
    '''
from abc import ABC, abstractmethod

from agentscope.models import ModelResponse


class ParserBase(ABC):
    """The base class for model response parser."""

    format_instruction: str
    """The instruction for the response format."""

    @abstractmethod
    def parse(self, response: ModelResponse) -> ModelResponse:
        """Parse the response text to a specific object, and stored in the
        parsed field of the response object."""

    # ...
    ''',
]
# fmt: on

EXPECTED_OUTPUT: list[str | Callable[[str], bool]] = [
    "",
    "You should generate python code in a python fenced code block as follows: \n```python\nyour python code\n```\n",
    'print("Hello world!")\n',
    "def\n{'thought': 'abc', 'speak': 'def'}\nNone\n",
    "",
    "Respond with specific tags as outlined below, and the content between [FINISH_DISCUSSION] and "
    # deviation (#16): the seed says "MUST be a JSON object", wrong for a true/false field
    '[/FINISH_DISCUSSION] MUST be valid JSON (e.g. true, 3, "text", [...] or {...}):\n'
    "[THOUGHT]what you thought[/THOUGHT]\n"
    "[SPEAK]what you speak[/SPEAK]\n"
    "[FINISH_DISCUSSION]true/false, whether the discussion is finished[/FINISH_DISCUSSION]\n",
    # The seed shows the parsed dict; like AgentScope, parse returns the response, whose repr holds it.
    lambda out: (
        out.startswith("ModelResponse(text=")
        and "parsed={'thought': \"The others didn't realize I was a werewolf. I should end the discussion soon.\", "
        "'speak': 'I agree with you.', 'finish_discussion': True}"
        in out
    ),
    "You should respond a json object in a json fenced code block as follows:\n```json\n{A list of numbers.}\n```\n",
    # The seed shows <class 'list'>: that is type(res.parsed); type(res) is the response class.
    lambda out: (
        out.startswith("<class 'turnkit.outputs._response.ModelResponse'>\nModelResponse(")
        and "parsed=[1, 2, 3, 4, 5]" in out
    ),
    "",
]


@pytest.fixture
def agentscope_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    package = types.ModuleType("agentscope")
    package.__path__ = []
    monkeypatch.setitem(sys.modules, "agentscope", package)
    monkeypatch.setitem(sys.modules, "agentscope.parsers", turnkit.outputs)
    monkeypatch.setitem(sys.modules, "agentscope.models", turnkit.outputs)


@pytest.mark.usefixtures("agentscope_alias")
def test_seed_blocks_run_verbatim() -> None:
    namespace: dict[str, object] = {
        "__name__": "seed",
        "ModelResponse": turnkit.outputs.ModelResponse,
        "MarkdownJsonDictParser": turnkit.outputs.MarkdownJsonDictParser,
    }
    assert len(SEED_BLOCKS) == len(EXPECTED_OUTPUT)
    for index, (block, expected) in enumerate(zip(SEED_BLOCKS, EXPECTED_OUTPUT, strict=True)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(textwrap.dedent(block), f"seed[{index}]", "exec"), namespace)  # noqa: S102
        if callable(expected):
            assert expected(out.getvalue()), (index, out.getvalue())
        else:
            assert out.getvalue() == expected, index
