"""Broken JSON a model wrote the same wrong way every time: rewritten exactly, before any repair.

Each rewrite undoes one habit and runs only when its trigger is in the text (valid JSON never reaches here):

- JSON whose quotes are all escaped, with no outer string (``{\\"hook\\": \\"...\\"}``): one layer of string
  escaping is removed;
- Markdown escapes inside values (``\\_``, ``\\*``, ``\\[``, ``\\#``), invalid in JSON: the plain character;
- curly quotes as delimiters (``{“hook”: “...”}``): the structural ones made straight;
- a document opened with doubled braces (``{{"hook": ...}}``, a prompt template's escaping copied back): one
  brace at each end.
"""

from __future__ import annotations

import re
from typing import Final

from marsrag.contract._curly_quotes import has_curly_quotes, straighten
from marsrag.contract._escapes import has_markdown_escape, unescape_layer, unescape_markdown

# A document opening with an escaped quote: the whole object is one layer too deep. (An escaped object inside
# a string value, such as a tool call's "arguments", is already one layer down and is decoded with it.)
_ESCAPED_OBJECT: Final = re.compile(r"\s*\{\s*\\+\"")
_DOUBLED_OPEN: Final = re.compile(r"\{\{\s*[\"'“]")


def may_rewrite(span: str) -> bool:
    """Whether a rewrite may apply to ``span`` (its trigger is there); when not, :func:`rewrite` returns ``span``."""
    return (
        ("\\" in span and (_ESCAPED_OBJECT.match(span) is not None or has_markdown_escape(span)))
        or has_curly_quotes(span)
        or span.lstrip().startswith("{{")
    )


def rewrite(span: str) -> str:
    """``span`` with every applicable rewrite applied, in order (the same text when none applies)."""
    text = span
    if "\\" in text:
        if _ESCAPED_OBJECT.match(text):
            text = unescape_layer(text)
        if has_markdown_escape(text):
            text = unescape_markdown(text)
    if has_curly_quotes(text):
        text = straighten(text)
    if text.lstrip().startswith("{{"):
        text = _single_braces(text)
    return text


def _single_braces(text: str) -> str:
    opening = _DOUBLED_OPEN.search(text)
    closing = text.rfind("}}")
    if opening is None or closing < opening.end():
        return text
    return text[: opening.start()] + text[opening.start() + 1 : closing] + text[closing + 1 :]
