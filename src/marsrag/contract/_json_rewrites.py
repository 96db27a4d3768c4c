"""Broken JSON a model wrote the same wrong way every time: rewritten exactly, before any repair.

Each rewrite undoes one habit and runs only when its trigger is in the text (valid JSON never reaches here):

- JSON whose quotes are all escaped, with no outer string (``{\\"hook\\": \\"...\\"}``): one layer of string
  escaping is removed;
- escapes JSON does not define inside values (Markdown's ``\\_``, ``\\*``, ``\\[``; a stray ``\\L``): the plain
  character, as JSON5 reads them;
- curly quotes as delimiters (``{“hook”: “...”}``): the structural ones made straight;
- a document opened with doubled braces (``{{"hook": ...}}``, a prompt template's escaping copied back): one
  brace at each end;
- JSON escaped for HTML (``{&quot;hook&quot;: ...}``, a page's source copied back): the entities decoded;
- full-width delimiters (``"hook"："..."，"grip"``, CJK punctuation around the JSON's structure): ASCII ones;
- string literals joined with ``+`` (``"The p99 " + "tripled"``, JavaScript or Python concatenation): one string;
- values quoted with backticks (``"hook": `...```): double quotes;
- an apostrophe inside a word of a single-quoted value (``'the team's cache'``): escaped, so the quote that
  delimits the value is the only one.
"""

from __future__ import annotations

import html
import json
import re
from typing import Final

from marsrag.contract._curly_quotes import has_curly_quotes, straighten
from marsrag.contract._escapes import has_stray_escape, unescape_layer, unescape_stray

# A document opening with an escaped quote: the whole object is one layer too deep. (An escaped object inside
# a string value, such as a tool call's "arguments", is already one layer down and is decoded with it.)
_ESCAPED_OBJECT: Final = re.compile(r"\s*\{\s*\\+\"")
_DOUBLED_OPEN: Final = re.compile(r"\{\{\s*[\"'“]")
_ENTITY_QUOTE: Final = re.compile(r"&(?:quot|#34|#x22);")
# A full-width colon or comma where JSON has its delimiters: after a string's closing quote.
_FULL_WIDTH: Final = re.compile(r'"(\s*)([：，])(\s*)(?=["{\[\d-]|true|false|null)')
_CONCATENATION: Final = re.compile(r'"\s*\+\s*"')
_BACKTICK_VALUE: Final = re.compile(r"([:,\[]\s*)`([^`\n]*)`(?=\s*[,}\]])")
_SINGLE_QUOTED_OBJECT: Final = re.compile(r"\s*\{\s*'")
_INNER_APOSTROPHE: Final = re.compile(r"(?<=[^\W\d_])'(?=[^\W\d_])")


def may_rewrite(span: str) -> bool:
    """Whether a rewrite may apply to ``span`` (its trigger is there); when not, :func:`rewrite` returns ``span``."""
    return (
        ("\\" in span and (_ESCAPED_OBJECT.match(span) is not None or has_stray_escape(span)))
        or has_curly_quotes(span)
        or span.lstrip().startswith("{{")
        or ("&" in span and _ENTITY_QUOTE.search(span) is not None)
        or ("：" in span or "，" in span)
        or ("+" in span and _CONCATENATION.search(span) is not None)
        or ("`" in span and _BACKTICK_VALUE.search(span) is not None)
        or _SINGLE_QUOTED_OBJECT.match(span) is not None
    )


def rewrite(span: str) -> str:
    """``span`` with every applicable rewrite applied, in order (the same text when none applies)."""
    text = span
    if "\\" in text:
        if _ESCAPED_OBJECT.match(text):
            text = unescape_layer(text)
        if has_stray_escape(text):
            text = unescape_stray(text)
    if has_curly_quotes(text):
        text = straighten(text)
    if text.lstrip().startswith("{{"):
        text = _single_braces(text)
    if "&" in text and _ENTITY_QUOTE.search(text):
        text = html.unescape(text)
    if "：" in text or "，" in text:
        text = _FULL_WIDTH.sub(lambda m: f'"{m[1]}{":" if m[2] == "：" else ","}{m[3]}', text)
    if "+" in text:
        text = _CONCATENATION.sub(lambda m: _joined(text, m), text)
    if "`" in text:
        text = _BACKTICK_VALUE.sub(lambda m: m[1] + json.dumps(m[2]), text)
    if _SINGLE_QUOTED_OBJECT.match(text):
        text = _INNER_APOSTROPHE.sub("\\\\'", text)
    return text


def _joined(text: str, match: re.Match[str]) -> str:
    """Nothing where ``"a" + "b"`` joins two strings; the text as it was where the first quote opens a string
    (``"hook": "+"``: a value that is a plus sign)."""
    before = text[max(0, match.start() - 8) : match.start()].rstrip()
    return match.group() if before[-1:] in (":", ",", "[", "{", "") else ""


def _single_braces(text: str) -> str:
    opening = _DOUBLED_OPEN.search(text)
    closing = text.rfind("}}")
    if opening is None or closing < opening.end():
        return text
    return text[: opening.start()] + text[opening.start() + 1 : closing] + text[closing + 1 :]
