"""One goal and session-id rule (``marsrag.goals``) at every front door: the CLI, the JSON API, the ask form and
``WorkflowRunner.start``. What one refuses all refuse, storing nothing; ids are one encoded path segment in links.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest

from marsrag.errors import InputError
from marsrag.goals import MAX_GOAL_CHARS, check_session_id, clean_goal, goal_problem, session_id_problem
from tests.web.conftest import Site, answer, csrf_of

#: Goals no front door accepts, with a word the refusal must contain.
BAD_GOALS = {
    "empty": ("", "empty"),
    "blank": ("   \n\t ", "blank"),
    "escape sequences": ("\x1b[2J\x1b]0;PWNED\x07", "control character (\\x1b)"),
    "NUL": ("latency\x00", "NUL"),
    "C1 control": ("latency \x9b", "control character (\\x9b)"),
    "DEL": ("latency \x7f", "control character (\\x7f)"),
    "too long": ("x" * (MAX_GOAL_CHARS + 1), "100,000"),
}
#: Session ids no front door accepts (path-like, blank, spaced, controls, too long).
BAD_SESSIONS = {
    "spaces": "id with spaces",
    "slash": "a/b",
    "backslash": "a\\b",
    "dot": ".",
    "dot dot": "..",
    "parent path": "../runs",
    "leading dash": "-x",
    "control": "s\x1b[2J",
    "NUL": "s\x00",
    "non-ASCII": "séance",
    "too long": "s" * 129,
}
GOOD_SESSIONS = ["s-1", "a", "7", "S_1.2:3-x", "a..b", "x" * 128, "3f2a9c0d1e2b4c5d8e9f0a1b2c3d4e5f"]


# -- the rules ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(BAD_GOALS))
def test_bad_goals_are_named(case: str) -> None:
    """Each bad goal gets a one-line reason saying what is wrong."""
    goal, word = BAD_GOALS[case]
    problem = goal_problem(goal)
    assert problem is not None and word in problem and "\n" not in problem
    with pytest.raises(InputError, match="goal"):
        clean_goal(goal)


def test_goals_are_trimmed_and_keep_newlines_and_tabs() -> None:
    """Surrounding whitespace goes; newlines (CRLF from a browser too) and tabs inside stay; 100,000 pass."""
    assert clean_goal("  Checkout\r\nis slow\tsince 9:00\r ") == "Checkout\nis slow\tsince 9:00"
    assert clean_goal("x" * MAX_GOAL_CHARS) == "x" * MAX_GOAL_CHARS
    assert clean_goal("Latence élevée \u202e") == "Latence élevée \u202e"


@pytest.mark.parametrize("case", sorted(BAD_SESSIONS))
def test_bad_session_ids_are_named(case: str) -> None:
    """A session id outside the rule: the reason shows it quoted (escaped) and states the rule."""
    problem = session_id_problem(BAD_SESSIONS[case])
    assert problem is not None and "letters, digits and - _ . :" in problem and "\x1b" not in problem
    with pytest.raises(InputError, match="session id"):
        check_session_id(BAD_SESSIONS[case])


@pytest.mark.parametrize("session_id", GOOD_SESSIONS)
def test_good_session_ids_pass_unchanged(session_id: str) -> None:
    """Letters, digits, - _ . :, starting with a letter or digit, up to 128 (default ids are uuid hex)."""
    assert session_id_problem(session_id) is None and check_session_id(session_id) == session_id


# -- every front door ----------------------------------------------------------------------------------------------


def marsrag(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", *args, "--db", f"sqlite:///{tmp_path / 'cli.db'}"],
        capture_output=True,
        check=False,
        timeout=300,
        env={**os.environ, "MARSRAG_HOME": str(tmp_path / "home")},
    )
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode("utf-8", "replace")
    )


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("run", ""), id="empty"),
        pytest.param(("run", "   "), id="blank"),
        pytest.param(("run", "\x1b[2J\x1b]0;PWNED\x07"), id="escapes"),
        pytest.param(("run", "x" * (MAX_GOAL_CHARS + 1)), id="too-long"),
        pytest.param(("run", "latency", "--session", "id with spaces"), id="session-spaces"),
        pytest.param(("run", "latency", "--session", "../x"), id="session-path"),
    ],
)
def test_the_cli_refuses_what_the_api_refuses(args: tuple[str, ...], tmp_path: Path) -> None:
    """`marsrag run ""`, `run "   "`, `--session "id with spaces"` ran before: one line, exit 2, no store opened."""
    proc = marsrag(*args, tmp_path=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("marsrag: error: ") and ("goal" in line or "session id" in line), line
    assert "\x1b" not in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "cli.db").exists() and not (tmp_path / "home").exists()


@pytest.mark.crewai
def test_the_api_the_form_and_the_runner_refuse_the_same_goals_and_sessions(
    site_factory: Callable[..., Site],
) -> None:
    """POST /api/runs: 422 naming the field; POST /ask: 422 page with the reason; runner.start: InputError."""
    site = site_factory([answer()] * 3)
    token = csrf_of(site.client)
    cases = [(goal, None, word, "goal") for goal, word in BAD_GOALS.values()]
    cases += [("latency", session, "session id", "session_id") for session in BAD_SESSIONS.values()]
    for goal, session, word, field in cases:
        body = {"goal": goal, **({"session_id": session} if session is not None else {})}
        refused = site.client.post("/api/runs", json=body)
        assert refused.status_code == 422 and refused.json()["field"] == field, (body, refused.text)
        form = site.client.post("/ask", data={**body, "csrf_token": token}, follow_redirects=False)
        assert form.status_code == 422, (body, form.status_code)
        assert word.split(" (")[0].lower() in form.text.lower(), (body, form.text[-800:])
        with pytest.raises(InputError):
            site.backend.runner.start(goal, session_id=session)
    assert site.backend.run_rows(limit=100) == []
    good = site.client.post("/api/runs", json={"goal": "  Checkout\r\nis slow ", "session_id": "a..b"})
    assert good.status_code == 202, good.text
    site.wait()
    assert site.client.get(f"/api/runs/{good.json()['run_id']}").json()["goal"] == "Checkout\nis slow"


@pytest.mark.crewai
def test_links_encode_stored_ids_and_name_runs_without_a_goal(site_factory: Callable[..., Site]) -> None:
    """Runs stored before the rules (a path-like session id, an empty goal) still link to their own pages."""
    site = site_factory([answer()] * 3)
    run_id = site.start("placeholder goal", session_id="s-1")
    legacy_session = "a/b c?d#e"
    with sqlite3.connect(site.db.removeprefix("sqlite:///")) as connection:
        connection.execute("UPDATE runs SET session_id = ?, goal = '' WHERE run_id = ?", (legacy_session, run_id))
    encoded = f"/sessions/{quote(legacy_session, safe='')}"
    runs_page = site.client.get("/").text
    assert f'href="{encoded}"' in runs_page
    assert f'<a class="run-link" href="/runs/{run_id}">(no goal)</a>' in runs_page
    run_page = site.client.get(f"/runs/{run_id}").text
    assert f'href="{encoded}"' in run_page
    session_page = site.client.get(encoded)
    assert session_page.status_code == 200 and f'href="/runs/{run_id}">(no goal)</a>' in session_page.text
