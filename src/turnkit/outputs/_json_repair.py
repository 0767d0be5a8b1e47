"""Lenient JSON loading for model replies: strict first, then a few named, bounded repairs.

The fast path is the C ``json`` decoder. When it fails, the error position says what went
wrong, and only the repair for that kind of mistake is applied, in one regular-expression pass
over the rest of the text; each kind is applied at most once per attempt, so the work stays a
small constant number of linear passes. Every repair taken is reported; nothing is fixed
silently. Prose around the value is skipped by trying a few candidate starts that never overlap
a previous attempt, which keeps hostile input linear too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from turnkit.errors import OutputParseError
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.outputs._feedback import reply_error
from turnkit.outputs._response import Repair

__all__ = ["load_json_reply"]

# A string token: possessive loops (no backtracking), and an unterminated string runs to the end of
# the text, so no quote is ever re-scanned from a later start: every pass stays linear.
_DQ = r'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)'
_SINGLE_QUOTED = re.compile(_DQ + r"|'([^'\\]*+(?:\\.[^'\\]*+)*+)('|\\?\Z)", re.DOTALL)
_TRAILING_COMMA = re.compile("(" + _DQ + r")|,(\s*[}\]])", re.DOTALL)
_PY_LITERAL = re.compile(_DQ + r"|\b(True|False|None)\b", re.DOTALL)
_BARE_KEY = re.compile(_DQ + r"|([{,]\s*)([A-Za-z_$][A-Za-z0-9_$]*)(\s*:)", re.DOTALL)
_STRINGS = re.compile(_DQ, re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_EMPTY_PAIR = re.compile(r"\[\]|\{\}")
_COLLAPSE_PASSES = 12
_UNESCAPED_DQ = re.compile(r'(?<!\\)"')
_LONG_NUMBER = re.compile(r"\d{1000,}")
_CANDIDATE_ANY = re.compile(r"[\[{]")
_CANDIDATE_OBJECT = re.compile(r"\{")
_VALUE_START = frozenset("{[\"'-0123456789")
_LITERALS = ("true", "false", "null", "True", "False", "None")
_PY_JSON = {"True": "true", "False": "false", "None": "null"}
_CLOSER = {"{": "}", "[": "]"}

MAX_CANDIDATES = 4
"""How many places a JSON value may start in prose before the reply is rejected."""


class _Failure(Exception):
    """One attempt failed: why, where (in the attempted text) and whether the text was rewritten."""

    def __init__(self, code: str, problem: str, position: int, text: str, rewritten: bool) -> None:
        super().__init__(problem)
        self.code = code
        self.problem = problem
        self.position = position
        self.text = text
        self.rewritten = rewritten


class _NonStandardConstant(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonStandardConstant(name)


_STRICT = json.JSONDecoder(parse_constant=_reject_constant)
_LAX = json.JSONDecoder(parse_constant=_reject_constant, strict=False)


def _requote(match: re.Match[str]) -> str:
    inner = match.group(1)
    if inner is None or match.group(2) != "'":  # a JSON string, or an unterminated quote: leave it
        return match.group(0)
    return '"' + _UNESCAPED_DQ.sub('\\\\"', inner.replace("\\'", "'")) + '"'


def _py_literal(match: re.Match[str]) -> str:
    word = match.group(1)
    return match.group(0) if word is None else _PY_JSON[word]


def _quote_key(match: re.Match[str]) -> str:
    if match.group(2) is None:
        return match.group(0)
    return f'{match.group(1)}"{match.group(2)}"{match.group(3)}'


def _open_brackets(text: str, max_depth: int) -> list[str]:
    brackets = _NOT_BRACKET.sub("", _STRINGS.sub("", text))
    # Matched pairs vanish in a few C-speed passes; only deep nesting is left for the loop below.
    for _ in range(_COLLAPSE_PASSES):
        collapsed = _EMPTY_PAIR.sub("", brackets)
        if len(collapsed) == len(brackets):
            break
        brackets = collapsed
    stack: list[str] = []
    for char in brackets:
        if char in "{[":
            stack.append(char)
            if len(stack) > max_depth:
                raise _Failure("too_deep", f"the JSON nests deeper than {max_depth} levels", len(text), text, False)
        elif stack:
            stack.pop()
    return stack


@dataclass(slots=True)
class _Attempt:
    text: str
    repairs: list[Repair]
    rewritten: bool = False
    closed_at: int = -1
    """Where closing brackets were appended (the original end of the text), or -1."""

    def rewrite(self, start: int, fix: Callable[[str], str], repair: Repair) -> bool:
        tail = self.text[start:]
        fixed = fix(tail)
        if fixed == tail:
            return False
        self.text = self.text[:start] + fixed
        self.repairs.append(repair)
        self.rewritten = True
        return True


def _repair_once(attempt: _Attempt, exc: json.JSONDecodeError, limits: Limits) -> bool:
    """Apply the one repair that the decoder's complaint calls for; False when none applies."""
    text, pos, msg = attempt.text, exc.pos, exc.msg
    done = attempt.repairs
    if msg.startswith("Unterminated string"):
        raise _Failure("truncated", "the response ends inside a JSON string", pos, text, attempt.rewritten)
    char = text[pos] if pos < len(text) else ""
    before = len(text[:pos].rstrip()) - 1
    # Rewriting passes call back into Python per token; keep them to replies of a sane size.
    small = len(text) <= limits.max_repair_chars
    if (
        char == "'"
        and small
        and Repair.SINGLE_QUOTES not in done
        and attempt.rewrite(pos, lambda tail: _SINGLE_QUOTED.sub(_requote, tail), Repair.SINGLE_QUOTES)
    ):
        return True
    comma = pos if char == "," else before
    if (
        Repair.TRAILING_COMMA not in done
        and comma >= 0
        and text[comma] == ","
        and ((char != "" and char in "}]") or "trailing comma" in msg)
        and attempt.rewrite(comma, lambda tail: _TRAILING_COMMA.sub(r"\1\2", tail), Repair.TRAILING_COMMA)
    ):
        return True
    if (
        Repair.PYTHON_LITERALS not in done
        and small
        and text.startswith(("True", "False", "None"), pos)
        and attempt.rewrite(pos, lambda tail: _PY_LITERAL.sub(_py_literal, tail), Repair.PYTHON_LITERALS)
    ):
        return True
    if (
        Repair.UNQUOTED_KEYS not in done
        and small
        and msg.startswith("Expecting property name")
        and (char.isalpha() or char in "_$")
        and before >= 0
        and attempt.rewrite(before, lambda tail: _BARE_KEY.sub(_quote_key, tail), Repair.UNQUOTED_KEYS)
    ):
        return True
    # Closing a container that was opened just before the cut ("[{", '{"a": [') would invent an
    # empty value the model never wrote; that stays "truncated".
    if Repair.CLOSED_BRACKETS not in done and not text[pos:].strip() and text.rstrip(" \t\r\n,")[-1:] not in "[{":
        stack = _open_brackets(text, limits.max_json_depth)
        if stack:
            body = text.rstrip()
            done.append(Repair.CLOSED_BRACKETS)
            if body.endswith(","):  # cut right after a comma: drop it now rather than in another pass
                body = body[:-1]
                if Repair.TRAILING_COMMA not in done:
                    done.append(Repair.TRAILING_COMMA)
            attempt.closed_at = len(body)
            attempt.text = body + "".join(_CLOSER[c] for c in reversed(stack))
            return True
    return False


