"""Runs and operator actions executed by real ``marsrag worker`` processes over the real Redis.

The test process stores runs and sends jobs through ``CeleryRunExecutor`` exactly as a server does; the
workers are separate processes with their own replay LLMs, sharing a SQLite file with the test.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from marsrag.compose import open_runner
from marsrag.errors import ActionConflictError, RunNotFoundError
from marsrag.queue.executor import CeleryRunExecutor
from marsrag.runtime.runner import WorkflowRunner
from marsrag.settings import resolve_settings
from tests.contract.samples import CONTENT
from tests.queue.conftest import REDIS_URL, Process, replay_script, wait_for

pytestmark = pytest.mark.crewai

VALID = json.dumps({**CONTENT, "loop": "Which cache tier should we pre-warm first?"})
PARTIAL = json.dumps({k: v for k, v in CONTENT.items() if k != "grip"})
REPAIRED = json.dumps({**CONTENT, "loop": "Who signs off the pre-warm runbook?"})
PLAN = json.dumps({**CONTENT, "loop": "Should we alert on cold caches?"})


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.fixture
def runner(db: str) -> Iterator[WorkflowRunner]:
    """The test's own runner on the shared store: it records runs; the workers execute them."""
    with open_runner(resolve_settings(llm="composer", db=db)) as opened:
        yield opened


@pytest.fixture
def executor(queue_env: dict[str, str]) -> Iterator[CeleryRunExecutor]:
    sender = CeleryRunExecutor.from_url(REDIS_URL)
    yield sender
    sender.shutdown()


def finished(runner: WorkflowRunner, run_id: str) -> Callable[[], bool]:
    return lambda: runner.store.get_run(run_id).status in ("completed", "failed")


def test_runs_and_actions_execute_on_a_worker_process(
    tmp_path: Path, db: str, runner: WorkflowRunner, executor: CeleryRunExecutor, spawn: Callable[..., Process]
) -> None:
    """A queued run completes on the worker; a repair sent to it returns the new state; its errors come back typed."""
    llm = replay_script(tmp_path / "worker.jsonl", [VALID, PARTIAL, PARTIAL, PLAN, REPAIRED])
    worker = spawn("worker", "--db", db, "--llm", llm)
    run = runner.start("Checkout latency breached its SLO")
    executor.submit(run.run_id)
    wait_for(finished(runner, run.run_id), "the run to finish on the worker", worker.output)
    done = runner.store.get_run(run.run_id)
    assert done.status == "completed", done.status_reason
    assert done.owner is not None and done.owner.endswith(f":{worker.proc.pid}")  # executed there, not here
    statuses = {task.task_id: task.validation.status for task in runner.store.get_tasks(run.run_id)}
    assert statuses["diagnose"] == "valid" and statuses["recommend"] in ("partial", "failed")

    repaired = executor.act("repair", run.run_id, "recommend")
    assert repaired.validation.status == "valid"
    assert repaired.attempts[-1].kind == "operator_repair"
    assert runner.store.get_tasks(run.run_id)[1] == repaired  # stored by the worker, read back here
    with pytest.raises(ActionConflictError, match="valid"):
        executor.act("repair", run.run_id, "diagnose")
    with pytest.raises(RunNotFoundError):
        executor.act("regenerate", "no-such-run", "diagnose")


