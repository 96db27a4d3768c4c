"""Backslashes a model got wrong: escapes JSON does not define, and one layer of JSON string escaping.

Both rewrites read backslashes left to right in pairs, so an escaped backslash (``\\\\``) is never taken for
the start of another escape.
"""

from __future__ import annotations

import re
from typing import Final

# Escapes JSON does not define: Markdown's of ASCII punctuation (a quote, a backslash and a slash are JSON escapes
# already; "\'" is Python's, which the literal parser reads), and a backslash before a letter JSON gives no meaning
# ("\Loop"). JSON5 and JavaScript read each as the character itself, and so do we (JSON5's own "\v" and "\xHH"
# are left to the repair).
_STRAY: Final = frozenset("!#$%&()*+,-.:;<=>?@[]^_`{|}~acdeghijklmopqswyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_STRAY_ESCAPE: Final = re.compile(r"\\[!#$%&()*+,\-.:;<=>?@\[\]^_`{|}~acdeghijklmopqswyzA-Z]")
_BACKSLASH_PAIR: Final = re.compile(r"\\(.)", re.DOTALL)
_JSON_ESCAPE: Final = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_SIMPLE_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}
_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")


def has_stray_escape(text: str) -> bool:
    """Whether ``text`` holds an escape JSON does not define (``\\_``, ``\\*``, ``\\L``...)."""
    return _STRAY_ESCAPE.search(text) is not None


def unescape_stray(text: str) -> str:
    """``text`` with each escape JSON does not define (``\\_``, ``\\L``) replaced by its character; JSON's kept."""

    def plain(match: re.Match[str]) -> str:
        char = match[1]
        return char if char in _STRAY else match[0]

    return _BACKSLASH_PAIR.sub(plain, text)


def unescape_layer(text: str) -> str:
    """``text`` with one layer of JSON string escaping removed (``\\"`` to ``"``, ``\\n`` to a line break).

    Escapes JSON does not define are kept as written, so a stray escape survives for the next step.
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
