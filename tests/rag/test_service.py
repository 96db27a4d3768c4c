"""The CLI's and runner's entry points: ingest_paths, knowledge_base, and what importing the package costs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from marsrag.rag import ingest_paths, knowledge_base
from marsrag.rag.chunking import MAX_CHARS
from tests.conftest import REPO
from tests.rag.conftest import sql_engine, write

EXAMPLES = REPO / "examples" / "knowledge_base"


def test_ingest_paths_writes_to_the_given_database_and_prints_nothing_to_stdout(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """25 files with progress on: all added, stdout untouched (the bar, if any, is for stderr only)."""
    for number in range(25):
        write(tmp_path / "kb", f"note-{number:02}.md", f"# Note {number}\n\nThe answer is {number} bananas.\n")
    (tmp_path / "db").mkdir()  # --db never creates a folder: only the default data directory is made
    url = f"sqlite:///{tmp_path}/db/marsrag.db"
    report = ingest_paths([tmp_path / "kb"], db=url, progress=True)
    assert (report.added, report.chunks_written) == (25, 25)
    assert capfd.readouterr().out == ""
    with knowledge_base(url) as kb:
        assert kb.search("bananas 17")[0]["source"] == "kb/note-17.md#Note 17"


@pytest.mark.parametrize(("files", "progress", "shown"), [(21, True, True), (20, True, False), (21, False, False)])
def test_the_progress_bar_shows_on_a_terminal_for_ingests_of_more_than_20_files(
    tmp_path: Path, files: int, progress: bool, shown: bool
) -> None:
    """On a terminal (forced through Rich's TTY_COMPATIBLE), stderr gets a bar only for big ingests, if asked."""
    for number in range(files):
        write(tmp_path / "kb", f"n{number}.md", f"# N{number}\n\ntext\n")
    code = (
        "import sys\n"
        "from marsrag.rag import ingest_paths\n"
        f"print(ingest_paths([sys.argv[1]], db=sys.argv[2], progress={progress}).summary())\n"
    )
    argv = [sys.executable, "-c", code, str(tmp_path / "kb"), f"sqlite:///{tmp_path}/db"]
    env = {**os.environ, "TTY_COMPATIBLE": "1"}
    result = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    assert result.stdout.startswith(f"{files} added")
    assert ("Ingesting" in result.stderr) is shown
    if not shown:
        assert result.stderr == ""


def test_without_db_the_run_store_database_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """db=None means the run store's default database ($MARSRAG_DB here)."""
    monkeypatch.setenv("MARSRAG_DB", f"sqlite:///{tmp_path}/default.db")
    write(tmp_path / "kb", "a.txt", "Plain text about zebras.\n")
    assert ingest_paths([str(tmp_path / "kb")], progress=False).added == 1
    with knowledge_base() as kb:
        assert [hit["source"] for hit in kb.search("zebras")] == ["kb/a.txt"]


def test_the_report_reads_well_and_serializes(tmp_path: Path) -> None:
    """summary() is one line with every count; to_dict() names each skipped file with its reason."""
    write(tmp_path / "kb", "good.md", "# Good\n\ntext\n")
    bad = write(tmp_path / "kb", "bad.md", b"\xff\xfe")
    write(tmp_path / "kb", "photo.jpg", b"\xff\xd8")
    report = ingest_paths([tmp_path / "kb"], db=f"sqlite:///{tmp_path}/db", progress=False)
    assert report.summary() == "1 added, 0 updated, 0 unchanged, 1 skipped (1 other files ignored); 1 chunks written"
    assert report.to_dict()["skipped"] == [{"path": str(bad), "reason": "not UTF-8 text (byte 0xff at offset 0)"}]


def test_oversized_and_empty_files(tmp_path: Path) -> None:
    """A file over MAX_FILE_BYTES is skipped as too large; an empty one is a document without chunks."""
    from marsrag.rag.knowledge import MAX_FILE_BYTES

    huge = write(tmp_path / "kb", "huge.txt", b"a " * (MAX_FILE_BYTES // 2 + 1))
    write(tmp_path / "kb", "empty.md", "")
    report = ingest_paths([tmp_path / "kb"], db=f"sqlite:///{tmp_path}/db", progress=False)
    assert (report.added, report.chunks_written) == (1, 0)
    assert [(s.path, s.reason) for s in report.skipped] == [(str(huge), "cannot read: larger than 16 MiB")]


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="examples/knowledge_base is not there")
def test_the_example_knowledge_base_ingests_cleanly(tmp_path: Path) -> None:
    """The 34 example documents (the README says 34) are read, none skipped, into chunks within the size limit.

    The folder's own README.md, a guide to its layout, is passed over by its ``.marsragignore``.
    """
    url = f"sqlite:///{tmp_path}/marsrag.db"
    report = ingest_paths([EXAMPLES], db=url, progress=False)
    assert report.skipped == [] and report.added == 34 and report.chunks_written >= report.added
    with knowledge_base(url) as kb, sql_engine(kb) as engine, engine.connect() as connection:
        query = "SELECT d.path, length(c.text) FROM chunks AS c JOIN documents AS d ON d.id = c.document_id"
        rows = connection.exec_driver_sql(query).all()
    assert all(path.startswith("knowledge_base/") and size <= MAX_CHARS for path, size in rows)
    assert "knowledge_base/README.md" not in {path for path, _ in rows}
    assert "34 short" in (REPO / "README.md").read_text(encoding="utf-8")


def test_importing_the_package_imports_no_sqlalchemy() -> None:
    """``import marsrag.rag`` (and ingest_paths, knowledge_base) stays light; SQLAlchemy loads on open."""
    code = (
        "import sys\n"
        "from marsrag.rag import ingest_paths, knowledge_base, IngestReport, chunk_blocks\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'sqlalchemy', 'alembic', 'psycopg', 'rich'}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
