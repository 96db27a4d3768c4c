"""Terminal escape injection: text from goals, answers, config names and file names never reaches the operator's
terminal raw. Every command prints control characters visibly (``\\x1b``), JSON escapes them, Rich markup in the
data is printed as text, and with colours on the only escape sequences are Rich's own colours.

The store holds a goal and a reason written before goals were checked (``ESC [2J`` clears the screen, ``ESC ]0;``
retitles the window), hostile answers in every section, and a workflow named with escapes; every command runs as a
real ``marsrag`` process.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from marsrag.terminal import visible, visible_json
from tests.web.conftest import answer

pytestmark = pytest.mark.crewai

CLEAR = "\x1b[2J\x1b]0;PWNED\x07"
PAYLOAD = f"{CLEAR} [bold]loud[/bold] \x9b31m\x7f"
SHOWN = visible(CLEAR)  # "\x1b[2J\x1b]0;PWNED\x07" as backslash text
#: What makes a hostile value a sentence among sentences (a short fragment is refused as a stand-in).
TAIL = " sits in the middle of a full sentence."
WORKFLOW = "wf\x1b[31mRED"
#: Any control character a terminal might obey (newline and tab are text).
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SGR = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class World:
    directory: Path
    db: str
    config: Path
    run_id: str


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """One run in a hostile workflow: a failed task (hostile raw answer), hostile sections; a hostile stored goal."""
    from marsrag.compose import run_goal
    from marsrag.settings import resolve_settings
    from marsrag.tasks.loader import sample_config_dir

    directory = tmp_path_factory.mktemp("terminal")
    config = directory / "config"
    shutil.copytree(sample_config_dir(), config)
    workflows = (config / "workflows.yaml").read_text(encoding="utf-8")
    (config / "workflows.yaml").write_text(
        workflows.replace("support_answer:", f"{json.dumps(WORKFLOW)}:", 1), encoding="utf-8"
    )
    db = f"sqlite:///{directory}/runs.db"
    hostile = answer(hook=f"Hook {PAYLOAD}{TAIL}", grip=f"Grip {PAYLOAD}{TAIL}", loop=f"Loop {CLEAR}?")
    outputs = [f"HOOK: {PAYLOAD}{TAIL}", f"nothing {PAYLOAD}", hostile, hostile]
    replay = directory / "replay.jsonl"
    replay.write_text("".join(json.dumps({"output": o}) + "\n" for o in outputs), encoding="utf-8")
    settings = resolve_settings(config=config, llm=f"replay:{replay}", db=db)
    document = run_goal(settings, "placeholder goal", workflow=WORKFLOW)
    assert [t["validation"]["status"] for t in document["tasks"]] == ["failed", "valid", "valid"]
    with sqlite3.connect(db.removeprefix("sqlite:///")) as connection:
        connection.execute(
            "UPDATE runs SET goal = ?, status_reason = ? WHERE run_id = ?",
            (f"Goal {PAYLOAD}", f"Reason {CLEAR}", document["run_id"]),
        )
    return World(directory, db, config, str(document["run_id"]))


def marsrag(world: World, *args: str, color: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MARSRAG_HOME": str(world.directory / "home"), "COLUMNS": "250"}
    env.pop("NO_COLOR" if color else "FORCE_COLOR", None)
    env.update({"FORCE_COLOR": "1"} if color else {"NO_COLOR": "1"})
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", *args],
        capture_output=True,
        check=False,
        timeout=300,
        env=env,
        cwd=world.directory,
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def assert_inert(proc: subprocess.CompletedProcess[str], *shown: str) -> None:
    """No raw control character on stdout or stderr; each of ``shown`` is on stdout (so the check proves something)."""
    for name, text in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        assert RAW_CONTROL.findall(text) == [], (proc.args[3:], name, text[:2000])
    for text in shown:
        assert text in proc.stdout, (proc.args[3:], text, proc.stdout[:3000])


# -- the sanitizer ------------------------------------------------------------------------------------------------


def test_visible_writes_out_every_control_but_newline_and_tab() -> None:
    """C0 (ESC, BEL, CR, NUL), DEL and C1 become \\xNN; lone surrogates \\udcNN; text, markup, newline, tab stay."""
    assert visible("a\x1b[2Jb\x07\r\x00\x7f\x9b\x85") == "a\\x1b[2Jb\\x07\\x0d\\x00\\x7f\\x9b\\x85"
    assert visible("line\n\tindented [bold]x[/bold] é ✓ \u202e") == "line\n\tindented [bold]x[/bold] é ✓ \u202e"
    assert visible("name\udcff") == "name\\udcff"


def test_visible_json_is_the_same_document_without_raw_controls() -> None:
    """json.loads gives the value back; the text has no raw C0, DEL, C1 or lone surrogate (it can be encoded)."""
    value = {"goal": PAYLOAD + "\udcff", "é": ["\x85", 1]}
    text = visible_json(value)
    assert json.loads(text) == value and RAW_CONTROL.findall(text) == []
    text.encode("utf-8")
    assert "é" in text  # not ASCII-escaped unless asked
    assert visible_json(value, ensure_ascii=True) == json.dumps(value)


# -- every command ------------------------------------------------------------------------------------------------


def test_runs_list_and_show_print_hostile_text_visibly(world: World) -> None:
    """The goal, reason, sections, raw failed answer and workflow name: visible escapes; [bold] printed as text."""
    assert_inert(marsrag(world, "runs", "list", "--db", world.db), f"Goal {SHOWN}", visible(WORKFLOW)[:10])
    shown = marsrag(world, "runs", "show", world.run_id, "--db", world.db)
    assert shown.returncode == 0, shown.stderr
    assert_inert(
        shown,
        visible(WORKFLOW),
        f"Reason {SHOWN}",
        # The failed answer's hook as read: the reader reads raw text as a terminal shows it (its ESC sequences
        # removed), and what is left prints visibly (C1 controls as \x9b).
        "HOOK       [bold]loud[/bold] \\x9b31m\\x7f",
        f"Grip {SHOWN} [bold]loud[/bold] \\x9b31m\\x7f",
    )


def test_json_output_escapes_what_it_carries(world: World) -> None:
    """`--format json`: the stored values come back exactly, and no raw control character is printed."""
    listed = marsrag(world, "runs", "list", "--db", world.db, "--format", "json")
    assert_inert(listed)
    assert json.loads(listed.stdout)[0]["goal"] == f"Goal {PAYLOAD}"
    document = marsrag(world, "runs", "show", world.run_id, "--db", world.db, "--format", "json")
    assert_inert(document)
    assert json.loads(document.stdout)["status_reason"] == f"Reason {CLEAR}"


def test_with_colours_on_the_only_escapes_are_rich_colours(world: World) -> None:
    """FORCE_COLOR (a terminal): every ESC starts an SGR colour sequence of Rich's; the payload stays text."""
    proc = marsrag(world, "runs", "show", world.run_id, "--db", world.db, color=True)
    assert proc.returncode == 0, proc.stderr
    assert SGR.search(proc.stdout), "colours are on (else this proves nothing)"
    assert RAW_CONTROL.findall(SGR.sub("", proc.stdout)) == []
    assert SHOWN in SGR.sub("", proc.stdout) and "[bold]loud[/bold]" in SGR.sub("", proc.stdout)


