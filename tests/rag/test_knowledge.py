"""The knowledge base on every backend (SQLite file, PostgreSQL): ingest real files, search them."""

from __future__ import annotations

import json
import logging
import random
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from marsrag.errors import InputError
from marsrag.rag import KnowledgeBase
from marsrag.runtime.retrieval import Retriever, retrieval_query
from marsrag.store import open_store
from tests.rag.conftest import sql_engine, write
from tests.store.records import run

PREWARM = """# Runbook: pre-warming caches

## When to pre-warm

Pre-warm a cache node from its latest snapshot before it takes traffic again after a restart. A node that
rejoins cold needs about forty minutes to reach a good hit rate from live traffic alone, and meanwhile its
misses land on the catalog database replicas.

## Steps

1. Pick the newest snapshot of the node, no older than 60 minutes; older ones are refused by the tool.
2. Load the snapshot into the fresh node; it takes about 90 seconds for a full node.
3. Replay the catalog invalidation log from the snapshot time, so restored keys are not stale.
4. Put the node back in rotation once its hit rate reaches 95 percent.
"""

PAYMENTS = """# Payments gateway

## Timeouts and retries

The gateway calls the card processor with a 3 second timeout and retries once with the same idempotency key,
so a retried authorization never charges a customer twice. Retries back off with jitter to avoid a storm.

## Error budget

The payments SLO is 99.95% of authorizations succeeding over 28 days, which leaves an error budget of about
twenty minutes of full outage per window. Burning it twice as fast as planned pages the payments on-call.
"""

INCIDENT = """<html><body><h1>INC-41: checkout latency after cache restarts</h1>
<h2>Summary</h2><p>Three cache nodes were restarted cold in one region within ten minutes; checkout latency
breached its SLO for forty minutes while the nodes refilled from live traffic and the databases slowed down.
Orders kept flowing, but about four percent of checkouts failed with timeouts.</p>
<h2>Root cause</h2><p>The nodes rejoined without pre-warming, so reads on the catalog database rose ninefold,
beyond the four times normal that the replicas sustain; queries queued and checkout calls timed out. The
restart procedure did not say to restart one node at a time.</p>
</body></html>"""


STEPS = "docs/runbooks/prewarm.md#Runbook: pre-warming caches > Steps"
#: The FROM clause giving each chunk ``c`` its document ``d``.
CHUNKS_OF_DOCUMENTS = "FROM chunks AS c JOIN documents AS d ON d.id = c.document_id"


def sql(kb: KnowledgeBase, statement: str, **params: Any) -> list[Any]:
    """Rows of a read-only query on the knowledge base's database."""
    with sql_engine(kb) as engine, engine.connect() as connection:
        return list(connection.execute(text(statement), params).all())


def chunk_ids(kb: KnowledgeBase, document: str) -> list[int]:
    """A document's chunk ids, in position order."""
    query = f"SELECT c.id {CHUNKS_OF_DOCUMENTS} WHERE d.path = :d ORDER BY c.position"
    return [row[0] for row in sql(kb, query, d=document)]


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A folder of three documents (Markdown, Markdown, HTML) in a subfolder, and a file ingest ignores."""
    root = tmp_path / "docs"
    write(root, "runbooks/prewarm.md", PREWARM)
    write(root, "architecture/payments.markdown", PAYMENTS)
    write(root, "incidents/inc-41.html", INCIDENT)
    write(root, "images/diagram.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    return root


def test_ingest_adds_every_document_as_chunks_keyed_from_the_root_name(kb: KnowledgeBase, docs: Path) -> None:
    """Three files are added under keys starting with the folder's name; the PNG is ignored, not skipped."""
    report = kb.ingest([docs])
    assert (report.added, report.updated, report.unchanged, report.skipped, report.ignored) == (3, 0, 0, [], 1)
    paths = [row[0] for row in sql(kb, "SELECT path FROM documents ORDER BY path")]
    assert paths == ["docs/architecture/payments.markdown", "docs/incidents/inc-41.html", "docs/runbooks/prewarm.md"]
    assert report.chunks_written == sql(kb, "SELECT count(*) FROM chunks")[0][0] == 6
    headings = sql(
        kb, f"SELECT c.heading {CHUNKS_OF_DOCUMENTS} WHERE d.path = 'docs/incidents/inc-41.html' ORDER BY c.position"
    )
    assert headings == [
        ("INC-41: checkout latency after cache restarts > Summary",),
        ("INC-41: checkout latency after cache restarts > Root cause",),
    ]


