"""A document's identity on every backend: its collection and path, so same-named folders never replace each other.

Issue 16: documents were keyed by the ingested folder's name plus the relative path, so ``ingest one/kb`` then
``ingest two/kb`` reported "1 updated" and the first ``kb/doc.md`` was gone.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from sqlalchemy import text

from marsrag.errors import InputError
from marsrag.rag import KnowledgeBase, ReplacedDocument, chunk_blocks
from marsrag.rag.identity import MAX_COLLECTION_CHARS, check_collection, default_collection
from marsrag.rag.readers import decode, parse
from marsrag.store.conformance import in_threads
from tests.rag.conftest import write
from tests.store.migrations import at_revision
from tests.store.records import T0


@pytest.fixture
def twins(tmp_path: Path) -> tuple[Path, Path]:
    """Two folders named ``kb`` in different places, each with a ``doc.md`` of its own and a ``README.md``."""
    one, two = tmp_path / "one" / "kb", tmp_path / "two" / "kb"
    write(one, "doc.md", "# Scrubber\n\nRestart the scrubber heater after the alarm.\n")
    write(one, "README.md", "# About one\n\nThe handbook of the first habitat.\n")
    write(two, "doc.md", "# Airlock\n\nCycle the airlock twice before the heater check.\n")
    write(two, "README.md", "# About two\n\nThe handbook of the second habitat.\n")
    return one, two


def sources(kb: KnowledgeBase, query: str) -> list[str]:
    """The sources of the hits for ``query``, sorted."""
    return sorted(hit["source"] for hit in kb.search(query))


def test_two_folders_of_the_same_name_are_two_documents_both_found(kb: KnowledgeBase, twins: tuple[Path, Path]) -> None:
    """The second ``kb`` is added beside the first, not over it; both are found, cited by the short path."""
    one, two = twins
    first, second = kb.ingest([one]), kb.ingest([two])
    assert (first.added, first.updated) == (2, 0)
    assert (second.added, second.updated, second.unchanged, second.replaced) == (2, 0, 0, [])
    assert sources(kb, "heater") == ["kb/doc.md#Airlock", "kb/doc.md#Scrubber"]
    assert second.collections == [str(two.parent.resolve())]


def test_same_named_files_given_directly_from_two_folders_are_both_kept(
    kb: KnowledgeBase, twins: tuple[Path, Path]
) -> None:
    """Two ``README.md`` named on their own, in one ingest or in two, are two documents cited as ``README.md``."""
    one, two = twins
    assert kb.ingest([one / "README.md"]).added == 1
    report = kb.ingest([two / "README.md"])
    assert (report.added, report.updated) == (1, 0)
    assert sources(kb, "handbook habitat") == ["README.md#About one", "README.md#About two"]
    again = kb.ingest([one / "README.md", two / "README.md"])
    assert (again.added, again.updated, again.unchanged, again.skipped) == (0, 0, 2, [])


def test_reingesting_the_same_folder_is_unchanged_after_its_twin(
    kb: KnowledgeBase, twins: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``one/kb``, ``two/kb``, then ``one/kb`` again (by a relative path, from elsewhere): nothing written."""
    one, two = twins
    kb.ingest([one])
    kb.ingest([two])
    monkeypatch.chdir(two)
    report = kb.ingest([Path("..") / ".." / "one" / "kb"])
    assert (report.added, report.updated, report.unchanged, report.chunks_written) == (0, 0, 2, 0)


def test_a_named_collection_groups_folders_and_reports_each_replacement_with_why(
    kb: KnowledgeBase, twins: tuple[Path, Path]
) -> None:
    """In one collection the second folder's files replace the first's, each named with the file replaced."""
    one, two = twins
    assert kb.ingest([one], collection="handbook").added == 2
    report = kb.ingest([two], collection="handbook")
    assert (report.added, report.updated, report.collections) == (0, 2, ["handbook"])
    was = "content changed; the version replaced was read from"
    assert report.replaced == [
        ReplacedDocument("kb/README.md", "handbook", f"{was} {(one / 'README.md').resolve()}"),
        ReplacedDocument("kb/doc.md", "handbook", f"{was} {(one / 'doc.md').resolve()}"),
    ]
    assert report.lines()[1] == f"updated kb/doc.md in handbook: {was} {(one / 'doc.md').resolve()}"
    assert sources(kb, "heater") == ["kb/doc.md#Airlock"]
    again = kb.ingest([two], collection="handbook")
    assert (again.updated, again.unchanged) == (0, 2)
    # The folder's own default collection is another collection: its documents come back beside the handbook's.
    assert kb.ingest([one]).added == 2
    assert sources(kb, "heater") == ["kb/doc.md#Airlock", "kb/doc.md#Scrubber"]


def test_an_edited_file_is_reported_as_changed(kb: KnowledgeBase, twins: tuple[Path, Path]) -> None:
    """The same file, new bytes: updated, because its content changed."""
    one, _ = twins
    kb.ingest([one])
    write(one, "doc.md", "# Scrubber\n\nReplace the scrubber filter.\n")
    report = kb.ingest([one])
    assert report.replaced == [ReplacedDocument("kb/doc.md", str(one.parent.resolve()), "content changed")]
    assert report.lines() == [f"updated kb/doc.md in {one.parent.resolve()}: content changed"]


