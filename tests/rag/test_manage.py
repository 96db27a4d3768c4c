"""Managing the knowledge base on real stores (both backends): listing, removing by the names users have, scope."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import text

from marsrag.errors import InputError
from marsrag.rag import KnowledgeBase
from marsrag.rag.manage import check_collections, list_knowledge, listing, removal, remove_knowledge
from marsrag.store import open_store
from marsrag.tokens import stems
from tests.rag.conftest import marsrag, sql_engine, write


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``one/kb`` (two documents, one in a subfolder), ``two/kb`` (same name, other text), ``notes/x.md``."""
    write(
        tmp_path / "one" / "kb", "heater.md", "# Heater\n\nRestart the scrubber heater.\n\n## Fuse\n\nCheck the fuse.\n"
    )
    write(tmp_path / "one" / "kb", "deep/filters.md", "# Filters\n\nFilters clog when the oxygen line freezes.\n")
    write(tmp_path / "two" / "kb", "heater.md", "# Heater runbook\n\nPage the heater engineer.\n")
    write(tmp_path / "notes", "x.md", "# Airlock\n\nCycle the airlock twice.\n")
    return tmp_path


def fill(kb: KnowledgeBase, tree: Path) -> None:
    """``one/kb`` in ``handbook``, ``two/kb`` in ``runbooks``, ``notes`` in its default collection."""
    kb.ingest([tree / "one" / "kb"], collection="handbook")
    kb.ingest([tree / "two" / "kb"], collection="runbooks")
    kb.ingest([tree / "notes"])


def derived_tables_agree(kb: KnowledgeBase) -> None:
    """``document_terms`` equals a recount from the chunks left; the full-text index holds exactly the chunks."""
    with sql_engine(kb) as engine, engine.begin() as connection:
        rows = connection.execute(text("SELECT document_id, heading, text FROM chunks")).all()
        recount: Counter[tuple[int, str]] = Counter()
        for document_id, heading, body in rows:
            recount.update((document_id, term) for term in set(stems(f"{heading}\n{body}")))
        stored = {
            (d, t): n for d, t, n in connection.execute(text("SELECT document_id, term, chunks FROM document_terms"))
        }
        assert stored == dict(recount)
        orphans = connection.execute(
            text("SELECT count(*) FROM chunks WHERE document_id NOT IN (SELECT id FROM documents)")
        ).scalar_one()
        assert orphans == 0
        if engine.dialect.name == "sqlite":
            connection.execute(text("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')"))
            indexed = connection.execute(text("SELECT count(*) FROM chunks_fts")).scalar_one()
            assert indexed == len(rows)


def test_the_listing_shows_collections_then_documents(kb: KnowledgeBase, tree: Path) -> None:
    """Collections by name with counts; documents by collection and path as cited, with chunk counts."""
    fill(kb, tree)
    found = listing(db=kb.url).to_dict()
    notes = str(tree.resolve())
    assert [(c["name"], c["documents"], c["chunks"]) for c in found["collections"]] == [
        (notes, 1, 1),
        ("handbook", 2, 3),
        ("runbooks", 1, 1),
    ]
    assert [(d["collection"], d["path"], d["chunks"]) for d in found["documents"]] == [
        (notes, "notes/x.md", 1),
        ("handbook", "kb/deep/filters.md", 1),
        ("handbook", "kb/heater.md", 2),
        ("runbooks", "kb/heater.md", 1),
    ]
    assert found["documents"][0]["ingested_at"].endswith("+00:00")
    assert found["documents"][0]["source"] == str((tree / "notes" / "x.md").resolve())
    only = listing(db=kb.url, collection="runbooks").to_dict()
    assert [c["name"] for c in only["collections"]] == ["runbooks"] and len(only["documents"]) == 1
    assert found["embeddings"] == []  # ingested with no embedder


