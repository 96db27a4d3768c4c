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
    # The closers of what the answer sat in (a quoted string, a call) come after the loop, not in it.
    text = text.rstrip().rstrip("\"'`)]}").rstrip()
    size_of_text = len(text)
    last = text[-1:]
    if not last:
        return False
    # A unit of size n ends in the text's last character, so the character n before the end is that one too: only
    # those sizes are tried, found at C speed.
    position = size_of_text - 1
    floor = max(0, size_of_text - 1 - MAX_UNIT)
    while True:
        position = text.rfind(last, floor, position)
        if position < 0:
            return False
        size = size_of_text - 1 - position
        span = size * MIN_REPEATS
        if span > size_of_text:
            return False
        unit = text[-size:]
        # The unit before the last one first: most sizes fail there, without building the whole run.
        if text.endswith(unit, 0, size_of_text - size) and unit.strip() and text[-span:] == unit * MIN_REPEATS:
            return "\n" in unit or _after_content(text, unit)


def _after_content(text: str, unit: str) -> bool:
    """Whether the run of ``unit`` (no line break in it) ending ``text`` follows content on its line: a line that is
    only the run is a rule or a decoration (``==========``), not a loop."""
    line = text[text.rfind("\n") + 1 :].strip()
    # The line is only the run when it is a tail of the unit repeated: one comparison at C speed.
    return line != (unit * (len(line) // len(unit) + 2))[-len(line) :]
