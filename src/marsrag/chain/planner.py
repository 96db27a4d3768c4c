"""The transition planner: the next task's hook from the prior task's stored state, with no LLM call.

The one repair already happened at the task (the contract guardrail); the planner only reads its outcome:

- prior valid on its first attempt: hook = prior.loop, mode ``direct``;
- prior valid after its repair: hook = the repaired loop, mode ``repair``;
- prior still invalid after its repair, or missing: the fallback question, mode ``fallback``.

In soft mode a partial prior whose ``loop`` passes hands it on (``direct``, or ``repair`` after a repair);
the fallback is used only when the loop itself is missing or invalid.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from marsrag.chain.citations import MARKER
from marsrag.state import FALLBACK_HOOK, RunRecord, TaskState, TransitionMode

#: The fallback question, then other wordings of it for a session that already asked it.
FALLBACK_QUESTIONS: Final = (
    FALLBACK_HOOK,
    "Which open question about the original goal is still unanswered?",
    "What would we need to know to close this out?",
)
REPEATED = "the last step's loop repeats a question already asked in this session"


@dataclass(frozen=True)
class PlannedTransition:
    """The planner's output: the next hook, how it was obtained, and why, for a person."""

    hook: str
    mode: TransitionMode
    reason: str


def _failed_fields(prior: TaskState) -> list[str]:
    fields = [issue.field for issue in prior.validation.errors if issue.field]
    return list(dict.fromkeys(fields))


def _first_attempt_problem(prior: TaskState) -> str:
    first = prior.attempts[0] if prior.attempts else None
    if first is None or not first.errors:
        return "first attempt invalid"
    fields = list(dict.fromkeys(issue.field or "output" for issue in first.errors))
    return f"first attempt: {', '.join(fields)} failed"


def plan_transition(prior: TaskState | None, target: str | None = None) -> PlannedTransition:
    """Plan the handoff from ``prior`` (its final, stored state) to the next task.

    Args:
        prior: the prior task's state with its attempts, or None when it has none (it never completed).
        target: the next task's id, only used in the reason.
    """
    to = f" to {target}" if target else ""
    if prior is None:
        return PlannedTransition(FALLBACK_HOOK, "fallback", f"prior task has no stored output{to}")
    status = prior.validation.status
    if status == "skipped":
        return PlannedTransition(
            FALLBACK_HOOK, "fallback", "prior task ran without the contract (loop_mode none): no loop to hand on"
        )
    repaired = len(prior.attempts) > 1
    loop = prior.loop_output.loop
    failed = _failed_fields(prior)
    loop_usable = loop is not None and "loop" not in failed and (status == "valid" or prior.loop_mode == "soft")
    if loop_usable and loop is not None:
        if status == "valid":
            if repaired:
                return PlannedTransition(
                    loop, "repair", f"prior output valid after its repair ({_first_attempt_problem(prior)})"
                )
            return PlannedTransition(loop, "direct", "prior output valid")
        detail = f"prior output partial (fields {', '.join(failed)} failed); its loop is valid"
        return PlannedTransition(
            loop, "repair" if repaired else "direct", detail + (" after repair" if repaired else "")
        )
    after = " after repair" if repaired else ""
    if not failed:
        return PlannedTransition(FALLBACK_HOOK, "fallback", f"prior output {status}{after}: no loop")
    ordered = (["loop"] if "loop" in failed else []) + [name for name in failed if name != "loop"]
    return PlannedTransition(FALLBACK_HOOK, "fallback", f"fields {', '.join(ordered)} failed{after}")


def plan_next_action(
    tasks: Sequence[TaskState], asked: Sequence[str] = ()
) -> tuple[TaskState, PlannedTransition] | None:
    """A run's next recommended question/action: the handoff out of its last task under the contract.

    The same rule as between tasks (spec section 3), so the UI's next-action card, ``follow`` and the chain
    agree: the last contract task's loop when usable, else the fallback question. None when no task of the
    run ran under the contract (a machine-first run has no next action).

    ``asked``: what the run's session already asked, up to this run (:func:`asked_before`). A next action
    that repeats one of them (ignoring case, spacing, end punctuation and source markers) is replaced by a
    fallback question the session has not asked, so following a session's next actions never goes in a
    circle.
    """
    contract = [task for task in tasks if task.validation.status != "skipped"]
    if not contract:
        return None
    planned = plan_transition(contract[-1])
    seen = {_same(item) for item in asked}
    if _same(planned.hook) in seen:
        planned = PlannedTransition(_unasked_fallback(seen), "fallback", REPEATED)
    return contract[-1], planned


def asked_before(runs: Iterable[RunRecord], run: RunRecord) -> list[str]:
    """The goals of ``run``'s session up to and including it (a followed run's goal is the action followed)."""
    earlier = [item for item in runs if item.session_id == run.session_id and item.created_at <= run.created_at]
    if all(item.run_id != run.run_id for item in earlier):
        earlier.append(run)
    return [item.goal for item in sorted(earlier, key=lambda item: item.created_at)]


def _same(text: str) -> str:
    return " ".join(MARKER.sub(" ", text).casefold().split()).rstrip(".?!")


def _unasked_fallback(seen: set[str]) -> str:
    for question in FALLBACK_QUESTIONS:
        if _same(question) not in seen:
            return question
    number = 2
    while _same(f"{FALLBACK_HOOK} (follow-up {number})") in seen:
        number += 1
    return f"{FALLBACK_HOOK} (follow-up {number})"
