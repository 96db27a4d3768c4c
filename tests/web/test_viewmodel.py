"""The UI view model mapper on its own: stored state in, cards, badge, next action and operator action out."""

from __future__ import annotations

from typing import Any

import pytest

from marsrag.contract import ContractIssue
from marsrag.state import FALLBACK_HOOK, AttemptRecord, LoopFields, RunRecord, TaskState, Validation
from marsrag.state import TransitionRecord as Transition
from marsrag.views.viewmodel import (
    NEXT_ACTION_HEADING,
    SECTION_TITLES,
    next_action_card,
    operator_action,
    run_view,
    section_cards,
    status_badge,
    task_view,
)
from tests.contract.samples import CONTENT
from tests.store.records import CALL

FIELDS = ("hook", "grip", "payoff", "reinforce", "loop")


def state(status: str = "valid", task_id: str = "diagnose", position: int = 0, **changes: Any) -> TaskState:
    """A stored task state with the sample content; invalid statuses blank the sections named in ``failing``."""
    failing: list[str] = changes.pop("failing", [])
    fields = {name: (None if name in failing else value) for name, value in CONTENT.items()}
    errors = [ContractIssue(field=name, code="missing_field", message=f"{name} is missing") for name in failing]
    values: dict[str, Any] = {
        "run_id": "r",
        "task_id": task_id,
        "position": position,
        "agent": "analyst",
        "loop_mode": "hard",
        "validation": Validation(status=status, errors=errors),  # type: ignore[arg-type]
        "loop_output": LoopFields(**fields),
        "attempts": [AttemptRecord(number=1, raw="raw answer", status=status, errors=errors)],  # type: ignore[arg-type]
    }
    return TaskState(**{**values, **changes})


def transition(
    source: str, target: str, mode: str = "direct", hook: str = CONTENT["loop"], **changes: Any
) -> Transition:
    return Transition(
        run_id="r",
        transition_source_task_id=source,
        transition_target_task_id=target,
        transition_mode=mode,  # type: ignore[arg-type]
        transition_reason=f"{mode} reason",
        hook=hook,
        **changes,
    )


RUN = RunRecord(
    run_id="r", session_id="s", goal="latency", workflow="support_answer", loop_mode="hard", status="completed"
)


def test_cards_come_in_the_fixed_order_with_their_exact_titles() -> None:
    """Hook, Grip, Payoff, Reinforce, Loop: five cards, each with its field's text."""
    cards = section_cards(state())
    assert SECTION_TITLES == ("Hook", "Grip", "Payoff", "Reinforce", "Loop")
    assert [(card.field, card.title) for card in cards] == list(zip(FIELDS, SECTION_TITLES, strict=True))
    assert [card.text for card in cards] == list(CONTENT.values())
    assert all(card.ok and card.problem is None for card in cards)


@pytest.mark.parametrize(
    ("status", "label", "action"),
    [
        ("valid", "Valid", None),
        ("partial", "Partial", ("regenerate", "Regenerate section")),
        ("failed", "Failed", ("repair", "Run repair task")),
        ("skipped", "No contract", None),
    ],
)
def test_every_status_has_a_worded_badge_and_its_operator_action(
    status: str, label: str, action: tuple[str, str] | None
) -> None:
    """The badge shows the stored status in words; partial offers regenerate, failed offers repair."""
    badge = status_badge(status)
    assert (badge.status, badge.label) == (status, label) and badge.symbol and badge.description
    chosen = operator_action(status)
    assert ((chosen.kind, chosen.label) if chosen else None) == action


def test_a_partial_task_marks_its_failing_cards_and_explains_the_fallback() -> None:
    """Failing sections are flagged with their problem; the message names them and the fallback question."""
    partial = state("partial", failing=["grip", "payoff"])
    view = task_view(partial, transition_out=transition("diagnose", "recommend", "fallback", hook=FALLBACK_HOOK))
    problems = {card.field: card.problem for card in view.cards}
    assert problems == {
        "hook": None,
        "grip": "grip is missing",
        "payoff": "payoff is missing",
        "reinforce": None,
        "loop": None,
    }
    assert [card.ok for card in view.cards] == [True, False, False, True, True]
    assert view.fallback_message is not None
    assert "partial" in view.fallback_message and "grip, payoff sections" in view.fallback_message
    assert "recommend" in view.fallback_message and FALLBACK_HOOK in view.fallback_message
    assert view.action is not None and view.action.label == "Regenerate section"
    assert view.problems == ("Grip: grip is missing", "Payoff: payoff is missing")


