"""The model reply a parser reads and annotates: text in, ``parsed`` and the repairs it took out."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from turnkit._args import check_fields, expect

__all__ = ["ModelResponse", "Repair"]


class Repair(StrEnum):
    """A fix applied to a malformed reply before it parsed; listed in ``ModelResponse.repairs_applied``.

    Members are strings, so ``"trailing_comma" in response.repairs_applied`` works.
    """

    NO_FENCE = "no_fence"
    """The reply had no code fence; the value was found in the bare text."""
    UNTAGGED_FENCE = "untagged_fence"
    """The fence named another language (or none), e.g. a bare ``` instead of ```json."""
    UNCLOSED_FENCE = "unclosed_fence"
    """The code fence was never closed; the content runs to the end of the reply."""
    SURROUNDING_TEXT = "surrounding_text"
    """Prose before or after the JSON value was dropped."""
    TRAILING_COMMA = "trailing_comma"
    """Commas before ``}`` or ``]`` were removed."""
    SINGLE_QUOTES = "single_quotes"
    """Single-quoted strings were rewritten as JSON strings."""
    PYTHON_LITERALS = "python_literals"
    """``True`` / ``False`` / ``None`` were read as ``true`` / ``false`` / ``null``."""
    UNQUOTED_KEYS = "unquoted_keys"
    """Bare identifiers used as object keys were quoted."""
    CONTROL_CHARACTERS = "control_characters"
    """Raw newlines or tabs inside JSON strings were accepted."""
    CLOSED_BRACKETS = "closed_brackets"
    """The JSON stopped between values (a truncated reply); missing ``]`` / ``}`` were added."""
    UNCLOSED_TAG = "unclosed_tag"
    """A tag was opened but never closed; its content runs to the next known tag or the end."""
    TAG_CASE = "tag_case"
    """A tag was found only when ignoring upper/lower case."""


@dataclass(slots=True)
class ModelResponse:
    """A model reply: ``text`` as written, ``parsed`` once a parser has read it.

    Parsers set ``parsed`` and ``repairs_applied`` in place and return the same object, as
    AgentScope's parsers do; ``text`` is never rewritten. ``validated`` holds the Pydantic model
    instance when the parser was given a Pydantic ``schema``.
    """

    text: str = ""
    parsed: Any = None
    raw: Any = None
    repairs_applied: list[Repair] = field(default_factory=list)
    validated: Any = None

    def __post_init__(self) -> None:
        check_fields(self)


def as_response(response: ModelResponse | str) -> ModelResponse:
    """Accept a plain string wherever a ``ModelResponse`` is expected."""
    if isinstance(response, ModelResponse):
        return response
    if isinstance(response, str):
        return ModelResponse(text=response)
    expect(response, (ModelResponse, str), name="response", func="parse")
    return response  # not reached: expect raised
