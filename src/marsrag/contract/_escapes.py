"""Backslashes a model got wrong: Markdown escapes inside JSON, and one layer of JSON string escaping.

Both rewrites read backslashes left to right in pairs, so an escaped backslash (``\\\\``) is never taken for
the start of another escape.
"""

from __future__ import annotations

import re
from typing import Final

# Markdown lets a backslash escape any ASCII punctuation; these are the ones JSON does not allow (a quote,
# a backslash and a slash are JSON escapes already; "\'" is Python's, which the literal parser reads).
_MARKDOWN_PUNCTUATION: Final = frozenset("!#$%&()*+,-.:;<=>?@[]^_`{|}~")
_MARKDOWN_ESCAPE: Final = re.compile(r"\\[!#$%&()*+,\-.:;<=>?@\[\]^_`{|}~]")
_BACKSLASH_PAIR: Final = re.compile(r"\\(.)", re.DOTALL)
_JSON_ESCAPE: Final = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_SIMPLE_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}
_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")


def has_markdown_escape(text: str) -> bool:
    """Whether ``text`` holds a backslash before punctuation that JSON cannot escape (``\\_``, ``\\*``...)."""
    return _MARKDOWN_ESCAPE.search(text) is not None


def unescape_markdown(text: str) -> str:
    """``text`` with each Markdown escape (``\\_``) replaced by its plain character; JSON escapes kept."""

    def plain(match: re.Match[str]) -> str:
        char = match[1]
        return char if char in _MARKDOWN_PUNCTUATION else match[0]

    return _BACKSLASH_PAIR.sub(plain, text)


def unescape_layer(text: str) -> str:
    """``text`` with one layer of JSON string escaping removed (``\\"`` to ``"``, ``\\n`` to a line break).

    Escapes JSON does not define are kept as written, so a Markdown escape survives for the next step.
    """

    def decoded(match: re.Match[str]) -> str:
        escape = match[1]
        if len(escape) == 5:
            return chr(int(escape[1:], 16))
        return _SIMPLE_ESCAPES.get(escape, match[0])

    result = _JSON_ESCAPE.sub(decoded, text)
    if _SURROGATE.search(result):
        # "\ud83d\ude00" decodes to two surrogates: join each pair into its character, replace lone ones.
        result = result.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return result