def test_a_failed_last_task_says_the_runs_next_action_falls_back() -> None:
    """With no task after it, the message says the run's next action is the fallback question."""
    view = task_view(state("failed", failing=["grip", "payoff", "reinforce"]), is_last=True)
    assert view.fallback_message is not None and FALLBACK_HOOK in view.fallback_message
    assert view.action is not None and (view.action.kind, view.action.label) == ("repair", "Run repair task")


def test_a_soft_partial_whose_loop_passed_says_the_next_step_used_it() -> None:
    """A partial task whose loop was handed on directly says so instead of claiming a fallback."""
    view = task_view(state("partial", failing=["grip"]), transition_out=transition("diagnose", "recommend"))
    assert view.fallback_message is not None and "used it" in view.fallback_message
    assert FALLBACK_HOOK not in view.fallback_message


def test_a_valid_task_has_no_fallback_message_and_no_action() -> None:
    """Nothing to fix: no message, no button."""
    view = task_view(state(), transition_in=transition("x", "diagnose", "repair"))
    assert view.fallback_message is None and view.action is None
    assert view.transition_in is not None and view.transition_in.mode == "repair"


def test_a_skipped_task_shows_its_machine_output_instead_of_cards() -> None:
    """loop_mode none: no cards, the raw machine output, the No contract badge."""
    skipped = state("skipped", loop_mode="none", loop_output=LoopFields(), rendered="- fact one\n- fact two")
    view = task_view(skipped)
    assert view.cards == () and view.machine_output == "- fact one\n- fact two"
    assert view.badge.label == "No contract" and view.action is None and view.fallback_message is None


def test_the_next_action_card_is_the_last_contract_tasks_loop() -> None:
    """Valid last task: its loop under the spec's heading, mode direct, no note."""
    card = next_action_card(
        [state(), state(task_id="recommend", position=1, loop_output=LoopFields(**{**CONTENT, "loop": "Next?"}))]
    )
    assert card is not None
    assert (card.heading, card.text, card.mode, card.note, card.source_task_id) == (
        NEXT_ACTION_HEADING,
        "Next?",
        "direct",
        None,
        "recommend",
    )
    assert NEXT_ACTION_HEADING == "Next recommended question/action"


def test_the_next_action_falls_back_when_the_last_loop_is_unusable() -> None:
    """A failed last task: the fallback question, with a note saying why."""
    card = next_action_card([state(), state("failed", task_id="plan", position=1, failing=["loop", "grip", "payoff"])])
    assert card is not None and (card.text, card.mode) == (FALLBACK_HOOK, "fallback")
    assert card.note is not None and "fallback" in card.note


def test_a_machine_first_run_has_no_next_action() -> None:
    """Only skipped tasks: no card."""
    assert next_action_card([state("skipped", loop_mode="none", loop_output=LoopFields())]) is None


def test_run_view_maps_tasks_transitions_and_superseded_rows() -> None:
    """Task blocks in order with their incoming current transition; superseded rows listed apart."""
    tasks = [
        state("failed", failing=["grip", "payoff", "reinforce"]),
        state(task_id="recommend", position=1, hook_source="fallback"),
    ]
    transitions = [
        transition("diagnose", "recommend", "fallback", hook=FALLBACK_HOOK, superseded=True),
        transition("diagnose", "recommend", "repair"),
    ]
    view = run_view(RUN, tasks, transitions)
    assert [task.task_id for task in view.tasks] == ["diagnose", "recommend"]
    assert view.tasks[1].transition_in is not None and view.tasks[1].transition_in.mode == "repair"
    assert [t.mode for t in view.superseded] == ["fallback"]
    assert view.next_action is not None and view.next_action.source_task_id == "recommend"
    assert view.badge_counts == {"failed": 1, "valid": 1}
    assert not view.in_progress


def test_a_running_run_shows_progress_and_no_next_action_yet() -> None:
    """While a run executes its next action is not known: no card; the page is in progress."""
    from marsrag.liveness import owner_id

    running = RUN.model_copy(update={"status": "running", "owner": owner_id()})
    view = run_view(running, [state()], [])
    assert view.in_progress and view.next_action is None
    # The first task, done while the run goes on, is not treated as the run's last.
    assert task_view(state("failed"), is_last=False).fallback_message is not None


def test_each_attempt_carries_its_llm_call_line() -> None:
    """The attempts' call lines, in order: the known call in full, nothing for an attempt with none known."""
    attempts = [
        AttemptRecord(number=1, raw="r1", status="failed", **CALL),
        AttemptRecord(number=2, raw="r2", status="valid", kind="repair"),
    ]
    view = task_view(state(attempts=attempts))
    assert [(a.number, a.call) for a in view.attempts] == [
        (1, "smollm2 @ 127.0.0.1:8088 · json_object (json_schema, grammar refused) · 2,950 ms · 412+96 tokens · stop"),
        (2, ""),
    ]
