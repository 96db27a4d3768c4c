"""Knowledge base benchmarks on SQLite (issue: knowledge base ingest and retrieval).

Synthetic Markdown (a Zipf-distributed vocabulary of made-up words with English function words mixed in, one
chunk per ``##`` section) is written to a temp folder and ingested in two steps, to 10,000 and then 100,000
chunks. Each step measures, in the same run:

- ingest throughput in chunks per second through ``KnowledgeBase.ingest`` (walk, read, hash, parse, chunk,
  SQLAlchemy inserts, one transaction per file, FTS5 kept in step by triggers), next to plain ``sqlite3``
  inserting the same rows (chunked in advance) into a second database with the same schema, migrated by the
  store, also one transaction per document. The ratio prices everything but the index itself.
- search latency p50/p95 over 200 queries of 3-6 words drawn uniformly from the vocabulary, through
  ``KnowledgeBase.search`` (target: p95 < 20 ms at 100,000 chunks), next to a trivial indexed lookup (one
  chunk by id, plain ``sqlite3``) on the same database. A second query set draws its words as often as the
  text uses them, so common words dominate: information, showing the cost of very unselective queries.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from bench._timing import Report

if TYPE_CHECKING:
    from marsrag.rag import KnowledgeBase

T = TypeVar("T")

SEED = 20250115
SECTIONS_PER_DOCUMENT = 50
QUERIES = 200
# Function words a real text is full of; queries drop them, as they would from prose.
FUNCTION_WORDS = "the of and to in is that for it as with on be by this are or from at an not".split()


class Corpus:
    """A deterministic synthetic vocabulary and the Markdown written from it."""

    def __init__(self, size: int = 20_000, seed: int = SEED) -> None:
        self.random = random.Random(seed)
        syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"] + ["ch", "sh", "th", "qu", "ex"]
        words: set[str] = set()
        while len(words) < size:
            words.add("".join(self.random.choices(syllables, k=self.random.randint(2, 4))))
        self.vocabulary = sorted(words)
        self.random.shuffle(self.vocabulary)
        zipf = [1 / rank for rank in range(1, size + 1)]
        # About a third of running text is function words, as in English prose.
        self.words = FUNCTION_WORDS + self.vocabulary
        weights = [sum(zipf) / len(FUNCTION_WORDS) / 2] * len(FUNCTION_WORDS) + zipf
        self.cumulative = list(itertools.accumulate(weights))

    def sentence(self, length: int) -> str:
        """A capitalized sentence of ``length`` words, ending with a period."""
        words = self.random.choices(self.words, cum_weights=self.cumulative, k=length)
        return " ".join(words).capitalize() + "."

    def document(self, number: int) -> str:
        """One Markdown document: a title and SECTIONS_PER_DOCUMENT sections of 250-1,100 characters."""
        parts = [f"# Document {number}: {self.sentence(4)[:-1]}"]
        for section in range(SECTIONS_PER_DOCUMENT):
            parts.append(f"## {section + 1}. {self.sentence(self.random.randint(2, 5))[:-1]}")
            body = ""
            target = self.random.randint(250, 1050)
            while len(body) < target:
                paragraph = " ".join(
                    self.sentence(self.random.randint(6, 18)) for _ in range(self.random.randint(1, 4))
                )
                body = f"{body}\n\n{paragraph}" if body else paragraph
            parts.append(body[:1100].rsplit(" ", 1)[0] + ".")
        return "\n\n".join(parts) + "\n"

    def write(self, folder: Path, first: int, count: int) -> list[Path]:
        """Write documents ``first`` .. ``first + count - 1`` into ``folder``; their paths."""
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for number in range(first, first + count):
            path = folder / f"doc-{number:05}.md"
            path.write_text(self.document(number), encoding="utf-8")
            paths.append(path)
        return paths

    def queries(self, *, by_frequency: bool) -> list[str]:
        """QUERIES queries of 3-6 words, drawn uniformly from the vocabulary or as often as the text uses them."""
        draw: Callable[[int], list[str]]
        if by_frequency:
            draw = lambda k: self.random.choices(self.words, cum_weights=self.cumulative, k=k)  # noqa: E731
        else:
            draw = lambda k: self.random.sample(self.vocabulary, k)  # noqa: E731
        return [" ".join(draw(self.random.randint(3, 6))) for _ in range(QUERIES)]


def run() -> None:
    """Run the knowledge base benchmarks and print their table."""
    from marsrag.rag import KnowledgeBase

    report = Report("knowledge base on SQLite (FTS5, BM25): ingest and search at 10,000 and 100,000 chunks")
    corpus = Corpus()
    with tempfile.TemporaryDirectory(prefix="marsrag-rag-bench-") as tmp:
        root = Path(tmp)
        ours_db, base_db = root / "ours.db", root / "base.db"
        KnowledgeBase.open(f"sqlite:///{base_db}").close()  # the baseline's plain inserts go into the same schema
        with KnowledgeBase.open(f"sqlite:///{ours_db}") as kb, closing(sqlite3.connect(base_db)) as base:
            _configure(base)
            total = 0
            for target in (10_000, 100_000):
                folder = root / "kb" / f"to-{target}"
                first = total // SECTIONS_PER_DOCUMENT
                paths = corpus.write(folder, first, (target - total) // SECTIONS_PER_DOCUMENT)
                rows = _rows(paths, folder)
                ours, baseline = _ingest(kb, folder, rows, base)
                added = sum(len(chunk_rows) for _, chunk_rows in rows)
                total += added
                report.add(
                    f"ingest {added:,} chunks (to {total:,}), chunks/s: KnowledgeBase.ingest vs sqlite3 inserts",
                    f"{ours:,.0f}/s", f"{baseline:,.0f}/s", baseline / ours, "(info)", True,
                )  # fmt: skip
                _search(report, kb, corpus, ours_db, total)
    report.print()


DocumentRows = tuple[tuple[str, str, int], list[tuple[int, str, str]]]


def _ingest(kb: KnowledgeBase, folder: Path, rows: list[DocumentRows], base: sqlite3.Connection) -> tuple[float, float]:
    """Chunks per second: ingesting ``folder``, and plain inserts of the same ``rows`` into ``base``."""
    total = sum(len(chunk_rows) for _, chunk_rows in rows)
    start = time.perf_counter()
    outcome = kb.ingest([folder])
    ours = time.perf_counter() - start
    if outcome.chunks_written != total or outcome.skipped:
        raise SystemExit(f"benchmark ingest went wrong: {outcome.summary()}, expected {total} chunks")
    collection = str(folder.parent.resolve())  # ingest's default collection for the folder
    start = time.perf_counter()
    for (path, sha256, size), chunk_rows in rows:
        with base:  # one transaction per document (commits on exit), as ingest does
            document_id = base.execute(
                "INSERT INTO documents (collection, path, sha256, size, source, ingested_at)"
                " VALUES (?, ?, ?, ?, ?, datetime('now'))",
                (collection, path, sha256, size, f"{collection}/{path}"),
            ).lastrowid
            base.executemany(
                "INSERT INTO chunks (document_id, position, heading, text) VALUES (?, ?, ?, ?)",
                [(document_id, *row) for row in chunk_rows],
            )
    baseline = time.perf_counter() - start
    return total / ours, total / baseline


def _search(report: Report, kb: KnowledgeBase, corpus: Corpus, database: Path, chunks: int) -> None:
    """Rows for search latency p50/p95, both query sets, next to lookups of one chunk by id."""
    with closing(sqlite3.connect(database)) as connection:
        ids = [row[0] for row in connection.execute("SELECT id FROM chunks")]
        picks = random.Random(SEED + chunks).choices(ids, k=QUERIES)
        lookup = "SELECT heading, text FROM chunks WHERE id = ?"
        base = _latencies(lambda id_: connection.execute(lookup, (id_,)).fetchall(), picks)
    for label, by_frequency in (("vocabulary words", False), ("words as frequent as in the text", True)):
        ours = _latencies(lambda query: kb.search(query, 5), corpus.queries(by_frequency=by_frequency))
        for name, fraction in (("p50", 0.50), ("p95", 0.95)):
            mine, theirs = _percentile(ours, fraction), _percentile(base, fraction)
            gated = name == "p95" and chunks >= 100_000 and not by_frequency
            report.add(
                f"search {name}, {chunks:,} chunks, 3-6 {label}, vs one chunk by id",
                f"{mine * 1e3:.2f} ms", f"{theirs * 1e3:.3f} ms", mine / theirs,
                "< 20 ms" if gated else "(info)", mine < 0.020 or not gated,
            )  # fmt: skip


def _rows(paths: Sequence[Path], folder: Path) -> list[DocumentRows]:
    """Document and chunk rows exactly as ingest makes them, prepared before the baseline is timed."""
    from marsrag.rag.chunking import chunk_blocks
    from marsrag.rag.readers import decode, parse

    rows = []
    for path in paths:
        data = path.read_bytes()
        key = path.relative_to(folder.parent).as_posix()
        chunks = chunk_blocks(key, parse(decode(data), path.suffix))
        document = (key, hashlib.sha256(data).hexdigest(), len(data))
        rows.append((document, [(chunk.position, chunk.heading, chunk.text) for chunk in chunks]))
    return rows


def _configure(connection: sqlite3.Connection) -> None:
    """The store's SQLite settings, so the baseline pays the same durability costs."""
    from marsrag.store._engine import SQLITE_BUSY_TIMEOUT_MS

    for pragma in (
        f"busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}",
        "journal_mode = WAL",
        "synchronous = NORMAL",
        "foreign_keys = ON",
    ):
        connection.execute(f"PRAGMA {pragma}")


def _latencies(call: Callable[[T], object], arguments: Sequence[T]) -> list[float]:
    """Seconds per call, one call per argument, after a warm-up pass over all of them."""
    for argument in arguments:  # the page cache and SQLite's cache are warm in a running service too
        call(argument)
    times = []
    for argument in arguments:
        start = time.perf_counter()
        call(argument)
        times.append(time.perf_counter() - start)
    return times


def _percentile(values: list[float], fraction: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[round(fraction * 100) - 1]


if __name__ == "__main__":
    run()
