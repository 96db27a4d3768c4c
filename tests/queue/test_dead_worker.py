"""A worker SIGKILLed mid-run: a live server's sweep hands its runs back, another worker finishes each once.

A ``marsrag serve --broker`` process sweeps every half second here (``MARSRAG_SWEEP_SECONDS``; 30 s in
production). The broker's own redelivery is an hour away (``MARSRAG_REDELIVER_AFTER=3600``, the default) and
the server's executor says it holds a run it sent for ten minutes: both far past the bounded waits below, so
the runs can only complete because the sweep found their worker gone and handed them back (before: 10 min 20 s
``running``, ``"stale": true``, with a new worker idle).
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from marsrag.queue.executor import CeleryRunExecutor
from marsrag.store import RunStore, open_store
from tests._net import free_port
from tests.contract.samples import CONTENT
from tests.queue.conftest import REDIS_URL, Process, serving, wait_for

pytestmark = pytest.mark.crewai

VALID = json.dumps({**CONTENT, "loop": "Which cache tier should we pre-warm first?"})
#: The tasks of the sample's default workflow, each run's three.
TASKS = ["diagnose", "recommend", "plan"]
#: A model that takes longer to answer than any wait here: the kill lands while the worker waits on it.
STUCK = {"output": VALID, "latency": 600}
#: The broker's redelivery left at its production default (an hour), out of reach of the waits here.
NO_REDELIVERY = {"MARSRAG_REDELIVER_AFTER": "3600"}


def executed_once(store: RunStore, run_id: str) -> None:
    """Each task of the run was committed once, with one attempt and one set of events; the run completed."""
    run = store.get_run(run_id)
    assert run.status == "completed", run.status_reason
    tasks = store.get_tasks(run_id)
    assert [task.task_id for task in tasks] == TASKS
    assert [len(task.attempts) for task in tasks] == [1, 1, 1]
    transitions = store.get_transitions(run_id)
    assert [(t.transition_source_task_id, t.transition_target_task_id) for t in transitions] == [
        ("diagnose", "recommend"),
        ("recommend", "plan"),
    ]
    per_task = Counter((event.task_id, event.name) for event in store.get_events(run_id) if event.task_id)
    assert per_task and set(per_task.values()) == {1}, per_task  # no event of a task stored twice


def test_a_sigkilled_workers_runs_are_handed_back_by_the_sweep_and_each_executed_once(
    tmp_path: Path, db_url: str, spawn: Callable[..., Process]
) -> None:
    """Worker A executes two runs and dies (SIGKILL) while waiting on its model, one task committed between them;
    the server's next sweep finds A gone and sends the runs again; idle worker B finishes both from their
    committed tasks: every task stored once, nothing redone, on SQLite and PostgreSQL."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = spawn("serve", "--port", str(port), "--db", db_url, env={**NO_REDELIVERY, "MARSRAG_SWEEP_SECONDS": "0.5"})
    # One quick answer, then a model that never answers in time: of the two runs A executes at once, exactly
    # one task commits before A is killed.
    worker_a = spawn(
        "worker",
        "--db",
        db_url,
        "--concurrency",
        "2",
        "--llm",
        _script(tmp_path / "a.jsonl", [VALID, STUCK, STUCK, STUCK]),
        env=NO_REDELIVERY,
        name="worker-a",
    )
    processes = [server, worker_a]

    def logs() -> str:
        return "\n".join(f"--- {p.log.name}\n{p.output()[-3000:]}" for p in processes)

    wait_for(serving(base), "the server", logs)
    run_ids = []
    for goal in ("Checkout latency breached its SLO", "Search latency breached its SLO"):
        started = httpx.post(f"{base}/api/runs", json={"goal": goal}, timeout=10)
        assert started.status_code == 202, started.text
        run_ids.append(started.json()["run_id"])

    with open_store(db_url) as store:
        a_pid = f":{worker_a.proc.pid}"

        def both_on_a_one_task_committed() -> bool:
            runs = [store.get_run(run_id) for run_id in run_ids]
            on_a = all(run.status == "running" and (run.owner or "").endswith(a_pid) for run in runs)
            return on_a and sum(len(store.get_tasks(run_id)) for run_id in run_ids) == 1

        wait_for(both_on_a_one_task_committed, "worker A to execute both runs, one task committed", logs)
        # Worker B waits idle; nothing sends it the runs but the sweep.
        worker_b = spawn(
            "worker",
            "--db",
            db_url,
            "--llm",
            _script(tmp_path / "b.jsonl", [VALID] * 5),
            env=NO_REDELIVERY,
            name="worker-b",
        )
        processes.append(worker_b)
        worker_a.proc.kill()
        assert worker_a.wait_dead() == -signal.SIGKILL

        # B's script holds exactly the five answers left: a task executed twice would run it out (and fail the run).
        wait_for(
            lambda: all(store.get_run(run_id).status in ("completed", "failed") for run_id in run_ids),
            "the handed-back runs to finish on worker B",
            logs,
        )
        b_pid = f":{worker_b.proc.pid}"
        for run_id in run_ids:
            executed_once(store, run_id)
            assert (store.get_run(run_id).owner or "").endswith(b_pid)
        rows = {row["run_id"]: row for row in httpx.get(f"{base}/api/runs", timeout=10).json()}
        assert [(rows[run_id]["status"], rows[run_id]["stale"]) for run_id in run_ids] == [("completed", False)] * 2


