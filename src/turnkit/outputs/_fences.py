"""Finding Markdown fenced code blocks in a reply, in linear time, tolerating the usual slips.

The fence for the requested language wins (its name compared case-insensitively); otherwise
the first fence of any language is used and the caller records ``untagged_fence``. A closing
fence on its own line is preferred to a stray triple backtick inside the block; a block never
closed runs to the end of the reply (``unclosed_fence``).

A fence counts only where it is one: never inside a double-quoted string. Strings are read as JSON
reads them (``\\`` escapes, and they end at a line break, which a JSON string cannot hold raw), so a
fence at the start of a line always counts, and ``{"answer": "Use ```json{}``` here"}`` has no fence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Fence", "ends_in_string", "find_fence", "find_outside_strings"]

_ANY_OPEN = "```"
_LINE_CLOSE = re.compile(r"\n[ \t]*```")
_FENCE = "```"


@dataclass(frozen=True, slots=True)
class Fence:
    """Where one fenced block's content lies in the reply."""

    opened_at: int
    start: int
    end: int
    closed: bool
    language_matched: bool


def _skipping_strings(needle: str, flags: int = 0) -> re.Pattern[str]:
    """Matches from the start of the text (or ``pos``) up to the first ``needle`` (a regex whose matches begin
    with the literal ``first``) outside double-quoted strings; group 1 is that needle.

    One possessive loop, so the engine never backtracks: linear time on any input. A string runs to its
    closing quote or to the end of its line (a JSON string cannot hold a raw line break); a backslash
    outside strings escapes the next character, as inside them.
    """
    first = re.escape(needle_first(needle))
    return re.compile(
        r'(?:[^"\\'
        + first
        + r"\n]++|\n|\\[\s\S]?"
        + r'|"(?:[^"\\\n]++|\\[^\n]?)*+"?'
        + r"|(?!"
        + needle
        + ")"
        + first
        + ")*+("
        + needle
        + ")",
        flags,
    )


def needle_first(needle: str) -> str:
    """The literal first character of a needle regex built here (an escaped literal or a fence)."""
    return needle[1] if needle.startswith("\\") else needle[0]


_PATTERNS: dict[tuple[str, int], re.Pattern[str]] = {}


def _pattern(needle: str, flags: int = 0) -> re.Pattern[str]:
    pattern = _PATTERNS.get((needle, flags))
    if pattern is None:
        if len(_PATTERNS) > 256:
            _PATTERNS.clear()
        pattern = _PATTERNS[needle, flags] = _skipping_strings(needle, flags)
    return pattern


def _outside_strings(pattern: re.Pattern[str], text: str, start: int = 0) -> tuple[int, int] | None:
    """The span of the first needle of ``pattern`` at or after ``start`` that is not inside a string."""
    match = pattern.match(text, start)
    return match.span(1) if match is not None else None


def _open_pattern(language: str) -> re.Pattern[str]:
    return _pattern(r"```[ \t]*" + re.escape(language) + r"(?![A-Za-z0-9_+#-])", re.IGNORECASE)


def find_outside_strings(text: str, needle: str, start: int = 0, *, quoted: bool = False) -> int:
    """``text.find(needle, start)``, skipping occurrences inside double-quoted strings; -1 if none.

    ``quoted``: ``text[start:]`` begins inside a string (a stream carrying its state across pieces).
    """
    if needle not in text:
        return -1
    if quoted:
        start = _STRING_REST(text, start).end()  # type: ignore[union-attr]
    span = _outside_strings(_pattern(re.escape(needle)), text, start)
    return span[0] if span is not None else -1


def ends_in_string(text: str, quoted: bool = False) -> bool:
    """Whether a double-quoted string is open at the end of ``text`` (which begins inside one if ``quoted``)."""
    line = text.rfind("\n")
    if line >= 0:
        text, quoted = text[line + 1 :], False
    return quoted != (_QUOTE_OR_ESCAPE(text).count('"') % 2 == 1)


_STRING_REST = re.compile(r'(?:[^"\\\n]++|\\[^\n]?)*+"?').match
_QUOTE_OR_ESCAPE = re.compile(r'\\[\s\S]|"').findall


def find_fence(text: str, language: str | None) -> Fence | None:
    """The first fenced block for ``language`` (or, failing that, of any language) in ``text``."""
    if _ANY_OPEN not in text:
        return None
    match = _outside_strings(_open_pattern(language), text) if language else None
    matched = match is not None
    if match is None:
        match = _outside_strings(_pattern(_ANY_OPEN), text) if _ANY_OPEN in text else None
        if match is None:
            return None
        # Skip the info string ("```py", "```text") of an untagged or other-language fence.
        info_end = text.find("\n", match[1])
        info = text[match[1] : info_end if info_end >= 0 else len(text)]
        after = match[1] + len(info) if _looks_like_info(info) else match[1]
    else:
        after = match[1]
    newline = text.find("\n", after)
    rest = text[after : newline if newline >= 0 else len(text)]
    if not rest.strip():
        start = newline + 1 if newline >= 0 else len(text)
    else:
        start = after
    close = _LINE_CLOSE.search(text, max(start - 1, 0))
    if close is not None and close.start() >= start - 1:
        end = close.start() if close.start() >= start else start
        return Fence(match[0], start, end, True, matched)
    inline = find_outside_strings(text, _FENCE, start)
    if inline >= 0:
        return Fence(match[0], start, inline, True, matched)
    return Fence(match[0], start, len(text), False, matched)


def _looks_like_info(info: str) -> bool:
    stripped = info.strip()
    return bool(stripped) and " " not in stripped and not stripped.startswith(("{", "[", '"'))
