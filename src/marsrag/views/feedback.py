"""A run's current feedback, as the run page shows it: the latest rating of its answer and of its next action.

Read from the run's ``loop.feedback.recorded`` events (:mod:`marsrag.runtime.feedback` stores them): a later
rating of a part replaces the earlier one, as in the counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import get_args

from marsrag.state import FeedbackRating, FeedbackTarget, LoopEvent

#: What may be rated, in the order the run page shows them.
FEEDBACK_TARGETS: tuple[FeedbackTarget, ...] = get_args(FeedbackTarget)
FEEDBACK_RATINGS: tuple[FeedbackRating, ...] = get_args(FeedbackRating)

_SAID = {"up": "You rated this helpful.", "down": "You rated this not helpful."}


@dataclass(frozen=True)
class FeedbackView:
    """A part's current rating (``up``, ``down`` or None when not rated yet) and the sentence that says it."""

    on: FeedbackTarget
    rating: FeedbackRating | None = None

    @property
    def said(self) -> str:
        """The rating in words ("" when not rated)."""
        return _SAID[self.rating] if self.rating else ""


def current_ratings(events: Iterable[LoopEvent]) -> dict[FeedbackTarget, FeedbackRating]:
    """The latest rating of each rated part of a run, from its events in the order they were stored."""
    ratings: dict[FeedbackTarget, FeedbackRating] = {}
    for event in events:
        if event.name != "loop.feedback.recorded" or not event.detail:
            continue
        on, rating = event.detail.get("on"), event.detail.get("rating")
        if on in FEEDBACK_TARGETS and rating in FEEDBACK_RATINGS:
            ratings[on] = rating
    return ratings


def feedback_views(events: Iterable[LoopEvent]) -> dict[FeedbackTarget, FeedbackView]:
    """One :class:`FeedbackView` per target (unrated ones too), keyed by target."""
    ratings = current_ratings(events)
    return {on: FeedbackView(on, ratings.get(on)) for on in FEEDBACK_TARGETS}


__all__ = ["FEEDBACK_RATINGS", "FEEDBACK_TARGETS", "FeedbackView", "current_ratings", "feedback_views"]
