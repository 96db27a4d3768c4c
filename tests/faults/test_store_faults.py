"""Store faults: a database down at start, connections killed mid-run (PostgreSQL), a full disk (SQLite)."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from marsrag.errors import StoreError
from marsrag.store import RunStore, open_store
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT
from tests.faults.conftest import runner
from tests.faults.fault_llm import HUGE, VALID, FaultLLM

pytestmark = pytest.mark.crewai

GOAL = "Checkout latency breached its SLO after the cache restart"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def marsrag(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The CLI as a real process, with its own empty data directory."""
    env = {**os.environ, "MARSRAG_HOME": str(home), "NO_COLOR": "1", "MARSRAG_TOKEN": ""}
    env.pop("MARSRAG_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "marsrag", *args], capture_output=True, text=True, env=env, check=False, timeout=300
    )


# -- the database is down at start ------------------------------------------------------------------------------


def _unusable_urls(tmp_path: Path) -> dict[str, tuple[str, str]]:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    a_directory = tmp_path / "a-directory.db"
    a_directory.mkdir()
    return {
        "postgres-closed-port": (f"postgresql+psycopg://postgres@127.0.0.1:{closed_port()}/test", "connection"),
        "sqlite-under-a-file": (f"sqlite:///{a_file}/runs.db", "is not a directory"),
        "sqlite-is-a-directory": (f"sqlite:///{a_directory}", "unable to open database file"),
    }


@pytest.mark.parametrize(
    ("command", "case"),
    [
        ("run", "postgres-closed-port"),
        ("run", "sqlite-under-a-file"),
        ("run", "sqlite-is-a-directory"),
        ("serve", "postgres-closed-port"),
        ("serve", "sqlite-is-a-directory"),
    ],
)
def test_a_database_down_at_start_is_one_line_and_exit_2(tmp_path: Path, case: str, command: str) -> None:
    """``run`` and ``serve`` on an unusable store: one line naming it, exit 2, nothing run or written."""
    url, needle = _unusable_urls(tmp_path)[case]
    home = tmp_path / "home"
    args = ("run", GOAL, "--llm", "composer") if command == "run" else ("serve", "--port", str(closed_port()))
    proc = marsrag(*args, "--db", url, home=home)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0].lower() and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout == "" and "serving on" not in proc.stderr
    assert not (home / "events.jsonl").exists() and not (home / "marsrag.db").exists()


def test_an_unusable_call_policy_setting_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """A call-policy variable that is not a usable number is named before anything is opened."""
    db = tmp_path / "runs.db"
    env = {**os.environ, "MARSRAG_HOME": str(tmp_path / "home"), "MARSRAG_LLM_TIMEOUT": "soon"}
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "run", GOAL, "--db", f"sqlite:///{db}"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "MARSRAG_LLM_TIMEOUT must be a number >= 0, got 'soon'" in proc.stderr
    assert not db.exists()


# -- PostgreSQL connections dropped mid-run ----------------------------------------------------------------------


@pytest.fixture
def tagged_postgres_url(postgres_url: str) -> str:
    """A fresh schema's URL whose connections carry a unique application_name (so only they are killed)."""
    return f"{postgres_url}&application_name=marsrag_fault_{uuid.uuid4().hex[:12]}"


def _application_name(url: str) -> str:
    return url.rsplit("application_name=", 1)[1]


def terminate(admin: Engine, application_name: str) -> int:
    """Terminate every backend of ``application_name`` from a separate admin connection; how many."""
    with admin.begin() as connection:
        return len(
            connection.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = :name"
                ),
                {"name": application_name},
            ).all()
        )


def killer(admin: Engine, application_name: str, killed: list[int]) -> Callable[[int], str]:
    """A script step: kill the store's connections, then answer validly."""

    def step(_number: int) -> str:
        killed.append(terminate(admin, application_name))
        return VALID

    return step


