"""Recovery: runs a dead process left unfinished are found, and a restarted server finishes them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from marsrag.liveness import EXECUTOR_SILENT_AFTER, owner_id
from marsrag.runtime.executor import ThreadRunExecutor
from marsrag.runtime.recovery import ACCEPT_GRACE, Sweeper, unheld
from marsrag.state import RunRecord, utcnow
from marsrag.store import open_store
from tests._net import free_port
from tests.contract.samples import CONTENT

VALID = json.dumps({**CONTENT, "loop": "Which cache tier should we pre-warm first?"})
SECOND = json.dumps({**CONTENT, "loop": "Who signs off the pre-warm runbook?"})
THIRD = json.dumps({**CONTENT, "loop": "Should we alert on cold caches?"})
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def record(run_id: str, **fields: object) -> RunRecord:
    defaults: dict[str, object] = {"session_id": "s", "goal": "g", "workflow": "support_answer", "loop_mode": "hard"}
    return RunRecord(run_id=run_id, **{**defaults, **fields})  # type: ignore[arg-type]


def test_the_sweep_hands_over_exactly_the_runs_no_live_process_holds(tmp_path: Path) -> None:
    """Pending or running under a dead process, pending here but not queued here, or with no holder: handed over,
    oldest first, each once while the executor holds it; a dead process's pending run is adopted first."""
    with subprocess.Popen([sys.executable, "-c", "pass"]) as gone:
        gone.wait()
    dead, here = f"{socket.gethostname()}:{gone.pid}", owner_id()
    alive = f"{socket.gethostname()}:{os.getppid()}"  # the process that started this one: alive
    release = threading.Event()
    executed: list[str] = []
    entered = threading.Condition()

    def execute(run_id: str) -> None:
        with entered:
            executed.append(run_id)
            entered.notify_all()
        release.wait(60)

    executor = ThreadRunExecutor(execute, lambda *_: None, threads=8)  # type: ignore[arg-type,return-value]
    rows = [
        ("pending-dead", "pending", dead),
        ("pending-here", "pending", here),
        ("pending-alive", "pending", alive),
        ("pending-nobody", "pending", None),
        ("running-dead", "running", dead),
        ("running-alive", "running", alive),
        ("done", "completed", dead),
    ]
    try:
        with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
            for minute, (run_id, status, owner) in enumerate(rows):
                at = T0 + timedelta(minutes=minute)
                store.create_run(record(run_id, status=status, owner=owner, created_at=at, updated_at=at))
            sweeper = Sweeper(store, executor, interval=0)
            assert sweeper.sweep() == ["pending-dead", "pending-here", "pending-nobody", "running-dead"]
            assert store.get_run("pending-dead").owner == here  # adopted before it was handed over
            handed_back = store.get_run("running-dead")  # back to pending under this process, with the reason
            assert (handed_back.status, handed_back.owner) == ("pending", here)
            assert handed_back.status_reason is not None and dead in handed_back.status_reason
            assert sweeper.sweep() == []  # the executor holds them now
            with entered:  # a bounded wait for the executor's threads to take them (not a timing assertion)
                entered.wait_for(lambda: len(executed) == 4, timeout=60)
    finally:
        release.set()
        executor.shutdown(grace=30)
    assert sorted(executed) == ["pending-dead", "pending-here", "pending-nobody", "running-dead"]


