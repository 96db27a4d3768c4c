"""Who holds a run or a task, and whether the holder is gone: one rule for runs and operator-action claims,
read by the store (claims), the runtime (resume, recovery, the sweep) and the views (a ``stale`` mark).

A holder is named ``host:pid`` (a run's executor or the process that accepted it) or ``host:pid:token`` (an
operator action's claim). On the holder's own host the process is checked directly; elsewhere its last
heartbeat decides (every committed task bumps a run's ``updated_at``; a claim's is when it was taken).
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from marsrag.state import RunRecord, utcnow

#: A holder on another host is gone when it has not shown a sign of life for this long.
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


def holder_gone(
    holder: str | None, heartbeat: datetime, now: datetime | None = None, stale_after: timedelta = STALE_AFTER
) -> bool:
    """Whether ``holder`` (``host:pid`` or ``host:pid:token``) is gone: its process died, or it went silent.

    ``None`` (nobody holds it) counts as gone.
    """
    if not holder:
        return True
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host == socket.gethostname() and pid.isdigit():
        return not _alive(int(pid))
    return (now or utcnow()) - heartbeat > stale_after


def holds_here(holder: str | None) -> bool:
    """Whether ``holder`` is this very process."""
    return holder is not None and holder.split(":")[:2] == owner_id().split(":")


def is_stale(run: RunRecord, now: datetime | None = None, stale_after: timedelta = STALE_AFTER) -> bool:
    """Whether an unfinished run was abandoned: the process holding it is gone, or it went silent too long.

    A ``running`` run is held by its executor; a ``pending`` one by the process that accepted it (a run
    stored before owners were recorded for pending runs has none, and is abandoned). Finished runs are
    never stale.
    """
    if run.status not in ("running", "pending"):
        return False
    return holder_gone(run.owner, run.updated_at, now, stale_after)
