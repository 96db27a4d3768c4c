"""The run summary, led by the payoffs (spec section 4: payoff shapes summarization priorities).

Only sections that passed the contract are quoted: a failing placeholder ("Evidence: TBD") or a partial
task's failing section never reaches the summary. Its ``Next:`` line is the planner's next action, the same
the run's next-action card, the web page and ``marsrag follow`` show. Its ``Sources:`` list names every source
the run's tasks cite, by the run's number (:mod:`marsrag.chain.numbering`): a ``[n]`` anywhere in the summary
is that source.
"""

from __future__ import annotations

from collections.abc import Sequence

from marsrag.chain.citations import MARKER
from marsrag.chain.numbering import numbered
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
    # Each line names its task, whose sources panel the run page links its markers to. A payoff several tasks
    # repeat word for word is listed once, unless it cites in a task stored when each task numbered its own.
    payoffs: dict[str, list[str]] = {}
    for state, fields in ordered:
        own = MARKER.search(fields["payoff"]) and not numbered(state)
        key = f"{fields['payoff']}\0{state.task_id}" if own else fields["payoff"]
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
    return "\n".join([*lines, *source_list(states)])


#: Opens the summary's list of the run's sources; each line after it is ``[n] path#Heading``.
SOURCES_LINE = "Sources:"


def source_list(states: Sequence[TaskState]) -> list[str]:
    """The summary's source lines: :data:`SOURCES_LINE`, then each source the run cites, by its run number.

    Empty when no task numbered by the run cites (a task stored before the run's numbering has none to list).
    """
    cited: dict[str, str] = {}
    for state in states:
        if numbered(state):
            for citation in state.citations:
                cited.setdefault(citation.ref, citation.source)
    if not cited:
        return []
    return [SOURCES_LINE, *(f"[{ref}] {cited[ref]}" for ref in sorted(cited, key=int))]


__all__ = ["SOURCES_LINE", "passed_fields", "source_list", "summarize"]
