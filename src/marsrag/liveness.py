"""Who runs a run, and whether a ``running`` run has been abandoned by a dead process: read by the runtime
(claims, resume, recovery) and shown by the views."""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from marsrag.state import RunRecord, utcnow

#: A running run whose owner is on another host is stale when it has not committed for this long.
STALE_AFTER = timedelta(minutes=10)


def owner_id() -> str:
    """``host:pid`` of this process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    return True


def is_stale(run: RunRecord, now: datetime | None = None, stale_after: timedelta = STALE_AFTER) -> bool:
    """Whether a run left ``running`` was abandoned: its owner process is gone, or it went silent too long.

    On the owner's own host the process is checked directly; elsewhere the last heartbeat (every committed
    task bumps ``updated_at``) decides.
    """
    if run.status != "running":
        return False
    host, _, pid = (run.owner or "").rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        return not _alive(int(pid))
    return (now or utcnow()) - run.updated_at > stale_after