def test_same_named_folders_in_one_named_collection_at_once_keep_the_first(
    kb: KnowledgeBase, twins: tuple[Path, Path]
) -> None:
    """Both folders in one ingest and one collection: the second's files are skipped, saying which they clash with."""
    one, two = twins
    report = kb.ingest([one, two], collection="handbook")
    assert (report.added, report.updated) == (2, 0)
    assert [(s.path, s.reason) for s in report.skipped] == [
        (
            str(two / name),
            f"same document 'kb/{name}' in collection 'handbook' as {one / name} (from another root): not read",
        )
        for name in ("README.md", "doc.md")
    ]
    assert sources(kb, "heater") == ["kb/doc.md#Scrubber"]


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("a" * (MAX_COLLECTION_CHARS + 1), "characters long"),
        ("hand\nbook", "control characters"),
        ("hand\u200bbook", "control characters"),
        (" handbook", "surrounding spaces"),
    ],
)
def test_a_bad_collection_name_is_refused_before_anything_is_read(
    kb: KnowledgeBase, twins: tuple[Path, Path], name: str, problem: str
) -> None:
    """Blank, overlong, control or invisible characters, padding: InputError naming the problem; nothing stored."""
    with pytest.raises(InputError, match=problem):
        kb.ingest([twins[0]], collection=name)
    assert kb.search("heater") == []


def test_the_default_collection_is_the_resolved_folder_the_paths_start_in(tmp_path: Path) -> None:
    """For a folder and for a file alike: its parent, resolved (a symlinked folder keeps its own name's parent)."""
    write(tmp_path / "real" / "kb", "doc.md", "x")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    assert default_collection(tmp_path / "real" / "kb") == str(tmp_path.resolve() / "real")
    assert default_collection(tmp_path / "real" / "kb" / "doc.md") == str(tmp_path.resolve() / "real" / "kb")
    assert default_collection(tmp_path / "alias" / "kb") == str(tmp_path.resolve() / "real")
    assert default_collection(tmp_path / "real" / "kb" / ".." / "kb") == str(tmp_path.resolve() / "real")
    assert check_collection("Habitat handbook, 2nd ed.") == "Habitat handbook, 2nd ed."


def ingest_as_before_0007(db_url: str, folder: Path) -> None:
    """Store ``folder``'s files the way ingest did before documents had collections (keyed by path alone)."""
    with at_revision(db_url, "0006") as connection:
        for path in sorted(folder.rglob("*.md")):
            data, key = path.read_bytes(), path.relative_to(folder.parent).as_posix()
            connection.execute(
                text("INSERT INTO documents (path, sha256, size, ingested_at) VALUES (:p, :s, :n, :t)"),
                {"p": key, "s": hashlib.sha256(data).hexdigest(), "n": len(data), "t": T0},
            )
            for chunk in chunk_blocks(key, parse(decode(data), path.suffix)):
                connection.execute(
                    text("INSERT INTO chunks (document_path, position, heading, text) VALUES (:p, :i, :h, :b)"),
                    {"p": key, "i": chunk.position, "h": chunk.heading, "b": chunk.text},
                )


def test_after_the_upgrade_ingesting_again_takes_the_old_documents_over(db_url: str, twins: tuple[Path, Path]) -> None:
    """The old documents become the folder's, cut once again by today's chunker (they were cut by an older one):
    no duplicate hits; the next ingest finds them unchanged; the twin is its own."""
    one, two = twins
    ingest_as_before_0007(db_url, one)
    with KnowledgeBase.open(db_url) as kb:
        before = sources(kb, "heater")
        report = kb.ingest([one])
        assert (report.added, report.updated, report.unchanged) == (0, 2, 0)
        assert {replaced.reason for replaced in report.replaced} == {
            "cut again: the stored chunks came from an older chunker (content unchanged)"
        }
        assert sources(kb, "heater") == before and len(before) == 1
        again = kb.ingest([one])
        assert (again.added, again.updated, again.unchanged) == (0, 0, 2)
        assert kb.ingest([two]).added == 2
        assert sources(kb, "heater") == ["kb/doc.md#Airlock", "kb/doc.md#Scrubber"]


def test_an_old_document_taken_over_with_new_content_says_so(db_url: str, twins: tuple[Path, Path]) -> None:
    """The old database holds two/kb's text under kb/doc.md; ingesting one/kb replaces it, saying from where."""
    one, two = twins
    ingest_as_before_0007(db_url, two)
    with KnowledgeBase.open(db_url) as kb:
        report = kb.ingest([one])
        assert (report.added, report.updated) == (0, 2)
        assert report.replaced[1] == ReplacedDocument(
            "kb/doc.md",
            str(one.parent.resolve()),
            "content changed; it replaces the document of that path in 'legacy' (before collections)",
        )
        assert sources(kb, "heater") == ["kb/doc.md#Scrubber"]
        assert kb.ingest([two]).added == 2


def test_two_folders_ingested_at_once_after_the_upgrade_take_the_old_document_over_once(
    db_url: str, twins: tuple[Path, Path]
) -> None:
    """Racing to adopt the same old documents: one folder takes each over, the other adds its own; no error."""
    one, two = twins
    ingest_as_before_0007(db_url, one)
    bases = [KnowledgeBase.open(db_url) for _ in range(2)]

    def ingest(index: int) -> None:
        bases[index].ingest([(one, two)[index]])

    try:
        assert in_threads(2, ingest) == []
        assert sources(bases[0], "heater") == ["kb/doc.md#Airlock", "kb/doc.md#Scrubber"]
        assert sources(bases[0], "handbook habitat") == ["kb/README.md#About one", "kb/README.md#About two"]
    finally:
        for kb in bases:
            kb.close()
