"""Hostile inputs to ingest: nothing outside the given paths is read, and bad paths fail in one line.

The rule (marsrag.rag._discover): a path named on the command line is trusted as a root (after resolving);
inside a root, a symlink is followed only when its target is inside some root, else it is skipped with the
reason "outside the paths given". Only regular files are read: FIFOs, sockets and devices inside a folder are
passed over, and named directly they are skipped ("not a regular file"), never opened (a FIFO would block).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from marsrag.rag import ingest_paths, knowledge_base
from marsrag.rag.knowledge import MAX_FILE_BYTES
from tests.rag.conftest import marsrag, sql_engine, write

#: The summary's end when the default embedder embedded one chunk.
EMBEDDED_ONE = ", 1 embedded with wordllama/l2_supercat-256"

SECRET = "The vault combination is kumquat."


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """``docs/`` with one good file, and a ``private/`` sibling holding a secret that must never be ingested."""
    write(tmp_path / "docs", "guide.md", "# Guide\n\nRestart the cache before the deploy.\n")
    write(tmp_path / "private", "secret.md", f"# Secret\n\n{SECRET}\n")
    write(tmp_path / "private", "notes.txt", f"{SECRET}\n")
    return tmp_path


def searched(db: str, query: str) -> list[str]:
    with knowledge_base(db) as kb:
        return [hit["source"] for hit in kb.search(query)]


def documents(db: str) -> list[str]:
    with knowledge_base(db) as kb, sql_engine(kb) as engine, engine.connect() as connection:
        return sorted(row[0] for row in connection.exec_driver_sql("SELECT path FROM documents"))


def test_links_escaping_the_root_by_any_route_are_skipped(layout: Path) -> None:
    """Absolute, relative (../), chained and looping links out of docs/ are skipped and named; the secret stays out."""
    docs = layout / "docs"
    (docs / "abs.md").symlink_to(layout / "private" / "secret.md")
    (docs / "rel.md").symlink_to(Path("..") / "private" / "secret.md")
    (docs / "dir").symlink_to(Path("..") / "private", target_is_directory=True)
    (docs / "hop.md").symlink_to(docs / "rel.md")  # inside, but leads on outside
    (docs / "sub").mkdir()
    (docs / "sub" / "up").symlink_to(Path("..") / "..", target_is_directory=True)  # the parent of the root
    (docs / "self").symlink_to(docs, target_is_directory=True)  # a loop, inside
    db = f"sqlite:///{layout}/kb.db"
    report = ingest_paths([docs], db=db, progress=False)
    assert report.added == 1
    skipped = {Path(item.path).name: item.reason for item in report.skipped}
    assert set(skipped) == {"abs.md", "rel.md", "dir", "hop.md", "up"}
    assert all("outside the paths given" in reason for reason in skipped.values())
    assert searched(db, "vault kumquat") == [] and documents(db) == ["docs/guide.md"]


def test_dot_dot_components_in_a_given_path_name_that_folder(layout: Path) -> None:
    """``docs/../docs`` is the folder docs (keys from its real name); ``docs/..`` would be the parent, by request."""
    db = f"sqlite:///{layout}/kb.db"
    report = ingest_paths([layout / "docs" / ".." / "docs"], db=db, progress=False)
    assert (report.added, report.skipped) == (1, [])
    assert documents(db) == ["docs/guide.md"]


@pytest.mark.parametrize("named", ["fifo.md", "link-to-fifo.md", "dev-zero.md", "dev-null.txt"])
def test_fifos_and_devices_named_directly_are_skipped_without_being_opened(layout: Path, named: str) -> None:
    """A FIFO (which would block the read forever) or a device is skipped with a reason; the rest is ingested."""
    os.mkfifo(layout / "fifo.md")
    (layout / "link-to-fifo.md").symlink_to(layout / "fifo.md")
    (layout / "dev-zero.md").symlink_to("/dev/zero")
    (layout / "dev-null.txt").symlink_to("/dev/null")
    db = f"sqlite:///{layout}/kb.db"
    report = ingest_paths([layout / named, layout / "docs"], db=db, progress=False)
    assert report.added == 1
    assert [(Path(s.path).name, s.reason) for s in report.skipped] == [
        (named, "not a regular file (a FIFO, socket or device): not read")
    ]


def test_fifos_and_device_links_inside_a_folder_are_passed_over(layout: Path) -> None:
    """Inside a root, a FIFO is not a document, and a link to /dev/zero leads outside: neither is opened."""
    docs = layout / "docs"
    os.mkfifo(docs / "pipe.md")
    (docs / "zero.md").symlink_to("/dev/zero")
    db = f"sqlite:///{layout}/kb.db"
    report = ingest_paths([docs], db=db, progress=False)
    assert report.added == 1
    assert [(Path(s.path).name, "outside the paths given" in s.reason) for s in report.skipped] == [("zero.md", True)]


def test_binary_invalid_utf8_and_huge_files_are_skipped_with_reasons(layout: Path) -> None:
    """Each hostile file is named with its reason; valid neighbours are ingested."""
    docs = layout / "docs"
    write(docs, "nul.md", b"# Title\n\x00\x00")
    write(docs, "latin1.txt", "caf\xe9".encode("latin-1"))
    write(docs, "surrogate.md", b"# A \xed\xa0\x80 b\n")  # a UTF-8 encoded surrogate is not UTF-8
    write(docs, "bom16.html", "<h1>x</h1>".encode("utf-16"))
    huge = docs / "huge.txt"
    with huge.open("wb") as file:
        file.truncate(MAX_FILE_BYTES + 1)  # sparse: big to read, cheap to make
    db = f"sqlite:///{layout}/kb.db"
    report = ingest_paths([docs], db=db, progress=False)
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert reasons == {
        "nul.md": "binary file (NUL byte at offset 8)",
        "latin1.txt": "not UTF-8 text (byte 0xe9 at offset 3)",
        "surrogate.md": "not UTF-8 text (byte 0xed at offset 4)",
        "bom16.html": "binary file (NUL byte at offset 3)",
        "huge.txt": "cannot read: larger than 16 MiB",
    }
    assert documents(db) == ["docs/guide.md"]


@pytest.mark.parametrize(
    "bad", ["missing", "docs/../nope", "broken-link", "nul\x01name", "x" * 300, "y/" * 3000], ids=lambda v: v[:20]
)
def test_the_cli_reports_a_bad_path_in_one_line_and_exits_2(layout: Path, bad: str) -> None:
    """A missing path, a broken link, an odd or overlong name: one stderr line, exit 2, nothing written."""
    (layout / "broken-link").symlink_to(layout / "gone")
    proc = marsrag("ingest", "docs", bad, "--db", f"sqlite:///{layout}/kb.db", cwd=layout)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("marsrag: error: ") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert documents(f"sqlite:///{layout}/kb.db") == []


def test_the_cli_names_each_skipped_file_and_never_reads_the_secret(layout: Path) -> None:
    """Through the CLI: one warning line per skipped path, the summary line, exit 0; the secret is not stored."""
    docs = layout / "docs"
    (docs / "leak.md").symlink_to(layout / "private" / "secret.md")
    os.mkfifo(layout / "pipe.md")
    proc = marsrag("ingest", "docs", "pipe.md", "--db", f"sqlite:///{layout}/kb.db", cwd=layout)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"ingested: 1 added, 0 updated, 0 unchanged, 2 skipped; 1 chunks written{EMBEDDED_ONE}\n"
    assert sorted(proc.stderr.splitlines()) == [
        f"marsrag: warning: skipped docs/leak.md: symlink to {layout / 'private' / 'secret.md'}, "
        "outside the paths given: not followed",
        "marsrag: warning: skipped pipe.md: not a regular file (a FIFO, socket or device): not read",
    ]
    assert searched(f"sqlite:///{layout}/kb.db", "vault kumquat") == []
