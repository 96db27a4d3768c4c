"""``marsrag run``'s live line on stderr: drawn on a terminal, absent otherwise, never on stdout (issue 41)."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contract.samples import CONTENT

pytestmark = pytest.mark.crewai

#: Chunks a second of the streaming replay LLM: each answer takes about a second, several redraws of the line.
RATE = 60
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _script(tmp_path: Path) -> Path:
    script = tmp_path / "replay.jsonl"
    steps = [{"output": json.dumps({**CONTENT, "loop": f"Question {n}?"}), "tokens_per_second": RATE} for n in range(3)]
    script.write_text("".join(json.dumps(step) + "\n" for step in steps), encoding="utf-8")
    return script


def _environment(tmp_path: Path) -> dict[str, str]:
    settings = tmp_path / "settings.toml"
    settings.touch()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MARSRAG_", "NO_COLOR", "TERM"))}
    return {**clean, "MARSRAG_HOME": str(tmp_path / "home"), "MARSRAG_CONFIG": str(settings), "TERM": "xterm"}


def _run(tmp_path: Path, *, terminal: bool) -> tuple[int, str, str]:
    """``marsrag run`` with stdout a pipe and stderr a pipe or a terminal (a pty); its code, stdout and stderr."""
    command = [sys.executable, "-m", "marsrag", "run", "Checkout latency breached its SLO", "--llm",
               f"replay:{_script(tmp_path)}", "--db", f"sqlite:///{tmp_path / 'runs.db'}"]  # fmt: skip
    if not terminal:
        proc = subprocess.run(command, capture_output=True, env=_environment(tmp_path), timeout=300, check=False)
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    controller, child = pty.openpty()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=child, env=_environment(tmp_path)) as proc:
        os.close(child)
        seen = bytearray()
        while True:
            try:
                data = os.read(controller, 65536)
            except OSError:  # the child closed its end: the terminal has nothing more
                break
            if not data:
                break
            seen += data
        out = proc.stdout.read().decode() if proc.stdout else ""
        code = proc.wait(timeout=300)
    os.close(controller)
    return code, out, seen.decode(errors="replace")


def test_on_a_terminal_stderr_shows_the_task_being_written_and_stdout_only_the_result(tmp_path: Path) -> None:
    code, out, err = _run(tmp_path, terminal=True)
    assert code == 0, err[-2000:]
    drawn = ANSI.sub("", err)
    assert re.search(r"1\. diagnose · writing (HOOK|GRIP|PAYOFF|REINFORCE|LOOP) · \d+ tokens · \d+ s", drawn), drawn[
        -2000:
    ]
    assert "tokens" not in out and "\x1b" not in out
    assert out.startswith("run ") and "completed" in out.splitlines()[0] and "[VALID]" in out  # the final result


def test_without_a_terminal_stderr_has_the_task_lines_and_no_live_line(tmp_path: Path) -> None:
    code, out, err = _run(tmp_path, terminal=False)
    assert code == 0, err[-2000:]
    assert "tokens" not in err and "\x1b" not in err and "writing" not in err
    assert re.search(r"^  diagnose: valid$", err, re.MULTILINE), err
    assert "tokens" not in out and out.startswith("run ") and "[VALID]" in out
