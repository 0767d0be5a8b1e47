"""A reference recognizer of JSON prefixes: how much of a text some continuation can still make valid JSON.

Deliberately plain (one character at a time, a stack of open containers, RFC 8259's grammar) so it is
easy to check by eye; :meth:`_Recognizer.completion` builds a completion of any viable prefix, which
the tests give to ``json.loads`` to check the recognizer itself.
"""

from __future__ import annotations

_WS = " \t\n\r"
_HEX = "0123456789abcdefABCDEF"
_ESC = '"\\/bfnrt'
# number sub-states: complete ones may end at any delimiter
_NUM_NEXT = {
    "start": {"-": "minus", "0": "zero", **{d: "int" for d in "123456789"}},
    "minus": {"0": "zero", **{d: "int" for d in "123456789"}},
    "zero": {".": "dot", "e": "e", "E": "e"},
    "int": {**{d: "int" for d in "0123456789"}, ".": "dot", "e": "e", "E": "e"},
    "dot": {d: "frac" for d in "0123456789"},
    "frac": {**{d: "frac" for d in "0123456789"}, "e": "e", "E": "e"},
    "e": {"+": "esign", "-": "esign", **{d: "exp" for d in "0123456789"}},
    "esign": {d: "exp" for d in "0123456789"},
    "exp": {d: "exp" for d in "0123456789"},
}
_NUM_DONE = {"zero", "int", "frac", "exp"}
_NUM_FINISH = {"minus": "0", "dot": "0", "e": "0", "esign": "0"}


class _Recognizer:
    """JSON prefix recognizer: ``push(c)`` returns False at the first character no continuation accepts."""

    def __init__(self) -> None:
        self.stack: list[str] = []  # "{" or "["
        self.state = "value"  # value | value_or_close | key | key_or_close | colon | after | done
        self.token: str | None = None  # None, "string", "key", "number", "literal"
        self.sub = ""  # number sub-state / rest of a literal / escape progress

    def push(self, c: str) -> bool:
        if self.token in ("string", "key"):
            return self._string(c)
        if self.token == "literal":
            if c != self.sub[0]:
                return False
            self.sub = self.sub[1:]
            if not self.sub:
                self.token = None
                self._value_done()
            return True
        if self.token == "number":
            nxt = _NUM_NEXT[self.sub].get(c)
            if nxt is not None:
                self.sub = nxt
                return True
            if self.sub not in _NUM_DONE:
                return False
            self.token = None
            self._value_done()
            return self.push(c)
        if c in _WS:
            return True
        state = self.state
        if state in ("value", "value_or_close"):
            if c == "]" and state == "value_or_close":
                self.stack.pop()
                self._value_done()
            elif c == '"':
                self.token, self.sub = "string", ""
            elif c in "{[":
                self.stack.append(c)
                self.state = "key_or_close" if c == "{" else "value_or_close"
            elif c in "tfn":
                self.token, self.sub = "literal", {"t": "rue", "f": "alse", "n": "ull"}[c]
            elif c in _NUM_NEXT["start"]:
                self.token, self.sub = "number", _NUM_NEXT["start"][c]
            else:
                return False
            return True
        if state in ("key", "key_or_close"):
            if c == '"':
                self.token, self.sub = "key", ""
            elif c == "}" and state == "key_or_close":
                self.stack.pop()
                self._value_done()
            else:
                return False
            return True
        if state == "colon":
            if c != ":":
                return False
            self.state = "value"
            return True
        if state == "after":
            closer = "}" if self.stack[-1] == "{" else "]"
            if c == ",":
                self.state = "key" if self.stack[-1] == "{" else "value"
            elif c == closer:
                self.stack.pop()
                self._value_done()
            else:
                return False
            return True
        return False  # done: only whitespace may follow

    def _string(self, c: str) -> bool:
        sub = self.sub
        if sub == "\\":
            if c == "u":
                self.sub = "u"
            elif c in _ESC:
                self.sub = ""
            else:
                return False
        elif sub.startswith("u"):
            if c not in _HEX:
                return False
            self.sub = "" if len(sub) == 4 else sub + c
        elif c == "\\":
            self.sub = "\\"
        elif c == '"':
            if self.token == "key":
                self.token = None
                self.state = "colon"
            else:
                self.token = None
                self._value_done()
        elif ord(c) < 0x20:
            return False
        return True

    def _value_done(self) -> None:
        self.state = "after" if self.stack else "done"

    def completion(self) -> str:
        """Text that makes the prefix read so far a complete JSON document."""
        out = ""
        if self.token in ("string", "key"):
            if self.sub == "\\":
                out += "n"
            elif self.sub.startswith("u"):
                out += "0" * (5 - len(self.sub))
            out += '"'
            state = "colon" if self.token == "key" else "after"
        elif self.token == "literal":
            out += self.sub
            state = "after"
        elif self.token == "number":
            out += _NUM_FINISH.get(self.sub, "")
            state = "after"
        else:
            state = self.state
        if state in ("value", "value_or_close"):
            out += "0"
        elif state in ("key", "key_or_close"):
            out += '"k":0'
        elif state == "colon":
            out += ":0"
        for opener in reversed(self.stack):
            out += "}" if opener == "{" else "]"
        return out


def viable_length(text: str) -> int:
    """The length of the longest prefix of ``text`` that some continuation makes valid JSON."""
    recognizer = _Recognizer()
    for i, c in enumerate(text):
        if not recognizer.push(c):
            return i
    return len(text)


def completion_of(prefix: str) -> str:
    recognizer = _Recognizer()
    for c in prefix:
        assert recognizer.push(c)
    return recognizer.completion()
