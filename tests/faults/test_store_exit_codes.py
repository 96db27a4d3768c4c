"""Exit codes of the real CLI: 2 for a store the user named that cannot be opened, 1 for one failing in the work.

A read-only SQLite file opens (its reads work) and refuses the run's first write; a database file removed
mid-run is removed by the test's own OpenAI-compatible server as it answers the second LLM call, the only
fake being that server at the LLM boundary.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from marsrag.store import open_store
from tests.contract.samples import CONTENT
from tests.faults.test_store_faults import closed_port
from tests.integrations.test_structured_output import StrictChatServer, server  # noqa: F401 - fixture

pytestmark = pytest.mark.crewai

GOAL = "Checkout latency breached its SLO after the cache restart"


def marsrag(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The CLI as a real process, with its own empty data directory and no LLM from the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MARSRAG_LLM", "MARSRAG_BASE_URL"))}
    env.update(MARSRAG_HOME=str(home), NO_COLOR="1", MARSRAG_TOKEN="", MARSRAG_LLM_RETRIES="0")
    env.pop("MARSRAG_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "marsrag", *args], capture_output=True, text=True, env=env, check=False, timeout=300
    )


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The one error line on stderr (a text-format run's progress lines and any warnings come before it)."""
    lines = [
        line
        for line in proc.stderr.splitlines()
        if line.startswith("marsrag: ") and not line.startswith("marsrag: warning: ")
    ]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == lines[0], proc.stderr
    return lines[0]


# -- a store that cannot be opened: a usage error ---------------------------------------------------------------


@pytest.mark.parametrize("command", ["runs list", "metrics", "review", "ingest"])
@pytest.mark.parametrize("case", ["postgres-closed-port", "sqlite-under-a-file"])
def test_a_store_that_cannot_be_opened_is_exit_2(tmp_path: Path, command: str, case: str) -> None:
    """Any command on a store URL that cannot be opened: one line naming the problem, exit 2."""
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    url, needle = {
        "postgres-closed-port": (f"postgresql+psycopg://postgres@127.0.0.1:{closed_port()}/test", "connection"),
        "sqlite-under-a-file": (f"sqlite:///{a_file}/runs.db", "is not a directory"),
    }[case]
    (tmp_path / "notes.md").write_text("# Notes\n\nThe cache tier is cold after a restart.\n")
    extra = [str(tmp_path / "notes.md")] if command == "ingest" else []
    proc = marsrag(*command.split(), *extra, "--db", url, home=tmp_path / "home")
    assert proc.returncode == 2, proc.stderr
    assert needle in one_line(proc).lower()


# -- a store that fails during the work: exit 1 -----------------------------------------------------------------


@pytest.fixture
def read_only_db(tmp_path: Path) -> Iterator[str]:
    """A migrated SQLite store whose file cannot be written: immutable for root (chmod does not stop root), 0444
    for anyone else. Its reads still work."""
    path = tmp_path / "runs.db"
    url = f"sqlite:///{path}"
    with open_store(url):
        pass
    if os.geteuid() == 0:
        proc = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            reason = f"cannot make the file immutable here ({proc.stderr.strip() or proc.returncode})"
            if os.environ.get("CI") == "true":
                pytest.fail(f"{reason}; CI=true requires it")
            pytest.skip(reason)
    else:
        path.chmod(0o444)
    try:
        yield url
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=False)
        path.chmod(0o644)


def test_a_read_only_store_fails_the_run_with_exit_1(read_only_db: str, tmp_path: Path) -> None:
    """The store opens (reads work) but refuses the run's first write: its one-line reason, exit 1, no run."""
    (tmp_path / "answers.jsonl").write_text(json.dumps({"output": json.dumps(CONTENT)}) + "\n")
    proc = marsrag("run", GOAL, "--llm", f"replay:{tmp_path / 'answers.jsonl'}", "--db", read_only_db, home=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "readonly database" in one_line(proc) and proc.stdout == ""
    listed = marsrag("runs", "list", "--db", read_only_db, "--format", "json", home=tmp_path)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []


def test_a_read_only_store_fails_ingest_with_exit_1(read_only_db: str, tmp_path: Path) -> None:
    """Ingest into a read-only store: the refused write is its one-line reason, exit 1."""
    (tmp_path / "notes.md").write_text("# Notes\n\nThe cache tier is cold after a restart.\n")
    proc = marsrag("ingest", str(tmp_path / "notes.md"), "--db", read_only_db, home=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "readonly database" in one_line(proc)


def remove_on_call(path: Path, call: int) -> Any:
    """A server hook: on LLM call number ``call``, remove the SQLite database (and its WAL files), then answer."""
    seen = [0]

    def hook(_body: dict[str, Any]) -> None:
        seen[0] += 1
        if seen[0] == call:
            for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
                (path.parent / name).unlink(missing_ok=True)
        return None  # answer as scripted

    return hook


@pytest.mark.parametrize("format", ["text", "json"])
def test_a_database_removed_mid_run_is_not_reported_stored(
    server: StrictChatServer,  # noqa: F811 - the fixture
    tmp_path: Path,
    format: str,
) -> None:
    """The file goes while the second task runs: the run still ends (its connections keep the removed file),
    but the CLI says its state could not be kept, exits 1 and never prints "State stored in"."""
    db = tmp_path / "runs.db"
    server.script = [json.dumps({**CONTENT, "loop": f"Question {i}?"}) for i in range(3)]
    server.refuse = remove_on_call(db, call=2)
    args = ("run", GOAL, "--llm", "openai/test-model", "--base-url", server.base_url, "--format", format)
    proc = marsrag(*args, "--db", f"sqlite:///{db}", home=tmp_path / "home")
    assert proc.returncode == 1, proc.stderr[-3000:]
    line = one_line(proc)
    assert "its state could not be kept" in line and f"sqlite:///{db} no longer holds it" in line
    assert "State stored in" not in proc.stdout
    assert not db.exists()  # asking did not create it again


def test_a_run_kept_in_its_store_still_says_where(server: StrictChatServer, tmp_path: Path) -> None:  # noqa: F811
    """The control: the same run with the file left alone exits 0 and says where its state is."""
    db = tmp_path / "runs.db"
    server.script = [json.dumps({**CONTENT, "loop": f"Question {i}?"}) for i in range(3)]
    args = ("run", GOAL, "--llm", "openai/test-model", "--base-url", server.base_url)
    proc = marsrag(*args, "--db", f"sqlite:///{db}", home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"State stored in sqlite:///{db};" in proc.stdout
