"""Numbered source markers: a task's ``[1]``, ``[2]`` resolved to the passages its briefing numbered.

The briefing gives a task its retrieved passages as ``[1]``, ``[2]`` ... in retrieval order
(:mod:`marsrag.chain.briefing`); the answer cites them by number after the sentence each supports. This
module reads the markers back: every marker that names a passage becomes a :class:`~marsrag.state.Citation`
carrying that passage's ``source`` and ``chunk_id``, and every marker that names none becomes a warning on
the task (never a validation error: the contract judges the sections, citations are evidence about them).

The hook is not read: a chained task's hook is the previous task's loop, whose markers (if any) numbered that
task's passages, not this one's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from marsrag.contract import FIELDS
from marsrag.state import Citation

#: A marker: one number or several in one pair of brackets (``[1]``, ``[1, 3]``; ``[1][2]`` is two), never part of a
#: word or a Markdown link.
MARKER: Final = re.compile(r"(?<!\w)\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\](?![(\w])")
#: The fields whose markers cite this task's passages.
CITING_FIELDS: Final = tuple(name for name in FIELDS if name != "hook")


def refs(text: str) -> list[str]:
    """The marker numbers in ``text``, in order of appearance, each once."""
    found: dict[str, None] = {}
    for match in MARKER.finditer(text):
        for number in match.group(1).split(","):
            found[str(int(number))] = None
    return list(found)


def resolve(fields: Mapping[str, str | None], results: Sequence[Mapping[str, Any]]) -> tuple[list[Citation], list[str]]:
    """The citations of a task's fields against its retrieval results, and warnings for unknown markers.

    Citations come in order of their number; a warning names the marker, the field and how many passages the
    task was given.
    """
    cited: dict[int, list[str]] = {}
    warnings: list[str] = []
    for name in CITING_FIELDS:
        text = fields.get(name)
        if not text:
            continue
        for ref in refs(text):
            number = int(ref)
            if 1 <= number <= len(results):
                cited.setdefault(number, []).append(name)
            else:
                given = f"it was given {len(results)}" if results else "it was given none"
                warnings.append(f"marker [{ref}] in {name} names no passage ({given})")
    citations = [
        Citation(
            ref=str(number),
            source=str(results[number - 1].get("source", "")),
            chunk_id=results[number - 1].get("chunk_id"),
            fields=fields_with,
        )
        for number, fields_with in sorted(cited.items())
    ]
    return citations, warnings
