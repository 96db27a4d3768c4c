"""The project-name rule: what it accepts is a name that shows as itself and fits a file name, and ``marsrag init``
on any name either refuses it in one line (exit 2) having written nothing, or writes the complete project."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from marsrag.cli import main
from marsrag.scaffold import init_project
from marsrag.scaffold.names import MAX_PROJECT_NAME_CHARS, project_name_problem
from marsrag.terminal import visible_name
from tests.scaffold.test_init import FILES
from tests.scaffold.test_init_failures import tree

#: What no name may hold, from the Unicode database: controls, surrogates, line and paragraph separators, and
#: the explicit bidirectional formatting characters (UAX #9's classes).
REFUSED_CATEGORIES = {"Cc", "Cs", "Zl", "Zp"}
BIDI_FORMATTING = {"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}


def unshowable(character: str) -> bool:
    """Whether the Unicode database puts ``character`` among those no name may hold."""
    return (
        unicodedata.category(character) in REFUSED_CATEGORIES or unicodedata.bidirectional(character) in BIDI_FORMATTING
    )


def test_a_name_refuses_exactly_the_characters_a_name_cannot_show_as_itself() -> None:
    """Over every code point: the rule refuses a character, and visible_name escapes it, iff the Unicode
    database makes it a control, a surrogate, a line or paragraph separator or a bidirectional control."""
    wrong: list[str] = []
    for code in range(0x110000):
        character = chr(code)
        expected = unshowable(character)
        if (visible_name(character) != character) != expected:
            wrong.append(f"visible_name U+{code:04X}")
        if (project_name_problem(f"a{character}a") is not None) != expected:
            wrong.append(f"rule U+{code:04X}")
    assert wrong == []


@pytest.mark.parametrize(
    "name",
    [
        "support-bot",
        "my bot",
        "v1.2",
        ".hidden",
        "...",
        "\u65e5\u672c\u8a9e",
        "\u05d1\u05d5\u05d8",  # a right-to-left script: its letters, not bidi controls
        "\U0001f469\u200d\U0001f4bb",  # an emoji sequence with a zero-width joiner
        "b" * MAX_PROJECT_NAME_CHARS,
        "\U0001f916" * MAX_PROJECT_NAME_CHARS,  # 252 bytes: the longest name in bytes fits a file name
    ],
)
def test_an_accepted_name_is_a_project(tmp_path: Path, name: str) -> None:
    """Each name the rule accepts makes a complete project, titled with it."""
    assert project_name_problem(name) is None
    report = init_project(tmp_path / name)
    assert sorted(report.written) == sorted(FILES)
    assert (tmp_path / name / "README.md").read_text(encoding="utf-8").startswith(f"# {name}\n")


def cli(arguments: list[str]) -> tuple[int, str, str]:
    """``marsrag ARGUMENTS`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exited:
        main(arguments)
    code = exited.value.code
    assert isinstance(code, int)
    return code, out.getvalue(), err.getvalue()


# Any text, lone surrogates included, and any bytes as a command line brings them (os.fsdecode's
# surrogateescape). A name with a "/" is a path (tested on its own): left out, it cannot leave the sandbox.
NAMES = st.one_of(
    st.text(st.characters(exclude_categories=())),
    st.binary().map(os.fsdecode),
).filter(lambda name: "/" not in name)


@given(NAMES)
@example(os.fsdecode(b"bad\xffname"))
@example("new\nline")
@example("x\x00y")
@example(".")
@example("..")
@example("")
@example(" ")
@example("\u202ebot")
def test_any_name_is_refused_in_one_line_or_makes_a_complete_project(name: str) -> None:
    """`marsrag init NAME` in an empty folder: exit 2 with one escaped line and nothing written anywhere, or exit
    0 with exactly the template's files in the folder NAME names (the empty folder itself for ".")."""
    sandbox = Path(tempfile.mkdtemp(prefix="init-names-"))
    try:
        work = sandbox / "work"
        work.mkdir()
        (sandbox / "mine.txt").write_text("mine\n")  # ".." is not an empty folder
        before = tree(sandbox)
        with contextlib.chdir(work):
            code, out, err = cli(["init", name])
        assert code in (0, 2), err
        if code == 2:
            (line,) = err.splitlines()
            assert err == line + "\n" and line.startswith("marsrag: error: ")
            assert visible_name(line) == line
            assert out == ""
            assert tree(sandbox) == before
            return
        assert err == ""
        assert not any(map(unshowable, name)) and 0 < len(name) <= MAX_PROJECT_NAME_CHARS
        assert name == name.strip()
        project = work if name == "." else work / name
        assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) == FILES
        assert out.splitlines()[0] == f"Created {name}/ ({len(FILES)} files)"
        after = tree(sandbox)
        assert {path for path in after if path not in before} == {
            str(p.relative_to(sandbox)) for p in [project, *project.rglob("*")] if p != work
        }
    finally:
        shutil.rmtree(sandbox)
