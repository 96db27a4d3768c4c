"""Streamed answers, chunk by chunk, to whoever listens for the task they are written for.

When an LLM streams (CrewAI's ``stream=True`` path, or MarsRAG's in-process LLMs), each chunk of text reaches
the LLM boundary (:class:`marsrag.llm.boundary.BoundaryCalls`), which hands it here with the task the call was
made for. A listener registered for that task (the runner's progress publisher) gets every call's start (the
text restarts: a repair, a retried request), its chunks and its end. Nothing listens by default: a chunk nobody listens
for costs a dictionary lookup.

Listeners are keyed by the identity of CrewAI's task object, as the call journal's records are, and follow the
journal's ``owner`` mapping, so a coworker's chunks for work a hierarchical manager delegated reach the
delegating task's listener.
"""

from __future__ import annotations

import threading
from typing import Final, Protocol

from marsrag.integrations.calls import JOURNAL

__all__ = ["STREAMS", "StreamListener", "Streams"]


class StreamListener(Protocol):
    """What hears a task's streamed answers."""

    def call_started(self) -> None:
        """A new call for the task begins: any text heard so far belonged to an answer that is not this one."""

    def chunk(self, text: str) -> None:
        """The next piece of the answer being written."""

    def call_ended(self) -> None:
        """The call answered: its text is whole (what was held back between publishes can be shown now)."""


class Streams:
    """The listeners of the tasks being run, by the identity of CrewAI's task object."""

    def __init__(self) -> None:
        self._listeners: dict[int, StreamListener] = {}
        self._lock = threading.Lock()

    def listen(self, task: object, listener: StreamListener) -> None:
        """Send ``task``'s calls and chunks to ``listener`` (replacing any earlier one) until :meth:`forget`."""
        with self._lock:
            self._listeners[id(task)] = listener

    def forget(self, task: object) -> None:
        """Stop sending ``task``'s chunks anywhere."""
        with self._lock:
            self._listeners.pop(id(task), None)

    def _listener(self, task: object | None) -> StreamListener | None:
        if task is None or not self._listeners:
            return None
        return self._listeners.get(id(JOURNAL.owner(task)))

    def call_started(self, task: object | None) -> None:
        """A call for ``task`` is about to be sent (no-op when nobody listens)."""
        listener = self._listener(task)
        if listener is not None:
            listener.call_started()

    def call_ended(self, task: object | None) -> None:
        """A call for ``task`` answered (no-op when nobody listens)."""
        listener = self._listener(task)
        if listener is not None:
            listener.call_ended()

    def chunk(self, task: object | None, text: str) -> None:
        """A chunk of the answer to a call for ``task`` arrived (no-op when nobody listens or it is empty)."""
        if text:
            listener = self._listener(task)
            if listener is not None:
                listener.chunk(text)


#: The process's streams.
STREAMS: Final = Streams()
