"""Server-sent events of a run (``GET /api/runs/{run_id}/stream``): the live view (:mod:`marsrag.views.live`), sent.

Each update is one event: ``id`` its cursor (``tasks-progress``: what a reconnecting ``EventSource`` sends back as
``Last-Event-ID``), ``event`` ``task`` or ``end``, ``data`` its JSON on one line. The store is polled every
:data:`POLL_SECONDS` (in a worker thread: the reads block), which is what carries updates across processes: a run
executing in a Celery worker writes its progress to the same store this server reads. A comment line every
:data:`HEARTBEAT_SECONDS` keeps proxies from closing a quiet stream. The stream ends after the run's ``end`` event,
or when the client goes away.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Final

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from marsrag.store.base import RunStore
from marsrag.views.live import Cursor, LiveUpdate, poll

__all__ = ["HEARTBEAT_SECONDS", "POLL_SECONDS", "event_stream", "format_event"]

#: Seconds between two reads of the run while it executes (the added latency of an update is half this on average).
POLL_SECONDS: Final = 0.2
#: Seconds without an event after which a comment line is sent.
HEARTBEAT_SECONDS: Final = 15.0
#: Milliseconds an ``EventSource`` waits before reconnecting after the connection drops.
RETRY_MS: Final = 1000


def format_event(update: LiveUpdate) -> str:
    """One update as a server-sent event (its JSON on one ``data`` line: JSON escapes every newline)."""
    data = json.dumps(update.data, ensure_ascii=False, separators=(",", ":"))
    return f"id: {update.cursor}\nevent: {update.kind}\ndata: {data}\n\n"


async def event_stream(
    request: Request,
    store: RunStore,
    run_id: str,
    cursor: Cursor,
    *,
    poll_seconds: float = POLL_SECONDS,
    heartbeat_seconds: float = HEARTBEAT_SECONDS,
) -> AsyncIterator[str]:
    """The events of run ``run_id`` after ``cursor`` until its end (see the module)."""
    yield f"retry: {RETRY_MS}\n\n"
    last_sent = time.monotonic()
    while True:
        result = await run_in_threadpool(poll, store, run_id, cursor)
        for update in result.updates:
            yield format_event(update)
        if result.updates:
            last_sent = time.monotonic()
        cursor = result.cursor
        if result.finished:
            return
        if time.monotonic() - last_sent >= heartbeat_seconds:
            yield ": keep-alive\n\n"
            last_sent = time.monotonic()
        if await request.is_disconnected():
            return
        await anyio.sleep(poll_seconds)
