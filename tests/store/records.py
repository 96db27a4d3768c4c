"""Record builders for the store tests: the conformance kit's own (``marsrag.store.conformance.records``)."""

from __future__ import annotations

from marsrag.store.conformance.records import (
    CALL,
    PLUS_TWO,
    T0,
    attempt,
    aware_utc,
    bare_task,
    event,
    run,
    task,
    transition,
)

__all__ = ["CALL", "PLUS_TWO", "T0", "attempt", "aware_utc", "bare_task", "event", "run", "task", "transition"]
