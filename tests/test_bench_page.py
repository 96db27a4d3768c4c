"""The generated performance page: one run's tables, where and when they were measured, misses marked."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench._page import machine, render, write
from bench._timing import PRINTED, Report


def _reports() -> list[Report]:
    fast = Report("contract validation")
    fast.add("clean JSON vs model_validate_json", "94k/s", "131k/s", 1.40, "<= 1.5x", True)
    fast.add("a | piped <name>", "1 ms", "2 ms", 0.5, "", True)
    slow = Report("web server")
    slow.add("run page p95 vs /health p95", "191 ms", "14 ms", 13.17, "< 100 ms", False)
    slow.note("seeded 10,000 runs in 9.9 s")
    return [fast, slow]


def test_the_page_says_where_and_when_and_marks_every_miss(tmp_path: Path) -> None:
    """Date, commit, CPU, cores and Python head the page; a missed target is marked and counted."""
    about = {"date": "2026-12-01 19:00 UTC", "commit": "abc123", "cpu": "Some CPU", "cores": 2, "python": "3.11.7",
             "platform": "Linux x86_64"}  # fmt: skip
    page = render(_reports(), about)
    assert "| date | 2026-12-01 19:00 UTC |" in page and "| commit | `abc123` |" in page
    assert "| CPU | Some CPU (2 cores) |" in page and "| Python | 3.11.7 on Linux x86_64 |" in page
    assert "**1 of 3 figures missed their target**: run page p95 vs /health p95." in page
    assert "| run page p95 vs /health p95 | 191 ms | 14 ms | 13.17x | &lt; 100 ms | **MISS** |" in page
    assert "| a \\| piped &lt;name> | 1 ms | 2 ms | 0.50x | - | ok |" in page
    assert "- seeded 10,000 runs in 9.9 s" in page
    write(_reports(), about, page=tmp_path / "p.md", data=tmp_path / "p.json")
    document = json.loads((tmp_path / "p.json").read_text())
    assert document["machine"] == about
    assert [row["ok"] for table in document["tables"] for row in table["rows"]] == [True, True, False]


def test_machine_names_the_commit_and_the_cpu() -> None:
    """The commit is a short hash (dirty when the tree has changes); the CPU and core count are read."""
    about = machine()
    assert re.fullmatch(r"[0-9a-f]{12}(\+dirty)?|unknown \(not a git checkout\)", about["commit"])
    assert about["cpu"] and about["cores"] >= 1 and re.fullmatch(r"\d+-\d\d-\d\d \d\d:\d\d UTC", about["date"])


def test_a_printed_report_is_recorded_with_its_notes(capsys: object) -> None:
    """What a benchmark prints is what the page gets: printing records the table, a later note joins it."""
    report = Report("recorded")
    report.add("x", "1", "2", 0.5, "", True)
    report.print()
    report.note("after the table")
    assert PRINTED[-1] is report and report.notes == ["after the table"]
    PRINTED.remove(report)


def test_a_report_survives_the_trip_from_a_benchmark_process() -> None:
    """Each benchmark runs in a child process: the tables it hands back as JSON are the ones it printed."""
    for report in _reports():
        back = Report.from_json(json.loads(json.dumps(report.to_json())))
        assert (back.title, back.rows, back.notes) == (report.title, report.rows, report.notes)
