"""``marsrag experiment report`` as a real process on a real store: text, JSON, and one line with exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from marsrag.store import RunStore, open_store
from tests.experiments.population import sample_with_experiment, write_arm


def marsrag(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "marsrag", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    return sample_with_experiment(tmp_path / "config")


@pytest.fixture
def stored(tmp_path: Path) -> str:
    """A SQLite store with 200 sessions per arm: soft followed 45%, hard 30%."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with open_store(url) as store:
        write_arm(store, "hard", 200, 60)
        write_arm(store, "soft", 200, 90, mode="soft")
    return url


def test_json_is_the_report_document(stored: str, config_dir: Path) -> None:
    """--format json (and --json): experiment, arms and differences with the stored counts."""
    proc = marsrag("experiment", "report", "support_answer", "--db", stored, "--config", str(config_dir), "--json")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert list(document) == ["experiment", "arms", "differences"]
    assert document["experiment"]["sessions"] == 400 and document["experiment"]["srm"]["mismatch"] is False
    soft, hard = document["arms"]["soft"]["loop_follow_rate"], document["arms"]["hard"]["loop_follow_rate"]
    assert (soft["value"], soft["numerator"], soft["denominator"]) == (0.45, 90, 200)
    assert (hard["value"], hard["numerator"], hard["denominator"]) == (0.3, 60, 200)
    follow = next(d for d in document["differences"] if d["metric"] == "loop_follow_rate")
    assert follow["arms"] == ["soft", "hard"] and follow["significant"] is True and follow["sessions_needed"] == 162
    same = marsrag(
        "experiment", "report", "support_answer", "--db", stored, "--config", str(config_dir), "--format", "json"
    )
    assert json.loads(same.stdout) == document


def test_text_has_the_arms_the_differences_and_the_checks(stored: str, config_dir: Path) -> None:
    """The text report: both tables, the sample ratio check and the planned size; no warning once it is reached."""
    proc = marsrag("experiment", "report", "support_answer", "--db", stored, "--config", str(config_dir))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Experiment hard_vs_soft on support_answer (all history): 400 sessions (hard 200, soft 200)" in out
    assert "Sample ratio check (chi-square vs the weights): p = 1, ok" in out
    assert "30.0% (60/200)" in out and "45.0% (90/200)" in out
    assert "+15.0 pt" in out and "Differences from hard" in out
    assert "Planned sample size (loop_follow_rate, 80% power): 162 sessions per arm" in out
    assert "Peek" not in out


def test_a_window_before_the_runs_reports_no_sessions(stored: str, config_dir: Path) -> None:
    """--until before every run: 0 sessions, n/a, and the peek warning."""
    proc = marsrag(
        "experiment", "report", "support_answer", "--db", stored, "--config", str(config_dir), "--until", "2026-01-01"
    )
    assert proc.returncode == 0, proc.stderr
    assert "0 sessions (hard 0, soft 0)" in proc.stdout and "Peek: no difference" in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("change_review",), "workflow 'change_review' has no experiment: declare one under `experiment:`"),
        (("nope",), "unknown workflow 'nope'"),
        (("support_answer", "--since", "yesterday"), "since"),
    ],
    ids=["no-experiment", "unknown-workflow", "bad-since"],
)
def test_bad_input_is_one_line_and_exit_2(stored: str, config_dir: Path, args: tuple[str, ...], message: str) -> None:
    """A workflow without an experiment, an unknown one, an unreadable --since: one line on stderr, exit 2."""
    proc = marsrag("experiment", "report", *args, "--db", stored, "--config", str(config_dir))
    assert proc.returncode == 2, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("marsrag: error: ") and message in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_the_service_reads_the_same_report(stored: str, config_dir: Path) -> None:
    """The library call behind the command gives the document the command prints."""
    from marsrag.metrics.experiment_service import experiment_report

    report = experiment_report("support_answer", db=stored, config=config_dir)
    assert [arm.sessions for arm in report.arms] == [200, 200]
    store: RunStore
    with open_store(stored) as store:
        grouped = store.loop_counts(by=("arm",), experiment="hard_vs_soft")
    assert grouped[("soft",)].followed == 90
