"""marsrag run / runs list / runs show as real processes, on a real SQLite file, with a replay script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contract.samples import CONTENT

pytestmark = pytest.mark.crewai


def marsrag(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", *args],
        capture_output=True,
        cwd=cwd,
        check=False,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def replay(tmp_path: Path) -> Path:
    path = tmp_path / "answers.jsonl"
    answers = [{**CONTENT, "loop": f"Question {i}?"} for i in range(3)]
    path.write_text("".join(json.dumps({"output": json.dumps(a)}) + "\n" for a in answers))
    return path


def test_run_json_is_one_document_and_runs_show_matches(tmp_path: Path, replay: Path) -> None:
    """run --format json prints exactly the runs show document; runs list lists it."""
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    proc = marsrag("run", "API latency SLO breaches", "--llm", f"replay:{replay}", "--db", db, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert set(document) >= {
        "run_id",
        "session_id",
        "goal",
        "workflow",
        "loop_mode",
        "status",
        "summary",
        "created_at",
        "outcome",
        "tasks",
        "transitions",
        "events",
    }
    assert document["status"] == "completed" and len(document["tasks"]) == 3 and len(document["transitions"]) == 2
    assert document["tasks"][1]["loop_output"]["hook"] == "Question 0?"
    shown = marsrag("runs", "show", document["run_id"], "--db", db, "--format", "json")
    assert json.loads(shown.stdout) == document
    listed = json.loads(marsrag("runs", "list", "--db", db, "--format", "json").stdout)
    assert (document["experiment"], document["arm"]) == (None, None)  # outside an experiment: null, not absent
    keys = ("run_id", "session_id", "goal", "workflow", "status", "created_at", "experiment", "arm")
    expected = {key: document[key] for key in keys}
    assert document["outcome"] == {"valid": 3, "partial": 0, "failed": 0, "skipped": 0}
    short = document["run_id"][:8]
    assert listed == [{**expected, "stale": False, "outcome": document["outcome"], "short_id": short}]


def test_run_text_shows_sections_badges_and_next_action(tmp_path: Path, replay: Path) -> None:
    """Text output names each task with its badge and ends with the next recommended action."""
    proc = marsrag("run", "latency", "--llm", f"replay:{replay}", "--db", f"sqlite:///{tmp_path / 'x.db'}")
    assert proc.returncode == 0, proc.stderr
    assert "[VALID]" in proc.stdout and "HOOK" in proc.stdout
    assert "Next recommended question/action: Question 2?" in proc.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("runs", "show", "no-such-run"), "no-such-run"),
        (("runs", "list", "--db", "mysql://nowhere/x"), "mysql"),
        (("run", "goal", "--llm", "replay:/no/such/file.jsonl"), "file.jsonl"),
        (("run", "goal", "--llm", "replay:x", "--workflow", "nope"), "nope"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, args: tuple[str, ...], needle: str) -> None:
    """Unknown run, bad URL, missing replay file, unknown workflow: one line naming it, exit 2, nothing run."""
    full = [*args] if "--db" in args else [*args, "--db", f"sqlite:///{tmp_path / 'e.db'}"]
    proc = marsrag(*full)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_failed_run_exits_1_with_reason(tmp_path: Path) -> None:
    """An LLM that runs out mid-run: the run is stored failed with its reason, exit 1."""
    script = tmp_path / "short.jsonl"
    script.write_text(json.dumps({"output": json.dumps(CONTENT)}) + "\n")
    proc = marsrag(
        "run", "latency", "--llm", f"replay:{script}", "--db", f"sqlite:///{tmp_path / 'f.db'}", "--format", "json"
    )
    assert proc.returncode == 1
    document = json.loads(proc.stdout)
    assert document["status"] == "failed" and "ran out of outputs" in document["status_reason"]


def test_runs_repair_fixes_a_failed_task_and_bad_targets_are_one_line_errors(tmp_path: Path) -> None:
    """runs repair re-runs a failed task with a new LLM script; unknown task or valid task: exit 2, one line."""
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    first = tmp_path / "first.jsonl"
    outputs = ["No idea.", "No idea.", json.dumps(CONTENT), json.dumps(CONTENT)]
    first.write_text("".join(json.dumps({"output": text}) + "\n" for text in outputs))
    proc = marsrag("run", "latency", "--llm", f"replay:{first}", "--db", db, "--format", "json")
    document = json.loads(proc.stdout)
    assert [t["validation"]["status"] for t in document["tasks"]] == ["failed", "valid", "valid"]
    fix = tmp_path / "fix.jsonl"
    fix.write_text(json.dumps({"output": json.dumps(CONTENT)}) + "\n")
    run_id = document["run_id"]
    repaired = marsrag("runs", "repair", run_id, "diagnose", "--llm", f"replay:{fix}", "--db", db, "--format", "json")
    assert repaired.returncode == 0, repaired.stderr
    task = json.loads(repaired.stdout)["tasks"][0]
    assert task["validation"]["status"] == "valid" and task["attempts"][-1]["kind"] == "operator_repair"
    for args, needle in (((run_id, "nope"), "no task 'nope'"), ((run_id, "diagnose"), "already valid")):
        proc = marsrag("runs", "repair", *args, "--llm", f"replay:{fix}", "--db", db)
        assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_failing_event_sink_is_one_warning_line_per_run(tmp_path: Path, replay: Path) -> None:
    """events.jsonl unwritable (here a directory): the run completes, stderr says so once, in one line.

    Three tasks mean three dispatches; each printed a traceback before.
    """
    home = tmp_path / "home"
    (home / "events.jsonl").mkdir(parents=True)
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "run", "latency", "--llm", f"replay:{replay}", "--format", "json"],
        capture_output=True,
        check=False,
        text=True,
        env={**os.environ, "MARSRAG_HOME": str(home), "MARSRAG_DB": f"sqlite:///{tmp_path / 'r.db'}"},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "completed"
    assert "Traceback" not in proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if "event sink" in line]
    assert line.startswith("marsrag: warning: event sink JsonlSink(") and "IsADirectoryError" in line


@pytest.fixture
def finished(tmp_path: Path, replay: Path) -> tuple[str, str]:
    """The store URL and id of a completed run (three tasks, the replay script's answers)."""
    db = f"sqlite:///{tmp_path / 'rated.db'}"
    proc = marsrag("run", "API latency SLO breaches", "--llm", f"replay:{replay}", "--db", db, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return db, json.loads(proc.stdout)["run_id"]


def test_runs_feedback_stores_the_rating_on_the_run(finished: tuple[str, str]) -> None:
    """runs feedback SHORT_ID: the event is printed (json) and stored; text says what was rated, in one line."""
    db, run_id = finished
    proc = marsrag(
        "runs", "feedback", run_id[:8], "--on", "answer", "--rating", "up", "--comment", " Clear. ", "--db", db,
        "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    event = json.loads(proc.stdout)
    assert (event["name"], event["run_id"], event["task_id"]) == ("loop.feedback.recorded", run_id, "plan")
    assert event["detail"] == {"on": "answer", "rating": "up", "comment": "Clear."}
    text = marsrag("runs", "feedback", run_id, "--on", "next_action", "--rating", "down", "--db", db)
    assert text.returncode == 0, text.stderr
    assert text.stdout == f"Recorded: the next action of run {run_id} rated not helpful (down).\n"
    shown = json.loads(marsrag("runs", "show", run_id, "--db", db, "--format", "json").stdout)
    rated = [e["detail"] for e in shown["events"] if e["name"] == "loop.feedback.recorded"]
    assert rated == [event["detail"], {"on": "next_action", "rating": "down", "comment": None}]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--on", "summary", "--rating", "up"), "'summary' is not one of 'answer', 'next_action'"),
        (("--on", "answer", "--rating", "meh"), "'meh' is not one of 'up', 'down'"),
        (("--on", "answer"), "--rating"),
        (("--on", "answer", "--rating", "up", "--comment", "x" * 2001), "2,001 characters; the limit is 2,000"),
    ],
)
def test_runs_feedback_bad_input_is_one_line_and_exit_2(
    finished: tuple[str, str], args: tuple[str, ...], needle: str
) -> None:
    """A bad part, rating or comment: one line on stderr naming it, exit 2, nothing stored."""
    db, run_id = finished
    proc = marsrag("runs", "feedback", run_id, *args, "--db", db)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr, proc.stderr
    shown = json.loads(marsrag("runs", "show", run_id, "--db", db, "--format", "json").stdout)
    assert not [e for e in shown["events"] if e["name"] == "loop.feedback.recorded"]


def test_runs_feedback_on_an_unknown_run_is_exit_2(finished: tuple[str, str]) -> None:
    """An id no run has: one line naming it, exit 2."""
    db, _ = finished
    proc = marsrag("runs", "feedback", "no-such-run", "--on", "answer", "--rating", "up", "--db", db)
    assert proc.returncode == 2 and "no-such-run" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_follow_with_goal_asks_the_edit_and_records_an_edited_follow(tmp_path: Path, finished: tuple[str, str]) -> None:
    """follow --goal: the next run's goal is the user's, the followed run's loop.action.followed says edited."""
    db, run_id = finished
    replay = tmp_path / "more.jsonl"
    replay.write_text("".join(json.dumps({"output": json.dumps(CONTENT)}) + "\n" for _ in range(3)))
    mine = "Which caches should be pre-warmed first?"
    proc = marsrag("follow", run_id, "--goal", mine, "--llm", f"replay:{replay}", "--db", db, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["goal"] == mine
    shown = json.loads(marsrag("runs", "show", run_id, "--db", db, "--format", "json").stdout)
    assert [e["detail"] for e in shown["events"] if e["name"] == "loop.action.followed"] == [{"follow_kind": "edited"}]
