"""Progress of a task being written: its streamed answer read as it grows, published for viewers.

The runner listens for each task's streamed chunks (:data:`marsrag.integrations.streams.STREAMS`) with a
:class:`TaskProgressListener`. The listener keeps the text of the current call, reads its sections with the
contract's own grammar (:func:`marsrag.contract.partial.read_partial`) and publishes a
:class:`~marsrag.state.TaskProgress` when a section appears, and otherwise at most every :data:`PUBLISH_EVERY`
seconds while text arrives (and once more when the call answers, with the whole text), so a fast model
costs a few writes a second, not one per token.

Publishing goes to the run store (:meth:`marsrag.store.RunStore.save_progress`): a viewer in any process (a
``serve`` next to a Celery worker) reads it from there, and a viewer that reconnects asks for what changed
after the last write it saw. A failed publish is dropped (a viewer misses a frame, the run loses nothing):
progress is never what is validated or stored as the task's answer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final

from marsrag.contract.partial import PartialAnswer, read_partial
from marsrag.errors import StoreError
from marsrag.state import TaskProgress, utcnow

__all__ = ["PUBLISH_EVERY", "Publish", "TaskProgressListener"]

#: Seconds between two publishes of the same task while its text grows and no new section appears.
PUBLISH_EVERY: Final = 0.25

#: Where a task's progress goes: the store's ``save_progress`` (or a test's list).
Publish = Callable[[TaskProgress], object]

_log = logging.getLogger(__name__)


class TaskProgressListener:
    """Hears one task's streamed answers and publishes what they hold so far (a StreamListener)."""

    def __init__(
        self, publish: Publish, *, run_id: str, task_id: str, position: int, every: float = PUBLISH_EVERY
    ) -> None:
        self._publish = publish
        self._run_id, self._task_id, self._position = run_id, task_id, position
        self._every = every
        self._lock = threading.Lock()
        self._calls = 0
        self._text = ""
        self._chunks = 0
        self._started = utcnow()
        self._published_at = 0.0
        self._shown: tuple[str, ...] = ()
        #: Whether text arrived since the last publish.
        self._held = False
        #: Whether any chunk was heard: a task whose LLM did not stream has no progress to show.
        self.heard = False

    def call_started(self) -> None:
        """A new call for the task: its text starts again (a repair or retried request is a new answer)."""
        with self._lock:
            self._calls += 1
            self._text, self._chunks, self._shown, self._held = "", 0, (), False
            self._started = utcnow()
            self._published_at = 0.0

    def chunk(self, text: str) -> None:
        """Add a chunk; publish when a section appears or :data:`PUBLISH_EVERY` passed since the last publish."""
        with self._lock:
            self.heard = True
            self._text += text
            self._chunks += 1
            self._held = True
            now = time.monotonic()
            if now - self._published_at < self._every and self._chunks > 1:
                # Between publishes only a new section label forces one: look for it cheaply, by a newline or
                # a quote (a JSON key or a labelled line starts after one), before reading the whole text.
                if not any(mark in text for mark in ('"', "\n", ":")):
                    return
                partial = read_partial(self._text)
                if tuple(partial.sections) == self._shown:
                    return
            else:
                partial = read_partial(self._text)
            progress = self._progress(partial, now)
        self._send(progress)

    def call_ended(self) -> None:
        """The call answered: publish its whole text if the last publish held some back."""
        with self._lock:
            if not self._held:
                return
            progress = self._progress(read_partial(self._text), time.monotonic())
        self._send(progress)

    def _progress(self, partial: PartialAnswer, now: float) -> TaskProgress:
        """What to publish now (the lock is held): the text's sections; nothing held back after it."""
        self._published_at = now
        self._shown = tuple(partial.sections)
        self._held = False
        return TaskProgress(
            run_id=self._run_id,
            task_id=self._task_id,
            position=self._position,
            call=max(self._calls, 1),
            sections=partial.sections,
            writing=partial.writing,
            chunks=self._chunks,
            chars=len(self._text),
            started_at=self._started,
        )

    def _send(self, progress: TaskProgress) -> None:
        try:
            self._publish(progress)
        except StoreError as error:  # a viewer misses a frame; the run goes on
            _log.warning("progress of run %s not published: %s", self._run_id, error)
