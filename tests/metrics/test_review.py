"""The weekly review on scripted histories: metrics, change from the week before, rankings, failures, renderings.

The scripted history (tests/metrics/history.py) lies in ISO week 2026-W45 (D1 Monday 2026-11-02, D2 Tuesday).
The previous week, 2026-W44, gets one run here, worked out by hand:

- p1, session s9, support, Tuesday 2026-10-27, completed: t1 valid at once; t2 failed, repaired, still failed;
  t1->t2 direct. Executions 2, first valid 1, repaired 1; transitions 1, fallbacks 0; completed 1, offering 1,
  followed 0, downstream 0; one session of depth 1.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from marsrag.contract import ContractIssue
from marsrag.errors import InputError
from marsrag.metrics.definitions import METRIC_NAMES
from marsrag.metrics.review import (
    Ranking,
    last_complete_week,
    parse_week,
    render_html,
    render_markdown,
    weekly_review,
)
from marsrag.metrics.review_service import review
from marsrag.state import AttemptRecord, LoopFields, RunRecord, TaskState, TransitionRecord, Validation
from marsrag.store import RunStore, open_store
from tests.contract.samples import CONTENT
from tests.metrics.history import D1, D2, EXPECTED_ALL, EXPECTED_REVIEW, approx, write_history
from tests.metrics.test_failures import add_run

METRICS = METRIC_NAMES  # the six (helpful_rate and unsupported_rate have no chart)
P1 = datetime(2026, 10, 27, 10, 0, tzinfo=UTC)
EXPECTED_W44: dict[str, dict[str, Any]] = {
    "loop_schema_pass_rate": {"value": 0.5, "numerator": 1, "denominator": 2},
    "loop_follow_rate": {"value": 0.0, "numerator": 0, "denominator": 1},
    "downstream_action_rate": {"value": 0.0, "numerator": 0, "denominator": 1},
    "session_depth": {"value": 1.0, "p50": 1.0, "max": 1, "sessions": 1},
    "repair_rate": {"value": 0.5, "numerator": 1, "denominator": 2},
    "fallback_rate": {"value": 0.0, "numerator": 0, "denominator": 1},
}
#: W45 minus W44, value by value.
EXPECTED_CHANGE = {
    "loop_schema_pass_rate": 4 / 7 - 0.5,
    "loop_follow_rate": 1 / 3,
    "downstream_action_rate": 0.75,
    "session_depth": 5 / 3 - 1,
    "repair_rate": 3 / 7 - 0.5,
    "fallback_rate": 0.25,
}
#: The same changes as the reports print them (rates in percentage points).
CHANGE_TEXT = {
    "loop_schema_pass_rate": "+7.1 pp",
    "loop_follow_rate": "+33.3 pp",
    "downstream_action_rate": "+75.0 pp",
    "session_depth": "+0.67",
    "repair_rate": "-7.1 pp",
    "fallback_rate": "+25.0 pp",
}


def write_previous_week(store: RunStore) -> None:
    """p1 of the module docstring."""
    store.create_run(
        RunRecord(
            run_id="p1",
            session_id="s9",
            goal="goal of p1",
            workflow="support",
            loop_mode="hard",
            status="completed",
            created_at=P1,
            updated_at=P1,
        )
    )
    issue = ContractIssue(field="loop", code="missing", message="loop is missing")

    def task(task_id: str, position: int, attempts: list[tuple[str, str]]) -> TaskState:
        return TaskState(
            run_id="p1",
            task_id=task_id,
            position=position,
            loop_mode="hard",
            validation=Validation(status=attempts[-1][0]),  # type: ignore[arg-type]
            loop_output=LoopFields(**CONTENT),
            attempts=[
                AttemptRecord(
                    number=n + 1,
                    raw="raw",
                    status=status,  # type: ignore[arg-type]
                    errors=[] if status == "valid" else [issue],
                    kind=kind,  # type: ignore[arg-type]
                    created_at=P1,
                )
                for n, (status, kind) in enumerate(attempts)
            ],
            created_at=P1,
        )

    transition = TransitionRecord(
        run_id="p1",
        transition_source_task_id="t1",
        transition_target_task_id="t2",
        transition_mode="direct",
        transition_reason="direct",
        hook=CONTENT["loop"],
        created_at=P1,
    )
    store.save_task(task("t1", 0, [("valid", "answer")]), transition=transition)
    store.save_task(task("t2", 1, [("failed", "answer"), ("failed", "repair")]))


def test_metrics_change_and_daily_series(store: RunStore) -> None:
    """This week is all of the history; the week before is p1; change = this week - week before, per metric."""
    from marsrag.metrics.compute import compute_metrics
    from marsrag.metrics.review import day_window

    write_history(store)
    write_previous_week(store)
    result = weekly_review(store, "2026-W45")
    assert (result.week, result.previous_week) == ("2026-W45", "2026-W44")
    assert result.window.since == datetime(2026, 11, 2, tzinfo=UTC)
    assert result.window.until == datetime(2026, 11, 9, tzinfo=UTC)
    assert result.previous_window.since == datetime(2026, 10, 26, tzinfo=UTC)
    assert result.current.to_dict() == approx(EXPECTED_ALL)
    assert result.previous.to_dict() == approx(EXPECTED_W44)
    assert {name: result.change(name) for name in METRICS} == pytest.approx(EXPECTED_CHANGE)

    assert result.days == tuple(date(2026, 11, 2) + timedelta(days=n) for n in range(7))
    assert list(result.daily) == ["review", "support"]
    support, review_flow = result.daily["support"], result.daily["review"]
    assert [day is not None for day in support] == [True, True, False, False, False, False, False]
    for index, day in enumerate((D1, D2)):
        expected = compute_metrics(store, day_window(day.date(), day.date()), "support").to_dict()
        assert support[index] is not None and support[index].to_dict() == expected  # type: ignore[union-attr]
    assert review_flow[0] is None and review_flow[1] is not None
    assert review_flow[1].to_dict() == approx(EXPECTED_REVIEW)

    assert [f.run_id + "/" + f.task_id for f in result.failures] == ["r1/t2"]
    document = result.to_dict()
    assert document["change"] == pytest.approx(EXPECTED_CHANGE)
    assert document["metrics"] == approx(EXPECTED_ALL)


def test_a_week_with_no_data_before_has_null_changes(store: RunStore) -> None:
    """Without p1 the week before has no data: every change is None (n/a), never a fake 0."""
    write_history(store)
    result = weekly_review(store, "2026-W45")
    assert {name: result.change(name) for name in METRICS} == dict.fromkeys(METRICS)
    assert "| n/a |" in render_markdown(result)
    empty = weekly_review(store, "2026-W40")
    assert empty.daily == {} and empty.failures == () and empty.repairs_by_workflow == ()
    assert "No runs this week." in render_markdown(empty) and "<svg" not in render_html(empty)


def test_rankings_of_repairs_and_fallbacks(store: RunStore) -> None:
    """GROUP BY workflow and task: repairs are attempt 2 of kind repair; fallbacks are current fallback rows.

    Repairs in W45: r1/t2, r2/t1 and r5/t1 (its attempt 2; the operator repair is attempt 3). Executions per task:
    t1 in r1, r2, r3, r5 (r4's is skipped); t2 in r1, r2, r5. Fallbacks: r3's t1->t2 only (r5's was superseded),
    counted against the source task t1, out of the four current transitions (all from t1).
    """
    write_history(store)
    write_previous_week(store)  # W44's repair must not count in W45
    add_run(store, "x1", D2 + timedelta(days=1), [("t1", "valid", None)], workflow="triage")
    result = weekly_review(store, "2026-W45")
    assert result.repairs_by_workflow == (Ranking("support", None, 3, 7),)
    assert result.repairs_by_task == (Ranking("support", "t1", 2, 4), Ranking("support", "t2", 1, 3))
    assert result.fallbacks_by_workflow == (Ranking("support", None, 1, 4),)
    assert result.fallbacks_by_task == (Ranking("support", "t1", 1, 4),)
    assert result.repairs_by_task[0].name == "support / t1" and result.repairs_by_task[0].rate == 0.5

    before = weekly_review(store, "2026-W44")
    assert before.repairs_by_task == (Ranking("support", "t2", 1, 1),)
    assert before.fallbacks_by_workflow == ()


def test_markdown_report(store: RunStore) -> None:
    """Markdown: the six metrics with this week, the week before and the change; rankings; failures linked."""
    write_history(store)
    write_previous_week(store)
    text = render_markdown(weekly_review(store, "2026-W45"))
    assert text.startswith("# Loop review 2026-W45\n")
    for name in METRICS:
        (row,) = [line for line in text.splitlines() if line.startswith(f"| {name} |")]
        assert row.endswith(f"| {CHANGE_TEXT[name]} |"), row
    assert "| loop_schema_pass_rate | 57.1% | 4/7 | 50.0% | 1/2 | +7.1 pp |" in text
    assert "| session_depth | mean 1.67 (p50 1, max 3) | 3 sessions | mean 1.00 (p50 1, max 1) | 1 session |" in text
    assert "## Most repairs" in text and "| support / t1 | 2 | 4 | 50.0% |" in text
    assert "## Most fallbacks" in text and "| support | 1 | 4 | 25.0% |" in text
    assert "- [r1 / t2](/runs/r1#task-t2) **partial**: grip is missing" in text
    # Daily charts as tables with sparklines: support ran on Monday and Tuesday only.
    assert re.search(r"\| support \| `[▁-█]{2}·{5}` \| 50\.0% \(2/4\) \| 66\.7% \(2/3\) \| – \|", text)


def test_html_report_is_standalone_with_charts_and_escapes(store: RunStore) -> None:
    """HTML: no script, inline SVG per metric, the figures and changes, and a hostile goal as text."""
    write_history(store)
    write_previous_week(store)
    page = render_html(weekly_review(store, "2026-W45"))
    assert page.startswith("<!doctype html>") and "<style>" in page
    assert "<script" not in page.lower() and 'style="' not in page
    assert page.count("<svg") == len(METRICS)
    for name in METRICS:
        assert f'<tr data-metric="{name}">' in page and f'<figure data-metric="{name}">' in page
        assert f">{CHANGE_TEXT[name]}</td>" in page
    assert '<td class="num">57.1%</td><td class="num">4/7</td><td class="num">50.0%</td>' in page

    hostile = "<script>alert('x')</script> | *bold*"
    add_run(store, "x1", D2 + timedelta(days=1), [("t1", "failed", "<b>payoff</b> is empty")], goal=hostile)
    result = weekly_review(store, "2026-W45")
    page = render_html(result)
    assert "<script" not in page.lower() and "<b>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "&lt;b&gt;payoff&lt;/b&gt; is empty" in page
    assert '<a href="/runs/x1#task-t1">' in page and '<a href="/runs/r1#task-t2">' in page
    assert "support / t1" in page
    markdown = render_markdown(result)
    assert "&lt;script&gt;" in markdown and "\\| \\*bold\\*" in markdown


@pytest.mark.parametrize("week", ["2026-45", "2026W45", "2026-W5", "week 45", "2025-W53", "2026-W00", ""])
def test_a_bad_week_is_an_input_error(week: str) -> None:
    """Not YYYY-Www, or a week the year lacks: InputError with a one-line message."""
    with pytest.raises(InputError) as raised:
        parse_week(week)
    assert "ISO week" in str(raised.value) and "\n" not in str(raised.value)


def test_weeks_and_the_default_week() -> None:
    """ISO weeks (2026 has 53); the default is the last week that has ended."""
    assert parse_week("2026-W45") == date(2026, 11, 2)
    assert parse_week("2026-W53") == date(2026, 12, 28)
    assert parse_week("2021-W01") == date(2021, 1, 4)
    assert last_complete_week(datetime(2026, 11, 9, 0, 0, tzinfo=UTC)) == date(2026, 11, 2)  # Monday: W45 ended
    assert last_complete_week(datetime(2026, 11, 8, 23, 59, tzinfo=UTC)) == date(2026, 10, 26)  # Sunday: W44
    assert last_complete_week(datetime(2026, 11, 12, tzinfo=UTC)) == date(2026, 11, 2)


def test_the_default_week_on_a_store(store: RunStore) -> None:
    """Without --week, the review is of the last complete week before ``now``."""
    write_history(store)
    result = weekly_review(store, now=datetime(2026, 11, 11, tzinfo=UTC))
    assert result.week == "2026-W45" and result.current.to_dict() == approx(EXPECTED_ALL)


# -- the service behind `marsrag review` -------------------------------------------------------------------------


@pytest.fixture
def history_db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'history.db'}"
    with open_store(url) as opened:
        write_history(opened)
        write_previous_week(opened)
    return url


def test_service_writes_markdown_or_html(history_db: str, tmp_path: Path) -> None:
    """--out FILE.md / FILE.html write the report and return it; without --out the Markdown comes back."""
    markdown = review(db=history_db, week="2026-W45")
    assert markdown.startswith("# Loop review 2026-W45") and "+7.1 pp" in markdown
    md_file, html_file = tmp_path / "week.md", tmp_path / "week.HTML"
    assert review(db=history_db, week="2026-W45", out=str(md_file)) == md_file.read_text(encoding="utf-8")
    assert md_file.read_text(encoding="utf-8").split("Generated")[0] == markdown.split("Generated")[0]
    written = review(db=history_db, week="2026-W45", out=str(html_file))
    assert written == html_file.read_text(encoding="utf-8") and "<svg" in written
    default = review(db=history_db, now=datetime(2026, 11, 10, tzinfo=UTC))
    assert default.startswith("# Loop review 2026-W45")


def test_service_input_errors(history_db: str, tmp_path: Path) -> None:
    """A bad week, an unknown --out suffix, or an unwritable --out: one-line InputErrors."""
    for call, needle in (
        (lambda: review(db=history_db, week="45"), "is not an ISO week"),
        (lambda: review(db=history_db, week="2026-W45", out=str(tmp_path / "week.txt")), ".html or .md"),
        (lambda: review(db=history_db, week="2026-W45", out=str(tmp_path / "no" / "dir.md")), "cannot write"),
    ):
        with pytest.raises(InputError, match=re.escape(needle)) as raised:
            call()
        assert "\n" not in str(raised.value)
    assert not (tmp_path / "week.txt").exists()
