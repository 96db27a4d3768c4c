"""Event sinks: callables applied in order after the events are stored. A failing sink never fails a run."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from marsrag.events.model import LoopEvent

log = logging.getLogger("marsrag.events")


class EventSink(Protocol):
    """Receives stored events, in order."""

    def __call__(self, events: Sequence[LoopEvent]) -> None: ...


class JsonlSink:
    """Appends each event as one JSON line to a file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def __call__(self, events: Sequence[LoopEvent]) -> None:
        lines = "".join(json.dumps(event.to_dict(), ensure_ascii=False) + "\n" for event in events)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(lines)


_captures: list[list[LoopEvent]] = []


def dispatch(events: Sequence[LoopEvent], sinks: Iterable[EventSink]) -> None:
    """Give stored events to every sink in order; a sink's exception is logged and skipped."""
    if not events:
        return
    for capture in _captures:
        capture.extend(events)
    for sink in sinks:
        try:
            sink(events)
        except Exception:  # noqa: BLE001 - observability must never fail a run
            log.exception("event sink %r failed; the run continues", sink)


@contextmanager
def capture_events() -> Iterator[list[LoopEvent]]:
    """Collect every event dispatched inside the block (the test double for sinks)."""
    captured: list[LoopEvent] = []
    _captures.append(captured)
    try:
        yield captured
    finally:
        _captures.remove(captured)
