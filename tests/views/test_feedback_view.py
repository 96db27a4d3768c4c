"""The run page's feedback view: the latest rating of each part, read from the run's events."""

from __future__ import annotations

from marsrag.state import LoopEvent, RunRecord
from marsrag.views.feedback import FeedbackView, current_ratings, feedback_views
from marsrag.views.viewmodel import run_view


def rating(on: str, value: str, **detail: object) -> LoopEvent:
    return LoopEvent(name="loop.feedback.recorded", run_id="r", detail={"on": on, "rating": value, **detail})


def test_the_latest_rating_of_each_part_wins_and_other_events_are_ignored() -> None:
    """Later events replace earlier ones per part; events of other names or malformed details count for nothing."""
    events = [
        rating("answer", "up"),
        LoopEvent(name="loop.action.followed", run_id="r", detail={"follow_kind": "edited"}),
        rating("next_action", "down"),
        rating("answer", "down"),
        rating("answer", "sideways"),
        rating("summary", "up"),
        LoopEvent(name="loop.feedback.recorded", run_id="r"),
    ]
    assert current_ratings(events) == {"answer": "down", "next_action": "down"}


def test_every_part_has_a_view_and_says_its_rating_in_words() -> None:
    """Unrated parts say nothing; up and down have their sentence."""
    views = feedback_views([rating("next_action", "up")])
    assert views == {"answer": FeedbackView("answer"), "next_action": FeedbackView("next_action", "up")}
    assert (views["answer"].said, views["next_action"].said) == ("", "You rated this helpful.")
    assert FeedbackView("answer", "down").said == "You rated this not helpful."


def test_a_running_run_offers_no_feedback_and_a_finished_one_does() -> None:
    """While a run executes nothing can be rated: its view has no feedback; once finished, both parts."""
    running = RunRecord(run_id="r", session_id="s", goal="g", workflow="w", loop_mode="hard", status="running")
    assert run_view(running, [], [], events=[rating("answer", "up")]).feedback == {}
    done = running.model_copy(update={"status": "completed"})
    assert run_view(done, [], [], events=[rating("answer", "up")]).feedback["answer"].rating == "up"
