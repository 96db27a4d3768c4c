"""Eight runs in eight processes into one store, on SQLite and on PostgreSQL: all complete, they overlap."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from marsrag.store import open_store

pytestmark = pytest.mark.crewai

WORKER = """
import json, sys, time
from pathlib import Path
from marsrag.llm.replay import ReplayLLM
from marsrag.runtime.runner import WorkflowRunner
from marsrag.store import open_store
from marsrag.tasks import load_config
url, barrier, count, index = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
answer = json.dumps({"hook": "Regions breach.", "grip": "Caches are cold.", "payoff": "Pre-warm them.",
                     "reinforce": "Staging proved it.", "loop": f"Which tier first for run {index}?"})
project = load_config()
with open_store(url) as store:
    (barrier / index).touch()
    while len(list(barrier.iterdir())) < count:  # start together: the runs must be able to overlap
        time.sleep(0.01)
    runner = WorkflowRunner(store, project, ReplayLLM.from_outputs([answer] * 3, latency=0.2))
    record = runner.run(f"goal {index}")
    print(record.run_id, record.status)
"""

COUNT = 8


def run_in_parallel(url: str, tmp_path: Path) -> list[str]:
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "MARSRAG_FAILPOINTS"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, url, str(barrier), str(COUNT), str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for i in range(COUNT)
    ]
    outputs = [proc.communicate(timeout=600) for proc in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()[-2000:]
    return [out.decode().split()[0] for out, _ in outputs]


def check(url: str, run_ids: list[str]) -> None:
    with open_store(url) as store:
        runs = [store.get_run(run_id) for run_id in run_ids]
        assert [run.status for run in runs] == ["completed"] * COUNT
        for run in runs:
            assert len(store.get_tasks(run.run_id)) == 3
            assert len(store.get_transitions(run.run_id)) == 2
            assert len(store.get_events(run.run_id)) == 3 + 2
        # Overlap: every run started before any run finished, so none waited for another to end.
        assert max(run.created_at for run in runs) < min(run.updated_at for run in runs)


def test_eight_processes_on_one_sqlite_file(tmp_path: Path) -> None:
    """WAL, busy timeout and immediate write transactions let eight runners write one file at once."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    open_store(url).close()  # migrate once up front; concurrent first opens are covered by the store suite
    check(url, run_in_parallel(url, tmp_path))


def test_eight_processes_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    """The same on the real PostgreSQL server."""
    open_store(postgres_url).close()
    check(postgres_url, run_in_parallel(postgres_url, tmp_path))
