"""``marsrag init``: a scaffolded project runs, lints and tests at once, as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from marsrag.scaffold import init_project

REPO = Path(__file__).resolve().parents[2]
FILES = [
    ".env.example",
    ".gitignore",
    ".pre-commit-config.yaml",
    "README.md",
    "config/agents.yaml",
    "config/tasks.yaml",
    "config/workflows.yaml",
    "knowledge/cache-restarts.md",
    "knowledge/latency-slo.md",
    "marsrag.toml",
    "pyproject.toml",
    "pytest.ini",
    "tests/test_config.py",
]


def run(cwd: Path, *command: str, prefix: Sequence[str] = (), **options: Any) -> subprocess.CompletedProcess[str]:
    """A real process in ``cwd`` with this checkout's package, a home and data directory of its own.

    ``prefix`` runs it under another command (``setpriv ...``); ``options`` go to :func:`subprocess.run`
    (``preexec_fn``...). It writes no bytecode: a test may limit what the process can write.
    """
    env = {
        **os.environ,
        "HOME": str(cwd.parent / "home"),
        "MARSRAG_HOME": str(cwd.parent / "data"),
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.pop("MARSRAG_LLM", None)
    env.pop("MARSRAG_DB", None)
    return subprocess.run(
        [*prefix, sys.executable, *command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, **options
    )


def test_init_then_run_lint_and_pytest_work_at_once(tmp_path: Path) -> None:
    """init prints the next steps; in the project, run answers offline from ./config, lint finds nothing, and
    plain pytest runs the project's test and the 12 Loop Contract tests (2 narrative tasks x 6 checks)."""
    created = run(tmp_path, "-m", "marsrag", "init", "bot")
    assert created.returncode == 0, created.stderr
    assert created.stdout.splitlines()[0] == f"Created bot/ ({len(FILES)} files)"
    assert "  pip install -e '.[test]'" in created.stdout and "  marsrag ingest " in created.stdout
    assert "  pytest " in created.stdout
    project = tmp_path / "bot"
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) == FILES

    goal = "Checkout latency doubled after the cache restart"
    answered = run(project, "-m", "marsrag", "run", goal, "--format", "json")
    assert answered.returncode == 0, answered.stderr
    document = json.loads(answered.stdout)
    # the project's workflow (two tasks), not the shipped sample's (three)
    assert [(t["task_id"], t["validation"]["status"]) for t in document["tasks"]] == [
        ("diagnose", "valid"),
        ("recommend", "valid"),
    ]
    assert (document["status"], document["workflow"]) == ("completed", "support_answer")

    linted = run(project, "-m", "marsrag", "lint", "config")
    assert (linted.returncode, linted.stderr) == (0, "")

    tested = run(project, "-m", "pytest", "-p", "no:cacheprovider", "-rA")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "collected 13 items" in tested.stdout and "13 passed" in tested.stdout
    for task in ("diagnose", "recommend"):
        for check in ("schema_success", "missing_field", "empty_string", "over_length", "chaining", "fallback"):
            assert f"PASSED config/tasks.yaml::loop_contract[{task}-{check}]" in tested.stdout
    assert "PASSED tests/test_config.py::test_the_config_passes_the_contract_lint" in tested.stdout


def test_a_non_empty_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    """Exit 2, one line, nothing written."""
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "notes.txt").write_text("mine")
    refused = run(tmp_path, "-m", "marsrag", "init", "bot")
    assert refused.returncode == 2
    assert refused.stderr == (
        "marsrag: error: bot: folder is not empty; give --force to add the missing files (yours are kept)\n"
    )
    assert [p.name for p in (tmp_path / "bot").iterdir()] == ["notes.txt"]


def test_force_adds_the_missing_files_and_keeps_the_users(tmp_path: Path) -> None:
    """--force never overwrites: an existing README and tasks.yaml stay as they were."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tasks.yaml").write_text("# mine\n")
    (tmp_path / "README.md").write_text("mine\n")
    report = init_project(tmp_path, force=True)
    assert report.kept == ["README.md", "config/tasks.yaml"]
    assert sorted(report.written) == sorted(set(FILES) - set(report.kept))
    assert (tmp_path / "config" / "tasks.yaml").read_text() == "# mine\n"
    assert (tmp_path / "README.md").read_text() == "mine\n"


def test_a_file_is_not_a_project_folder(tmp_path: Path) -> None:
    """The path names a file: a usage error."""
    (tmp_path / "bot").write_text("")
    from marsrag.errors import InputError

    with pytest.raises(InputError, match="exists and is not a folder"):
        init_project(tmp_path / "bot")


def test_the_readme_names_the_project(tmp_path: Path) -> None:
    """The README's title is the folder's name."""
    init_project(tmp_path / "support-bot")
    assert (tmp_path / "support-bot" / "README.md").read_text().startswith("# support-bot\n")


def test_the_pre_commit_hook_is_ours(tmp_path: Path) -> None:
    """The scaffold's hook runs what .pre-commit-hooks.yaml defines (same id, entry, files), on config/."""
    init_project(tmp_path)
    (ours,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    (repo,) = yaml.safe_load((tmp_path / ".pre-commit-config.yaml").read_text())["repos"]
    (hook,) = repo["hooks"]
    assert {k: hook[k] for k in ("id", "entry", "files", "pass_filenames")} == {
        k: ours[k] for k in ("id", "entry", "files", "pass_filenames")
    }
    assert hook["args"] == ["config/"]
