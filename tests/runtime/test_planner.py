"""The transition planner (spec section 8 interface), a pure function over stored state."""

from __future__ import annotations

import pytest

from marsrag.chain import plan_transition
from marsrag.contract import ContractIssue
from marsrag.state import FALLBACK_HOOK, AttemptRecord, LoopFields, TaskState, Validation
from tests.contract.samples import CONTENT

LOOP = CONTENT["loop"]


def state(*attempt_errors: list[tuple[str, str]], mode: str = "hard", loop: str | None = LOOP) -> TaskState:
    """A prior task state whose attempts failed with the given (field, code) errors (empty list: valid)."""
    attempts = []
    for number, errors in enumerate(attempt_errors, start=1):
        issues = [ContractIssue(field=field, code=code, message=f"{field} {code}") for field, code in errors]
        passing = 5 - len({field for field, _ in errors})
        status = "valid" if not errors else ("partial" if passing >= 3 else "failed")
        attempts.append(AttemptRecord(number=number, raw="...", status=status, errors=issues))  # type: ignore[arg-type]
    final = attempts[-1]
    fields = {**CONTENT, "loop": loop}
    for issue in final.errors:
        if issue.code in ("missing", "not_string"):
            fields[issue.field] = None  # type: ignore[index]
    return TaskState(
        run_id="r",
        task_id="diagnose",
        position=0,
        loop_mode=mode,
        validation=Validation(status=final.status, errors=final.errors),
        loop_output=LoopFields(**fields),
        attempts=attempts,
    )


def test_valid_first_attempt_hands_its_loop_on_directly() -> None:
    """Spec test 5: next.hook = prior.loop, mode direct."""
    planned = plan_transition(state([]), "recommend")
    assert (planned.hook, planned.mode, planned.reason) == (LOOP, "direct", "prior output valid")


def test_repaired_prior_hands_on_the_repaired_loop() -> None:
    """A prior that became valid on its repair hands on that loop, mode repair, saying what was fixed."""
    planned = plan_transition(state([("grip", "missing")], []))
    assert (planned.hook, planned.mode) == (LOOP, "repair")
    assert planned.reason == "prior output valid after its repair (first attempt: grip failed)"


def test_invalid_after_repair_uses_the_fallback_question() -> None:
    """Spec test 6: still invalid after its repair -> the exact fallback question, mode fallback."""
    planned = plan_transition(state([("loop", "missing")], [("loop", "missing"), ("grip", "empty")]))
    assert planned.hook == "What is the single most important next step to resolve the current uncertainty?"
    assert planned.hook == FALLBACK_HOOK
    assert (planned.mode, planned.reason) == ("fallback", "fields loop, grip failed after repair")


def test_missing_prior_uses_the_fallback() -> None:
    """No stored prior at all -> fallback with a reason."""
    planned = plan_transition(None, "plan")
    assert (planned.hook, planned.mode, planned.reason) == (
        FALLBACK_HOOK,
        "fallback",
        "prior task has no stored output to plan",
    )


def test_hard_mode_never_hands_on_a_partial_loop() -> None:
    """Under hard, a partial prior falls back even when its loop field passed."""
    planned = plan_transition(state([("grip", "missing")], [("grip", "missing")]))
    assert (planned.mode, planned.reason) == ("fallback", "fields grip failed after repair")


@pytest.mark.parametrize(
    ("attempts", "mode"),
    [(([("grip", "missing")],), "direct"), (([("grip", "missing")], [("grip", "empty")]), "repair")],
)
def test_soft_mode_hands_on_a_valid_loop_of_a_partial_prior(
    attempts: tuple[list[tuple[str, str]], ...], mode: str
) -> None:
    """Soft: a partial prior whose loop passes hands it on (direct, or repair when a repair ran)."""
    planned = plan_transition(state(*attempts, mode="soft"))
    assert (planned.hook, planned.mode) == (LOOP, mode)
    assert "fields grip failed" in planned.reason and "its loop is valid" in planned.reason


def test_soft_mode_falls_back_when_the_loop_itself_failed() -> None:
    """Soft: fallback only when the loop is missing or invalid."""
    planned = plan_transition(state([("loop", "too_long")], mode="soft"))
    assert (planned.hook, planned.mode, planned.reason) == (FALLBACK_HOOK, "fallback", "fields loop failed")


def test_skipped_prior_has_no_loop_to_hand_on() -> None:
    """A prior run without the contract (loop_mode none) falls back, saying why."""
    prior = TaskState(
        run_id="r",
        task_id="t",
        position=0,
        loop_mode="none",
        validation=Validation(status="skipped"),
        loop_output=LoopFields(),
    )
    planned = plan_transition(prior)
    assert planned.mode == "fallback" and "loop_mode none" in planned.reason


def test_a_next_action_the_session_already_asked_becomes_an_unasked_fallback_question() -> None:
    """A loop repeating a session goal (any case, spacing, end punctuation or markers) is replaced, never repeated."""
    from marsrag.chain.planner import FALLBACK_QUESTIONS, REPEATED, plan_next_action

    prior = state([])
    assert plan_next_action([prior], ["Another question?"])[1].hook == LOOP  # type: ignore[index]
    repeated = plan_next_action([prior], [f"  {LOOP.upper().rstrip('?')} [2] "])
    assert repeated is not None
    assert (repeated[1].hook, repeated[1].mode, repeated[1].reason) == (FALLBACK_HOOK, "fallback", REPEATED)
    asked = [LOOP, FALLBACK_HOOK]
    assert plan_next_action([prior], asked)[1].hook == FALLBACK_QUESTIONS[1]  # type: ignore[index]
    asked = [LOOP, *FALLBACK_QUESTIONS, f"{FALLBACK_HOOK} (follow-up 2)"]
    assert plan_next_action([prior], asked)[1].hook == f"{FALLBACK_HOOK} (follow-up 3)"  # type: ignore[index]


def test_asked_before_takes_the_goals_of_the_session_up_to_the_run() -> None:
    """Only the run's own session, oldest first, up to and including the run itself."""
    from datetime import timedelta

    from marsrag.chain.planner import asked_before
    from marsrag.state import RunRecord, utcnow

    now = utcnow()

    def run(run_id: str, goal: str, minutes: int, session: str = "s") -> RunRecord:
        return RunRecord(
            run_id=run_id,
            session_id=session,
            goal=goal,
            workflow="w",
            loop_mode="hard",
            created_at=now + timedelta(minutes=minutes),
        )

    runs = [run("c", "third", 2), run("x", "elsewhere", 1, "t"), run("b", "second", 1), run("a", "first", 0)]
    assert asked_before(runs, runs[2]) == ["first", "second"]
    assert asked_before([], runs[0]) == ["third"]
