"""Text safe for an operator's terminal: control characters are shown, never obeyed.

A goal, a model's answer, a file name or a config key may hold ``ESC [2J`` (clear the screen) or an OSC
sequence (``ESC ]0;title BEL`` retitles the window; others write the clipboard or fake a hyperlink). Every
text the CLI prints goes through :func:`visible` (human output: the CLI's own lines and the Rich printers'
text) or :func:`visible_json` (``--format json``), and the weekly review's Markdown through :func:`visible`.
A name shown inside a line (a folder ``marsrag init`` writes) goes through :func:`visible_name`, which keeps
it on that line and shows it as what it is.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["visible", "visible_json", "visible_name"]

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI to some terminals), and lone
# surrogates (undecodable bytes of a file name: no terminal encoding can write them).
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
# A name is one line and must show as itself: also newline and tab, the line and paragraph separators (Unicode
# categories Zl, Zp) and the bidirectional formatting characters (embeddings, overrides, isolates), which make a
# name show as another (U+202E then "txt.exe" shows as "exe.txt"). tests/scaffold/test_names.py derives the set
# from the Unicode database.
_HIDDEN_IN_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# What json.dumps(ensure_ascii=False) leaves raw: it escapes C0 controls itself, not DEL, C1 or surrogates.
_JSON_RAW = re.compile("[\x7f-\x9f\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with each control character but newline and tab written out as ``\\xNN`` (ESC as ``\\x1b``).

    Lone surrogates become ``\\udcNN``. Everything else, Rich markup like ``[bold]`` included, is left as it is:
    the Rich printers take text as text, never as markup.
    """
    return _HIDDEN.sub(_escape, text)


def visible_name(text: str) -> str:
    """``text`` as a name is shown inside a line: every character :func:`visible` escapes, and newline, tab, the
    line and paragraph separators and the bidirectional formatting characters, as ``\\xNN`` or ``\\uXXXX``.
    """
    return _HIDDEN_IN_NAME.sub(_escape, text)


def visible_json(value: Any, **options: Any) -> str:
    """``value`` as JSON text holding no raw control character: DEL, C1 controls and lone surrogates as ``\\uXXXX``.

    ``options`` go to :func:`json.dumps` (``ensure_ascii`` is False unless given). The document decodes to
    the same value; only the escapes differ, so no raw control character reaches the terminal and no encoding
    error is raised for a lone surrogate.
    """
    text = json.dumps(value, **{"ensure_ascii": False, **options})
    return _JSON_RAW.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
