"""Event sinks: callables applied in order after the events are stored. A failing sink never fails a run.

A sink that fails is reported once per run, in one line (a warning on ``marsrag.events``): a run of three
tasks with its events file unwritable says so once, not in three tracebacks. The traceback of every failure
is logged at DEBUG.
"""

from __future__ import annotations

import inspect
import json
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

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

    def __repr__(self) -> str:
        return f"JsonlSink({str(self.path)!r})"


#: Sinks every dispatch also gives its events to, after the dispatcher's own (see :func:`installed`).
_installed: list[EventSink] = []


def dispatch(events: Sequence[LoopEvent], sinks: Iterable[EventSink]) -> None:
    """Give stored events to every sink in order, then to the installed ones; a sink's exception is logged.

    Logged as one warning line the first time a sink fails for a run, at DEBUG (with the traceback) after.
    """
    if not events:
        return
    for sink in (*sinks, *_installed):
        try:
            sink(events)
        except Exception as error:  # noqa: BLE001 - observability must never fail a run
            _report(sink, events, error)


#: How many failed runs are remembered per sink, so a long-lived server reports each once without growing.
_REMEMBERED = 10_000
_reported: weakref.WeakKeyDictionary[Any, OrderedDict[str, None]] = weakref.WeakKeyDictionary()
_reported_lock = threading.Lock()


def _report(sink: EventSink, events: Sequence[LoopEvent], error: Exception) -> None:
    runs = sorted({event.run_id for event in events})
    with _reported_lock:
        try:
            seen = _reported.setdefault(sink, OrderedDict())
        except TypeError:  # a sink that cannot be weakly referenced: reported every time
            seen = OrderedDict()
        new = [run_id for run_id in runs if run_id not in seen]
        for run_id in new:
            seen[run_id] = None
        while len(seen) > _REMEMBERED:
            seen.popitem(last=False)
    name = _sink_name(sink)
    if new:
        cause = " ".join(f"{type(error).__name__}: {error}".split())
        log.warning(
            "event sink %s failed for run %s (%s); the run continues, without this sink's copy of its events",
            name,
            ", ".join(new),
            cause,
        )
    log.debug("event sink %s failed for run %s", name, ", ".join(runs), exc_info=error)


def _sink_name(sink: EventSink) -> str:
    """How a sink is named in reports: its repr when its class defines one, else its function or class name."""
    if inspect.isroutine(sink):
        return str(getattr(sink, "__name__", type(sink).__qualname__))
    if "__repr__" in type(sink).__dict__:
        return repr(sink)
    return type(sink).__qualname__


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
