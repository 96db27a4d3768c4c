"""Misconfigurations say so: each is one line on stderr naming what is wrong, exit 2, no traceback.

Every case runs the real CLI as a process, in a fresh data directory, as a new user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from marsrag.cli import app

pytestmark = pytest.mark.crewai

Marsrag = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def marsrag(tmp_path: Path) -> Marsrag:
    """Run ``marsrag ARGS`` in tmp_path with its own data directory, no settings in the environment."""
    home = tmp_path / "home"

    def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("MARSRAG_") or k == "MARSRAG_ALLOWED_HOSTS"}
        proc = subprocess.run(
            [sys.executable, "-m", "marsrag", *args],
            capture_output=True,
            check=False,
            cwd=cwd or tmp_path,
            env={**environ, "MARSRAG_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200", **(env or {})},
            timeout=120,
        )
        return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())

    return run


def assert_one_line(proc: subprocess.CompletedProcess[str], *needles: str, code: int = 2) -> str:
    """Exit ``code``, one ``marsrag: error:`` line on stderr holding every needle, no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("marsrag: error: "), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert all(needle in lines[0] for needle in needles), (lines[0], needles)
    return lines[0]


# -- the settings file ------------------------------------------------------------------------------------------


def test_a_settings_path_that_does_not_exist(marsrag: Marsrag) -> None:
    """MARSRAG_CONFIG naming no file is an error naming the path (the default file may be missing)."""
    assert_one_line(marsrag("runs", "list", env={"MARSRAG_CONFIG": "/nonexistent.toml"}), "/nonexistent.toml", "exist")
    assert marsrag("runs", "list").returncode == 0


def test_an_unknown_key_suggests_the_closest(marsrag: Marsrag, tmp_path: Path) -> None:
    """``lm = ...`` is refused with the file, the key and ``did you mean 'llm'``."""
    path = tmp_path / "settings.toml"
    path.write_text('lm = "openai/gpt-4o-mini"\n', encoding="utf-8")
    line = assert_one_line(marsrag("runs", "list", env={"MARSRAG_CONFIG": str(path)}), str(path), "'lm'")
    assert "did you mean 'llm'?" in line


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        ("db = 5\n", ("db must be a string", "int")),
        ('db = "runs.db"\n', ("db = 'runs.db'", "not a store URL")),
        ('broker = "localhost:6379"\n', ("broker", "not a Redis URL")),
        ('base_url = "localhost:11434"\n', ("base_url", "not an HTTP URL")),
        ('structured_output = "strict"\n', ("structured_output = 'strict'", "must be one of auto")),
    ],
)
def test_a_bad_value_names_file_key_and_problem(
    marsrag: Marsrag, tmp_path: Path, content: str, needles: tuple[str, ...]
) -> None:
    """A value of the wrong type or kind: the file, the key and the problem, in one line."""
    path = tmp_path / "settings.toml"
    path.write_text(content, encoding="utf-8")
    assert_one_line(marsrag("runs", "list", env={"MARSRAG_CONFIG": str(path)}), str(path), *needles)


# -- workflows, goals, session ids, store paths -------------------------------------------------------------------


