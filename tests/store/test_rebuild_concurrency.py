"""``rebuild_rollups`` beside writers, on both backends: no deadlock or error on either side, the counts exact.

On PostgreSQL the rebuild used to lock ``runs`` and ``rollups`` in SHARE ROW EXCLUSIVE mode, which a writer's
``FOR UPDATE`` of a run's row does not wait for: the writer then held a run's row the rebuild's recount needed
while waiting for the rollups the rebuild held ("deadlock detected", 3 rebuilds in 16 beside one voter).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest

from marsrag.metrics.verify import verify
from marsrag.runtime.feedback import record_feedback
from marsrag.store import RunStore
from marsrag.store.conformance import in_threads
from marsrag.store.queries import Holder
from tests.store.records import attempt, event, run, task

#: Operations per writer: enough that writers and rebuilds overlap many times on a 2-core machine.
ROUNDS = 30
#: Seconds between two rebuilds (see rebuild below).
REBUILD_GAP_S = 0.05


def _completed(store: RunStore, run_id: str) -> None:
    store.create_run(run(run_id, session_id=f"s-{run_id}", status="completed"))
    store.save_task(task(run_id, "t1"), [event(run_id=run_id)])


def test_rebuilds_beside_votes_follows_repairs_and_task_commits_never_fail(
    store: RunStore, caplog: pytest.LogCaptureFixture
) -> None:
    """No error on either side, and no deadlock even retried (the store logs each retry): locks in one order."""
    caplog.set_level(logging.WARNING, logger="marsrag.store")
    for index in range(ROUNDS):
        _completed(store, f"voted-{index}")
        _completed(store, f"source-{index}")
    store.create_run(run("live", session_id="s-live", status="running", owner="host:1"))
    rebuilds = 0

    def vote() -> None:
        for index in range(ROUNDS):
            for rating in ("up", "down"):
                record_feedback(store, f"voted-{index}", on="answer", rating=rating, comment="again")

    def follow() -> None:
        for index in range(ROUNDS):
            follower = run(f"follower-{index}", session_id=f"s-source-{index}", followed_from=f"source-{index}")
            store.create_run(follower, [event(run_id=f"source-{index}", name="loop.action.followed")])

    def repair() -> None:
        for index in range(ROUNDS):
            repaired = task(f"voted-{index}", "t1")
            attempts = [*repaired.attempts, attempt(3, kind="operator_repair")]
            store.save_task(repaired.model_copy(update={"attempts": attempts}), [event(run_id=f"voted-{index}")])

    def commit() -> None:
        for index in range(ROUNDS):
            state = task("live", f"t{index}", index)
            store.save_task(state, [event(run_id="live", task_id=f"t{index}")], holder=Holder(run_owner="host:1"))

    def rebuild() -> None:
        nonlocal rebuilds
        while remaining or rebuilds == 0:
            store.rebuild_rollups()
            rebuilds += 1
            # A breath between rebuilds: SQLite's busy handler polls rather than queues, so rebuilds taking the
            # write lock back to back can starve a waiting writer past its busy timeout ("database is locked"),
            # which no operator's rebuild does. They still overlap every writer many times.
            time.sleep(REBUILD_GAP_S)

    writers: list[Callable[[], None]] = [vote, follow, repair, commit]
    remaining = len(writers)
    lock = threading.Lock()

    def work(index: int) -> None:
        nonlocal remaining
        if index == len(writers):
            rebuild()
            return
        try:
            writers[index]()
        finally:
            with lock:
                remaining -= 1

    assert in_threads(len(writers) + 1, work) == []
    assert rebuilds > 1
    assert [r.getMessage() for r in caplog.records if "deadlock" in r.getMessage()] == []
    verdict = verify(store)
    assert verdict.ok, [difference.line() for difference in verdict.differences]
    assert store.loop_counts()[()].followed == ROUNDS