def test_a_running_run_is_held_by_its_executors_liveness_not_by_whoever_was_given_it(tmp_path: Path) -> None:
    """A run this process's executor was given and a worker then claimed is unheld once that worker is gone.

    (The broker's executor says it holds a run for ten minutes after sending it; a worker that claimed the
    run and died must not be covered by that: the next sweep hands the run back.)
    """
    with subprocess.Popen([sys.executable, "-c", "pass"]) as gone:
        gone.wait()
    dead = f"{socket.gethostname()}:{gone.pid}"
    release = threading.Event()
    executor = ThreadRunExecutor(lambda _: release.wait(60), lambda *_: None, threads=1)  # type: ignore[arg-type,return-value]
    try:
        executor.submit("r")  # given to the executor: it holds it
        assert executor.holds("r")
        running = record("r", status="running", owner=dead)
        assert unheld(running, executor)  # claimed by a worker that died: unheld, whoever was given it
        assert not unheld(running.model_copy(update={"owner": owner_id()}), executor)  # its worker lives
        assert not unheld(record("r", status="pending", owner=dead), executor)  # still queued: held
        # Accepted here and not queued here: left to the request that stored it for ACCEPT_GRACE, then taken.
        accepted = record("q", status="pending", owner=owner_id(), updated_at=T0)
        assert not unheld(accepted, executor, now=T0 + ACCEPT_GRACE)
        assert unheld(accepted, executor, now=T0 + ACCEPT_GRACE + timedelta(seconds=1))
    finally:
        release.set()
        executor.shutdown(grace=30)


def test_a_running_run_held_elsewhere_is_handed_back_once_its_heartbeat_is_a_minute_old(tmp_path: Path) -> None:
    """On another host the executor's heartbeat decides: a silent one's run is handed back, a beating one's kept.

    A pending run's holder keeps no heartbeat: the same silence leaves it alone (it has ten minutes).
    """
    elsewhere = "another-host.internal:4242"
    now = utcnow()
    silent, beating = now - EXECUTOR_SILENT_AFTER - timedelta(seconds=5), now - timedelta(seconds=5)
    release = threading.Event()
    executor = ThreadRunExecutor(lambda _: release.wait(60), lambda *_: None, threads=1)  # type: ignore[arg-type,return-value]
    rows = [
        ("silent", "running", silent),
        ("beating", "running", beating),
        ("accepted-elsewhere", "pending", silent),
    ]
    try:
        with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
            for minute, (run_id, status, updated) in enumerate(rows):
                created = T0 + timedelta(minutes=minute)
                store.create_run(record(run_id, status=status, owner=elsewhere, created_at=created, updated_at=updated))
            sweeper = Sweeper(store, executor, interval=0)
            assert sweeper.sweep() == ["silent"]
            taken = store.get_run("silent")
            assert (taken.status, taken.owner) == ("pending", owner_id())
            assert taken.status_reason is not None and elsewhere in taken.status_reason
            # The beating executor beats on: still not handed back, whatever this process's executor holds.
            assert store.heartbeat_runs(["beating"], elsewhere) == {"beating"}
            assert sweeper.sweep() == []  # and the handed-back run is held by the executor now
            assert store.get_run("beating").owner == elsewhere
    finally:
        release.set()
        executor.shutdown(grace=30)


def test_the_sweep_leaves_a_run_this_process_cannot_execute_as_it_is(tmp_path: Path) -> None:
    """A stale run of a workflow this server's config does not define (a Flow's) is neither adopted nor handed on.

    Handed on, its resume would fail on the unknown workflow at every sweep; its flow resumes it instead.
    """
    with subprocess.Popen([sys.executable, "-c", "pass"]) as gone:
        gone.wait()
    dead = f"{socket.gethostname()}:{gone.pid}"
    handed: list[str] = []
    executor = ThreadRunExecutor(handed.append, lambda *_: None, threads=1)  # type: ignore[arg-type,return-value]
    try:
        with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
            store.create_run(record("flow-run", status="pending", owner=dead, workflow="support_flow"))
            store.create_run(record("yaml-run", status="pending", owner=dead, created_at=T0 + timedelta(minutes=1)))
            sweeper = Sweeper(store, executor, interval=0, runnable=lambda run: run.workflow != "support_flow")
            assert sweeper.sweep() == ["yaml-run"]
            assert store.get_run("flow-run").owner == dead  # not adopted either
    finally:
        executor.shutdown(grace=30)


