"""Answers a pipeline passed through a transcript or a data file: caption cues and delimited tables, read back as
the text they carry.

- Captions (SubRip's SRT, WebVTT): each cue is an optional identifier line, a timing line
  (``00:00:04,600 --> 00:00:09,100``) and its text; a spoken answer runs on across cues, so the cue texts are
  joined line by line, and the numbers and timings are no content.
- Delimited tables (TSV, CSV, RFC 4180 quoting): a header row of column names, then rows of as many cells. A
  header naming the fields (``"hook","grip",...``) is read as ``name: value`` lines; otherwise the answer is the
  text of the widest column (a transcript's ``text`` beside its ``start`` and ``end``), its cells joined line by
  line.

Either way the result is text, read like any other answer (labels, JSON, ...).
"""

from __future__ import annotations

import csv
import re
from typing import Final

from marsrag.contract._label_names import LABEL_FIELDS

_TIME: Final = r"(?:\d{1,2}:)?\d{2}:\d{2}[.,]\d{3}"
# A cue's timing line, with the identifier line before it when it is a number (SRT's counter).
_CUE: Final = re.compile(rf"(?m)^(?:[ \t]*\d+[ \t]*\n)?[ \t]*{_TIME}[ \t]+-->[ \t]+{_TIME}[^\n]*$")
_WEBVTT: Final = re.compile(r"\A\s*WEBVTT[^\n]*\n")
# A column name: a word or a few, no sentence punctuation (a line of prose with commas is no header).
_COLUMN: Final = re.compile(r"[^\W\d][\w .-]{0,30}")
# A comma-separated header line: column names, each may be quoted.
_CSV_HEADER: Final = re.compile(r'\s*(?:"?[^\W\d][\w .-]{0,30}"?,)+"?[^\W\d][\w .-]{0,30}"?[ \t]*\r?\n')
_MAX_TABLE_CHARS: Final = 50_000


def may_be_transcribed(text: str) -> bool:
    """A cheap test: False means the text is neither captions nor a delimited table."""
    return "-->" in text or "\t" in text or ("," in text and _CSV_HEADER.match(text) is not None)


def transcribed_text(text: str) -> str | None:
    """The text a caption file or a delimited table carries, or None when ``text`` is neither."""
    if "-->" in text:
        captions = _caption_text(text)
        if captions is not None:
            return captions
    if len(text) <= _MAX_TABLE_CHARS and ("\t" in text or _CSV_HEADER.match(text) is not None):
        return _table_text(text)
    return None


def _caption_text(text: str) -> str | None:
    cues = list(_CUE.finditer(text))
    if not cues:
        return None
    head = _WEBVTT.sub("", text[: cues[0].start()]).strip()
    pieces = [head] if head else []
    for cue, following in zip(cues, [*cues[1:], None], strict=True):
        body = text[cue.end() : following.start() if following else len(text)].strip()
        if body:
            pieces.append(body)
    return "\n".join(pieces)


def _table_text(text: str) -> str | None:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    delimiter = "\t" if "\t" in lines[0] else ","
    rows = list(csv.reader(lines, delimiter=delimiter))
    width = len(rows[0])
    if width < 2 or any(len(row) != width for row in rows):
        return None
    header = [cell.strip() for cell in rows[0]]
    if not all(_COLUMN.fullmatch(cell) for cell in header):
        return None
    fields = [LABEL_FIELDS.get(cell.casefold()) for cell in header]
    if sum(name is not None for name in fields) >= 2:
        return "\n".join(
            f"{name}: {cell.strip()}" for row in rows[1:] for name, cell in zip(fields, row, strict=True) if name
        )
    widest = max(range(width), key=lambda column: sum(len(row[column]) for row in rows[1:]))
    return "\n".join(row[widest].strip() for row in rows[1:])