@pytest.mark.parametrize("command", [("metrics",), ("review",), ("tune",)])
def test_an_unknown_workflow_is_refused(marsrag: Marsrag, command: tuple[str, ...]) -> None:
    """A workflow neither the config nor the store knows: exit 2, the closest name suggested."""
    line = assert_one_line(marsrag(*command, "--workflow", "support_anwser"), "unknown workflow 'support_anwser'")
    assert "did you mean 'support_answer'?" in line
    assert marsrag(*command, "--workflow", "support_answer").returncode == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("run", ""), "the goal is empty"),
        (("run", "   "), "the goal is blank"),
        (("run", "Checkout is slow", "--session", "id with spaces"), "session id 'id with spaces'"),
        (("run", "Checkout is slow", "--session", "../etc"), "session id '../etc'"),
    ],
)
def test_the_cli_refuses_what_the_api_refuses(
    marsrag: Marsrag, tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    """The goal and session-id rules of marsrag.goals, before anything runs: no store is even created."""
    assert_one_line(marsrag(*args), needle)
    assert not (tmp_path / "home" / "marsrag.db").exists()


def test_db_never_creates_a_parent_directory(marsrag: Marsrag, tmp_path: Path) -> None:
    """``--db sqlite:////dir/x.db`` whose dir is missing is refused, and the dir is not made; the default still is."""
    missing = tmp_path / "nonexistdir"
    assert_one_line(marsrag("runs", "list", "--db", f"sqlite:///{missing}/x.db"), str(missing), "does not exist")
    assert not missing.exists()
    assert marsrag("runs", "list").returncode == 0
    assert (tmp_path / "home" / "marsrag.db").exists()


def test_regenerate_on_a_valid_task_says_so(marsrag: Marsrag) -> None:
    """``runs regenerate`` on a valid task: "nothing to regenerate" (not "nothing to repair"), exit 2."""
    made = marsrag("run", "Checkout latency breached its SLO", "--format", "json")
    assert made.returncode == 0, made.stderr
    run_id = json.loads(made.stdout)["run_id"]
    assert_one_line(
        marsrag("runs", "regenerate", run_id, "diagnose"), "'diagnose' is already valid: nothing to regenerate"
    )


def test_worker_with_an_unreachable_broker(marsrag: Marsrag) -> None:
    """``worker --broker`` to a closed port: one line naming the broker, exit 2, no Celery retry logs."""
    proc = marsrag("worker", "--broker", "redis://127.0.0.1:1/0")
    assert_one_line(proc, "redis://127.0.0.1:1/0", "unreachable")
    assert proc.stdout == ""


# -- Typer's messages and help -------------------------------------------------------------------------------------


def test_choice_errors_do_not_leak_python(marsrag: Marsrag) -> None:
    """``--mode strict`` lists the choices without the validation library's "Value error"."""
    line = assert_one_line(marsrag("validate", "--mode", "strict"), "'strict' is not one of 'hard', 'soft', 'none'")
    assert "Value error" not in line
    assert "Input should" not in assert_one_line(marsrag("serve", "--port", "abc"), "--port", "not a whole number")


def _commands() -> list[tuple[str, ...]]:
    from typer.main import get_command

    root = get_command(app)
    names: list[tuple[str, ...]] = []
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        subcommands = getattr(command, "commands", None)
        names += [(name, sub) for sub in subcommands] if subcommands else [(name,)]
    return names


def test_help_shows_no_python_types(marsrag: Marsrag) -> None:
    """No help shows ``<list[Path]>``, ``<str>`` or ``{goal}``: arguments are GOAL, PATHS..., types TEXT, PATH."""
    for command in _commands():
        usage = marsrag(*command, "--help")
        assert usage.returncode == 0, (command, usage.stderr)
        for leak in ("<list[", "<str>", "<int>", "<path>", "{"):
            assert leak not in usage.stdout, (command, leak, usage.stdout)
    assert "Usage: marsrag run [OPTIONS] GOAL" in marsrag("run", "--help").stdout
    assert "Usage: marsrag lint [OPTIONS] [PATHS]..." in marsrag("lint", "--help").stdout
    assert_one_line(marsrag("run"), "Missing argument 'GOAL'")


def test_marsrag_alone_prints_the_help(marsrag: Marsrag) -> None:
    """``marsrag`` with no command prints its help (the commands listed), not only "Missing command"."""
    proc = marsrag()
    assert "Usage: marsrag [OPTIONS] COMMAND" in proc.stdout and "Commands:" in proc.stdout
    assert "Missing command" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


def test_runs_help_lists_every_runs_command(marsrag: Marsrag) -> None:
    """``runs --help`` names list, show, repair and regenerate, in its summary and its command list."""
    usage = marsrag("runs", "--help").stdout
    assert "regenerate" in usage.split("Commands:")[0]
    for name in ("list", "show", "repair", "regenerate"):
        assert f"\n  {name} " in usage, name


def test_serve_help_says_the_token_guards_reads(marsrag: Marsrag) -> None:
    """The token guards every request off loopback, reads included: the help says so, and names --log-format."""
    usage = " ".join(marsrag("serve", "--help").stdout.split())
    assert "reads too" in usage and "reads included" in usage and "mutating" not in usage
    assert "--log-format [text|json]" in usage


# -- lint ----------------------------------------------------------------------------------------------------------

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "marsrag" / "tasks" / "sample_config"


def test_lint_sums_up_in_text_and_keeps_json_a_list(marsrag: Marsrag) -> None:
    """Text ends with one summary line; ``--format json`` stdout is exactly the JSON list of findings."""
    text = marsrag("lint", str(SAMPLE))
    assert text.returncode == 0 and text.stderr == ""
    assert text.stdout.strip().splitlines()[-1] == f"lint: {SAMPLE}: 4 tasks, 3 workflows: no findings"
    machine = marsrag("lint", str(SAMPLE), "--format", "json")
    assert machine.returncode == 0 and json.loads(machine.stdout) == [] and machine.stdout == "[]\n"


def test_lint_fails_on_a_folder_without_tasks(marsrag: Marsrag, tmp_path: Path) -> None:
    """An empty folder, or no ./config: exit 1 and one line, not a silent success."""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_line(marsrag("lint", str(empty)), "no tasks.yaml", code=1)
    assert_one_line(marsrag("lint", cwd=empty), "no ./config folder here", code=1)
    assert_one_line(marsrag("lint", str(empty), "--format", "json"), "no tasks.yaml", code=1)


def test_lint_without_workflows_lints_the_tasks_and_warns(marsrag: Marsrag, tmp_path: Path) -> None:
    """Tasks with no workflows.yaml (most CrewAI projects) are linted; a warning says run needs workflows."""
    config = tmp_path / "crew" / "config"
    config.mkdir(parents=True)
    for name in ("agents.yaml", "tasks.yaml"):
        (config / name).write_text((SAMPLE / name).read_text(encoding="utf-8"), encoding="utf-8")
    for format in ("text", "json"):
        proc = marsrag("lint", str(config), "--format", format)
        assert proc.returncode == 0, proc.stderr
        warning = proc.stderr.strip().splitlines()
        assert len(warning) == 1 and warning[0].startswith("marsrag: warning: "), proc.stderr
        assert "no workflows.yaml" in warning[0] and "marsrag run needs a workflow" in warning[0]
    assert json.loads(proc.stdout) == []
    assert "4 tasks, 0 workflows: no findings" in marsrag("lint", str(config)).stdout
