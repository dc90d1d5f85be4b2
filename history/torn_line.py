"""What a torn last line of a history may be: the start of a JSON object's UTF-8 encoding,
cut off by a crash mid-write (docs/history.md, "Files"). Anything else at the end of a
history (binary bytes, text that no JSON object starts with) is bad input, not a torn
write, so it must not be dropped as one.

A hand-written check of JSON's grammar up to where the bytes stop: no JSON library says
whether text could still become valid, only whether it is.
"""

from __future__ import annotations

import codecs
import re

_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERAL = re.compile(r"true|false|null")
_STRING_START = re.compile(
    r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*(?:\\(?:u[0-9a-fA-F]{0,3})?)?')
_NUMBER_START = re.compile(
    r"-|-?(?:0|[1-9][0-9]*)(?:\.[0-9]*|\.[0-9]+[eE][+-]?[0-9]*|[eE][+-]?[0-9]*)?")
_LITERAL_START = re.compile(r"t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?")

# What the scanner expects next.
_VALUE, _KEY_OR_CLOSE, _KEY, _COLON, _AFTER_VALUE, _VALUE_OR_CLOSE = range(6)


class NotTorn(Exception):
    """The bytes are no torn line; the message says where (bytes and characters counted
    from 1) and why."""


def check_torn(line: bytes) -> None:
    """Return when `line` (no newline in it) is a prefix of the UTF-8 encoding of a JSON
    object; raise `NotTorn` naming the first byte or character that rules it out."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(line, final=False)
    except UnicodeDecodeError as exc:
        raise NotTorn(f"byte {exc.start + 1} (0x{line[exc.start]:02x}) is not UTF-8 "
                      f"text") from None
    _scan(text)


def _scan(text: str) -> None:
    """Walk JSON's grammar over `text`; the end may fall anywhere, even inside a token."""
    expecting = _VALUE
    open_brackets: list[str] = []
    at = _past_space(text, 0)
    if at < len(text) and text[at] != "{":
        raise NotTorn(f"character {at + 1}: a history line starts with '{{', not {text[at]!r}")
    while at < len(text):
        char = text[at]
        if expecting in (_VALUE, _KEY_OR_CLOSE, _KEY, _VALUE_OR_CLOSE) and (
                end := _last_token(text, at, expecting)) is not None:
            at = end
        elif expecting in (_KEY_OR_CLOSE, _KEY) and (token := _STRING.match(text, at)):
            at, expecting = token.end(), _COLON
        elif expecting == _COLON and char == ":":
            at, expecting = at + 1, _VALUE
        elif expecting in (_VALUE, _VALUE_OR_CLOSE) and char in "{[":
            open_brackets.append("}" if char == "{" else "]")
            at, expecting = at + 1, _KEY_OR_CLOSE if char == "{" else _VALUE_OR_CLOSE
        elif expecting in (_VALUE, _VALUE_OR_CLOSE) and (
                token := _STRING.match(text, at) or _NUMBER.match(text, at)
                or _LITERAL.match(text, at)):
            at, expecting = token.end(), _AFTER_VALUE
        elif (expecting in (_AFTER_VALUE, _KEY_OR_CLOSE, _VALUE_OR_CLOSE) and open_brackets
              and char == open_brackets[-1]):
            open_brackets.pop()
            at, expecting = at + 1, _AFTER_VALUE
            if not open_brackets:
                break  # the object is whole: nothing may follow on its line
        elif expecting == _AFTER_VALUE and open_brackets and char == ",":
            at, expecting = at + 1, _KEY if open_brackets[-1] == "}" else _VALUE
        else:
            raise NotTorn(f"character {at + 1}: {char!r} cannot come here in a JSON object")
        at = _past_space(text, at)
    if at < len(text):
        raise NotTorn(f"character {at + 1}: {text[at]!r} follows a complete JSON object")


def _last_token(text: str, at: int, expecting: int) -> int | None:
    """The end of `text` when all that is left is the start of a token that may come
    here (a key's string; a value's string, number or literal), else None."""
    starts = [_STRING_START] if expecting in (_KEY_OR_CLOSE, _KEY) else [
        _STRING_START, _NUMBER_START, _LITERAL_START]
    if any(start.fullmatch(text, at) for start in starts):
        return len(text)
    return None


def _past_space(text: str, at: int) -> int:
    """Where the whitespace at `at` ends (a line holds no newline)."""
    while at < len(text) and text[at] in " \t\r":
        at += 1
    return at
