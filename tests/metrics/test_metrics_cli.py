"""``marsrag metrics`` as a real process over the scripted history: the JSON is the library's figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from marsrag.metrics.definitions import METRIC_NAMES
from marsrag.store import open_store
from tests.metrics.history import D1, EXPECTED_ALL, EXPECTED_D2, EXPECTED_SUPPORT, approx, write_history


def marsrag(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "marsrag", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "120"},
    )


@pytest.fixture
def history_db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'history.db'}"
    with open_store(url) as store:
        write_history(store)
    return url


def test_json_is_the_hand_computed_history(history_db: str) -> None:
    """All history, one workflow, one day: each the expected object, keyed by metric name."""
    assert json.loads(marsrag("metrics", "--db", history_db, "--format", "json").stdout) == approx(EXPECTED_ALL)
    support = marsrag("metrics", "--db", history_db, "--workflow", "support", "--format", "json")
    assert json.loads(support.stdout) == approx(EXPECTED_SUPPORT)
    day = marsrag("metrics", "--db", history_db, "--since", "2026-11-03", "--until", "2026-11-03", "--format", "json")
    assert json.loads(day.stdout) == approx(EXPECTED_D2)


def test_text_shows_each_metric_and_na_for_empty_denominators(history_db: str) -> None:
    """The table names every metric; review has no contract tasks: n/a, not 0%."""
    text = marsrag("metrics", "--db", history_db, "--workflow", "review").stdout
    assert all(name in text for name in EXPECTED_ALL)
    assert "n/a" in text and "0/0" in text and "0.0%" in text  # downstream 0/1 is a real 0%


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--since", "yesterday"), "'yesterday' is not a time"),
        (("--since", "2026-11-05", "--until", "2026-11-01"), "before"),
    ],
)
def test_bad_windows_are_one_line_errors(history_db: str, args: tuple[str, ...], needle: str) -> None:
    """Unreadable or inverted windows: exit 2, one line."""
    proc = marsrag("metrics", "--db", history_db, *args)
    assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("metrics", "--until", "9999-12-31"), "until '9999-12-31' is out of range"),
        (("metrics", "--since", "0001-01-01T00:00:00+01:00"), "since '0001-01-01T00:00:00+01:00' is out of range"),
        (("tune", "--until", "9999-12-31"), "until '9999-12-31' is out of range"),
        (("review", "--week", "9999-W52"), "week '9999-W52' is out of range"),
    ],
)
def test_out_of_range_times_are_one_line_errors(history_db: str, args: tuple[str, ...], needle: str) -> None:
    """A time outside the supported range (1970..9000): exit 2, one line naming it, not "internal error"."""
    proc = marsrag(*args, "--db", history_db)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_review_prints_markdown_writes_html_and_refuses_a_bad_week(history_db: str, tmp_path: Path) -> None:
    """review: Markdown on stdout for the history's week, a standalone HTML file with --out, one-line errors."""
    text = marsrag("review", "--db", history_db, "--week", "2026-W45")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("# Loop review 2026-W45") and all(name in text.stdout for name in METRIC_NAMES)
    out = tmp_path / "review.html"
    written = marsrag("review", "--db", history_db, "--week", "2026-W45", "--out", str(out))
    assert written.returncode == 0 and str(out) in written.stdout
    assert "<svg" in out.read_text() and "<script" not in out.read_text()
    bad = marsrag("review", "--db", history_db, "--week", "2026-53x")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "2026-53x" in bad.stderr


def test_verify_finds_a_wrong_rollup_and_rebuild_mends_it(history_db: str) -> None:
    """--verify passes on a store its writes kept; a counter changed behind its back is named (exit 1) until
    --rebuild recounts it; the figures then are the hand-computed ones again."""
    from sqlalchemy import update

    from marsrag.store._rollups import ALL_TIME
    from marsrag.store.schema import rollups
    from marsrag.store.sql import SqlRunStore

    checked = marsrag("metrics", "--db", history_db, "--verify")
    assert checked.returncode == 0, checked.stderr
    assert "The rollups match the raw rows' recount" in checked.stdout
    with open_store(history_db) as store:
        assert isinstance(store, SqlRunStore)
        with store.engine.begin() as connection:
            # The day's row and the all-time row of one counter: both are checked.
            days = rollups.c.day.in_([D1.date(), ALL_TIME])
            one = (rollups.c.counter == "executions", days, rollups.c.task == "t1")
            assert connection.execute(update(rollups).where(*one).values(n=rollups.c.n + 5)).rowcount == 2
    broken = marsrag("metrics", "--db", history_db, "--verify", "--format", "json")
    assert broken.returncode == 1
    report = json.loads(broken.stdout)
    assert report["ok"] is False
    assert {"what": "all history executions", "rollups": 12, "rows": 7} in report["differences"]
    assert {"what": "day 2026-11-02 executions", "rollups": 9, "rows": 4} in report["differences"]
    text = marsrag("metrics", "--db", history_db, "--verify")
    assert text.returncode == 1
    assert "DIFFERENT  all history executions: rollups 12, raw rows 7" in text.stdout
    mended = marsrag("metrics", "--db", history_db, "--rebuild", "--verify")
    assert mended.returncode == 0, mended.stdout
    assert mended.stdout.startswith("Rebuilt the metric rollups from the raw rows:")
    assert json.loads(marsrag("metrics", "--db", history_db, "--format", "json").stdout) == approx(EXPECTED_ALL)


def test_verify_takes_no_window(history_db: str) -> None:
    """--verify and --rebuild cover all history: with a window or a workflow, one line and exit 2."""
    done = marsrag("metrics", "--db", history_db, "--verify", "--since", "7d")
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        "--verify and --rebuild cover all history: drop --since, --until and --workflow"
    )
    assert "Traceback" not in done.stderr