@pytest.mark.parametrize("at_call", [1, 2])
def test_connections_killed_mid_run_are_survived(
    tagged_postgres_url: str, postgres_admin: Engine, project: ProjectConfig, at_call: int
) -> None:
    """Every store connection is terminated during an LLM call (before the first commit, or between tasks):
    the pool's pre-ping replaces them, the run completes and everything is stored once."""
    killed: list[int] = []
    step = killer(postgres_admin, _application_name(tagged_postgres_url), killed)
    llm = FaultLLM.scripted([*[VALID] * (at_call - 1), step])
    with open_store(tagged_postgres_url) as store:
        run = runner(store, project, llm).run(GOAL, workflow="flow")
        assert killed and killed[0] >= 1  # the store's idle pooled connection(s) really were terminated
        assert run.status == "completed", run.status_reason
        stored, tasks, transitions = store.read_run(run.run_id)
        assert [t.validation.status for t in tasks] == ["valid", "valid"] and len(transitions) == 1


@pytest.fixture
def fault_role(postgres_admin: Engine, postgres_url: str) -> Iterator[tuple[str, str]]:
    """A login role owning a fresh schema, and a store URL connecting as it: the test can lock it out."""
    role = f"marsrag_fault_{uuid.uuid4().hex[:12]}"
    schema = postgres_url.rsplit("search_path%3D", 1)[1]
    with postgres_admin.begin() as connection:
        connection.exec_driver_sql(f'CREATE ROLE "{role}" LOGIN')
        connection.exec_driver_sql(f'GRANT ALL ON SCHEMA "{schema}" TO "{role}"')
    url = postgres_url.replace("postgres@", f"{role}@", 1) + f"&application_name={role}"
    yield role, url
    with postgres_admin.begin() as connection:
        connection.exec_driver_sql(f'ALTER ROLE "{role}" LOGIN')
        connection.exec_driver_sql(f'DROP OWNED BY "{role}" CASCADE')
        connection.exec_driver_sql(f'DROP ROLE "{role}"')


def test_a_database_that_stays_down_mid_run_keeps_what_was_committed(
    fault_role: tuple[str, str], postgres_admin: Engine, project: ProjectConfig
) -> None:
    """After the first task commits, the store's role is locked out and its connections killed: the next write
    is refused with a one-line StoreError (the run cannot even be marked failed), and once the database is back
    the first task and its handoff are there, the run still ``running`` (stale once its process is gone)."""
    role, url = fault_role

    def lock_out(_number: int) -> str:
        with postgres_admin.begin() as connection:
            connection.exec_driver_sql(f'ALTER ROLE "{role}" NOLOGIN')
        terminate(postgres_admin, role)
        return VALID

    llm = FaultLLM.scripted([json.dumps({**CONTENT, "loop": "Which tier first?"}), lock_out])
    with open_store(url) as store:
        with pytest.raises(StoreError, match=r"^cannot .* not permitted to log in") as raised:
            runner(store, project, llm).run(GOAL, workflow="flow")
        assert "\n" not in str(raised.value)
        with postgres_admin.begin() as connection:
            connection.exec_driver_sql(f'ALTER ROLE "{role}" LOGIN')
        (run,) = store.list_runs()
        stored, tasks, transitions = store.read_run(run.run_id)
        assert stored.status == "running"
        assert [(t.task_id, t.validation.status) for t in tasks] == [("diagnose", "valid")]
        assert [t.hook for t in transitions] == ["Which tier first?"]


def test_a_brief_outage_at_the_end_of_a_run_is_ridden_out(
    fault_role: tuple[str, str], postgres_admin: Engine, project: ProjectConfig
) -> None:
    """Locked out during the last task and back two seconds later: the run's end is still recorded."""
    role, url = fault_role

    def lock_out_briefly(_number: int) -> str:
        with postgres_admin.begin() as connection:
            connection.exec_driver_sql(f'ALTER ROLE "{role}" NOLOGIN')
        terminate(postgres_admin, role)

        def back() -> None:
            with postgres_admin.begin() as connection:
                connection.exec_driver_sql(f'ALTER ROLE "{role}" LOGIN')

        threading.Timer(2.0, back).start()
        return VALID

    llm = FaultLLM.scripted([json.dumps({**CONTENT, "loop": "Which tier first?"}), lock_out_briefly])
    with open_store(url) as store:
        run = runner(store, project, llm).run(GOAL, workflow="flow")
        # The second task's commit met the outage: refused logins (no SQLSTATE from the server) are retried
        # within the store's budget like a dropped connection, so the commit itself waited it out.
        assert run.status == "completed", run.status_reason
        stored, tasks, _ = store.read_run(run.run_id)
        assert stored.status == "completed"
        assert [t.task_id for t in tasks] == ["diagnose", "recommend"]


