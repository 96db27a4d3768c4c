"""Event sinks: callables applied in order after the events are stored. A failing sink never fails a run."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from marsrag.state import LoopEvent

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


#: Sinks every dispatch also gives its events to, after the dispatcher's own (see :func:`installed`).
_installed: list[EventSink] = []


def dispatch(events: Sequence[LoopEvent], sinks: Iterable[EventSink]) -> None:
    """Give stored events to every sink in order, then to the installed ones; a sink's exception is logged."""
    if not events:
        return
    for sink in (*sinks, *_installed):
        try:
            sink(events)
        except Exception:  # noqa: BLE001 - observability must never fail a run
            log.exception("event sink %r failed; the run continues", sink)


@contextmanager
def installed(sink: EventSink) -> Iterator[EventSink]:
    """Give ``sink`` every event dispatched in this process, by any runner, until the block ends."""
    _installed.append(sink)
    try:
        yield sink
    finally:
        _installed.remove(sink)


class EventCapture(list[LoopEvent]):
    """A sink that keeps the events it is given, in order (a list of them)."""

    def __call__(self, events: Sequence[LoopEvent]) -> None:
        self.extend(events)


@contextmanager
def capture_events() -> Iterator[EventCapture]:
    """Collect every event dispatched inside the block: an :class:`EventCapture` installed as a sink.

    The test double for sinks, in the manner of structlog's ``capture_logs``::

        with capture_events() as events:
            runner.run("Checkout is slow")
        assert [event.name for event in events][0] == "loop.contract.validated"
    """
    with installed(EventCapture()) as capture:
        assert isinstance(capture, EventCapture)
        yield capture
