"""``marsrag init`` never fails half-way: a refusal is one line (exit 2) before anything is written, and a write
that fails leaves the place as it was, with no hidden build folder behind. Real processes on real folders."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from marsrag.scaffold import ProjectWriteError, _render
from marsrag.scaffold._write import STAGING_PREFIX, add_missing
from marsrag.terminal import visible_name
from tests.scaffold.test_init import FILES, run

NOT_EMPTY = "folder is not empty; give --force to add the missing files (yours are kept)"
IN_THE_WAY = (
    "where the project needs a folder (init never writes through a symlink nor replaces a file): move it away, "
    "or give another folder"
)


def tree(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry under ``root`` (hidden ones too), never following a symlink: its mode and content."""
    entries: dict[str, tuple[object, ...]] = {}
    for folder, folders, names in os.walk(root):
        for name in folders + names:
            path = Path(folder, name)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                content: object = os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                content = path.read_bytes()
            else:
                content = None
            entries[str(path.relative_to(root))] = (info.st_mode, content)
    return entries


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The refusal's message: exit 2, nothing on stdout, one ``marsrag: error:`` line that shows as itself."""
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    (line,) = result.stderr.splitlines()
    assert result.stderr == line + "\n" and line.startswith("marsrag: error: ")
    assert visible_name(line) == line  # no control character, line separator, bidi control nor lone surrogate
    return line.removeprefix("marsrag: error: ")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The working directory of the ``marsrag`` processes (their home and data directories are beside it)."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            os.fsdecode(b"bad\xffname"),
            r"bad\udcffname: the project name holds an undecodable byte (\xff) at character 4",
        ),
        ("new\nline", r"new\x0aline: the project name holds a control character (\x0a) at character 4"),
        ("tab\tbed", r"tab\x09bed: the project name holds a control character (\x09) at character 4"),
        ("\x1b[2Jbot", r"\x1b[2Jbot: the project name holds a control character (\x1b) at character 1"),
        ("bot\x7f", r"bot\x7f: the project name holds a control character (\x7f) at character 4"),
        ("bot\x9b31m", r"bot\x9b31m: the project name holds a control character (\x9b) at character 4"),
        ("two\u2028lines", r"two\u2028lines: the project name holds a line separator (\u2028) at character 4"),
        (
            "gpj.\u202eexe",
            r"gpj.\u202eexe: the project name holds a bidirectional formatting character (\u202e) at character 5",
        ),
        ("", "the project folder is empty: give the folder to create (DIRECTORY)"),
        (" bot", " bot: the project name starts or ends with whitespace"),
        ("bot\u3000", "bot\u3000: the project name starts or ends with whitespace"),
        ("b" * 64, f"{'b' * 64}: the project name has 64 characters; the limit is 63"),
        ("\U0001f916" * 64, f"{chr(0x1F916) * 64}: the project name has 64 characters; the limit is 63"),
        ("/", "/: has no name: give the folder to create (DIRECTORY)"),
        ("..", f"..: {NOT_EMPTY}"),
        ("no/such/bot", "no/such/bot: no/such is not an existing folder (init creates only the project's own)"),
    ],
    ids=repr,
)
def test_a_bad_name_is_refused_in_one_line_before_anything_is_written(work: Path, name: str, message: str) -> None:
    """Exit 2, one line naming the project as typed, escaped; nothing created anywhere."""
    before = tree(work.parent)
    assert one_line_error(run(work, "-m", "marsrag", "init", name)) == message
    assert tree(work.parent) == before


def test_the_folder_of_an_accepted_name_is_printed_escaped(work: Path) -> None:
    """A project inside a folder whose name holds a newline: every line printed stays one line, escaped."""
    (work / "a\nb").mkdir()
    created = run(work, "-m", "marsrag", "init", "a\nb/\u05d1\u05d5\u05d8 bot")
    assert created.returncode == 0, created.stderr
    lines = created.stdout.splitlines()
    assert lines[0] == "Created a\\x0ab/\u05d1\u05d5\u05d8 bot/ (13 files)"
    assert lines[2] == "  cd 'a\\x0ab/\u05d1\u05d5\u05d8 bot'"
    assert len(lines) == 8
    project = work / "a\nb" / "\u05d1\u05d5\u05d8 bot"
    assert (project / "README.md").read_text(encoding="utf-8").startswith("# \u05d1\u05d5\u05d8 bot\n")