def test_the_weekly_review_markdown_on_stdout_is_inert(world: World) -> None:
    """`marsrag review` prints Markdown with the failed task's goal and the workflow: escapes visible."""
    year, week, _ = datetime.now(UTC).isocalendar()
    proc = marsrag(world, "review", "--db", world.db, "--week", f"{year}-W{week:02d}")
    assert proc.returncode == 0, proc.stderr
    assert_inert(proc, "\\\\x1b", "PWNED")  # Markdown-escaped: a backslash doubled, brackets escaped


def test_metrics_and_tune_print_hostile_workflow_names_visibly(world: World) -> None:
    """The workflow name in the metrics title and in the tune recommendations."""
    metrics = marsrag(world, "metrics", "--db", world.db, "--workflow", WORKFLOW)
    assert metrics.returncode == 0, metrics.stderr
    assert_inert(metrics, visible(WORKFLOW))
    tune = marsrag(world, "tune", "--db", world.db, "--config", str(world.config), "--min-executions", "1")
    assert tune.returncode == 0, tune.stderr
    assert_inert(tune, visible(WORKFLOW))


def test_validate_prints_hostile_files_and_names_visibly(world: World) -> None:
    """A file whose name and answer hold escapes: text and JSON output, and the error line of a missing one."""
    path = world.directory / f"answer{CLEAR}.json"
    path.write_text(answer(hook=f"Hook {PAYLOAD}{TAIL}"), encoding="utf-8")
    text = marsrag(world, "validate", str(path))
    assert text.returncode == 0, text.stderr
    assert_inert(text, f"answer{SHOWN}.json", f"Hook {SHOWN}")
    as_json = marsrag(world, "validate", str(path), "--format", "json")
    assert_inert(as_json)
    assert json.loads(as_json.stdout)["loop_output"]["hook"] == f"Hook {PAYLOAD}{TAIL}"
    missing = marsrag(world, "validate", str(world.directory / f"gone{CLEAR}"))
    assert missing.returncode == 2 and "gone" in missing.stderr
    assert_inert(missing)


