"""Who holds a run or a task, and whether the holder is gone: one rule for runs and operator-action claims,
read by the store (claims), the runtime (resume, recovery, the sweep) and the views (a ``stale`` mark).

A holder is named ``host:pid`` (a run's executor or the process that accepted it) or ``host:pid:token`` (an
operator action's claim). On the holder's own host the process is checked directly; elsewhere its last
heartbeat decides. A ``running`` run's executor keeps a heartbeat: it bumps the run's ``updated_at`` every
:data:`HEARTBEAT_EVERY` while it executes the run (:mod:`marsrag.runtime.heartbeat`; every committed task bumps
it too), so it is gone once silent for :data:`EXECUTOR_SILENT_AFTER`, not after minutes of a slow model.
Holders that keep no heartbeat (the process that accepted a ``pending`` run; an operator action's claim, whose
heartbeat is when it was taken) are gone after :data:`STALE_AFTER`.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from marsrag.state import RunRecord, utcnow

#: How often the executor of a run bumps the run's heartbeat while it executes it.
HEARTBEAT_EVERY = timedelta(seconds=10)
#: A running run's executor on another host is gone when its heartbeat is this old: six beats missed, so a
#: store outage of the length PostgreSQL's failover takes (about 15 s), or a long pause, does not pass for death.
EXECUTOR_SILENT_AFTER = timedelta(seconds=60)
#: A holder that keeps no heartbeat (a pending run's accepting process, an operator action's claim) on another
#: host is gone when it has not shown a sign of life for this long.
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

    ``None`` (nobody holds it) counts as gone. On another host, silent means ``heartbeat`` is older than
    ``stale_after``.
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


def silent_after(run: RunRecord) -> timedelta:
    """How long the holder of ``run`` on another host may stay silent before it is gone.

    :data:`EXECUTOR_SILENT_AFTER` for a ``running`` run (its executor beats), else :data:`STALE_AFTER`.
    """
    return EXECUTOR_SILENT_AFTER if run.status == "running" else STALE_AFTER


def is_stale(run: RunRecord, now: datetime | None = None, stale_after: timedelta | None = None) -> bool:
    """Whether an unfinished run was abandoned: the process holding it is gone, or it went silent too long.

    A ``running`` run is held by its executor; a ``pending`` one by the process that accepted it (a run
    stored before owners were recorded for pending runs has none, and is abandoned). How long a holder on
    another host may be silent is ``stale_after``, by default :func:`silent_after`. Finished runs are never stale.
    """
    if run.status not in ("running", "pending"):
        return False
    return holder_gone(run.owner, run.updated_at, now, stale_after if stale_after is not None else silent_after(run))
