"""A reader's rating of a run's answer or of its next action, stored as a ``loop.feedback.recorded`` event.

The web page's thumbs, the API (``POST /api/runs/{id}/feedback``) and ``marsrag runs feedback`` all call
:func:`record_feedback`. A run is rated once it has finished (its answer is final); rating a part again
records a new event, and the latest one is the part's rating (the counts and the run page read it so).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from marsrag.errors import ActionConflictError, InputError
from marsrag.events.sinks import EventSink
from marsrag.liveness import is_stale
from marsrag.runtime.commit import record_events
from marsrag.state import FeedbackRating, FeedbackTarget, LoopEvent
from marsrag.store.base import RunStore
from marsrag.views.feedback import FEEDBACK_RATINGS, FEEDBACK_TARGETS

#: The longest comment kept, in characters (after trimming): a sentence or a paragraph, not a document.
MAX_COMMENT_CHARS = 2000

_NEWLINES = re.compile(r"\r\n?")


def record_feedback(
    store: RunStore,
    run_id: str,
    *,
    on: str,
    rating: str,
    comment: str | None = None,
    sinks: Iterable[EventSink] = (),
) -> LoopEvent:
    """Store a rating (``up`` or ``down``) of a finished run's ``answer`` or ``next_action``; return its event.

    The event names the run's last task under the contract (None when no task ran under it) and the run's
    loop mode; ``comment`` is kept trimmed (None when blank). The stored event is then given to ``sinks``.

    Raises:
        InputError: ``on`` or ``rating`` is not one of its values, or the comment is too long or holds a
            control character (``field`` names which).
        RunNotFoundError: no such run.
        ActionConflictError: the run is still pending or running, or ``next_action`` is rated on a run that
            has none (no task ran under the contract).
    """
    target = _target(on)
    score = _rating(rating)
    note = clean_comment(comment)
    run = store.get_run(run_id)
    if run.status in ("pending", "running") and not is_stale(run):
        raise ActionConflictError(f"run {run_id!r} is still {run.status}: rate it once it has finished")
    contract = [task for task in store.get_tasks(run_id) if task.validation.status != "skipped"]
    if target == "next_action" and not contract:
        raise ActionConflictError(f"run {run_id!r} has no next action to rate (no task ran under the contract)")
    last = contract[-1] if contract else None
    event = LoopEvent(
        name="loop.feedback.recorded",
        run_id=run.run_id,
        task_id=last.task_id if last else None,
        loop_contract_version=last.loop_contract_version if last else None,
        loop_mode=run.loop_mode,
        detail={"on": target, "rating": score, "comment": note},
    )
    record_events(store, [event], sinks)
    return event


def clean_comment(comment: str | None) -> str | None:
    """``comment`` as it is stored: carriage returns as newlines, trimmed; None when absent or blank.

    Raises:
        InputError: longer than :data:`MAX_COMMENT_CHARS`, or holding a control character but newline and tab.
    """
    if comment is None:
        return None
    text = _NEWLINES.sub("\n", comment).strip()
    if not text:
        return None
    if len(text) > MAX_COMMENT_CHARS:
        raise InputError(
            f"the comment has {len(text):,} characters; the limit is {MAX_COMMENT_CHARS:,}", field="comment"
        )
    for position, character in enumerate(text, start=1):
        if unicodedata.category(character) == "Cc" and character not in "\n\t":
            raise InputError(
                f"the comment contains a control character (\\x{ord(character):02x}) at character {position}: "
                "remove it",
                field="comment",
            )
    return text


def _target(on: str) -> FeedbackTarget:
    for target in FEEDBACK_TARGETS:
        if on == target:
            return target
    raise InputError(f"cannot rate {on!r}: rate answer or next_action", field="on")


def _rating(rating: str) -> FeedbackRating:
    for value in FEEDBACK_RATINGS:
        if rating == value:
            return value
    raise InputError(f"no rating {rating!r}: use up or down", field="rating")


__all__ = ["MAX_COMMENT_CHARS", "clean_comment", "record_feedback"]