def test_a_sigkilled_workers_run_is_redelivered_and_resumed_without_redoing_committed_tasks(
    tmp_path: Path, db: str, runner: WorkflowRunner, executor: CeleryRunExecutor, spawn: Callable[..., Process]
) -> None:
    """Worker A dies (SIGKILL) right after committing the first task; worker B gets the job and finishes the run.

    B's replay script holds only the outputs of the remaining tasks: had it redone the committed one, the
    run's answers would be shifted (and B's script would run out).
    """
    first = spawn(
        "worker",
        "--db",
        db,
        "--llm",
        replay_script(tmp_path / "a.jsonl", [VALID]),
        failpoints="task.after_commit:diagnose",
        name="worker-a",
    )
    run = runner.start("Checkout latency breached its SLO")
    executor.submit(run.run_id)
    assert first.wait_dead() == -signal.SIGKILL, first.output()
    crashed = runner.store.get_run(run.run_id)
    assert crashed.status == "running"
    (committed,) = runner.store.get_tasks(run.run_id)
    assert committed.task_id == "diagnose"

    second = spawn(
        "worker", "--db", db, "--llm", replay_script(tmp_path / "b.jsonl", [REPAIRED, PLAN]), name="worker-b"
    )
    wait_for(finished(runner, run.run_id), "the redelivered run to finish on worker B", second.output)
    done = runner.store.get_run(run.run_id)
    assert done.status == "completed", done.status_reason
    assert done.owner is not None and done.owner.endswith(f":{second.proc.pid}")
    tasks = runner.store.get_tasks(run.run_id)
    assert [task.task_id for task in tasks] == ["diagnose", "recommend", "plan"]
    assert tasks[0] == committed  # kept as A committed it: not redone
    assert [len(task.attempts) for task in tasks] == [1, 1, 1]
    assert [task.loop_output.loop for task in tasks] == [json.loads(out)["loop"] for out in (VALID, REPAIRED, PLAN)]
    transitions = runner.store.get_transitions(run.run_id)
    pairs = [(t.transition_source_task_id, t.transition_target_task_id) for t in transitions]
    assert pairs == [("diagnose", "recommend"), ("recommend", "plan")]


def test_an_unreachable_broker_is_a_503_and_the_run_stays_stored(tmp_path: Path, db: str, queue_env: object) -> None:
    """No broker: the API says so (503 queue_unavailable); the run is stored pending; reads keep working."""
    from fastapi.testclient import TestClient

    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings

    settings = WebSettings(resolve_settings(db=db, llm="composer", broker="redis://127.0.0.1:1/0"))
    with TestClient(create_app(settings)) as client:
        response = client.post("/api/runs", json={"goal": "Checkout latency breached its SLO"})
        assert response.status_code == 503, response.text
        assert response.json()["error"] == "queue_unavailable"
        assert "unreachable" in response.json()["detail"]
        (row,) = client.get("/api/runs").json()
        assert row["status"] == "pending"
        assert client.get(f"/runs/{row['run_id']}").status_code == 200


def test_a_run_refused_by_the_queue_is_sent_again_once_it_is_back(
    tmp_path: Path, db: str, spawn: Callable[..., Process]
) -> None:
    """A run stored pending after a 503 is not stranded: the server's sweep sends it once the broker answers,
    and a worker executes it (before: it stayed pending until some later restart of the server)."""
    import subprocess

    from fastapi.testclient import TestClient

    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings
    from tests._net import free_port

    port = free_port()
    broker = f"redis://127.0.0.1:{port}/0"
    settings = WebSettings(resolve_settings(db=db, llm="composer", broker=broker), sweep_seconds=0.2)
    with TestClient(create_app(settings)) as client:
        response = client.post("/api/runs", json={"goal": "Checkout latency breached its SLO"})
        assert response.status_code == 503, response.text
        (row,) = client.get("/api/runs").json()
        assert row["status"] == "pending"
        redis = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        try:
            worker = spawn(
                "worker", "--db", db, "--broker", broker, "--llm", replay_script(tmp_path / "w.jsonl", [VALID] * 3)
            )
            wait_for(
                lambda: client.get(f"/api/runs/{row['run_id']}").json()["status"] == "completed",
                "the swept run to complete on the worker",
                worker.output,
            )
            worker.stop()
        finally:
            redis.terminate()
            redis.wait(30)


@pytest.mark.parametrize(
    ("args", "needle"),
    [((), "no broker"), (("--broker", "amqp://127.0.0.1//"), "redis://"), (("--concurrency", "0"), "--concurrency")],
)
def test_bad_worker_settings_are_one_line_errors_with_exit_2(args: tuple[str, ...], needle: str) -> None:
    """No broker, a broker that is not Redis, a bad concurrency: one line on stderr, exit 2, no worker."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "MARSRAG_BROKER"}
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "worker", *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr and "Traceback" not in proc.stderr