def test_run_progress_and_output_are_inert(world: World) -> None:
    """`marsrag run` in text: the progress lines on stderr and the printed run, hostile answers included."""
    replay = world.directory / "again.jsonl"
    hostile = answer(payoff=f"Payoff {PAYLOAD}{TAIL}")
    replay.write_text("".join(json.dumps({"output": hostile}) + "\n" for _ in range(3)), encoding="utf-8")
    proc = marsrag(
        world, "run", "latency", "--db", world.db, "--config", str(world.config), "--llm", f"replay:{replay}"
    )
    assert proc.returncode == 0, proc.stderr
    assert_inert(proc, f"Payoff {SHOWN} [bold]loud[/bold]")
    assert "diagnose: valid" in proc.stderr


# -- no way around the sanitizer ------------------------------------------------------------------------------------

SRC = Path(__file__).resolve().parents[2] / "src" / "marsrag"
#: The functions allowed to write to the terminal directly: each passes its text through marsrag.terminal.
WRITERS = {"cli.py": {"_out", "_out_json", "_error_line"}, "web/server.py": {"serve"}}
RICH_PRINTERS = ("render_text.py", "render_runs.py")


def _calls(path: Path) -> list[tuple[str, ast.Call]]:
    """Every call in the module, with the name of the function it is in ("" at the top)."""
    found: list[tuple[str, ast.Call]] = []

    def walk(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inside = child.name if isinstance(child, ast.FunctionDef) else function
            if isinstance(child, ast.Call):
                found.append((function, child))
            walk(child, inside)

    walk(ast.parse(path.read_text(encoding="utf-8")), "")
    return found


def test_the_cli_writes_only_through_the_sanitizer() -> None:
    """cli.py (and serve's banner) write to stdout/stderr only in their writers; no typer.echo, no print."""
    problems = []
    for name, allowed in WRITERS.items():
        for function, call in _calls(SRC / name):
            target = ast.unparse(call.func)
            if target in ("typer.echo", "print", "click.echo"):
                problems.append(f"{name}:{call.lineno} {target}()")
            elif target in ("sys.stdout.write", "sys.stderr.write") and function not in allowed:
                problems.append(f"{name}:{call.lineno} {target}() in {function or 'the module'}")
            elif target.startswith(("sys.stdout.write", "sys.stderr.write")) and "visible" not in ast.unparse(call):
                problems.append(f"{name}:{call.lineno} {target}() without visible()")
    assert problems == []


def test_the_rich_printers_take_text_only_through_shown() -> None:
    """render_text.py and render_runs.py build Rich text only with shown() and hand Rich no str (no markup)."""
    problems = []
    for name in RICH_PRINTERS:
        for function, call in _calls(SRC / name):
            target = ast.unparse(call.func)
            if target == "Text" and function != "shown":
                problems.append(f"{name}:{call.lineno} Text() outside shown()")
            if target.endswith((".print", ".add_row", ".append", "Table")):
                for argument in [*call.args, *(k.value for k in call.keywords if k.arg == "title")]:
                    if isinstance(argument, ast.JoinedStr) or (
                        isinstance(argument, ast.Constant) and isinstance(argument.value, str)
                    ):
                        problems.append(f"{name}:{call.lineno} {target}() given a str: wrap it in shown()")
    assert problems == []
