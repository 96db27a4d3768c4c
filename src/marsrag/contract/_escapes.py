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


# A string literal's escapes in any language's notation: code points as Perl (``\\x{2014}``), Ruby and Rust
# (``\\u{2014}``), JSON and Python (``\\u2014``), C (``\\x41``) and Haskell (``\\8212``, and ``\\&``, which is
# nothing) write them, and a backslash before any other character, which stands for that character.
_LITERAL_ESCAPE: Final = re.compile(
    r"\\(?:x\{(?P<perl>[0-9a-fA-F]{1,6})\}|u\{(?P<brace>[0-9a-fA-F]{1,6})\}|u(?P<u4>[0-9a-fA-F]{4})"
    r"|x(?P<x2>[0-9a-fA-F]{2})|(?P<decimal>[1-9][0-9]{1,6})|(?P<char>.))",
    re.DOTALL,
)
_LITERAL_SIMPLE: Final = {"n": "\n", "t": "\t", "r": "", "&": "", "0": ""}
#: Escapes Python's literals do not define: a literal holding one was written in another language.
FOREIGN_ESCAPE: Final = re.compile(r"\\(?:[89&]|[xu]\{)")


def unescape_literal(body: str) -> str:
    """A string literal's body (its quotes removed) with its escapes decoded, whatever language wrote it.

    Escapes of bytes (``\\xe2\\x80\\x94`` as C, Redis and Python's bytes write them, ``\\226\\128\\148`` as OCaml does)
    are the bytes of the string's encoding: a run of them that is UTF-8 is decoded as UTF-8, else byte by byte.
    """
    pieces: list[str] = []
    run = bytearray()
    position = 0
    for match in _LITERAL_ESCAPE.finditer(body):
        if match.start() != position or not _is_byte(match):
            pieces.append(_bytes_text(run))
            run.clear()
        pieces.append(body[position : match.start()])
        position = match.end()
        if _is_byte(match):
            run.append(int(match["x2"], 16) if match["x2"] else int(match["decimal"]))
        else:
            pieces.append(_decoded(match))
    pieces.append(_bytes_text(run))
    pieces.append(body[position:])
    return "".join(pieces)


def _is_byte(match: re.Match[str]) -> bool:
    """Whether an escape writes a byte: two hexadecimal digits, or a decimal of three digits up to 255."""
    decimal = match["decimal"]
    return match["x2"] is not None or (decimal is not None and len(decimal) == 3 and int(decimal) <= 0xFF)


def _bytes_text(run: bytearray) -> str:
    try:
        return run.decode("utf-8")
    except UnicodeDecodeError:
        return run.decode("latin-1")


def _decoded(match: re.Match[str]) -> str:
    digits = match["perl"] or match["brace"] or match["u4"]
    if digits is not None:
        code = int(digits, 16)
    elif match["decimal"]:
        code = int(match["decimal"])
    else:
        return _LITERAL_SIMPLE.get(match["char"], match["char"])
    return chr(code) if code < 0x110000 and not 0xD800 <= code < 0xE000 else match[0]
