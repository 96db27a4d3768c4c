"""Curly quotes used as JSON delimiters: the structural ones made straight, the ones in prose kept.

Text passed through a word processor or written by a model that "typesets" its JSON has ``{“hook”: “...”}``,
or one ``”`` where a straight quote closed a value. One scan decides each quote by its place in the JSON
grammar: outside a string any quote opens one; inside a string a quote closes it only when what follows can
follow a string (a colon, a closing bracket, the end, or a comma and then the next quoted key or value).
Every other quote is prose: a curly one stays as written, a straight one inside a curly-opened string is
escaped so the value keeps it.
"""

from __future__ import annotations

import re
from typing import Final

_OPENING: Final = frozenset('"“”„‟')
_QUOTE_OR_ESCAPE: Final = re.compile(r'\\.|["“”„‟]', re.DOTALL)
_AFTER_CLOSING: Final = re.compile(r'\s*(?:[:}\]]|,\s*["“”„‟{\[]|,\s*[}\]]|$)')


def has_curly_quotes(text: str) -> bool:
    """Whether ``text`` holds a curly double quote."""
    return "“" in text or "”" in text or "„" in text


def straighten(text: str) -> str:
    """JSON-looking ``text`` with its structural curly quotes made straight (see the module docstring)."""
    out: list[str] = []
    pos = 0
    opener: str | None = None  # the quote that opened the current string, None outside strings
    for match in _QUOTE_OR_ESCAPE.finditer(text):
        token = match.group()
        if token[0] == "\\":
            continue  # an escape inside a string (or stray outside one) is content
        start = match.start()
        if opener is None:
            if token in _OPENING:
                out.append(text[pos:start] + '"')
                pos, opener = match.end(), token
            continue
        if opener == '"' and token == '"':
            opener = None  # plain JSON: a straight quote closes a straight-opened string
            continue
        if _AFTER_CLOSING.match(text, match.end()):
            out.append(text[pos:start] + '"')
            pos, opener = match.end(), None
        elif token == '"':
            # Prose quote in a curly-opened string: escape it so it stays in the value.
            out.append(text[pos:start] + '\\"')
            pos = match.end()
    out.append(text[pos:])
    return "".join(out)
