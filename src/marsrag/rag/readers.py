"""Readers: the bytes of a Markdown, plain-text or HTML file as a list of headings and paragraphs.

Only UTF-8 text is read. A NUL byte marks a binary file (UTF-8 text never contains one), and anything that is
not valid UTF-8 is refused rather than guessed at: a wrong guess would index mojibake silently.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from marsrag.errors import InputError

__all__ = ["SUPPORTED_SUFFIXES", "Block", "NotTextError", "decode", "is_supported", "parse", "read_blocks"]


class NotTextError(InputError):
    """A file that cannot be read as text: binary, or not UTF-8."""


@dataclass(frozen=True)
class Block:
    """A heading (``level`` 1-6) or a paragraph (``level`` 0) of a document."""

    text: str
    level: int = 0


def decode(data: bytes) -> str:
    """The text of a file's bytes (UTF-8, an optional BOM dropped, line ends made ``\\n``).

    Raises:
        NotTextError: the bytes contain NUL (binary) or are not UTF-8; the message says which, and where.
    """
    nul = data.find(b"\x00")
    if nul >= 0:
        raise NotTextError(f"binary file (NUL byte at offset {nul})")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotTextError(f"not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


# Markdown


_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# Lines a setext underline must not turn into a heading: list items, quotes, tables.
_NOT_A_TITLE = re.compile(r"^ {0,3}([-+*>|]|\d+[.)])(\s|$)")


def parse_markdown(text: str) -> list[Block]:
    """Headings (ATX ``#`` and setext underlines) and paragraphs; fenced code stays one paragraph."""
    blocks: list[Block] = []
    paragraph: list[str] = []
    fence = ""

    def flush() -> None:
        body = "\n".join(paragraph).strip("\n")
        if body.strip():
            blocks.append(Block(body))
        paragraph.clear()

    for line in _strip_front_matter(text).splitlines():
        line = line.rstrip()
        if fence:
            paragraph.append(line)
            if line.lstrip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = ""
                flush()
            continue
        if opening := _FENCE.match(line):
            flush()
            fence = opening.group(1)
            paragraph.append(line)
        elif atx := _ATX.match(line):
            flush()
            if title := (atx.group(2) or "").strip():
                blocks.append(Block(title, len(atx.group(1))))
        elif _SETEXT.match(line) and len(paragraph) == 1 and not _NOT_A_TITLE.match(paragraph[0]):
            blocks.append(Block(paragraph.pop().strip(), 1 if line.strip()[0] == "=" else 2))
        elif _BREAK.match(line) or not line.strip():
            flush()
        else:
            paragraph.append(line)
    flush()
    return blocks


def _strip_front_matter(text: str) -> str:
    # YAML front matter is metadata, not prose; left in, its closing '---' would read as a setext underline.
    if not text.startswith("---\n"):
        return text
    end = re.search(r"^(---|\.\.\.)[ \t]*$", text[4:], re.MULTILINE)
    return text[4 + end.end() :] if end else text


# Plain text


def parse_plain(text: str) -> list[Block]:
    """Paragraphs separated by blank lines; plain text has no headings."""
    return [Block(part.strip("\n")) for part in re.split(r"\n[ \t]*\n", text) if part.strip()]


# HTML

_HEADINGS = {f"h{level}": level for level in range(1, 7)}
# Elements whose content is not prose; `title` is skipped too, the h1 usually repeats it.
_SKIPPED = {"script", "style", "noscript", "template", "title", "svg"}
_BLOCKS = {
    "p", "div", "section", "article", "header", "footer", "main", "nav", "aside", "ul", "ol", "dl", "dt", "dd",
    "table", "thead", "tbody", "tr", "blockquote", "figure", "figcaption", "form", "fieldset", "address", "hr",
    "details", "summary", "body", "html",
}  # fmt: skip


class _HtmlBlocks(HTMLParser):
    """Collects headings and paragraphs; whitespace collapses as a browser would, except inside ``pre``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self._lines: list[str] = [""]
        self._heading = 0
        self._skipping: list[str] = []
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self._skipping.append(tag)
        elif self._heading and tag not in _HEADINGS:
            self._lines[-1] += " "  # markup inside a heading (a link, a <br>) only separates words
        elif tag in _HEADINGS:
            self._flush()
            self._heading = _HEADINGS[tag]
        elif tag == "pre":
            self._flush()
            self._pre += 1
        elif tag == "li":
            self._flush()
            self._lines[-1] = "- "
        elif tag == "br":
            self._lines.append("")
        elif tag in ("td", "th"):
            self._lines[-1] += " "
        elif tag in _BLOCKS:
            self._flush()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/> and friends: a start without content; never push a skipped element that will not be closed.
        if tag not in _SKIPPED:
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            if tag in self._skipping:
                del self._skipping[len(self._skipping) - 1 - self._skipping[::-1].index(tag) :]
        elif tag in _HEADINGS and self._heading:
            self._end_heading()
        elif tag == "pre" and self._pre:
            if self._pre == 1:
                self._flush()
            self._pre -= 1
        elif (tag in _BLOCKS or tag == "li") and not self._heading:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        if self._pre:
            *head, tail = data.split("\n")
            self._lines[-1] += head[0] if head else tail
            if head:
                self._lines.extend([*head[1:], tail])
        else:
            self._lines[-1] += data

    def close(self) -> None:
        """Finish parsing and flush the last paragraph (or heading: HTML may leave it unclosed)."""
        super().close()
        if self._heading:
            self._end_heading()
        self._flush()

    def _end_heading(self) -> None:
        title = " ".join(" ".join(self._lines).split())
        if title:
            self.blocks.append(Block(title, self._heading))
        self._lines, self._heading = [""], 0

    def _flush(self) -> None:
        if self._pre:
            body = "\n".join(line.rstrip() for line in self._lines).strip("\n")
        else:
            body = "\n".join(collapsed for line in self._lines if (collapsed := " ".join(line.split())) != "-")
        if body.strip():
            self.blocks.append(Block(body.strip("\n")))
        self._lines = [""]


def parse_html(text: str) -> list[Block]:
    """Headings h1-h6 and the text of block elements; scripts, styles and the head are left out."""
    parser = _HtmlBlocks()
    parser.feed(text)
    parser.close()
    return parser.blocks


_PARSERS: dict[str, Callable[[str], list[Block]]] = {
    ".md": parse_markdown,
    ".markdown": parse_markdown,
    ".txt": parse_plain,
    ".text": parse_plain,
    ".html": parse_html,
    ".htm": parse_html,
}

#: The file name suffixes ingest reads (compared lower-cased); every other file is ignored.
SUPPORTED_SUFFIXES = frozenset(_PARSERS)


def is_supported(path: str | Path) -> bool:
    """Whether ingest reads files named like ``path``."""
    return Path(path).suffix.lower() in _PARSERS


def parse(text: str, suffix: str) -> list[Block]:
    """The blocks of a document's text, parsed as its suffix says (``.md``, ``.txt``, ``.html``...).

    Raises:
        ValueError: an unsupported suffix.
    """
    try:
        parser = _PARSERS[suffix.lower()]
    except KeyError:
        raise ValueError(f"unsupported file type {suffix!r}; expected one of {sorted(_PARSERS)}") from None
    return parser(text)


def read_blocks(path: str | Path) -> list[Block]:
    """Read and parse one file.

    Raises:
        NotTextError: the file is binary or not UTF-8.
        OSError: the file cannot be read.
        ValueError: an unsupported suffix.
    """
    path = Path(path)
    return parse(decode(path.read_bytes()), path.suffix)