def test_the_listing_says_what_embedded_the_chunks(db_url: str, tree: Path) -> None:
    from marsrag.rag.embedders.wordllama import WordLlamaEmbedder

    with KnowledgeBase.open(db_url, embedder=WordLlamaEmbedder(64)) as kb:
        fill(kb, tree)
    found = listing(db=db_url).to_dict()
    assert found["embeddings"] == [{"embedder": "wordllama/l2_supercat-64", "dimension": 64, "chunks": 5}]
    only = listing(db=db_url, collection="runbooks").to_dict()
    assert only["embeddings"] == [{"embedder": "wordllama/l2_supercat-64", "dimension": 64, "chunks": 1}]


def test_an_unknown_collection_suggests_close_names(kb: KnowledgeBase, tree: Path) -> None:
    """A typo names the collection and suggests the close one; no collections at all says how to ingest."""
    with pytest.raises(InputError, match="no collections yet; add documents with marsrag ingest"):
        listing(db=kb.url, collection="handbook")
    fill(kb, tree)
    with pytest.raises(InputError, match=r"unknown collection 'handbok'; did you mean 'handbook'\?"):
        listing(db=kb.url, collection="handbok")
    with pytest.raises(InputError, match="unknown collection 'x'"):
        check_collections(["handbook", "x"], ["handbook"])
    assert check_collections(["runbooks", "handbook", "runbooks"], ["handbook", "runbooks"]) == [
        "runbooks",
        "handbook",
    ]


def test_removing_a_cited_path_takes_it_out_of_search_and_keeps_the_counts_right(kb: KnowledgeBase, tree: Path) -> None:
    """``kb/deep/filters.md`` as cited: gone from search, listing and term counts; every derived table agrees."""
    fill(kb, tree)
    assert kb.search("filters clog")
    report = removal(["kb/deep/filters.md"], db=kb.url)
    assert report.to_dict()["removed"] == {"documents": 1, "chunks": 1}
    assert all("filters" not in hit["source"] for hit in kb.search("filters clog oxygen"))
    assert kb.term_counts(["filter"]).counts == {"filter": 0}
    derived_tables_agree(kb)


def test_a_path_in_two_collections_needs_one_named(kb: KnowledgeBase, tree: Path) -> None:
    """``kb/heater.md`` is in handbook and runbooks: refused without --collection; with it, only that one goes."""
    fill(kb, tree)
    with pytest.raises(InputError, match=r"matches documents of 2 collections \('handbook', 'runbooks'\)"):
        removal(["kb/heater.md"], db=kb.url)
    assert len(listing(db=kb.url).documents) == 4
    report = removal(["kb/heater.md"], db=kb.url, collection="runbooks")
    assert [(d.collection, d.path) for d in report.documents] == [("runbooks", "kb/heater.md")]
    assert sorted(hit["source"] for hit in kb.search("heater")) == ["kb/heater.md#Heater", "kb/heater.md#Heater > Fuse"]
    derived_tables_agree(kb)


