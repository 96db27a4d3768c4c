"""Numbered source markers: a task's ``[1]``, ``[2]`` resolved to the passages its briefing numbered.

The briefing gives a task its retrieved passages as ``[1]``, ``[2]`` ... in retrieval order
(:mod:`marsrag.chain.briefing`); the answer cites them by number after the sentence each supports. This
module reads the markers back: every marker that names a passage becomes a :class:`~marsrag.state.Citation`
carrying that passage's ``source`` and ``chunk_id``, and every marker that names none becomes a warning on
the task (never a validation error: the contract judges the sections, citations are evidence about them).

A task's passages carry the run's numbers (``ref``, :mod:`marsrag.chain.numbering`): a marker names a source of
the run, the same in every task. It resolves to the task's own passage of that number, else to a source an
earlier task of the run was given (``known``), as in a hook handed over from a loop that cited it. A task
stored before that numbering numbers its own passages by position, and its hook is not read: the previous
task's markers numbered that task's passages, not this one's.
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


def resolve(
    fields: Mapping[str, str | None],
    results: Sequence[Mapping[str, Any]],
    known: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[list[Citation], list[str]]:
    """The citations of a task's fields against its retrieval results, and warnings for unknown markers.

    Passages with a ``ref`` are named by it (the run's numbers), others by their position from 1. ``known``:
    the run's sources by ref (:meth:`~marsrag.chain.numbering.SourceNumbers.sources`), for markers naming
    none of the task's passages; with run numbers the hook's markers resolve too (an unknown one is no
    warning: the task did not write it). Citations come in order of their number; a warning names the
    marker, the field and the passages the task was given.
    """
    run_wide = any("ref" in item for item in results) or bool(known)
    passages: dict[str, Mapping[str, Any]] = {}
    for position, item in enumerate(results, start=1):
        passages.setdefault(str(item["ref"]) if "ref" in item else str(position), item)
    others = known or {}
    cited: dict[str, list[str]] = {}
    warnings: list[str] = []
    for name in ("hook", *CITING_FIELDS) if run_wide else CITING_FIELDS:
        text = fields.get(name)
        if not text:
            continue
        for ref in refs(text):
            if ref in passages or ref in others:
                cited.setdefault(ref, []).append(name)
            elif name != "hook":
                warnings.append(f"marker [{ref}] in {name} names no passage ({_given(passages, run_wide)})")
    citations = []
    for ref, fields_with in sorted(cited.items(), key=lambda item: int(item[0])):
        item = passages.get(ref) or others[ref]
        citations.append(
            Citation(ref=ref, source=str(item.get("source", "")), chunk_id=item.get("chunk_id"), fields=fields_with)
        )
    return citations, warnings


def _given(passages: Mapping[str, Mapping[str, Any]], run_wide: bool) -> str:
    if not passages:
        return "it was given none"
    if run_wide:
        return "it was given " + ", ".join(f"[{ref}]" for ref in passages)
    return f"it was given {len(passages)}"