def _decode_at_start(text: str, limits: Limits) -> tuple[Any, int, list[Repair], str]:
    """Decode the JSON value at the start of ``text`` (trailing text allowed), repairing as needed."""
    attempt = _Attempt(text, [])
    decoder = _STRICT
    while True:
        try:
            value, end = decoder.raw_decode(attempt.text)
            if Repair.CLOSED_BRACKETS in attempt.repairs and value in ({}, []):
                # A bare "{" or "[" closed into an empty container recovers nothing.
                problem = "the JSON ends before it is complete (the response looks cut off)"
                raise _Failure("truncated", problem, attempt.closed_at, attempt.text, attempt.rewritten)
            return value, end, attempt.repairs, attempt.text
        except RecursionError:
            raise _Failure("too_deep", "the JSON nests too deeply", 0, attempt.text, attempt.rewritten) from None
        except _NonStandardConstant as exc:
            where = attempt.text.find(str(exc))
            problem = f"{exc} is not a JSON value"
            raise _Failure("invalid_json", problem, max(where, 0), attempt.text, attempt.rewritten) from None
        except json.JSONDecodeError as exc:
            if decoder is _STRICT and exc.msg.startswith("Invalid control character"):
                decoder = _LAX
                attempt.repairs.append(Repair.CONTROL_CHARACTERS)
                continue
            if _repair_once(attempt, exc, limits):
                continue
            at_end = not attempt.text[exc.pos :].strip() or 0 <= attempt.closed_at <= exc.pos
            code = "truncated" if at_end else "invalid_json"
            problem = (
                "the JSON ends before it is complete (the response looks cut off)"
                if at_end
                else f"the JSON is invalid ({exc.msg})"
            )
            raise _Failure(code, problem, exc.pos, attempt.text, attempt.rewritten) from None
        except ValueError as exc:  # e.g. an integer with more digits than Python converts
            digits = _LONG_NUMBER.search(attempt.text)
            where = digits.start() if digits else 0
            problem = f"a JSON number is too long ({exc})" if digits else f"the JSON is invalid ({exc})"
            raise _Failure("invalid_json", problem[:200], where, attempt.text, attempt.rewritten) from None