def serve(
    tmp_path: Path,
    db: str,
    outputs: list[str],
    port: int,
    failpoints: str | None = None,
    threads: int | None = None,
    latency: float | None = None,
) -> subprocess.Popen[bytes]:
    """``marsrag serve`` on a replay script; with ``threads``, on the thread executor with that many threads."""
    script = tmp_path / f"llm-{port}.jsonl"
    step = {} if latency is None else {"latency": latency}
    script.write_text("".join(json.dumps({"output": output, **step}) + "\n" for output in outputs))
    env = {**os.environ}
    env.pop("MARSRAG_FAILPOINTS", None)
    env.pop("MARSRAG_BROKER", None)
    if failpoints:
        env["MARSRAG_FAILPOINTS"] = failpoints
    args = ["serve", "--port", str(port), "--db", db, "--llm", f"replay:{script}"]
    if threads is not None:  # a queue of runs on threads (the default, for the replay LLM, is the async executor)
        args += ["--executor", "thread", "--run-threads", str(threads)]
    return subprocess.Popen([sys.executable, "-m", "marsrag", *args], env=env, stderr=subprocess.PIPE)


def wait_until(check: object, what: str) -> None:
    assert callable(check)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}")


@pytest.mark.crewai
def test_a_restarted_server_finishes_the_run_its_killed_predecessor_left(tmp_path: Path) -> None:
    """The server dies (SIGKILL) right after the run's first task commits; the next server on the store resumes it."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    port = free_port()
    first = serve(tmp_path, db, [VALID], port, failpoints="task.after_commit:diagnose")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: httpx.get(f"{base}/health", timeout=2).status_code == 200, "the first server")
        run_id = httpx.post(f"{base}/api/runs", json={"goal": "latency"}, timeout=10).json()["run_id"]
        assert first.wait(timeout=120) == -signal.SIGKILL
    finally:
        first.kill()
        first.communicate()
    port = free_port()
    second = serve(tmp_path, db, [SECOND, THIRD], port)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: httpx.get(f"{base}/api/runs/{run_id}", timeout=5).json()["status"] == "completed",
            "the restarted server to finish the run",
        )
        document = httpx.get(f"{base}/api/runs/{run_id}", timeout=5).json()
    finally:
        second.terminate()
        second.communicate(timeout=60)
    assert [task["loop_output"]["loop"] for task in document["tasks"]] == [
        json.loads(out)["loop"] for out in (VALID, SECOND, THIRD)
    ]
    assert [len(task["attempts"]) for task in document["tasks"]] == [1, 1, 1]


def start(base: str, goal: str) -> str:
    """Start a run through the API; its id."""
    run_id: str = httpx.post(f"{base}/api/runs", json={"goal": goal}, timeout=10).json()["run_id"]
    return run_id


def start_at_once(base: str, goals: list[str]) -> list[str]:
    """Start runs through the API from threads at once (before the first can reach a commit); their ids."""
    barrier, started = threading.Barrier(len(goals)), {}

    def one(goal: str) -> None:
        barrier.wait()
        started[goal] = start(base, goal)

    threads = [threading.Thread(target=one, args=(goal,)) for goal in goals]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [started[goal] for goal in goals]


def runs_of(db: str) -> dict[str, dict[str, object]]:
    """``marsrag runs list --format json`` rows by run id (the CLI, in its own process)."""
    listed = subprocess.run(
        [sys.executable, "-m", "marsrag", "runs", "list", "--db", db, "--format", "json"],
        capture_output=True,
        check=True,
    )
    return {row["run_id"]: row for row in json.loads(listed.stdout)}


@pytest.mark.crewai
def test_runs_left_pending_by_a_killed_server_are_taken_at_once_by_the_next(tmp_path: Path) -> None:
    """Runs accepted but not started when the server dies are marked stale and executed by the next server at
    once (not only when it happens to start a minute after they were created)."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    port = free_port()
    first = serve(tmp_path, db, [VALID] * 15, port, threads=1)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: httpx.get(f"{base}/health", timeout=2).status_code == 200, "the first server")
        ids = start_at_once(base, [f"latency {i}" for i in range(5)])
        first.kill()  # SIGKILL right after accepting five runs on one thread: most are still queued
        assert first.wait(timeout=120) == -signal.SIGKILL
    finally:
        first.kill()
        first.communicate()
    rows = runs_of(db)
    left = [(str(rows[run_id]["status"]), rows[run_id]["stale"]) for run_id in ids]
    # Whatever had not finished (the one executing, the ones waiting in the queue) is stale.
    assert all(stale for status, stale in left if status != "completed"), left
    assert ("pending", True) in left, left
    port = free_port()
    second = serve(tmp_path, db, [SECOND] * 15, port)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: all(httpx.get(f"{base}/api/runs/{i}", timeout=5).json()["status"] == "completed" for i in ids),
            "the next server to finish every run",
        )
    finally:
        second.terminate()
        second.communicate(timeout=60)
    rows = runs_of(db)
    assert [(rows[run_id]["status"], rows[run_id]["stale"]) for run_id in ids] == [("completed", False)] * 5


