"""The liveness rule: who holds a run or a task, and when that holder is gone (marsrag.liveness)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from marsrag.liveness import (
    EXECUTOR_SILENT_AFTER,
    HEARTBEAT_EVERY,
    STALE_AFTER,
    holder_gone,
    holds_here,
    is_stale,
    owner_id,
    silent_after,
)
from marsrag.state import RunRecord, RunStatus
from tests.store.records import run as stored_run

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
ELSEWHERE = "another-host.internal:4242"
SECOND = timedelta(seconds=1)


def dead_holder() -> str:
    """``host:pid`` of a process on this host that has exited."""
    with subprocess.Popen([sys.executable, "-c", "pass"]) as child:
        child.wait()
    return f"{socket.gethostname()}:{child.pid}"


def run(status: RunStatus, owner: str | None, *, silent: timedelta) -> RunRecord:
    """A run of ``status`` under ``owner`` whose last sign of life was ``silent`` before :data:`NOW`."""
    return stored_run(status=status, owner=owner, updated_at=NOW - silent)


def test_the_heartbeat_misses_several_beats_before_its_executor_is_gone() -> None:
    """A beating executor is given up only after several missed beats, and far sooner than a silent holder."""
    assert EXECUTOR_SILENT_AFTER >= 4 * HEARTBEAT_EVERY
    assert EXECUTOR_SILENT_AFTER < STALE_AFTER


def test_a_holder_on_this_host_is_its_process() -> None:
    """On its own host a holder is alive exactly while its process is, whatever its heartbeat says."""
    alive = f"{socket.gethostname()}:{os.getpid()}"
    ancient = NOW - 100 * STALE_AFTER
    assert not holder_gone(alive, ancient, NOW)
    assert not holder_gone(f"{alive}:token", ancient, NOW)  # an operator action's claim
    assert holder_gone(dead_holder(), NOW, NOW)  # dead: gone at once, its heartbeat fresh or not
    assert holder_gone(f"{dead_holder()}:token", NOW, NOW)
    assert holds_here(owner_id()) and holds_here(f"{owner_id()}:token") and not holds_here(alive + "0")


def test_a_holder_elsewhere_is_its_heartbeat() -> None:
    """On another host the heartbeat's age decides: gone once it is older than the given silence."""
    assert not holder_gone(ELSEWHERE, NOW - STALE_AFTER, NOW)
    assert holder_gone(ELSEWHERE, NOW - STALE_AFTER - SECOND, NOW)
    assert not holder_gone(ELSEWHERE, NOW - 50 * SECOND, NOW, timedelta(minutes=1))
    assert holder_gone(ELSEWHERE, NOW - 61 * SECOND, NOW, timedelta(minutes=1))
    assert holder_gone(None, NOW, NOW) and holder_gone("", NOW, NOW)  # nobody holds it


@pytest.mark.parametrize(
    ("status", "silent", "stale"),
    [
        # A running run's executor beats: a minute of silence is death, not minutes of a slow model.
        ("running", EXECUTOR_SILENT_AFTER - SECOND, False),
        ("running", EXECUTOR_SILENT_AFTER + SECOND, True),
        ("running", STALE_AFTER - SECOND, True),
        # A pending run's holder (the process that accepted it) keeps no heartbeat: it has the long grace.
        ("pending", EXECUTOR_SILENT_AFTER + SECOND, False),
        ("pending", STALE_AFTER - SECOND, False),
        ("pending", STALE_AFTER + SECOND, True),
        # A finished run is never stale.
        ("completed", 100 * STALE_AFTER, False),
        ("failed", 100 * STALE_AFTER, False),
    ],
)
def test_a_run_held_elsewhere_is_stale_after_its_holders_silence(
    status: RunStatus, silent: timedelta, stale: bool
) -> None:
    """A running run is stale after EXECUTOR_SILENT_AFTER without a beat, a pending one after STALE_AFTER."""
    assert is_stale(run(status, ELSEWHERE, silent=silent), NOW) is stale


def test_the_silence_allowed_follows_the_status_unless_given() -> None:
    """silent_after is the running run's short grace or the long one; an explicit stale_after overrides both."""
    assert silent_after(run("running", ELSEWHERE, silent=SECOND)) == EXECUTOR_SILENT_AFTER
    assert silent_after(run("pending", ELSEWHERE, silent=SECOND)) == STALE_AFTER
    assert is_stale(run("pending", ELSEWHERE, silent=3 * SECOND), NOW, stale_after=2 * SECOND)
    assert not is_stale(run("running", ELSEWHERE, silent=3 * SECOND), NOW, stale_after=timedelta(hours=1))


def test_a_run_held_on_this_host_is_stale_exactly_when_its_process_is_dead() -> None:
    """Running or pending, a holder on this host is checked directly: no waiting for its heartbeat to age."""
    for status in ("running", "pending"):
        assert is_stale(run(status, dead_holder(), silent=timedelta(0)), NOW)  # type: ignore[arg-type]
        assert not is_stale(run(status, owner_id(), silent=100 * STALE_AFTER), NOW)  # type: ignore[arg-type]
    assert is_stale(run("pending", None, silent=timedelta(0)), NOW)  # stored before owners were recorded
