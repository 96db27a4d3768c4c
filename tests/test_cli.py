"""The `marsrag` CLI, run as a real process on real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from marsrag.cli import app
from tests.contract.samples import CLEAN_JSON, CONTENT, labelled


def marsrag(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", *args],
        input=stdin,
        capture_output=True,
        check=False,
        env={**os.environ, "COLUMNS": "120", "NO_COLOR": "1"},
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def answers(tmp_path: Path) -> dict[str, Path]:
    files = {
        "valid.json": CLEAN_JSON.encode(),
        "labels.md": labelled("**{T}:** {v}", "\n\n").encode(),
        "partial.json": json.dumps({k: v for k, v in CONTENT.items() if k != "grip"}).encode(),
        "prose.txt": b"Caches restart cold; pre-warm them.",
        "binary.bin": b"\x00\xff\xfe" + labelled("{L}: {v}").encode() + b"\x00\x80",
    }
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / name
        paths[name].write_bytes(data)
    return paths


def json_lines(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_valid_file_exits_0_and_shows_the_sections(answers: dict[str, Path]) -> None:
    """Text output shows the status and the five sections in order."""
    proc = marsrag("validate", str(answers["labels.md"]))
    assert proc.returncode == 0, proc.stderr
    assert "[VALID]" in proc.stdout
    positions = [proc.stdout.index(label) for label in ("HOOK", "GRIP", "PAYOFF", "REINFORCE", "LOOP")]
    assert positions == sorted(positions)
    assert CONTENT["loop"] in proc.stdout


def test_json_format_prints_one_object_per_input(answers: dict[str, Path]) -> None:
    """--format json: one line per input with the documented keys; exit 1 when any is not valid."""
    paths = [str(answers[name]) for name in ("valid.json", "partial.json", "prose.txt")]
    proc = marsrag("validate", *paths, "--format", "json")
    assert proc.returncode == 1
    lines = json_lines(proc.stdout)
    assert [line["source"] for line in lines] == paths
    assert [line["status"] for line in lines] == ["valid", "partial", "failed"]
    assert set(lines[0]) == {"source", "status", "completes", "errors", "warnings", "loop_output"}
    assert lines[1]["errors"] == [{"field": "grip", "code": "missing", "message": "grip is missing"}]


def test_mode_decides_completes_not_status(answers: dict[str, Path]) -> None:
    """--mode soft completes a partial output; the exit code still reports it as not valid."""
    proc = marsrag("validate", str(answers["partial.json"]), "--mode", "soft", "--format", "json")
    assert proc.returncode == 1
    assert json_lines(proc.stdout)[0]["completes"] is True


def test_stdin_is_read_without_file_or_with_dash() -> None:
    """No FILE, or '-', reads standard input; its source is '-'."""
    for args in ((), ("-",)):
        proc = marsrag("validate", *args, "--format", "json", stdin=CLEAN_JSON.encode())
        assert proc.returncode == 0
        assert json_lines(proc.stdout)[0]["source"] == "-"


def test_any_bytes_get_a_verdict(answers: dict[str, Path]) -> None:
    """NUL bytes and invalid UTF-8 do not stop the file from being validated."""
    proc = marsrag("validate", str(answers["binary.bin"]), "--format", "json")
    assert proc.returncode == 0, proc.stdout
    assert json_lines(proc.stdout)[0]["status"] == "valid"


def test_missing_file_is_a_usage_error_and_others_still_get_their_line(
    answers: dict[str, Path], tmp_path: Path
) -> None:
    """A missing file: one line naming it on stderr, exit 2, no traceback; readable files are still done."""
    missing = tmp_path / "nope.txt"
    proc = marsrag("validate", str(missing), str(answers["valid.json"]), "--format", "json")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and str(missing) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert [line["source"] for line in json_lines(proc.stdout)] == [str(answers["valid.json"])]


def test_directory_is_a_usage_error(tmp_path: Path) -> None:
    """A directory is named as such."""
    proc = marsrag("validate", str(tmp_path))
    assert proc.returncode == 2 and "is a directory" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("validate", "--mode", "strict"), "--mode"),
        (("validate", "--format", "xml"), "--format"),
        (("nonsense",), "nonsense"),
        (("schema", "--indent", "99"), "--indent"),
    ],
)
def test_bad_options_are_one_line_usage_errors(args: tuple[str, ...], needle: str) -> None:
    """Bad options: exit 2, one line on stderr naming the problem, no traceback."""
    proc = marsrag(*args)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr
    assert proc.stderr.startswith("marsrag: error:")


def test_schema_prints_the_json_schema() -> None:
    """`marsrag schema` prints LoopOutput's JSON Schema with the five required string fields."""
    proc = marsrag("schema")
    assert proc.returncode == 0
    schema = json.loads(proc.stdout)
    assert schema["required"] == list(CONTENT)
    assert schema["$id"] == "urn:marsrag:loop-output:1.5.0"
    assert all(schema["properties"][name]["maxLength"] == 800 for name in CONTENT)


def test_version_and_help() -> None:
    """--version prints the package version; --help lists the commands."""
    from marsrag import __version__

    assert marsrag("--version").stdout.strip() == f"marsrag {__version__}"
    help_text = marsrag("--help").stdout
    assert "validate" in help_text and "schema" in help_text


def test_every_command_has_help_ending_with_an_example() -> None:
    """Each command's docstring is its --help and ends with an example."""
    for command in app.registered_commands:
        assert command.callback is not None and command.callback.__doc__
        assert command.callback.__doc__.strip().splitlines()[-1].strip().startswith("Example: marsrag ")
        name = command.name or command.callback.__name__
        proc = marsrag(name, "--help")
        assert proc.returncode == 0 and "Example: marsrag" in proc.stdout


@pytest.mark.parametrize("args", [("validate", "-"), ("schema",), ("lint",)])
def test_fast_commands_do_not_import_crewai_or_sqlalchemy(args: tuple[str, ...]) -> None:
    """validate, schema and lint start without importing CrewAI, SQLAlchemy or the JSON repair library."""
    probe = (
        "import sys\n"
        "from marsrag.cli import main\n"
        "try:\n"
        f"    main({list(args)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'crewai', 'sqlalchemy', 'json_repair'})\n"
        "sys.stderr.write('HEAVY=' + ','.join(heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], input=CLEAN_JSON.encode(), capture_output=True, check=False)
    assert proc.stderr.decode().strip().endswith("HEAVY="), proc.stderr.decode()
