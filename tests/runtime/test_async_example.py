"""The shipped async example, run as users run it: a subprocess, runs gathered on one loop, a real SQLite file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from marsrag.store import open_store
from tests.conftest import REPO

pytestmark = pytest.mark.crewai

EXAMPLE = REPO / "examples" / "async" / "concurrent_runs.py"


def test_the_async_example_overlaps_its_runs_calls_and_stores_every_run(tmp_path: Path) -> None:
    """Three runs gathered on one event loop: each completed and stored valid, their LLM calls in flight together."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--runs", "3", "--latency", "0.2", "--db", db],
        capture_output=True, text=True, env=env, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    *runs, summary = done.stdout.strip().splitlines()
    assert [line.split()[1] for line in runs] == ["completed"] * 3
    # Sequential runs would have one call in flight at a time; gathered on the async path, all three overlap.
    assert summary == "9 LLM calls, at most 3 in flight at once"
    with open_store(db) as store:
        for line in runs:
            states = store.get_tasks(line.split()[0])
            assert [state.validation.status for state in states] == ["valid"] * 3
