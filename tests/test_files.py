"""Named files are read only when regular and within their cap: config files, replay scripts, `validate` inputs.

A FIFO, a symlink to ``/dev/zero`` or a huge file is refused with one line naming it, never waited on or read
to the end. The hazardous cases run as real ``marsrag`` processes (with a generous timeout, so a regression
fails instead of hanging the suite).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from marsrag.errors import InputError
from marsrag.files import MAX_CONFIG_BYTES, UnreadableFileError, read_regular_file
from tests.contract.samples import CLEAN_JSON

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need a POSIX system")


def marsrag(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", *args],
        capture_output=True,
        check=False,
        stdin=subprocess.DEVNULL,
        timeout=300,
        env={**os.environ, "MARSRAG_HOME": str(home), "NO_COLOR": "1"},
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("marsrag: error:"), proc.stderr
    assert all(needle in lines[0] for needle in needles), (lines[0], needles)


@pytest.fixture
def hazards(tmp_path: Path) -> dict[str, Path]:
    """A FIFO nobody writes to, a symlink to /dev/zero, a directory."""
    found = {"zero": tmp_path / "zero.jsonl", "directory": tmp_path / "folder.jsonl"}
    found["zero"].symlink_to("/dev/zero")
    found["directory"].mkdir()
    if hasattr(os, "mkfifo"):
        found["fifo"] = tmp_path / "pipe.jsonl"
        os.mkfifo(found["fifo"])
    return found


# -- the reader -------------------------------------------------------------------------------------------------


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    """Up to the cap, the bytes as they are; a symlink to a regular file is followed."""
    path = tmp_path / "a.txt"
    path.write_bytes(b"\x00\xffhello")
    (tmp_path / "link.txt").symlink_to(path)
    assert read_regular_file(path, limit=7) == b"\x00\xffhello"
    assert read_regular_file(tmp_path / "link.txt", limit=7) == b"\x00\xffhello"


def test_a_file_over_the_cap_is_refused_or_cut(tmp_path: Path) -> None:
    """Over the cap: refused naming the cap, or with ``cut`` its first cap + 1 bytes (enough to say too long)."""
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 11)
    with pytest.raises(UnreadableFileError, match="larger than 10 bytes") as raised:
        read_regular_file(path, limit=10)
    assert isinstance(raised.value, InputError) and raised.value.path == str(path)
    assert read_regular_file(path, limit=10, cut=True) == b"x" * 11
    assert read_regular_file(path, limit=3, cut=True) == b"xxxx"


def test_what_is_not_a_regular_file_is_named(hazards: dict[str, Path], tmp_path: Path) -> None:
    """A device, a directory, a missing file: refused, the reason says which (the device is never opened)."""
    reasons = {
        "zero": "it is a character device, not a regular file",
        "directory": "it is a directory",
    }
    for name, reason in reasons.items():
        with pytest.raises(UnreadableFileError) as raised:
            read_regular_file(hazards[name], limit=10, cut=True)
        assert raised.value.reason == reason, name
    with pytest.raises(UnreadableFileError, match="No such file"):
        read_regular_file(tmp_path / "missing", limit=10)


# -- through the CLI ---------------------------------------------------------------------------------------------


@needs_fifo
def test_validate_refuses_a_fifo_and_a_device_and_still_validates_the_rest(
    hazards: dict[str, Path], tmp_path: Path
) -> None:
    """`marsrag validate FIFO /dev/zero-link ok.json`: an error line each (exit 2), and the good file's verdict."""
    good = tmp_path / "ok.json"
    good.write_text(CLEAN_JSON)
    proc = marsrag("validate", str(hazards["fifo"]), str(hazards["zero"]), str(good), "--format", "json", home=tmp_path)
    assert proc.returncode == 2, proc.stderr
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 2
    assert "pipe.jsonl" in errors[0] and "named pipe (FIFO), not a regular file" in errors[0]
    assert "zero.jsonl" in errors[1] and "character device, not a regular file" in errors[1]
    assert [json.loads(line)["source"] for line in proc.stdout.splitlines()] == [str(good)]


@needs_fifo
@pytest.mark.crewai
@pytest.mark.parametrize("hazard", ["fifo", "zero", "directory"])
def test_a_replay_script_that_is_no_regular_file_is_a_one_line_error(
    hazard: str, hazards: dict[str, Path], tmp_path: Path
) -> None:
    """`--llm replay:FIFO` (it hung) or replay: a symlink to /dev/zero (it grew to 22 GB): exit 2, nothing stored."""
    db = tmp_path / "runs.db"
    proc = marsrag("run", "goal", "--llm", f"replay:{hazards[hazard]}", "--db", f"sqlite:///{db}", home=tmp_path)
    assert_one_line_error(proc, "replay file", hazards[hazard].name)
    assert not db.exists()


@pytest.mark.crewai
def test_a_replay_script_over_the_config_cap_is_refused(tmp_path: Path) -> None:
    """A replay script larger than a config file may be is refused unread, naming the file and the cap."""
    script = tmp_path / "huge.jsonl"
    line = json.dumps({"output": "x" * 1000}) + "\n"
    script.write_text(line * (MAX_CONFIG_BYTES // len(line) + 1))
    proc = marsrag("run", "goal", "--llm", f"replay:{script}", "--db", f"sqlite:///{tmp_path}/r.db", home=tmp_path)
    assert_one_line_error(proc, "huge.jsonl", f"larger than {MAX_CONFIG_BYTES:,} bytes")


@needs_fifo
def test_lint_refuses_a_fifo_config_file(tmp_path: Path) -> None:
    """Config files come through the same reader: `marsrag lint FIFO` is an error line, not a hang."""
    fifo = tmp_path / "tasks.yaml"
    os.mkfifo(fifo)
    assert_one_line_error(marsrag("lint", str(fifo), home=tmp_path), "tasks.yaml", "named pipe")
