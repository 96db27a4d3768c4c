"""Answers written as a Markdown table, read with the label grammar's names.

Two layouts: the labels as a column (``| **Hook** | Three regions... |``, one row per section, a header row
such as ``| Section | Content |`` ignored), or the labels as the header row with the answer in the row below.
A cell's ``<br>`` is a line break and ``\\|`` a literal bar. A row whose label cell is empty continues the row above
(a grid table wraps a long cell over several rows).
"""

from __future__ import annotations

import re
from typing import Final

from marsrag.contract._label_names import LABEL_FIELDS

_CELL_SPLIT: Final = re.compile(r"(?<!\\)\|")
_SEPARATOR_CELL: Final = re.compile(r":?-{2,}:?")
_BREAK: Final = re.compile(r"<br\s*/?>", re.IGNORECASE)
# Decoration around a label cell: emphasis, code marks, an item number, a trailing colon.
_LABEL_EDGES: Final = re.compile(r"^[\s*_`#]*(?:\d{1,2}[.)]\s*)?|[\s*_`:：]*$")
# A label column is the first or, after an item number, the second one.
_LABEL_COLUMNS: Final = 2


def may_have_table(text: str) -> bool:
    """A cheap test: False means the text has no table row."""
    return "|" in text and ("\n|" in text or text.lstrip().startswith("|") or "\n |" in text)


def table_sections(text: str) -> tuple[int, dict[str, str]] | None:
    """The first table's sections and where the table starts, or None when no table names a section."""
    rows: list[tuple[int, list[str]]] = []
    offset = 0
    in_table = False
    for line in text.split("\n"):
        start, offset = offset, offset + len(line) + 1
        row = line.strip()
        if len(row) > 1 and row[0] == "|" and row[-1] == "|":
            in_table = True
            parts = _CELL_SPLIT.split(row) if "\\" in row else row.split("|")
            cells = [cell.strip() for cell in parts[1:-1]]
            if cells and not all(_SEPARATOR_CELL.fullmatch(cell) for cell in cells):
                rows.append((start, cells))
        elif in_table and row:
            break  # the first table ended; a later one is another answer (or an example)
    if not rows:
        return None
    return _by_header(rows) or _by_rows(rows)


def _label(cell: str) -> str | None:
    plain = cell.strip(" \t*_`#:：").casefold()
    name = LABEL_FIELDS.get(plain)
    if name is None and plain[:1].isdigit():
        name = LABEL_FIELDS.get(_LABEL_EDGES.sub("", cell).casefold())
    return name


def _body(cells: list[str]) -> str:
    text = " ".join(cell for cell in cells if cell)
    if "<" in text:
        text = _BREAK.sub("\n", text)
    return text.replace("\\|", "|").strip() if "\\" in text else text.strip()


def _by_rows(rows: list[tuple[int, list[str]]]) -> tuple[int, dict[str, str]] | None:
    found: dict[str, str] = {}
    start = -1
    current: tuple[str, int] | None = None  # the section the last labelled row started, and its label's column
    for offset, cells in rows:
        for column, cell in enumerate(cells[:_LABEL_COLUMNS]):
            name = _label(cell)
            if name is not None:
                current = (name, column) if name not in found else None
                found.setdefault(name, _body(cells[column + 1 :]))
                start = offset if start < 0 else start
                break
        else:
            if current is not None and len(cells) > current[1] and not any(cells[: current[1] + 1]):
                # A row whose label cell is empty continues the row above: a grid table wraps a long cell so.
                name, column = current
                found[name] = f"{found[name]}\n{_body(cells[column + 1 :])}".strip()
            else:
                current = None
    return (start, found) if found else None


def _by_header(rows: list[tuple[int, list[str]]]) -> tuple[int, dict[str, str]] | None:
    offset, header = rows[0]
    names = [_label(cell) for cell in header]
    if sum(name is not None for name in names) < 2 or len(rows) < 2:
        return None
    values = rows[1][1]
    found = {name: _body([values[index]]) for index, name in enumerate(names) if name and index < len(values)}
    return offset, found
