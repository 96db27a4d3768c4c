"""Runaway generation: a text that ends in a repetition loop was stopped by its token limit, not by the model.

Small models fall into loops (``or..........``, ``the the the``) and repeat until the server stops them at the
token limit, so a text whose very end is one short unit repeated many times was cut in the field it was writing,
whether or not the provider said so. A repeated unit inside a value (an ellipsis, a row of dashes in a table) is
not at the end, or is too short a run to be a loop; a line that is only the run is a rule, not a loop.
"""

from __future__ import annotations

from typing import Final

#: The longest repeated unit looked for, and how many times it must repeat at the end of the text.
MAX_UNIT: Final = 64
MIN_REPEATS: Final = 12


def ends_in_loop(text: str) -> bool:
    """Whether ``text`` (trailing white space ignored) ends in one unit of up to MAX_UNIT characters repeated
    MIN_REPEATS times or more."""
    text = text.rstrip()
    for size in range(1, MAX_UNIT + 1):
        span = size * MIN_REPEATS
        if len(text) < span:
            return False
        unit = text[-size:]
        # The unit before the last one first: most sizes fail there, without building the whole run.
        if not text.endswith(unit, 0, len(text) - size) or not unit.strip():
            continue
        if text[-span:] == unit * MIN_REPEATS:
            return "\n" in unit or _after_content(text, unit)
    return False


def _after_content(text: str, unit: str) -> bool:
    """Whether the run of ``unit`` ending ``text`` follows content on its line: a line that is only the run is a
    rule or a decoration (``==========``), not a loop."""
    start = len(text)
    while text.endswith(unit, 0, start):
        start -= len(unit)
    line_start = text.rfind("\n", 0, start) + 1
    return bool(text[line_start:start].strip())