# -- SQLite on a full disk --------------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 16 MB tmpfs (needs root, as in CI; skipped elsewhere unless CI=true)."""
    mountpoint = tmp_path / "disk"
    mountpoint.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(mountpoint)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        reason = f"cannot mount a tmpfs here ({proc.stderr.strip() or proc.returncode}); it needs root"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI=true requires it")
        pytest.skip(reason)
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", str(mountpoint)], check=False)


def fill(directory: Path) -> Callable[[int], str]:
    """A script step: fill the disk of ``directory`` to the last byte, then answer with 5 MB of prose."""

    def step(_number: int) -> str:
        with (directory / "filler").open("ab") as filler:
            chunk = b"\0" * 65536
            while True:
                try:
                    filler.write(chunk)
                    filler.flush()
                except OSError as error:
                    assert error.errno == errno.ENOSPC
                    if len(chunk) == 1:
                        break
                    chunk = chunk[: len(chunk) // 2]
        return HUGE

    return step


def test_a_full_disk_fails_the_write_and_keeps_what_was_committed(small_disk: Path, project: ProjectConfig) -> None:
    """The disk fills during the second task: its write is refused (database or disk is full), the run ends
    failed with that reason (or, when even that cannot be written, raises it), the first task stays readable."""
    url = f"sqlite:///{small_disk / 'runs.db'}"
    llm = FaultLLM.scripted([json.dumps({**CONTENT, "loop": "Which tier first?"}), fill(small_disk)])
    with open_store(url) as store:
        try:
            run = runner(store, project, llm).run(GOAL, workflow="flow")
        except StoreError as error:
            outcome: Any = error
        else:
            outcome = run
        (listed,) = store.list_runs()
        stored, tasks, transitions = store.read_run(listed.run_id)
    reason = str(outcome) if isinstance(outcome, StoreError) else (outcome.status_reason or "")
    assert "database or disk is full" in reason, reason
    assert stored.status == ("running" if isinstance(outcome, StoreError) else "failed")
    assert [(t.task_id, t.validation.status) for t in tasks] == [("diagnose", "valid")]
    assert [t.hook for t in transitions] == ["Which tier first?"]
    (small_disk / "filler").unlink()
    with open_store(url) as reopened:  # space again: the database is whole and writable
        engine = reopened.engine  # type: ignore[attr-defined]
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        reopened.set_run_status(listed.run_id, "failed", reason="disk was full")
        assert reopened.get_run(listed.run_id).status == "failed"


# -- text that is not Unicode ----------------------------------------------------------------------------------


def test_text_that_is_not_unicode_is_stored_with_replacement_characters(
    any_store: RunStore, project: ProjectConfig
) -> None:
    """A goal and answers with lone surrogates, from an LLM without the call policy: the store itself writes
    U+FFFD (the drivers would raise UnicodeEncodeError), the run completes and reads back."""
    from marsrag.runtime.runner import WorkflowRunner

    lone = json.dumps({**CONTENT, "grip": "Cache \udcff tier is cold."}, ensure_ascii=False)
    llm = FaultLLM.scripted([lone, lone])
    run = WorkflowRunner(any_store, project, llm).run("Latency \udcff after restart", workflow="flow")
    assert run.status == "completed", run.status_reason
    stored, tasks, _ = any_store.read_run(run.run_id)
    assert stored.goal == "Latency \ufffd after restart"
    assert [t.loop_output.grip for t in tasks] == ["Cache \ufffd tier is cold."] * 2
    assert [t.validation.status for t in tasks] == ["valid", "valid"]
