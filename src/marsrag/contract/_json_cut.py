"""Where a malformed JSON text stopped, and which field a cut there leaves unfinished.

Only the repair path runs this (exact JSON is complete by definition): one pass that tracks string state
(``"`` and ``'`` quotes, backslash escapes, ``//`` and ``/* */`` comments) and bracket nesting, jumping
from one structural character to the next with a regex rather than stepping through every character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from marsrag.contract._json_forms import field_key

# Outside strings only these characters change the state; quotes and colons in prose between documents
# (depth 0) mean nothing.
_STRUCTURAL: Final = re.compile(r"""["'{}\[\]:,]|//|/\*""")
_STRING_END: Final = {'"': re.compile(r'["\\]'), "'": re.compile(r"['\\]")}


@dataclass(frozen=True, slots=True)
class JsonEnd:
    """How a JSON text ends.

    ``open_key`` is the key (as written) of the value string still open at the end, None when the text
    ends outside a string or inside a key; ``closed`` says the last document's brackets all closed;
    ``last_field`` is the last contract field used as a key in that document, at any depth.
    """

    open_key: str | None
    closed: bool
    last_field: str | None


class _Frame:
    __slots__ = ("is_object", "key", "wants_key")

    def __init__(self, is_object: bool) -> None:
        self.is_object = is_object
        self.key: str | None = None
        self.wants_key = is_object


def scan_end(text: str) -> JsonEnd:
    """Scan ``text`` (from its first bracket) and say where it ends; linear in its length."""
    stack: list[_Frame] = []
    last_field: str | None = None
    pos = segment = 0
    while (match := _STRUCTURAL.search(text, pos)) is not None:
        token, pos = match.group(), match.end()
        if not stack:
            if token in ("{", "["):
                stack.append(_Frame(token == "{"))
                last_field = None  # a new document: only the last one is what the answer ends in
            segment = pos
            continue
        top = stack[-1]
        if token in ('"', "'"):
            end = _string_end(text, pos, token)
            if end < 0:
                if top.wants_key:
                    return JsonEnd(None, False, last_field)
                return JsonEnd(top.key if top.is_object else None, False, last_field)
            if top.wants_key:
                top.key = text[pos : end - 1]
            pos = end
        elif token == ":":
            if top.is_object and top.wants_key:
                if top.key is None:
                    top.key = text[segment : match.start()].strip()  # a bare key, as json_repair reads it
                top.wants_key = False
                last_field = field_key(top.key) or last_field
        elif token == ",":
            if top.is_object:
                top.key, top.wants_key = None, True
        elif token in ("{", "["):
            stack.append(_Frame(token == "{"))
        elif token in ("}", "]"):
            stack.pop()
        else:
            close = "\n" if token == "//" else "*/"
            found = text.find(close, pos)
            pos = len(text) if found < 0 else found + len(close)
        segment = pos
    return JsonEnd(None, not stack, last_field)


def _string_end(text: str, start: int, quote: str) -> int:
    """The index just past the quote closing the string that starts at ``start``, or -1 when none does."""
    pattern = _STRING_END[quote]
    pos = start
    while (match := pattern.search(text, pos)) is not None:
        if match.group() == quote:
            return match.end()
        pos = match.end() + 1  # a backslash escapes the next character, whatever it is
    return -1


def cut_field(span: str, cut: bool) -> str | None:
    """The contract field a cut left unfinished in the malformed JSON ``span``, or None.

    One rule: the value string still open at the end is unfinished, whatever the provider said. When the
    provider reported a cut (``cut``) and the document never closed, the last field written is unfinished
    too, since the model was still writing it (or an unknown key after it). A closed document was not cut.
    """
    return unfinished_field(scan_end(span), cut)


def unfinished_field(end: JsonEnd, cut: bool) -> str | None:
    """:func:`cut_field` for a text already scanned."""
    field = field_key(end.open_key) if end.open_key is not None else None
    if field is None and cut and not end.closed:
        field = end.last_field
    return field
