"""Line-framed streams: a text sent as frames, one a line, each a short type, a colon and a JSON value.

A streaming protocol may frame its pieces so (the AI SDK's data stream sends ``0:"Ho"`` for each piece of text
beside ``f:{...}``, ``e:{...}`` and ``d:{...}`` frames of metadata; a server-sent event's ``data: "Ho"`` is the same
shape). A reader of the stream sees the text its text frames spell: the JSON strings of the one type that carries
them, decoded and joined in order, cut anywhere though the pieces are. The other frames are the protocol's own.
"""

from __future__ import annotations

import json
import re
from typing import Final

# A frame: its type (a short word or number), a colon, a JSON value; a string frame's value is one string literal.
_FRAME: Final = re.compile(r'[ \t]*[\w-]{1,24}:[ \t]?(?:"|\{|\[|-?\d|true\b|false\b|null\b)')
_STRING_FRAME: Final = re.compile(r'[ \t]*(?P<type>[\w-]{1,24}):[ \t]?(?P<value>"(?:[^"\\]|\\.)*")[ \t]*\r?')
# Frames are the text when at least this share of its lines (not blank) are frames, and text frames of one type
# number at least this many: a document whose keys each appear once (YAML's "hook: \"...\"") is no stream.
_FRAMED_SHARE: Final = 0.8
_MIN_PIECES: Final = 3


def may_be_framed(text: str) -> bool:
    """A cheap test: False means the text is no line-framed stream of text pieces (one of its first two lines is a
    frame)."""
    if ':"' not in text and ': "' not in text:
        return False
    first = len(text) - len(text.lstrip()) if text[:1].isspace() else 0
    if _FRAME.match(text, first) is not None:
        return True
    second = text.find("\n", first)
    return second >= 0 and _FRAME.match(text, second + 1) is not None


def framed_text(text: str) -> str | None:
    """The text the stream's text frames spell, or None when the text is not such a stream."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or sum(_FRAME.match(line) is not None for line in lines) < _FRAMED_SHARE * len(lines):
        return None
    pieces: dict[str, list[str]] = {}
    for line in lines:
        match = _STRING_FRAME.fullmatch(line)
        if match is not None:
            pieces.setdefault(match["type"], []).append(match["value"])
    if not pieces:
        return None
    _, values = max(pieces.items(), key=lambda item: len(item[1]))
    if len(values) < _MIN_PIECES:
        return None
    try:
        return "".join(json.loads(value) for value in values)
    except ValueError:
        return None
