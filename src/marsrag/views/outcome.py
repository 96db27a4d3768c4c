"""How a run's tasks ended: the outcome counts and the run header every front end shows.

A run's ``status`` says whether it finished; its outcome says how its tasks did. The header names every
outcome a reader should worry about (failed, partial) by its status word, so a run whose tasks failed never
reads as a plain "completed". Skipped tasks (loop_mode none) ran without the contract: they are counted,
never named as a problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, cast

from marsrag.state import VALIDATION_STATUSES

#: The outcome keys, in the order the JSON and the header use.
OUTCOMES: tuple[str, ...] = VALIDATION_STATUSES
#: The outcomes the header names, worst first.
_NAMED: tuple[str, ...] = ("failed", "partial")

HeaderLevel = Literal["pending", "running", "completed", "failed", "partial"]


@dataclass(frozen=True)
class RunHeader:
    """The run's header: its text (``completed · 1 of 3 tasks failed``) and the level to style it by.

    ``level`` is the run status, except that a run with failed (or else partial) tasks takes ``failed``
    (or ``partial``): the header is never styled as a success when a task failed.
    """

    text: str
    level: HeaderLevel


def task_outcome(statuses: Iterable[str]) -> dict[str, int]:
    """The outcome of tasks in these validation statuses: ``{"valid": n, "partial": n, "failed": n, "skipped": n}``."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    return counts


#: How each outcome reads in :func:`outcome_text`.
_OUTCOME_WORDS = {"skipped": "without contract"}


def outcome_text(outcome: Mapping[str, int]) -> str:
    """How a run's tasks ended, in words: ``3 valid``, ``2 valid, 1 partial``; ``no tasks`` when it has none.

    Every outcome with a task is named, in :data:`OUTCOMES` order (skipped tasks read "without contract").
    """
    named = [f"{outcome[name]} {_OUTCOME_WORDS.get(name, name)}" for name in OUTCOMES if outcome.get(name)]
    extra = [f"{count} {name}" for name, count in outcome.items() if name not in OUTCOMES and count]
    return ", ".join(named + extra) or "no tasks"


def run_header(status: str, outcome: Mapping[str, int]) -> RunHeader:
    """The header of a run in ``status`` whose tasks ended as ``outcome``.

    ``completed`` when every task is valid (or skipped); else the status followed by each non-valid outcome,
    worst first: ``completed · 1 of 3 tasks failed, 1 of 3 tasks partial``.
    """
    total = sum(outcome.values())
    noun = "task" if total == 1 else "tasks"
    named = [f"{outcome[name]} of {total} {noun} {name}" for name in _NAMED if outcome.get(name)]
    text = f"{status} · {', '.join(named)}" if named else status
    level: HeaderLevel
    if outcome.get("failed"):
        level = "failed"
    elif outcome.get("partial") and status != "failed":
        level = "partial"
    else:
        level = cast(HeaderLevel, status)  # a RunStatus: the records check it
    return RunHeader(text, level)


__all__ = ["OUTCOMES", "HeaderLevel", "RunHeader", "outcome_text", "run_header", "task_outcome"]