_HINTS = {
    "invalid_json": "Write strict JSON: double-quoted keys and strings, no trailing commas, no comments.",
    "truncated": "Write the complete JSON value and close every string, array and object.",
    "too_deep": "Use a flatter structure.",
    "no_json": "",
}


def _raise(failure: _Failure, reply: str, offset: int, hint: str) -> OutputParseError:
    hint = _HINTS.get(failure.code, "") + (" " + hint if hint else "")
    retryable = failure.code != "too_deep"
    if failure.rewritten:
        problem = failure.problem + " (the quoted excerpt is after automatic repairs)"
        err = reply_error(
            failure.code, problem, failure.text, position=failure.position, hint=hint, retryable=retryable
        )
        err.position = None
        return err
    return reply_error(
        failure.code, failure.problem, reply, position=offset + failure.position, hint=hint, retryable=retryable
    )


def load_json_reply(
    region: str,
    *,
    reply: str,
    offset: int = 0,
    want_object: bool = False,
    limits: Limits | None = None,
    hint: str = "",
) -> tuple[Any, list[Repair]]:
    """Parse the JSON value in ``region`` (a slice of ``reply`` starting at ``offset``).

    Returns the value and the repairs applied; raises ``OutputParseError`` with positions in
    ``reply`` so the feedback quotes the model's own text.
    """
    limits = limits or DEFAULT_LIMITS
    stripped = region.lstrip()
    start = offset + len(region) - len(stripped)
    core = stripped.rstrip()
    if not core:
        raise reply_error("no_json", "the response contains no JSON value", reply, position=start, hint=hint)
    scalar_fallback: tuple[Any, list[Repair]] | None = None
    if core[0] in _VALUE_START or core.startswith(_LITERALS):
        try:
            value, end, repairs, final = _decode_at_start(core, limits)
        except _Failure as failure:
            if core[0] in "{[":
                raise _raise(failure, reply, start, hint) from None
        else:
            if not final[end:].strip():
                return value, repairs
            repairs.append(Repair.SURROUNDING_TEXT)
            if isinstance(value, dict | list):
                return value, repairs
            # "3 reasons: {...}" or "None of them...": a scalar followed by prose is more likely
            # prose; look for a bracketed value first and fall back to the scalar.
            scalar_fallback = (value, repairs)
    pattern = _CANDIDATE_OBJECT if want_object else _CANDIDATE_ANY
    search_from = 0
    last: tuple[_Failure, int] | None = None
    for _ in range(MAX_CANDIDATES):
        match = pattern.search(core, search_from)
        if match is None:
            break
        begin = match.start()
        try:
            value, _end, repairs, _final = _decode_at_start(core[begin:], limits)
        except _Failure as failure:
            if failure.code == "too_deep":
                raise _raise(failure, reply, start + begin, hint) from None
            last = (failure, begin)
            search_from = begin + max(1, failure.position if not failure.rewritten else 1)
            continue
        repairs.append(Repair.SURROUNDING_TEXT)
        return value, repairs
    if scalar_fallback is not None and not want_object:
        return scalar_fallback
    if last is not None:
        raise _raise(last[0], reply, start + last[1], hint) from None
    what = "JSON object" if want_object else "JSON value"
    raise reply_error("no_json", f"the response contains no {what}", reply, position=start, hint=hint)