def test_a_file_or_folder_removes_what_was_ingested_from_it(
    kb: KnowledgeBase, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paths on disk resolve as ingest resolves them (from any working directory): a file, then a folder."""
    fill(kb, tree)
    monkeypatch.chdir(tree / "one")
    assert [d.path for d in removal(["kb/deep/filters.md"], db=kb.url).documents] == ["kb/deep/filters.md"]
    monkeypatch.chdir(tree)
    report = removal([tree / "two"], db=kb.url)
    assert [(d.collection, d.path, d.chunks) for d in report.documents] == [("runbooks", "kb/heater.md", 1)]
    # A folder as cited: everything under it (of one collection).
    assert [d.path for d in removal(["kb"], db=kb.url).documents] == ["kb/heater.md"]
    assert [c.name for c in listing(db=kb.url).collections] == [str(tree.resolve())]
    derived_tables_agree(kb)


def test_a_removal_naming_one_unknown_path_removes_nothing(kb: KnowledgeBase, tree: Path) -> None:
    """All or nothing: the unknown path is named, the known one stays."""
    fill(kb, tree)
    with pytest.raises(InputError, match=r"no document matches 'kb/nope\.md': nothing was removed"):
        removal(["notes/x.md", "kb/nope.md"], db=kb.url)
    assert len(listing(db=kb.url).documents) == 4
    with pytest.raises(InputError, match="name the documents to remove"):
        removal([], db=kb.url)


def test_removing_a_collection_removes_its_documents_only(kb: KnowledgeBase, tree: Path) -> None:
    """``--collection handbook``: its two documents and three chunks; an unknown name suggests close ones."""
    fill(kb, tree)
    with pytest.raises(InputError, match="did you mean 'handbook'"):
        removal(db=kb.url, collection="handboo")
    report = removal(db=kb.url, collection="handbook")
    assert report.summary() == "2 documents, 3 chunks"
    assert [c.name for c in listing(db=kb.url).collections] == [str(tree.resolve()), "runbooks"]
    assert [hit["source"] for hit in kb.search("heater")] == ["kb/heater.md#Heater runbook"]
    derived_tables_agree(kb)


def test_a_scoped_knowledge_base_searches_and_counts_only_its_collections(kb: KnowledgeBase, tree: Path) -> None:
    """``scoped(["runbooks"])`` finds only runbooks' heater; its term counts are runbooks' alone."""
    fill(kb, tree)
    runbooks = kb.scoped(["runbooks"])
    assert [hit["source"] for hit in runbooks.search("heater")] == ["kb/heater.md#Heater runbook"]
    assert runbooks.term_counts(["heater", "airlock"]).chunks == 1
    assert runbooks.term_counts(["heater", "airlock"]).counts == {"heater": 1, "airlock": 0}
    assert kb.term_counts(["heater"]).chunks == 5  # the base itself still sees everything
    assert kb.scoped(None).search("airlock") and not runbooks.search("airlock")


def test_remove_knowledge_works_on_an_open_store(db_url: str, tree: Path) -> None:
    """The library functions take an open store's knowledge base too (what the web backend uses)."""
    with KnowledgeBase.open(db_url) as kb:
        fill(kb, tree)
    with open_store(db_url) as store:
        assert len(list_knowledge(store.knowledge()).documents) == 4
        assert remove_knowledge(store.knowledge(), ["notes"]).summary() == "1 document, 1 chunk"


def test_the_kb_commands_list_and_remove(tree: Path, tmp_path: Path) -> None:
    """``kb list`` (empty: one line; text at 80 columns; json), ``kb remove`` (json; exit 2 on a bad path)."""
    db = f"sqlite:///{tmp_path / 'kb.db'}"
    empty = marsrag("kb", "list", "--db", db, cwd=tree)
    assert (empty.returncode, empty.stdout) == (
        0,
        "The knowledge base is empty: add documents with marsrag ingest PATH\n",
    )
    assert marsrag("ingest", "one/kb", "--collection", "handbook", "--db", db, cwd=tree).returncode == 0
    shown = marsrag("kb", "list", "--db", db, cwd=tree, columns=80)
    assert shown.returncode == 0, shown.stderr
    assert all(len(line) <= 80 for line in shown.stdout.splitlines())
    assert "handbook" in shown.stdout and "kb/deep/filters.md" in shown.stdout and "Documents" in shown.stdout
    document = json.loads(marsrag("kb", "list", "--db", db, "--format", "json", cwd=tree).stdout)
    assert sorted(document) == ["collections", "documents", "embeddings"] and len(document["documents"]) == 2
    missing = marsrag("kb", "remove", "kb/heater.md", "kb/nope.md", "--db", db, cwd=tree)
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.splitlines() == [
        "marsrag: error: no document matches 'kb/nope.md': nothing was removed (marsrag kb list shows them)"
    ]
    removed = marsrag("kb", "remove", "kb/heater.md", "--db", db, "--format", "json", cwd=tree)
    assert json.loads(removed.stdout)["removed"] == {"documents": 1, "chunks": 2}
    text_out = marsrag("kb", "remove", "--collection", "handbook", "--db", db, cwd=tree)
    assert text_out.stdout.splitlines() == [
        "removed kb/deep/filters.md (1 chunks) from handbook",
        "removed: 1 document, 1 chunk",
    ]
    unknown = marsrag("kb", "remove", "--collection", "handbook", "--db", db, cwd=tree)
    assert unknown.returncode == 2 and "no collections yet" in unknown.stderr