def sigterm_ten_then_finish(
    tmp_path: Path, *, threads: int | None = None, latency: float | None = None
) -> Counter[str]:
    """Ten runs started on a server (``threads``, ``latency``: see :func:`serve`), SIGTERM, then the next server
    finishes them all.

    Returns the ten runs' statuses as the first server left them. Each run's tasks ran once in all (nothing
    redone by the second server) and none was left failed or running: asserted here.
    """
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    port = free_port()
    first = serve(tmp_path, db, [VALID] * 30, port, threads=threads, latency=latency)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: httpx.get(f"{base}/health", timeout=2).status_code == 200, "the first server")
        ids = start_at_once(base, [f"spike {i}" for i in range(10)])
        first.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal it caught: -SIGTERM is a clean stop.
        assert first.wait(timeout=120) in (0, -signal.SIGTERM)
    finally:
        first.kill()
        first.communicate()
    statuses = Counter(str(row["status"]) for run_id, row in runs_of(db).items() if run_id in ids)
    assert statuses["failed"] == 0 and statuses["running"] == 0, statuses
    assert statuses["completed"] + statuses["pending"] == 10, statuses
    port = free_port()
    second = serve(tmp_path, db, [SECOND] * 30, port)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: all(httpx.get(f"{base}/api/runs/{i}", timeout=5).json()["status"] == "completed" for i in ids),
            "the next server to finish every run",
        )
        documents = [httpx.get(f"{base}/api/runs/{i}", timeout=5).json() for i in ids]
    finally:
        second.terminate()
        second.communicate(timeout=60)
    for document in documents:
        assert [len(task["attempts"]) for task in document["tasks"]] == [1, 1, 1]
    return statuses


@pytest.mark.crewai
def test_sigterm_stops_at_the_next_commit_and_leaves_the_queue_pending(tmp_path: Path) -> None:
    """With ten runs queued, SIGTERM does not drain them: the executing run stops after its current task, the
    others stay pending (none failed), and the next server finishes them all without redoing a task."""
    statuses = sigterm_ten_then_finish(tmp_path, threads=1)
    # Draining the queue would have completed all ten; at most the one executing (and one more, should the
    # signal arrive between two runs) may finish before the server stops.
    assert statuses["pending"] >= 5, statuses


@pytest.mark.crewai
def test_sigterm_stops_every_run_of_the_async_executor_at_its_next_commit(tmp_path: Path) -> None:
    """The async executor (serve's default here) runs ten runs at once: on SIGTERM each stops after its current
    task's commit, left pending (none failed, none running), and the next server finishes them all, nothing redone."""
    sigterm_ten_then_finish(tmp_path, latency=0.3)
