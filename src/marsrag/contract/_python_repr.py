"""Answers printed from Python: a model's repr (``LoopOutput(hook='...', grip='...')``) or its ``str``
(``hook='...' grip='...'``), as agents and tool wrappers hand them on.

Each ``field=<string literal>`` pair is read by the standard library's literal parser, so quotes, escapes
and prefixes mean exactly what Python says; a variable or an expression in a field's place is read as the code
it is (and judged so: :mod:`._expressions`). A literal left open at the end (the answer was cut) keeps its
text and marks its field unfinished.
"""

from __future__ import annotations

import ast
import re
from typing import Final, NamedTuple

from marsrag.contract._expressions import code_values
from marsrag.contract._json_forms import field_key

_PAIR: Final = re.compile(
    r"\b(?P<key>hook|grip|payoff|reinforce|loop)[ \t]*=[ \t]*"
    r"(?P<literal>[rRuU]?(?:'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"))",
    re.IGNORECASE,
)
_OPEN_PAIR: Final = re.compile(r"\b(?P<key>hook|grip|payoff|reinforce|loop)[ \t]*=[ \t]*['\"](?P<rest>[^\n]*)\Z", re.I)
_HINT: Final = re.compile(r"\b(?:hook|grip|payoff|reinforce|loop)[ \t]*=[ \t]*[rRuU]?['\"]", re.IGNORECASE)


class Printed(NamedTuple):
    """The pairs read, where the first starts, and the field whose literal was left open (None when none was)."""

    values: dict[str, str]
    start: int
    truncated: str | None


def read_printed(text: str) -> Printed | None:
    """The ``field='...'`` pairs of a printed model, or None when there are none."""
    first = _HINT.search(text)
    if first is None:
        return None
    values: dict[str, str] = {}
    end = first.start()
    for match in _PAIR.finditer(text, first.start()):
        try:
            value = ast.literal_eval(match["literal"])
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        name = field_key(match["key"])
        if name is not None and isinstance(value, str):
            values.setdefault(name, value)
        end = match.end()
    # Code in a field's place (loop=next_q) is read as written, so the field is judged as code, not as missing.
    for name, code in code_values(text[first.start() :]).items():
        values.setdefault(name, code)
    truncated = None
    tail = _OPEN_PAIR.search(text, end)
    if tail is not None and (name := field_key(tail["key"])) is not None and name not in values:
        values[name], truncated = tail["rest"].rstrip(")"), name
    return Printed(values, first.start(), truncated) if values else None
