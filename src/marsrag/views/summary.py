"""The run summary, led by the payoffs (spec section 4: payoff shapes summarization priorities).

Only sections that passed the contract are quoted: a failing placeholder ("Evidence: TBD") or a partial
task's failing section never reaches the summary. Its ``Next:`` line is the planner's next action, the same
the run's next-action card, the web page and ``marsrag follow`` show.
"""

from __future__ import annotations

from collections.abc import Sequence

from marsrag.chain.citations import MARKER
from marsrag.chain.planner import plan_next_action
from marsrag.contract import FIELDS
from marsrag.state import TaskState


def passed_fields(state: TaskState) -> dict[str, str]:
    """The sections of a task that passed the contract, by name (none for a task run without it)."""
    if state.validation.status == "skipped":
        return {}
    failed = {issue.field for issue in state.validation.errors}
    values = state.loop_output.model_dump()
    return {name: values[name] for name in FIELDS if values[name] and name not in failed}


def summarize(states: Sequence[TaskState], asked: Sequence[str] = ()) -> str:
    """Payoffs first (valid tasks before partial ones, each in run order), then evidence, then the next step.

    ``asked``: what the session asked up to this run, as :func:`~marsrag.chain.planner.plan_next_action` takes it.
    """
    rank = {"valid": 0, "partial": 1}
    passed = [(state, passed_fields(state)) for state in states]
    with_payoff = [(state, fields) for state, fields in passed if "payoff" in fields]
    ordered = sorted(with_payoff, key=lambda item: (rank.get(item[0].validation.status, 2), item[0].position))
    # Each line names its task: its source markers number that task's passages (the run page links them).
    # A payoff several tasks repeat word for word is listed once, unless it cites (each task numbers its own).
    payoffs: dict[str, list[str]] = {}
    for state, fields in ordered:
        key = fields["payoff"] if not MARKER.search(fields["payoff"]) else f"{fields['payoff']}\0{state.task_id}"
        payoffs.setdefault(key, []).append(state.task_id)
    lines = [f"- {key.split(chr(0))[0]} ({', '.join(task_ids)})" for key, task_ids in payoffs.items()]
    # The last task's evidence is the one the whole chain arrived at; earlier ones are on their tasks.
    evidence = next((fields["reinforce"] for _, fields in reversed(passed) if "reinforce" in fields), None)
    if evidence:
        lines.append(f"Evidence: {evidence}")
    planned = plan_next_action(states, asked)
    if planned is not None:
        lines.append(f"Next: {planned[1].hook}")
    if not lines:
        return "No task produced a payoff."
    return "\n".join(lines)


__all__ = ["passed_fields", "summarize"]
