"""Text as a terminal shows it: what a captured console writes that a screen never shows.

A model's answer captured from a terminal (a recorded session, a CLI's coloured log, a framework's
``inspect_history`` printout, a CI log) carries the terminal's control sequences: ANSI colours and cursor moves
(ECMA-48 CSI ``ESC [ ... m``), window titles (OSC ``ESC ] ... BEL``), and carriage returns by which a spinner or a
progress bar overwrites its line. A reader sees the screen: the sequences are removed and, on a line rewritten
after a carriage return, only its last writing is kept.

A terminal UI draws boxes too (Rich's panels, as CrewAI's, Agno's and smolagents' consoles print answers): a line
between two vertical box-drawing characters is the panel's text (a table's row when verticals divide it), and a
border line (a corner, a run of horizontal box-drawing characters, a title) holds none.
"""

from __future__ import annotations

import re
from typing import Final

# ECMA-48: CSI (parameters, intermediates, a final byte), OSC (to BEL or ST), and the two-byte escapes.
_SEQUENCE: Final = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
# A carriage return that ends no line (CRLF does): the cursor back to the line's start.
_OVERWRITE: Final = re.compile(r"\r(?!\n)")
_VISIBLE: Final = re.compile(r"[^\s\x00-\x1f\x7f-\x9f]")


def may_be_terminal(text: str) -> bool:
    """A cheap test: False means nothing here is a terminal's control sequence."""
    return "\x1b" in text


def screen_text(text: str) -> str:
    """``text`` as the terminal shows it: control sequences removed, each overwritten line at its last writing.

    Only a text with control sequences is a terminal's capture: elsewhere a lone carriage return is a line end (old
    Mac files) or noise, never an overwrite.
    """
    text = _SEQUENCE.sub("", text)
    if _OVERWRITE.search(text) is None:
        return text
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if "\r" in line.rstrip("\r"):
            # A writing shows on the screen only with a visible character (a lone control character shows nothing).
            writings = [part for part in line.rstrip("\r").split("\r") if _VISIBLE.search(part)]
            lines[index] = writings[-1] if writings else ""
    return "\n".join(lines)


_VERTICALS: Final = "│┃║"
_FRAMED_LINE: Final = re.compile(r"[ \t]*[│┃║] ?(?P<inner>.*?) ?[│┃║][ \t]*")
_BORDER_LINE: Final = re.compile(r"[ \t]*[┌┏╔└┗╚├┣╠┞┟┡┢╭╰][─━═┄┅┈┉╌╍ ].*[┐┓╗┘┛╝┤┫╣┦┧┩┪╮╯][ \t]*")
# A text is drawn in panels when at least this many of its lines are framed.
_MIN_FRAMED_LINES: Final = 3


def may_be_panelled(text: str) -> bool:
    """A cheap test: False means no line here is drawn inside a box."""
    return any(vertical in text for vertical in _VERTICALS)


def panel_text(text: str) -> str | None:
    """``text`` with its panels' frames removed (their borders blank lines, their framed lines' text kept), or None
    when it has too few framed lines to be a terminal UI's panels."""
    lines = text.split("\n")
    framed = [_FRAMED_LINE.fullmatch(line) for line in lines]
    if sum(match is not None for match in framed) < _MIN_FRAMED_LINES:
        return None
    return "\n".join(
        _unframed(match["inner"]) if match is not None else "" if _BORDER_LINE.fullmatch(line) else line
        for line, match in zip(lines, framed, strict=True)
    )


def _unframed(inner: str) -> str:
    """A framed line's text: a panel's line as it is, a box-drawn table's row (inner verticals) as a Markdown row."""
    if any(vertical in inner for vertical in _VERTICALS):
        return "| " + re.sub(f"[{_VERTICALS}]", "|", inner.rstrip()) + " |"
    return inner.rstrip()
