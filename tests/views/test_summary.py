"""The run summary on its own: only sections that passed, payoffs first, and the planner's next action."""

from __future__ import annotations

import json
from typing import Any

from marsrag.contract import validate_output
from marsrag.state import FALLBACK_HOOK, AttemptRecord, LoopFields, TaskState, Validation
from marsrag.views.summary import passed_fields, summarize
from tests.contract.samples import CONTENT


def state(task_id: str, position: int, mode: str = "soft", **changes: Any) -> TaskState:
    """A task state validated from the sample answer with ``changes``, as the runner stores it."""
    raw = json.dumps({**CONTENT, **changes})
    result = validate_output(raw, mode)  # type: ignore[arg-type]
    errors = list(result.errors)
    return TaskState(
        run_id="r",
        task_id=task_id,
        position=position,
        loop_mode=mode,
        validation=Validation(status=result.status, errors=errors),
        loop_output=LoopFields(**result.loop_output),
        attempts=[AttemptRecord(number=1, raw=raw, status=result.status, errors=errors)],
    )


def test_a_placeholder_that_failed_never_reaches_the_summary() -> None:
    """The last task's reinforce is "TBD" (a placeholder): the evidence comes from the last one that passed."""
    first = state("diagnose", 0, reinforce="Staging hit 95% in two minutes.")
    last = state("recommend", 1, reinforce="TBD")
    assert last.validation.status == "partial"
    summary = summarize([first, last])
    assert "TBD" not in summary
    assert "Evidence: Staging hit 95% in two minutes." in summary.splitlines()


def test_a_partial_tasks_failing_sections_are_left_out_and_its_passing_payoff_kept() -> None:
    """Valid payoffs before partial ones; the partial task's failing loop is not the next step."""
    long_loop = "Which " + "cache tier and replica pool, " * 30 + "first?"
    first = state("diagnose", 0, payoff="Pre-warm caches.")
    last = state("recommend", 1, payoff="Stagger restarts.", loop=long_loop)
    assert set(passed_fields(last)) == {"hook", "grip", "payoff", "reinforce"}
    lines = summarize([first, last]).splitlines()
    assert lines[:2] == ["- Pre-warm caches. (diagnose)", "- Stagger restarts. (recommend)"]
    assert lines[-1] == f"Next: {FALLBACK_HOOK}"
    assert long_loop not in "\n".join(lines)


def test_the_next_line_is_the_planners_next_action() -> None:
    """A valid last task hands on its loop; a machine-first task (no contract) adds no next step of its own."""
    last = state("recommend", 0, loop="Snapshot or replay?")
    machine = last.model_copy(
        update={"task_id": "export", "position": 1, "validation": Validation(status="skipped"), "loop_mode": "none"}
    )
    assert summarize([last]).splitlines()[-1] == "Next: Snapshot or replay?"
    assert summarize([last, machine]).splitlines()[-1] == "Next: Snapshot or replay?"
    assert passed_fields(machine) == {}


def test_a_payoff_repeated_word_for_word_is_listed_once_unless_it_cites() -> None:
    """Identical payoffs merge into one line naming their tasks; cited ones stay per task (each numbers its own)."""
    same = summarize([state("diagnose", 0), state("plan", 1)])
    assert same.splitlines()[0] == f"- {CONTENT['payoff']} (diagnose, plan)"
    cited = CONTENT["payoff"].rstrip(".") + " [1]."
    apart = summarize([state("diagnose", 0, payoff=cited), state("plan", 1, payoff=cited)])
    assert apart.splitlines()[:2] == [f"- {cited} (diagnose)", f"- {cited} (plan)"]


def test_the_next_line_never_repeats_what_the_session_asked() -> None:
    """With the final loop already asked in the session, the Next line is a question not yet asked."""
    assert summarize([state("plan", 0)], [CONTENT["loop"]]).splitlines()[-1] == f"Next: {FALLBACK_HOOK}"
