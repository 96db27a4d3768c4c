"""``.marsragignore``: gitignore-like patterns that ingest passes over, per folder, read through a real ingest."""

from __future__ import annotations

from pathlib import Path

import pytest

from marsrag.rag import ingest_paths, knowledge_base
from marsrag.rag._ignore import IgnoreRules
from tests.rag.conftest import sql_engine, write

NOTE = "# Note\n\nSome knowledge.\n"


def ingested(root: Path, tmp_path: Path) -> list[str]:
    """The document paths a real SQLite ingest of ``root`` stores, sorted."""
    url = f"sqlite:///{tmp_path}/marsrag.db"
    report = ingest_paths([root], db=url, progress=False)
    assert report.skipped == []
    with knowledge_base(url) as kb, sql_engine(kb) as engine, engine.connect() as connection:
        return sorted(row[0] for row in connection.exec_driver_sql("SELECT path FROM documents").all())


def test_patterns_pass_over_files_and_folders_at_any_depth(tmp_path: Path) -> None:
    """Anchored, unanchored, folder-only and negated patterns (the last match decides); a deeper file first."""
    kb = tmp_path / "kb"
    for name in ("README.md", "a/README.md", "a/draft-1.md", "a/keep.md", "build/x.md", "b/build.md", "b/c/d.md"):
        write(kb, name, NOTE)
    write(kb, ".marsragignore", "# layout notes\n/README.md\n*.md\n!a/*.md\n!b/**\n\ndraft-*.md\nbuild/\n")
    write(kb, "b/c/.marsragignore", "d.md\n")
    assert ingested(kb, tmp_path) == ["kb/a/README.md", "kb/a/keep.md", "kb/b/build.md"]


def test_a_file_named_directly_is_read_whatever_the_patterns(tmp_path: Path) -> None:
    """The ignore file governs what a folder walk finds, not what the user names."""
    write(tmp_path / "kb", ".marsragignore", "*.md\n")
    assert ingested(write(tmp_path / "kb", "README.md", NOTE), tmp_path) == ["README.md"]


def test_an_unreadable_ignore_file_is_skipped_with_why(tmp_path: Path) -> None:
    """Not UTF-8: the ignore file is named among the skipped, with the reason; the documents are read."""
    write(tmp_path / "kb", "doc.md", NOTE)
    bad = write(tmp_path / "kb", ".marsragignore", b"\xff\xfe*.md\n")
    report = ingest_paths([tmp_path / "kb"], db=f"sqlite:///{tmp_path}/db", progress=False)
    assert report.added == 1
    assert [(s.path, s.reason) for s in report.skipped] == [(str(bad), "not UTF-8 text: its patterns are not used")]


@pytest.mark.parametrize(
    ("pattern", "path", "folder", "expected"),
    [
        ("*.md", "x/y.md", False, True),
        ("/y.md", "x/y.md", False, None),
        ("x/*.md", "x/y/z.md", False, None),
        ("x/**/z.md", "x/y/w/z.md", False, True),
        ("**/z.md", "z.md", False, True),
        ("y?.md", "y1.md", False, True),
        ("[!a]*.md", "b.md", False, True),
        ("[!a]*.md", "a.md", False, None),
        ("out/", "out", False, None),
        ("out/", "out", True, True),
        ("\\#x", "#x", False, True),
        ("[z-a]", "z", False, None),
    ],
)
def test_glob_forms(pattern: str, path: str, folder: bool, expected: bool | None) -> None:
    """Each glob form matches as in gitignore (a reversed range matches nothing)."""
    assert IgnoreRules.parse(pattern).verdict(path, folder=folder) is expected