def test_a_dangling_symlink_as_the_folder_is_refused(work: Path) -> None:
    """DIRECTORY itself a dangling symlink: refused; the link is not followed to create its target."""
    (work / "bot").symlink_to(work / "elsewhere")
    before = tree(work.parent)
    assert one_line_error(run(work, "-m", "marsrag", "init", "bot")) == (
        "bot: is a dangling symlink; remove it, or give another folder"
    )
    assert tree(work.parent) == before


def obstacle_cases() -> Iterator[tuple[str, str, Callable[[Path], object]]]:
    """(what, the path in the project, how to make it) for every kind of entry where a folder should be."""
    yield "a dangling symlink", "tests", lambda path: path.symlink_to(path.parent / "gone")
    yield "a symlink", "config", lambda path: path.symlink_to(path.parent.parent / "outside", target_is_directory=True)
    yield "a file", "knowledge", lambda path: path.write_text("mine\n")
    yield "a named pipe", "tests", lambda path: os.mkfifo(path)


@pytest.mark.parametrize(
    ("kind", "where", "make"), [pytest.param(*case, id=f"{case[0]} at {case[1]}") for case in obstacle_cases()]
)
def test_force_refuses_what_is_in_a_folders_place_and_leaves_everything(
    work: Path, kind: str, where: str, make: Callable[[Path], object]
) -> None:
    """--force over a folder holding, where the project needs a folder, a symlink (dangling or to a folder
    outside, which stays empty) or a file: one line, exit 2, the folder and the outside as they were."""
    (work / "outside").mkdir()
    project = work / "sl"
    project.mkdir()
    (project / "README.md").write_text("mine\n")
    make(project / where)
    before = tree(work.parent)
    assert one_line_error(run(work, "-m", "marsrag", "init", "sl", "--force")) == f"sl/{where}: is {kind}, {IN_THE_WAY}"
    assert tree(work.parent) == before


def test_force_keeps_symlinks_at_files_places_and_never_follows_them(work: Path) -> None:
    """Symlinks (dangling, to a file outside, to a folder) and a folder where files go are kept as they are;
    the other files are written; nothing outside the project changes."""
    outside = work / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("theirs\n")
    project = work / "bot"
    (project / "config").mkdir(parents=True)
    (project / "README.md").symlink_to(outside / "secret.txt")
    (project / ".gitignore").symlink_to(outside / "missing")
    (project / "pytest.ini").symlink_to(outside, target_is_directory=True)
    (project / "config" / "tasks.yaml").mkdir()
    before_outside = tree(outside)
    created = run(work, "-m", "marsrag", "init", "bot", "--force")
    assert created.returncode == 0, created.stderr
    kept = ["README.md", "config/tasks.yaml", ".gitignore", "pytest.ini"]
    assert created.stdout.splitlines()[:2] == [
        "Created bot/ (9 files)",
        f"Kept your 4 existing file(s): {', '.join(kept)}",
    ]
    assert tree(outside) == before_outside
    assert os.readlink(project / ".gitignore") == str(outside / "missing")
    written = {str(p.relative_to(project)) for p in project.rglob("*") if p.is_file() and not p.is_symlink()}
    assert written == set(FILES) - set(kept)
    assert not [p for p in work.rglob(f"{STAGING_PREFIX}*")]


@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    """``path`` immutable (chattr +i: even root cannot add to it); skip where that cannot be set."""
    if shutil.which("chattr") is None:
        pytest.skip("no chattr")
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i needs root and a file system that has the attribute")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_move_that_fails_takes_every_moved_entry_out_again(work: Path) -> None:
    """--force over a folder whose tests/ refuses new files: the seven entries moved in before it are taken out
    again; one line, exit 2, the folder as it was, no hidden build folder."""
    project = work / "bot"
    (project / "tests").mkdir(parents=True)
    (project / "notes.txt").write_text("mine\n")
    before = tree(work.parent)
    with immutable(project / "tests"):
        refused = run(work, "-m", "marsrag", "init", "bot", "--force")
    assert one_line_error(refused) == (
        "bot: cannot add tests/test_config.py (Operation not permitted); nothing was written"
    )
    assert tree(work.parent) == before


