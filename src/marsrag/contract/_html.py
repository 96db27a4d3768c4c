"""Answers written in HTML (a list, headings and paragraphs, a definition list, a table) read as Markdown.

A model asked for a web page, or trained on them, answers ``<ul><li><strong>Hook:</strong> ...</li>``. The
markup is turned into the Markdown it stands for (items into bullets, headings into ``##``, bold into
``**``, cells into a table row, entities decoded), and the result is read by the same label grammar and
table reader as any other text. The contract's own ``<hook>...</hook>`` tags are left as they are.
"""

from __future__ import annotations

import html
import re
from typing import Final

from marsrag.contract._trie import trie_pattern

_BLOCK_TAGS: Final = ("li", "p", "div", "dt", "dd", "tr", "ul", "ol", "dl", "table", "thead", "tbody", "section")
_TAG: Final = re.compile(
    "<(?P<close>/?)(?P<name>"
    + trie_pattern([*_BLOCK_TAGS, "h1", "h2", "h3", "h4", "h5", "h6", "br", "strong", "b", "em", "i", "td", "th"])
    + r"|span|code|a|article|body|html)(?:\s[^<>]{0,200})?/?>",
    re.IGNORECASE,
)
_BLANK_LINES: Final = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")
_BLOCKQUOTE: Final = re.compile(r"<blockquote\b[^<>]*>(?P<inner>.*?)</blockquote\s*>", re.IGNORECASE | re.DOTALL)


def _quoted(match: re.Match[str]) -> str:
    inner = html_to_markdown(match["inner"])
    return "\n\n" + "\n".join("> " + line for line in inner.split("\n")) + "\n\n"


# An element marked as a placeholder (Confluence's <ac:placeholder>, a template's): its text stands in for content.
_PLACEHOLDER_ELEMENT: Final = re.compile(
    r"<(?P<tag>(?:[\w.-]+:)?[\w.-]*placeholder)\b[^<>]*>.*?</(?P=tag)\s*>", re.IGNORECASE | re.DOTALL
)
# A namespaced element's tags (Confluence's <ac:structured-macro>, <ri:page>): a platform's markup, not text.
_NAMESPACED_TAG: Final = re.compile(r"</?[A-Za-z][\w.-]*:[A-Za-z][\w.-]*(?:\s[^<>]*)?/?>")


def may_be_html(text: str) -> bool:
    """Whether ``text`` holds an HTML block or emphasis tag."""
    return "<" in text and _TAG.search(text) is not None


def html_to_markdown(text: str) -> str:
    """``text`` with its HTML tags turned into the Markdown they stand for, and entities decoded."""

    def markdown(match: re.Match[str]) -> str:
        name, closing = match["name"].lower(), bool(match["close"])
        if name in ("strong", "b"):
            return "**"
        if name == "li":
            return "\n" if closing else "\n- "
        if name[0] == "h" and name[1:].isdigit():
            return "\n" if closing else "\n## "
        if name in ("td", "th"):
            return " |" if closing else " "
        if name == "tr":
            return "" if closing else "\n|"
        if name == "br" or name in _BLOCK_TAGS:
            return "\n"
        return ""

    if "<blockquote" in text.lower():
        # A quotation is someone else's words: written as Markdown quotes it, its lines start with "> ".
        text = _BLOCKQUOTE.sub(_quoted, text)
    if "placeholder" in text.lower():
        text = _PLACEHOLDER_ELEMENT.sub("", text)  # a placeholder's text is a stand-in, no content
    if ":" in text:
        text = _NAMESPACED_TAG.sub("", text)
    converted = html.unescape(_TAG.sub(markdown, text))
    return _BLANK_LINES.sub("\n\n", converted).strip()
