"""The CLI resolves its settings once: the store a command used is the one it names afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.crewai


def marsrag(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("MARSRAG_DB", "MARSRAG_LLM", "MARSRAG_CONFIG")}
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", *args],
        capture_output=True,
        check=False,
        env={**environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})},
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def test_runs_show_names_the_store_it_read(tmp_path: Path) -> None:
    """``runs show ID --db X`` (and with MARSRAG_DB=X, no flag) says the state is stored in X, not the default store."""
    db = f"sqlite:///{tmp_path}/x.db"
    made = marsrag("run", "Checkout latency breached its SLO", "--db", db, "--format", "json")
    assert made.returncode == 0, made.stderr
    run_id = json.loads(made.stdout)["run_id"]

    shown = marsrag("runs", "show", run_id, "--db", db)
    assert shown.returncode == 0, shown.stderr
    assert f"State stored in {db};" in shown.stdout and f"--db '{db}'" in shown.stdout

    from_env = marsrag("runs", "show", run_id, env={"MARSRAG_DB": db})
    assert from_env.returncode == 0, from_env.stderr
    assert f"State stored in {db};" in from_env.stdout


def test_the_settings_file_names_the_store_and_a_flag_overrides_it(tmp_path: Path) -> None:
    """MARSRAG_CONFIG's ``db`` is the store of every command without --db; --db wins over it."""
    db = f"sqlite:///{tmp_path}/from-file.db"
    settings = tmp_path / "settings.toml"
    settings.write_text(f'db = "{db}"\n', encoding="utf-8")
    env = {"MARSRAG_CONFIG": str(settings)}
    made = marsrag("run", "Checkout latency breached its SLO", "--format", "json", env=env)
    assert made.returncode == 0, made.stderr
    run_id = json.loads(made.stdout)["run_id"]
    listed = json.loads(marsrag("runs", "list", "--format", "json", env=env).stdout)
    assert [row["run_id"] for row in listed] == [run_id]
    elsewhere = marsrag("runs", "show", run_id, "--db", f"sqlite:///{tmp_path}/other.db", env=env)
    assert elsewhere.returncode == 2 and run_id in elsewhere.stderr


def test_resume_accepts_base_url_like_the_other_runtime_commands() -> None:
    """Every command that opens the runtime takes the same settings flags."""
    for command in (("run",), ("resume",), ("follow",), ("runs", "repair"), ("runs", "regenerate")):
        usage = marsrag(*command, "--help").stdout
        for flag in ("--config", "--llm", "--db", "--base-url"):
            assert flag in usage, (command, flag)
