"""A new project installs and tests as its README says: ``marsrag init``, a fresh virtualenv, ``pip install`` of
MarsRAG and of the project, ``pytest``, which passes and counts the tests it runs.

pip downloads nothing here: MarsRAG's own dependencies (CrewAI and the rest) are read from this test run's
environment through a ``.pth`` file in the fresh virtualenv, and everything is built without build isolation.
MarsRAG itself (from this checkout) and the project are installed into the fresh virtualenv by pip.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_new_project_installs_and_passes_its_tests_in_a_fresh_virtualenv(tmp_path: Path) -> None:
    """pip installs the checkout and the project (its pyproject names MarsRAG and pytest); pytest collects and
    passes the project's test and the 12 Loop Contract tests, and says so."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PIP_", "PYTHON", "MARSRAG_", "VIRTUAL_ENV", "PYTEST_"))
    }
    env.update(
        HOME=str(tmp_path / "home"),
        MARSRAG_HOME=str(tmp_path / "data"),
        PIP_NO_INDEX="1",
        PIP_CONFIG_FILE=os.devnull,
        PIP_CACHE_DIR=str(tmp_path / "pip-cache"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PYTHONNOUSERSITE="1",
    )

    def run(*command: str | Path, cwd: Path = tmp_path) -> str:
        proc = subprocess.run(list(map(str, command)), cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{command}:\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    (tmp_path / "home").mkdir()
    run(sys.executable, "-m", "venv", "venv")
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    (site / "test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")

    run(python, "-m", "pip", "install", "--no-build-isolation", "--quiet", REPO)
    run(python, "-m", "marsrag", "init", "bot")
    project = tmp_path / "bot"
    run(python, "-m", "pip", "install", "--no-build-isolation", "--quiet", "-e", ".[test]", cwd=project)
    installed = run(python, "-c", "import marsrag; print(marsrag.__file__)")
    assert installed.startswith(str(venv / "lib")), installed  # this virtualenv's copy, not the checkout

    tested = run(python, "-m", "pytest", "-p", "no:cacheprovider", cwd=project)
    assert "collected 13 items" in tested, tested
    assert "13 passed" in tested, tested
    # The tests keep their files in pytest's temporary folders: nothing is written into the project's data folder.
    assert not (project / ".marsrag").exists()