def test_the_same_file_gets_the_same_key_from_any_working_directory(
    kb: KnowledgeBase, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ingesting the folder by a relative path from elsewhere finds the documents unchanged."""
    kb.ingest([docs])
    monkeypatch.chdir(docs / "runbooks")
    report = kb.ingest([Path("..")])
    assert (report.added, report.unchanged) == (0, 3)


def test_reingesting_unchanged_files_is_a_no_op(kb: KnowledgeBase, docs: Path) -> None:
    """Same bytes, same SHA-256: nothing is written, chunk ids and ingestion times stay."""
    kb.ingest([docs])
    before = sql(kb, "SELECT path, sha256, ingested_at FROM documents ORDER BY path")
    ids = chunk_ids(kb, "docs/runbooks/prewarm.md")
    report = kb.ingest([docs])
    assert (report.added, report.updated, report.unchanged, report.chunks_written) == (0, 0, 3, 0)
    assert sql(kb, "SELECT path, sha256, ingested_at FROM documents ORDER BY path") == before
    assert chunk_ids(kb, "docs/runbooks/prewarm.md") == ids


def test_a_changed_file_replaces_its_chunks_and_only_its_own(kb: KnowledgeBase, docs: Path) -> None:
    """The new text is found, the old is gone (new chunk ids: ids are never reused), other documents untouched."""
    kb.ingest([docs])
    others = chunk_ids(kb, "docs/architecture/payments.markdown")
    old = chunk_ids(kb, "docs/runbooks/prewarm.md")
    write(docs, "runbooks/prewarm.md", "# Runbook: pre-warming caches\n\n## Steps\n\nUse the zeppelin loader.\n")
    report = kb.ingest([docs])
    assert (report.added, report.updated, report.unchanged, report.chunks_written) == (0, 1, 2, 1)
    new = chunk_ids(kb, "docs/runbooks/prewarm.md")
    assert len(new) == 1 and not set(new) & set(old)
    assert chunk_ids(kb, "docs/architecture/payments.markdown") == others
    assert [hit["source"] for hit in kb.search("zeppelin")] == [STEPS]
    assert kb.search("invalidation log") == []


def test_deleting_a_document_takes_its_chunks_out_of_search(kb: KnowledgeBase, docs: Path) -> None:
    """The cascade from documents removes the chunks and their full-text entries."""
    kb.ingest([docs])
    assert kb.search("idempotency")
    with sql_engine(kb) as engine, engine.begin() as connection:
        connection.execute(text("DELETE FROM documents WHERE path = 'docs/architecture/payments.markdown'"))
    assert kb.search("idempotency") == []
    assert chunk_ids(kb, "docs/architecture/payments.markdown") == []


def test_binary_and_non_utf8_files_are_skipped_and_named(
    kb: KnowledgeBase, docs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A .md with NUL bytes and a Latin-1 .txt are skipped with reasons, logged; the rest is ingested."""
    binary = write(docs, "runbooks/broken.md", b"# Title\n\x00\x01\x02")
    latin = write(docs, "notes/legacy.txt", "Caf\xe9 menu".encode("latin-1"))
    with caplog.at_level(logging.WARNING, logger="marsrag.rag"):
        report = kb.ingest([docs])
    assert report.added == 3
    assert {(s.path, s.reason) for s in report.skipped} == {
        (str(binary), "binary file (NUL byte at offset 8)"),
        (str(latin), "not UTF-8 text (byte 0xe9 at offset 3)"),
    }
    assert str(binary) in caplog.text and str(latin) in caplog.text
    assert sql(kb, "SELECT count(*) FROM documents WHERE path LIKE '%broken%' OR path LIKE '%legacy%'") == [(0,)]


def test_symlinks_leading_outside_the_roots_are_not_followed(kb: KnowledgeBase, docs: Path, tmp_path: Path) -> None:
    """Links to a file and to a folder outside the given folder are skipped and named; their text is not found."""
    outside = tmp_path / "private"
    write(outside, "secret.md", "# Secret\n\nThe vault combination is kumquat.\n")
    (docs / "secret-link.md").symlink_to(outside / "secret.md")
    (docs / "private-folder").symlink_to(outside, target_is_directory=True)
    report = kb.ingest([docs])
    assert report.added == 3
    assert sorted(s.path for s in report.skipped) == [str(docs / "private-folder"), str(docs / "secret-link.md")]
    assert all("outside the paths given" in s.reason for s in report.skipped)
    assert kb.search("kumquat vault") == []


def test_symlinks_inside_the_roots_are_fine(kb: KnowledgeBase, docs: Path, tmp_path: Path) -> None:
    """A link to a file in the folder, a link to another given root and a link loop add nothing twice."""
    (docs / "alias.md").symlink_to(docs / "runbooks" / "prewarm.md")
    (docs / "runbooks" / "loop").symlink_to(docs, target_is_directory=True)
    shared = tmp_path / "shared"
    write(shared, "glossary.txt", "SLO: service level objective.\n")
    (docs / "glossary-link.txt").symlink_to(shared / "glossary.txt")
    report = kb.ingest([docs, shared])
    assert (report.added, report.skipped) == (4, [])
    paths = {row[0] for row in sql(kb, "SELECT path FROM documents")}
    assert "docs/runbooks/prewarm.md" in paths and "shared/glossary.txt" in paths
    assert "docs/alias.md" not in paths and "docs/glossary-link.txt" not in paths


def test_a_file_given_directly_is_keyed_by_its_name(kb: KnowledgeBase, docs: Path) -> None:
    """A file path is its own root: its key is its name; an unsupported file named directly is skipped."""
    report = kb.ingest([docs / "runbooks" / "prewarm.md", docs / "images" / "diagram.png"])
    assert report.added == 1
    assert [(s.path, s.reason) for s in report.skipped] == [
        (str(docs / "images/diagram.png"), "unsupported file type '.png'")
    ]
    assert sql(kb, "SELECT path FROM documents") == [("prewarm.md",)]


def test_a_missing_path_raises_input_error_before_writing(kb: KnowledgeBase, docs: Path) -> None:
    """A typo fails the ingest up front, naming the path."""
    with pytest.raises(InputError, match="nope"):
        kb.ingest([docs, docs / "nope"])
    assert sql(kb, "SELECT count(*) FROM documents") == [(0,)]


def test_progress_is_reported_per_file(kb: KnowledgeBase, docs: Path) -> None:
    """The callback hears (done, total) after each file."""
    calls: list[tuple[int, int]] = []
    kb.ingest([docs], progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)]


