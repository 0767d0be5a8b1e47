"""``MarkdownCodeBlockParser``: ask for code in a fenced block, get the code back as a string."""

from __future__ import annotations

from turnkit._args import expect, fail_value
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.outputs._base import ParserBase
from turnkit.outputs._feedback import reply_error
from turnkit.outputs._fences import find_fence
from turnkit.outputs._response import ModelResponse, Repair, as_response
from turnkit.outputs._size import check_size

__all__ = ["MarkdownCodeBlockParser"]

_INSTRUCTION = (
    "You should generate {language_name} code in a {language_name} fenced code block as follows: \n"
    "```{language_name}\n{content_hint}\n```"
)


class MarkdownCodeBlockParser(ParserBase):
    """Asks for ``language_name`` code in a fenced block; ``parsed`` is the code between the fences.

    >>> parser = MarkdownCodeBlockParser("python", content_hint="your python code")
    >>> parser.parse("Here:\\n```python\\nprint('hi')\\n```").parsed
    "print('hi')"
    """

    def __init__(self, language_name: str, content_hint: str | None = None, *, limits: Limits | None = None) -> None:
        expect(language_name, str, name="language_name", func="MarkdownCodeBlockParser")
        if not language_name.strip() or "\n" in language_name:
            raise fail_value(
                f"must be a one-line name, got {language_name!r}", name="language_name", func="MarkdownCodeBlockParser"
            )
        expect(content_hint, str, name="content_hint", func="MarkdownCodeBlockParser", none=True)
        expect(limits, Limits, name="limits", func="MarkdownCodeBlockParser", none=True)
        self.language_name = language_name
        self.name = f"{language_name} block"
        self.tag_begin = f"```{language_name}"
        self.tag_end = "```"
        self.content_hint = f"${{your_{language_name}_code}}" if content_hint is None else content_hint
        self.limits = limits or DEFAULT_LIMITS
        self.format_instruction = _INSTRUCTION.format(
            language_name=language_name, content_hint=self.content_hint
        ).strip()

    def parse(self, response: ModelResponse | str) -> ModelResponse:
        """Set ``parsed`` to the code in the first ``language_name`` block (or the first block at all)."""
        response = as_response(response)
        text = response.text or ""
        check_size(text, self.limits)
        repairs: list[Repair] = []
        fence = find_fence(text, self.language_name)
        if fence is None:
            raise reply_error(
                "missing_code_block",
                f"no ```{self.language_name} fenced code block was found",
                text,
                position=0,
                hint=f"Put the {self.language_name} code between ```{self.language_name} and ``` lines.",
            )
        if not fence.language_matched:
            repairs.append(Repair.UNTAGGED_FENCE)
        if not fence.closed:
            repairs.append(Repair.UNCLOSED_FENCE)
        code = text[fence.start : fence.end]
        if not fence.closed:
            code = code.rstrip("\r\n")
        elif code.endswith("\r"):  # CRLF line endings: the closing fence's line break is "\r\n"
            code = code[:-1]
        response.parsed = code
        response.repairs_applied = repairs
        return response
