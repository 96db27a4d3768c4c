"""Feedback: a reader's rating of a finished run's answer or next action, stored as loop.feedback.recorded."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from marsrag.errors import ActionConflictError, InputError, RunNotFoundError
from marsrag.events import capture_events
from marsrag.runtime.feedback import MAX_COMMENT_CHARS, record_feedback
from marsrag.state import RunRecord
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from marsrag.views.feedback import current_ratings
from tests.contract.samples import CONTENT
from tests.runtime.conftest import project_with
from tests.store.conftest import db_url  # noqa: F401 - both backends: a SQLite file and a PostgreSQL schema

pytestmark = pytest.mark.crewai


@pytest.fixture
def store(db_url: str) -> Iterator[RunStore]:  # noqa: F811 - the fixture imported above
    """A real store on each backend."""
    from marsrag.store import open_store

    with open_store(db_url) as opened:
        yield opened


def finished_run(store: RunStore, sample: ProjectConfig, mode: str = "hard") -> RunRecord:
    """A completed run of two tasks (diagnose, recommend), answered by the replay LLM."""
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    outputs = [json.dumps(CONTENT)] * 2 if mode != "none" else ["- a fact", "- another"]
    runner = WorkflowRunner(
        store, project_with(sample, ["diagnose", "recommend"], mode), ReplayLLM.from_outputs(outputs)
    )
    run = runner.run("API latency SLO breaches", workflow="flow")
    assert run.status == "completed"
    return run


def test_a_rating_is_stored_on_the_run_and_given_to_the_sinks(store: RunStore, sample: ProjectConfig) -> None:
    """The event names the run's last contract task and loop mode; detail holds on, rating and the trimmed comment."""
    run = finished_run(store, sample)
    with capture_events() as captured:
        event = record_feedback(store, run.run_id, on="answer", rating="up", comment="  Found the cause.\r\n ")
    assert (event.name, event.run_id, event.task_id, event.loop_mode) == (
        "loop.feedback.recorded",
        run.run_id,
        "recommend",
        "hard",
    )
    assert event.detail == {"on": "answer", "rating": "up", "comment": "Found the cause."}
    stored = [e for e in store.get_events(run.run_id) if e.name == "loop.feedback.recorded"]
    assert [e.detail for e in stored] == [event.detail]
    assert [e.name for e in captured] == ["loop.feedback.recorded"]


def test_the_latest_rating_of_a_part_is_its_rating(store: RunStore, sample: ProjectConfig) -> None:
    """Rating again records a second event; the current rating of each part is its latest, a blank comment none."""
    run = finished_run(store, sample)
    record_feedback(store, run.run_id, on="answer", rating="up")
    record_feedback(store, run.run_id, on="next_action", rating="up", comment="   ")
    record_feedback(store, run.run_id, on="answer", rating="down")
    events = store.get_events(run.run_id)
    assert [e.detail["comment"] for e in events if e.detail and e.name == "loop.feedback.recorded"] == [None] * 3
    assert current_ratings(events) == {"answer": "down", "next_action": "up"}


def test_a_comment_of_the_limit_is_kept_and_one_longer_refused(store: RunStore, sample: ProjectConfig) -> None:
    """2,000 characters pass; 2,001 raise InputError naming the comment, and nothing is stored."""
    run = finished_run(store, sample)
    assert record_feedback(store, run.run_id, on="answer", rating="up", comment="x" * MAX_COMMENT_CHARS).detail
    with pytest.raises(InputError, match="2,001 characters; the limit is 2,000") as refused:
        record_feedback(store, run.run_id, on="answer", rating="up", comment="x" * (MAX_COMMENT_CHARS + 1))
    assert refused.value.field == "comment"
    with pytest.raises(InputError, match=r"control character \(\\x00\)"):
        record_feedback(store, run.run_id, on="answer", rating="up", comment="a\x00b")
    assert sum(e.name == "loop.feedback.recorded" for e in store.get_events(run.run_id)) == 1


@pytest.mark.parametrize(
    ("on", "rating", "field", "message"),
    [("summary", "up", "on", "cannot rate 'summary'"), ("answer", "meh", "rating", "no rating 'meh'")],
)
def test_an_unknown_part_or_rating_is_refused(
    store: RunStore, sample: ProjectConfig, on: str, rating: str, field: str, message: str
) -> None:
    """Only answer/next_action and up/down: an InputError naming the field; nothing stored."""
    run = finished_run(store, sample)
    with pytest.raises(InputError, match=message) as refused:
        record_feedback(store, run.run_id, on=on, rating=rating)
    assert refused.value.field == field
    assert not [e for e in store.get_events(run.run_id) if e.name == "loop.feedback.recorded"]


def test_an_unknown_run_is_not_found(store: RunStore) -> None:
    """RunNotFoundError, as for every run id."""
    with pytest.raises(RunNotFoundError):
        record_feedback(store, "no-such-run", on="answer", rating="up")


def test_a_run_still_executing_cannot_be_rated(store: RunStore, sample: ProjectConfig) -> None:
    """A pending run held by a live process: ActionConflictError (its answer is not final yet)."""
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    runner = WorkflowRunner(store, project_with(sample, ["diagnose"]), ReplayLLM.from_outputs([]))
    pending = runner.start("latency", workflow="flow")
    with pytest.raises(ActionConflictError, match="still pending: rate it once it has finished"):
        record_feedback(store, pending.run_id, on="answer", rating="up")


def test_a_machine_first_run_has_an_answer_to_rate_but_no_next_action(store: RunStore, sample: ProjectConfig) -> None:
    """loop_mode none: the answer is rated with no task named; the next action does not exist (409)."""
    run = finished_run(store, sample, mode="none")
    assert record_feedback(store, run.run_id, on="answer", rating="down").task_id is None
    with pytest.raises(ActionConflictError, match="no next action to rate"):
        record_feedback(store, run.run_id, on="next_action", rating="down")