def test_search_ranks_the_relevant_chunk_first(kb: KnowledgeBase, docs: Path) -> None:
    """Each question's best hit is the section that answers it, cited as path#heading path."""
    kb.ingest([docs])
    assert kb.search("how old may the snapshot be")[0]["source"] == STEPS
    assert kb.search("card processor timeout retries")[0]["source"] == (
        "docs/architecture/payments.markdown#Payments gateway > Timeouts and retries"
    )
    assert kb.search("root cause of the checkout latency incident")[0]["heading"].endswith("Root cause")


def test_hits_are_retriever_results(kb: KnowledgeBase, docs: Path) -> None:
    """Hits carry chunk id, source, heading, text and a descending score, are JSON-ready and respect the limit."""
    kb.ingest([docs])
    retriever: Retriever = kb
    hits = retriever.search("cache snapshot checkout latency payments", limit=2)
    assert len(hits) == 2
    assert all(set(hit) == {"chunk_id", "source", "heading", "text", "score", "retrievers"} for hit in hits)
    assert hits[0]["score"] >= hits[1]["score"] > 0
    assert [hit["retrievers"] for hit in hits] == [{"keyword": 1}, {"keyword": 2}]  # no embedder: keyword only
    ((document,),) = sql(kb, f"SELECT d.path {CHUNKS_OF_DOCUMENTS} WHERE c.id = :i", i=hits[0]["chunk_id"])
    assert hits[0]["source"] == f"{document}#{hits[0]['heading']}"
    assert json.loads(json.dumps(hits)) == hits
    assert kb.search("cache", limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        kb.search("cache", limit=-1)


def test_one_document_fills_at_most_two_places_while_others_match(kb: KnowledgeBase, tmp_path: Path) -> None:
    """A document whose every section matches leaves room for others; with no other match it tops the list up."""
    root = tmp_path / "spread"
    sections = "".join(f"## Cache restart part {n}\n\nCache restart detail number {n}.\n\n" for n in range(6))
    write(root, "incident.md", f"# Cache restart incident\n\n{sections}")
    write(root, "runbook.md", "# Runbook\n\n## Steps\n\nPre-warm the cache before a restart.\n")
    write(root, "other.md", "# Other\n\n## Notes\n\nA cache note.\n")
    kb.ingest([root])
    hits = kb.search("cache restart", limit=4)
    documents = [hit["source"].split("#", 1)[0] for hit in hits]
    assert documents.count("spread/incident.md") == 2 and len(hits) == 4
    assert {"spread/runbook.md", "spread/other.md"} <= set(documents)
    assert [hit["score"] for hit in hits] == sorted((hit["score"] for hit in hits), reverse=True)
    uncapped = kb.search("cache restart", limit=4, per_document=None)
    assert [hit["source"].split("#", 1)[0] for hit in uncapped].count("spread/incident.md") > 2
    # Only one document matches: its chunks fill every place.
    assert len(kb.search("detail number", limit=4)) == 4


def test_the_hook_changes_what_is_retrieved(kb: KnowledgeBase, docs: Path) -> None:
    """The runner's query (hook + goal) and the goal alone have different best passages."""
    kb.ingest([docs])
    goal = "Summarize the checkout incident"
    hook = "How old may the snapshot be, and how long does loading it take?"
    by_goal = kb.search(retrieval_query(None, goal))[0]["source"]
    by_hook = kb.search(retrieval_query(hook, goal))[0]["source"]
    assert by_goal.startswith("docs/incidents/inc-41.html#")
    assert by_hook == STEPS


WEIRD_QUERIES = [
    "",
    "   \n\t",
    '"',
    '"unbalanced quote',
    "AND",
    "OR OR OR",
    "NOT cache",
    "cache AND",
    "*",
    "cache*",
    "NEAR(",
    "NEAR(cache snapshot, 2)",
    "heading: cache",
    "{heading text}: cache",
    "^cache",
    "cache & | ! <-> :*",
    "'); DROP TABLE chunks; --",
    "\x00cache\x00",
    "\ud800 lone surrogate",
    "don won shan",  # stopwords to PostgreSQL's English configuration only
    "Café naïve 日本語 кэш 🧊 ﬁ ²",
    "x" * 5000,
    "snapshot " * 2000,
    " ".join(f"w{i}" for i in range(2000)),
]


def test_weird_queries_never_raise(kb: KnowledgeBase, docs: Path) -> None:
    """Syntax, injections, NULs, surrogates, emoji and 10 KB of text: a list of hits (maybe empty), no error."""
    kb.ingest([docs])
    randomly = random.Random(1234)
    alphabet = [chr(c) for c in range(0x20, 0x250)] + list("\"*()^:-+{}[]|&!<>'\\") + ["\u200b", "\u0301", "🧊"]
    generated = ["".join(randomly.choices(alphabet, k=randomly.randint(1, 60))) for _ in range(200)]
    for query in [*WEIRD_QUERIES, *generated]:
        assert isinstance(kb.search(query), list), query
    assert kb.search("") == kb.search("the of and") == []
    assert kb.search("snapshot " * 2000)[0]["source"].startswith("docs/runbooks/prewarm.md")


def test_the_knowledge_base_shares_the_run_store_database(db_url: str, docs: Path) -> None:
    """Built on an open store, it ingests next to the store's runs without disturbing them."""
    with open_store(db_url) as store:
        store.create_run(run())
        kb = KnowledgeBase(store)
        assert kb.ingest([docs]).added == 3
        assert kb.search("idempotency")[0]["source"].startswith("docs/architecture/payments.markdown")
        assert [r.run_id for r in store.list_runs()] == ["run-1"]


def test_concurrent_ingests_of_the_same_files_write_each_once(db_url: str, docs: Path) -> None:
    """Four knowledge bases ingesting one folder at once (new files, then changed ones) collide on nothing."""
    for number in range(8):
        write(docs, f"extra/note-{number}.md", f"# Note {number}\n\n{'Shared words about caches. ' * 20}\n")
    bases = [KnowledgeBase.open(db_url) for _ in range(4)]

    def ingest_everywhere() -> list[tuple[int, int, int]]:
        barrier, results, errors = threading.Barrier(len(bases)), [], []

        def work(kb: KnowledgeBase) -> None:
            barrier.wait()
            try:
                report = kb.ingest([docs])
                results.append((report.added, report.updated, report.unchanged))
            except BaseException as error:  # noqa: B036 - reported to the test, which fails on any
                errors.append(error)

        threads = [threading.Thread(target=work, args=(kb,)) for kb in bases]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        return results

    try:
        added = ingest_everywhere()
        assert sum(a for a, _, _ in added) == 11 and all(u == 0 for _, u, _ in added)
        for number in range(8):
            write(docs, f"extra/note-{number}.md", f"# Note {number}\n\n{'Changed words about queues. ' * 20}\n")
        updated = ingest_everywhere()
        assert sum(u for _, u, _ in updated) == 8 and all(a == 0 for a, _, _ in updated)
        counts = sql(bases[0], "SELECT count(*), count(DISTINCT document_id) FROM chunks")
        assert counts == [(14, 11)]
        assert bases[0].search("caches shared") == [] or "extra" not in bases[0].search("caches shared")[0]["source"]
    finally:
        for kb in bases:
            kb.close()


def test_a_document_cut_by_an_older_chunker_is_cut_again_once(kb: KnowledgeBase, tmp_path: Path) -> None:
    """Unchanged content stored by another chunker version is cut again (saying why), then left alone."""
    from marsrag.rag.chunking import CHUNKER_VERSION

    root = tmp_path / "notes"
    write(root, "tomatoes.md", "# Tomatoes\n\nSun.\n\n## Blossom end rot\n\nWater evenly.\n")
    kb.ingest([root])
    old_ids = chunk_ids(kb, "notes/tomatoes.md")
    with sql_engine(kb) as engine, engine.begin() as connection:
        connection.execute(text("UPDATE documents SET chunker = :v"), {"v": CHUNKER_VERSION - 1})
    report = kb.ingest([root])
    assert (report.added, report.updated, report.unchanged) == (0, 1, 0)
    assert [r.reason for r in report.replaced] == [
        "cut again: the stored chunks came from an older chunker (content unchanged)"
    ]
    assert chunk_ids(kb, "notes/tomatoes.md") != old_ids
    assert sql(kb, "SELECT chunker FROM documents") == [(CHUNKER_VERSION,)]
    assert kb.search("blossom")[0]["source"] == "notes/tomatoes.md#Tomatoes > Blossom end rot"
    again = kb.ingest([root])
    assert (again.updated, again.unchanged) == (0, 1)