@pytest.mark.parametrize("existing", [False, True], ids=["new folder", "existing folder"])
def test_a_write_that_fails_leaves_nothing(work: Path, existing: bool) -> None:
    """The files cannot be written (a 1 KiB file size limit; config/tasks.yaml is larger): nothing is left,
    beside a new folder or inside an existing one, and the message says so."""
    if existing:
        (work / "bot").mkdir()
    before = tree(work.parent)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    refused = run(work, "-m", "marsrag", "init", "bot", preexec_fn=limit)
    assert one_line_error(refused) == "bot: cannot write the project (File too large); nothing was written"
    assert tree(work.parent) == before


def permissions_hold() -> list[str]:
    """The command prefix under which file permissions hold: none for a user; for root, setpriv dropping the
    capabilities that bypass them (skipped where it cannot)."""
    if os.geteuid() != 0:
        return []
    command = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner"]
    if shutil.which("setpriv") is None or subprocess.run([*command, "true"], capture_output=True).returncode:
        pytest.skip("root, and setpriv cannot drop the capabilities that bypass file permissions")
    return command


@pytest.mark.parametrize(
    ("locked", "mode", "arguments", "message"),
    [
        ("", 0o555, ["bot"], "bot: cannot write the project (Permission denied); nothing was written"),
        ("bot", 0o555, ["bot"], "bot: cannot write the project (Permission denied); nothing was written"),
        (
            "bot/tests",
            0o555,
            ["bot", "--force"],
            "bot: cannot add tests/test_config.py (Permission denied); nothing was written",
        ),
        ("bot", 0o311, ["bot"], "bot: Permission denied"),
        ("bot/config", 0o600, ["bot", "--force"], "bot/config/agents.yaml: Permission denied"),
    ],
    ids=["parent read-only", "folder read-only", "tests/ read-only", "folder unlistable", "config/ unsearchable"],
)
def test_a_place_without_permission_is_refused_in_one_line(
    work: Path, locked: str, mode: int, arguments: list[str], message: str
) -> None:
    """A folder the project needs that cannot be written, listed or searched: one line, exit 2, nothing left
    (for tests/: the seven entries moved in before it are taken out again)."""
    prefix = permissions_hold()
    place = work / locked
    place.mkdir(parents=True, exist_ok=True)
    if locked == "bot/tests":
        (work / "bot" / "notes.txt").write_text("mine\n")
    place.chmod(mode)
    try:
        before = tree(work.parent)
        refused = run(work, "-m", "marsrag", "init", *arguments, prefix=prefix)
        assert one_line_error(refused) == message
        assert tree(work.parent) == before
    finally:
        place.chmod(0o755)


def test_an_entry_appearing_after_the_check_is_never_replaced(tmp_path: Path) -> None:
    """An entry appears at tests/ between the check and the moves (here: before the moves are called): the
    move fails on it, the entries moved before are taken out, and the entry is left as it was."""
    files = _render("bot")
    missing = {"config", "knowledge", "tests"}
    (tmp_path / "tests").symlink_to(tmp_path / "gone")
    before = tree(tmp_path)
    with pytest.raises(ProjectWriteError) as raised:
        add_missing(tmp_path, files, missing_folders=missing, shown="bot")
    assert str(raised.value) == "bot: cannot add tests (Not a directory); nothing was written"
    assert tree(tmp_path) == before


def test_a_symlink_named_as_the_folder_names_the_project(work: Path) -> None:
    """DIRECTORY a symlink to an empty folder: the folder it names is filled, the symlink stays a symlink."""
    (work / "real").mkdir()
    (work / "link").symlink_to(work / "real", target_is_directory=True)
    created = run(work, "-m", "marsrag", "init", "link")
    assert created.returncode == 0, created.stderr
    assert os.readlink(work / "link") == str(work / "real")
    assert sorted(str(p.relative_to(work / "real")) for p in (work / "real").rglob("*") if p.is_file()) == FILES
    assert (work / "real" / "README.md").read_text().startswith("# link\n")
