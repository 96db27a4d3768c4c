"""Finding the runs a dead process left unfinished, so a starting server can have them executed again."""

from __future__ import annotations

from datetime import datetime, timedelta

from marsrag.liveness import is_stale
from marsrag.state import utcnow
from marsrag.store.base import RunStore

#: A pending run younger than this is left to the process that just queued it.
PENDING_GRACE = timedelta(minutes=1)


def unfinished_runs(store: RunStore, now: datetime | None = None) -> list[str]:
    """Ids of runs to execute again, oldest first: pending past :data:`PENDING_GRACE`, or running but stale.

    Handing one to an executor is always safe: the claim on the run lets one process execute it, and a
    stale run resumes from its committed tasks.
    """
    now = now or utcnow()
    found = [
        run
        for run in store.list_runs(statuses=("pending", "running"))
        if (run.status == "pending" and now - run.updated_at > PENDING_GRACE) or is_stale(run, now)
    ]
    return [run.run_id for run in reversed(found)]
