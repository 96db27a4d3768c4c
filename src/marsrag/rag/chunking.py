"""Chunking: a document's blocks cut into passages small enough to retrieve and cite, by heading.

Each heading opens a section named by its heading path ("Runbook > Steps"). A section longer than
:data:`MAX_CHARS` is cut on paragraph boundaries (then lines, sentences, words) into balanced pieces. A chunk
never spans two heading paths: a short section is a chunk of its own, so its citation names its own heading
(a two-line "Blossom end rot" subsection is cited as "Tomato notes > Blossom end rot", not "Tomato notes").
The same blocks always give the same chunks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from marsrag.rag.readers import Block

__all__ = ["HEADING_SEPARATOR", "MAX_CHARS", "Chunk", "chunk_blocks"]

#: Longest chunk text, in characters (about 300 tokens: several fit in a task's prompt).
MAX_CHARS = 1200
#: Joins the titles of a heading path.
HEADING_SEPARATOR = " > "

HeadingPath = tuple[str, ...]


@dataclass(frozen=True)
class Chunk:
    """One passage of a document: its place in the document, its heading path and its text."""

    document: str
    position: int
    heading: str
    text: str

    @property
    def source(self) -> str:
        """How to cite the chunk: ``path#heading path`` (just the path before the first heading)."""
        return cite(self.document, self.heading)


#: The version of the chunking rules: a document stored under another is cut again at the next ingest, even
#: when its content is unchanged. 2: a chunk never spans two heading paths (short sections keep their heading).
CHUNKER_VERSION = 2


def cite(document: str, heading: str) -> str:
    """The citation of a passage: ``path#heading`` (just ``path`` when the heading is empty)."""
    return f"{document}#{heading}" if heading else document


def chunk_blocks(document: str, blocks: Sequence[Block], *, max_chars: int = MAX_CHARS) -> list[Chunk]:
    """The chunks of one document (``document`` is the path chunks cite), in document order.

    Raises:
        ValueError: ``max_chars`` below 2.
    """
    if max_chars < 2:
        raise ValueError(f"max_chars must be at least 2, got {max_chars}")
    # Short sections are not merged with their neighbours: a merged chunk could only be cited by the heading
    # its sections share, and the citation would then name a broader section than the one quoted.
    pieces = [(path, piece) for path, paragraphs in _sections(blocks) for piece in _pack(paragraphs, 0, max_chars)]
    return [
        Chunk(document, position, HEADING_SEPARATOR.join(path), text) for position, (path, text) in enumerate(pieces)
    ]


def _sections(blocks: Sequence[Block]) -> list[tuple[HeadingPath, list[str]]]:
    """(heading path, paragraphs) per section, empty sections left out."""
    sections: list[tuple[HeadingPath, list[str]]] = []
    stack: list[tuple[int, str]] = []
    paragraphs: list[str] = []
    for block in blocks:
        if block.level:
            if paragraphs:
                sections.append((tuple(title for _, title in stack), paragraphs))
                paragraphs = []
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.text))
        elif block.text.strip():
            paragraphs.append(block.text.strip("\n"))
    if paragraphs:
        sections.append((tuple(title for _, title in stack), paragraphs))
    return sections


# Finer and finer places to cut a text that is too long, each with the separator that joins its pieces back.
_LEVELS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\n[ \t]*\n"), "\n\n"),  # paragraphs
    (re.compile(r"\n"), "\n"),  # lines (list items, code)
    (re.compile(r"(?<=[.!?;:])\s+"), " "),  # sentences
    (re.compile(r"\s+"), " "),  # words
]


def _pack(units: list[str], level: int, max_chars: int) -> list[str]:
    """Join ``units`` (cut at ``level``) into pieces of at most ``max_chars``, of about equal length."""
    separator = _LEVELS[level][1]
    units = [piece for unit in units for piece in _fit(unit, level + 1, max_chars)]
    total = len(separator.join(units))
    # Aim at equal pieces: a 1,300-character section gives two of ~650, not 1,200 and 100.
    target = math.ceil(total / math.ceil(total / max_chars)) if total else 0
    pieces: list[str] = []
    current: list[str] = []
    length = 0
    for unit in units:
        grown = length + len(separator) + len(unit) if current else len(unit)
        if current and (grown > max_chars or length >= target):
            pieces.append(separator.join(current))
            current, grown = [], len(unit)
        current.append(unit)
        length = grown
    if current:
        pieces.append(separator.join(current))
    return pieces


def _fit(text: str, level: int, max_chars: int) -> list[str]:
    """``text`` itself when it fits, else cut at ``level`` or the first finer level that cuts it at all."""
    if len(text) <= max_chars:
        return [text]
    for finer in range(level, len(_LEVELS)):
        # Leading spaces stay: they indent code and nested list items.
        parts = [part.rstrip().lstrip("\n") for part in _LEVELS[finer][0].split(text) if part.strip()]
        if len(parts) > 1:
            return _pack(parts, finer, max_chars)
    # One unbroken run of characters (a URL, a base64 blob): cut it where it must be cut.
    return [text[start : start + max_chars] for start in range(0, len(text), max_chars)]
