"""The six metrics on a scripted history, worked out by hand (tests/metrics/history.py), on both backends."""

from __future__ import annotations

from datetime import date, timedelta

from marsrag.metrics import Window
from marsrag.store import RunStore
from tests.metrics.history import (
    D1,
    D2,
    EMPTY,
    EXPECTED_ALL,
    EXPECTED_D2,
    EXPECTED_REVIEW,
    EXPECTED_SUPPORT,
    approx,
    write_history,
)


def test_all_history(store: RunStore) -> None:
    """Every metric over all history equals the hand-computed value, numerator and denominator."""
    from marsrag.metrics.compute import compute_metrics

    write_history(store)
    assert compute_metrics(store).to_dict() == approx(EXPECTED_ALL)


def test_by_workflow_and_null_denominators(store: RunStore) -> None:
    """Filtered by workflow; a workflow without contract tasks has null rates, not zeros."""
    from marsrag.metrics.compute import compute_metrics, metrics_by

    write_history(store)
    assert compute_metrics(store, workflow="support").to_dict() == approx(EXPECTED_SUPPORT)
    assert compute_metrics(store, workflow="review").to_dict() == approx(EXPECTED_REVIEW)
    grouped = metrics_by(store, by=("workflow",))
    assert {key: value.to_dict() for key, value in grouped.items()} == {
        ("support",): approx(EXPECTED_SUPPORT),
        ("review",): approx(EXPECTED_REVIEW),
    }


def test_time_windows_and_days(store: RunStore) -> None:
    """A window keeps the runs created in it; grouping by day gives the same figures as a one-day window."""
    from marsrag.metrics.compute import compute_metrics, metrics_by

    write_history(store)
    day2 = Window(since=D2 - timedelta(hours=9), until=D2 + timedelta(hours=15))
    assert compute_metrics(store, day2).to_dict() == approx(EXPECTED_D2)
    by_day = metrics_by(store, by=("day",))
    assert set(by_day) == {(date(2026, 11, 2),), (date(2026, 11, 3),)}
    assert by_day[(date(2026, 11, 3),)].to_dict() == approx(EXPECTED_D2)
    assert compute_metrics(store, Window(since=D2 + timedelta(days=5))).to_dict() == approx(EMPTY)
    assert compute_metrics(store, Window(until=D1)).to_dict() == approx(EMPTY)


def test_an_empty_store_has_null_rates(store: RunStore) -> None:
    """No runs: every rate null, session depth without sessions."""
    from marsrag.metrics.compute import compute_metrics

    assert compute_metrics(store).to_dict() == approx(EMPTY)


def test_a_later_run_counts_as_downstream_only_for_the_run_that_routed_to_its_workflow(store: RunStore) -> None:
    """A later run of the session in workflow W counts for a run only when that run's own loop routed to W."""
    from datetime import UTC, datetime

    from marsrag.metrics.compute import compute_metrics
    from marsrag.state import LoopFields, Routing, RunRecord, TaskState, Validation

    t0 = datetime(2026, 11, 5, 9, 0, tzinfo=UTC)
    plan = [
        ("a", "session-a", "support", 0, None),  # followed later in its session by b (review), but never routed there
        ("b", "session-a", "review", 1, None),
        ("c", "session-c", "support", 2, "review"),  # routes to review, but nothing ran after it in its session
    ]
    for run_id, session, workflow, minutes, routed in plan:
        at = t0 + timedelta(minutes=minutes)
        store.create_run(
            RunRecord(
                run_id=run_id,
                session_id=session,
                goal="g",
                workflow=workflow,
                loop_mode="hard",
                status="completed",
                created_at=at,
                updated_at=at,
            )
        )
        store.save_task(
            TaskState(
                run_id=run_id,
                task_id="t1",
                position=0,
                loop_mode="hard",
                validation=Validation(status="valid"),
                loop_output=LoopFields(loop="Next?"),
                routing=Routing(next_workflow=routed),
                created_at=at,
            )
        )
    assert compute_metrics(store).downstream_action_rate.to_dict() == {
        "value": 0.0,
        "numerator": 0,
        "denominator": 3,
    }