def _script(path: Path, steps: list[object]) -> str:
    """A replay LLM spec over ``steps`` (answers, or script steps with a latency) written to ``path``."""
    path.write_text("".join(json.dumps(step if isinstance(step, dict) else {"output": step}) + "\n" for step in steps))
    return f"replay:{path}"


def test_a_duplicate_job_of_a_run_executing_in_a_live_worker_is_a_no_op(
    tmp_path: Path, spawn: Callable[..., Process]
) -> None:
    """The run's job sent again while one worker executes it: the other (idle, ready) worker drops it, and the run
    completes once, on the first.

    Both workers are ready before the first job goes out: a worker still starting when the run ends would take the
    duplicate as a job of an ended run, and the drop this test is about would never be seen.
    """
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    slow = {"output": VALID, "latency": 1.5}
    workers = [
        spawn("worker", "--db", db, "--llm", _script(tmp_path / f"{name}.jsonl", [slow] * 3), name=f"worker-{name}")
        for name in ("a", "b")
    ]
    for worker in workers:
        wait_for(lambda worker=worker: " ready." in worker.output(), "the worker to be ready", worker.output)
    sender = CeleryRunExecutor.from_url(REDIS_URL)
    try:
        from marsrag.compose import open_runner
        from marsrag.settings import resolve_settings

        with open_runner(resolve_settings(llm="composer", db=db)) as runner:
            run_id = runner.start("Checkout latency breached its SLO").run_id
            sender.submit(run_id)

            def claimer() -> Process | None:
                owner = runner.store.get_run(run_id).owner or ""
                return next((w for w in workers if owner.endswith(f":{w.proc.pid}")), None)

            executing = wait_for(claimer, "a worker to claim the run", lambda: "\n".join(w.output() for w in workers))
            idle = next(w for w in workers if w is not executing)
            sender.submit(run_id)  # a duplicate: as a redelivery, or a second server's sweep, would send it
            wait_for(lambda: "duplicate job dropped" in idle.output(), "the idle worker to drop the job", idle.output)
            wait_for(
                lambda: runner.store.get_run(run_id).status in ("completed", "failed"), "the run", executing.output
            )
            executed_once(runner.store, run_id)
            assert (runner.store.get_run(run_id).owner or "").endswith(f":{executing.proc.pid}")
    finally:
        sender.shutdown()
