"""Short run ids: ``runs list`` at 80 columns never wraps an id, and every command takes a unique prefix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from marsrag.store import open_store
from marsrag.store.conformance.records import run

#: Two runs sharing their first 10 characters (their short ids are 11 long), and three ordinary ones.
TWINS = ("3f2a9c01aa" + "0" * 22, "3f2a9c01aa" + "1" * 22)


def marsrag(*args: str, columns: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": str(columns)}
    proc = subprocess.run([sys.executable, "-m", "marsrag", *args], capture_output=True, env=env, check=False)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A real SQLite store holding five runs, two of them with a long common prefix."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with open_store(url) as store:
        for run_id in (*TWINS, *(uuid.uuid4().hex for _ in range(3))):
            store.create_run(run(run_id, goal="Checkout got slow after the last deploy " * 2, status="completed"))
    return url


@pytest.mark.parametrize("columns", [80, 100])
def test_at_80_and_100_columns_each_id_is_on_one_line_and_runs_show_takes_it(db: str, columns: int) -> None:
    """Each run's short id is whole on one line of the table, and ``runs show`` finds the run by it (80, 100)."""
    rows = json.loads(marsrag("runs", "list", "--db", db, "--format", "json", columns=columns).stdout)
    assert {row["short_id"] for row in rows if row["run_id"] in TWINS} == {TWINS[0][:11], TWINS[1][:11]}
    listed = marsrag("runs", "list", "--db", db, columns=columns)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert all(len(line) <= columns for line in lines)
    for row in rows:
        assert len(row["short_id"]) >= 8 and row["run_id"].startswith(row["short_id"])
        assert sum(line.split()[:1] == [row["short_id"]] for line in lines) == 1
        shown = marsrag("runs", "show", row["short_id"], "--db", db, "--format", "json", columns=columns)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["run_id"] == row["run_id"]


def test_a_wide_terminal_shows_whole_ids(db: str) -> None:
    """At 200 columns the table shows every full id."""
    listed = marsrag("runs", "list", "--db", db, columns=200).stdout
    rows = json.loads(marsrag("runs", "list", "--db", db, "--format", "json", columns=200).stdout)
    assert all(row["run_id"] in listed for row in rows)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("runs", "show", "3f2a9c01"), "ambiguous"),
        (("runs", "show", "0123abcd"), "no run '0123abcd'"),
        (("runs", "show", "3f2a9c01a%"), "no run"),
        (("resume", "3f2a9c01"), "ambiguous"),
        (("follow", "3f2a9c01"), "ambiguous"),
        (("runs", "repair", "3f2a9c01", "diagnose"), "ambiguous"),
        (("runs", "regenerate", "0123abcd", "diagnose"), "no run"),
    ],
)
def test_an_ambiguous_or_unknown_prefix_is_one_line_and_exit_2(db: str, args: tuple[str, ...], needle: str) -> None:
    """The line names the problem (for an ambiguous prefix, two of the runs it starts)."""
    proc = marsrag(*args, "--db", db, columns=80)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and needle in proc.stderr
    if needle == "ambiguous":
        assert TWINS[0] in proc.stderr and TWINS[1] in proc.stderr


@pytest.mark.parametrize("columns", [80, 60])
def test_timestamps_never_wrap_however_narrow(db: str, columns: int) -> None:
    """At 80 and 60 columns each run's creation time is whole on its id's line; the goal folds instead."""
    rows = json.loads(marsrag("runs", "list", "--db", db, "--format", "json", columns=columns).stdout)
    lines = marsrag("runs", "list", "--db", db, columns=columns).stdout.splitlines()
    assert all(len(line) <= columns for line in lines)
    for row in rows:
        (line,) = [line for line in lines if line.split()[:1] == [row["short_id"]]]
        assert row["created_at"][:19] in line


@pytest.mark.parametrize("columns", [80, 60])
def test_metric_names_never_wrap_however_narrow(db: str, columns: int) -> None:
    """The metrics table keeps every metric name whole on one line (the values fold)."""
    from marsrag.metrics.definitions import REPORTED_NAMES

    shown = marsrag("metrics", "--db", db, columns=columns).stdout
    assert all(len(line) <= columns for line in shown.splitlines())
    assert all(f" {name} " in shown for name in REPORTED_NAMES)
