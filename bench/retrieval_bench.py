"""Hybrid retrieval (issue 43): recall, ingest with embeddings, search latency, and the first run's cost.

In the same run, each figure next to its baseline:

- recall at 5 on the judged and the held-out paraphrase sets (``tests/rag/paraphrase_set.py``), per class, for
  keyword, vector and hybrid retrieval over the sample knowledge base, on SQLite and PostgreSQL (information:
  the tests keep hybrid >= keyword per class);
- ingest throughput of 10,000 synthetic chunks (``bench/rag_bench.py``'s corpus) with the embedded default
  embedder vs with none (keyword only), on SQLite;
- search p50/p95 over 200 queries at 10,000 and 100,000 chunks, hybrid vs keyword only on the same knowledge
  base, on SQLite and PostgreSQL, and the first search after a write (the exact scan reloading its vectors);
- the exact scan alone on a 1,000,000 x 256 matrix (what a million chunks would cost per query);
- the sample's first run (``marsrag ingest examples/knowledge_base`` then ``marsrag run``, fresh processes
  and data directory), with the embedded default vs ``MARSRAG_EMBEDDER=none``, and the installed size of
  WordLlama (what ``make run`` installs for it).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench._timing import Report, ms
from bench.rag_bench import SECTIONS_PER_DOCUMENT, Corpus
from bench.support_bench import _fresh_postgres, _postgres_up

ROOT = Path(__file__).resolve().parents[1]
KNOWLEDGE = ROOT / "examples" / "knowledge_base"
GOAL = "Checkout latency breached its SLO after cache restarts"


def run() -> None:
    """Measure recall, ingest, search and the first run; print one table."""
    report = Report("hybrid retrieval: recall at 5, ingest with embeddings, search at 10k/100k chunks, first run")
    postgres = _postgres_up()
    if not postgres:
        report.note("PostgreSQL: not reachable on 127.0.0.1:5432, measured on SQLite only")
    with tempfile.TemporaryDirectory(prefix="marsrag-retrieval-bench-") as tmp:
        root = Path(tmp)
        _recall(report, f"sqlite:///{root}/sample.db", "SQLite")
        if postgres:
            _recall(report, None, "PostgreSQL")
        _ingest(report, root)
        _scale(report, root, f"sqlite:///{root}/scale.db", "SQLite")
        if postgres:
            _scale(report, root, None, "PostgreSQL")
        _million(report)
        _first_run(report, root)
    report.print()


def _open(url: str | None, embedder: Any) -> Any:
    from marsrag.rag import KnowledgeBase

    if url is None:
        kb = _fresh_postgres(KnowledgeBase)
        kb.embedder = embedder
        return kb
    return KnowledgeBase.open(url, embedder=embedder)


def _recall(report: Report, url: str | None, backend: str) -> None:
    from marsrag.rag.embedders.wordllama import WordLlamaEmbedder

    sys.path.insert(0, str(ROOT))
    from tests.rag.paraphrase_set import HELD_OUT, JUDGED, recalled

    retrievers = {"keyword": ["keyword"], "vector": ["vector"], "hybrid": ["keyword", "vector"]}
    kb = _open(url, WordLlamaEmbedder())
    try:
        kb.ingest([KNOWLEDGE])
        found = {
            label: (goals, {name: recalled(kb, chosen, goals=goals) for name, chosen in retrievers.items()})
            for label, goals in (("judged", JUDGED), ("held-out", HELD_OUT))
        }
    finally:
        kb.close()
    for label, (goals, by_retriever) in found.items():
        for kind in (*dict.fromkeys(cls for cls, _, _ in goals), "all"):
            counts = {
                name: sum(sum(hits) for cls, hits in by_class.items() if kind in ("all", cls))
                for name, by_class in by_retriever.items()
            }
            size = len(goals) if kind == "all" else sum(1 for cls, _, _ in goals if cls == kind)
            report.add(
                f"{backend}: recall at 5, {label} set, {kind} goals: hybrid vs keyword "
                f"(vector alone {counts['vector']}/{size})",
                f"{counts['hybrid']}/{size}", f"{counts['keyword']}/{size}",
                counts["hybrid"] / max(counts["keyword"], 1), ">= 1.00 (tests)", counts["hybrid"] >= counts["keyword"],
            )  # fmt: skip


def _ingest(report: Report, root: Path) -> None:
    from marsrag.rag.embedders.wordllama import WordLlamaEmbedder

    corpus = Corpus()
    folder = root / "ingest"
    corpus.write(folder, 0, 10_000 // SECTIONS_PER_DOCUMENT)
    rates = {}
    for name, embedder in (("none", None), ("wordllama", WordLlamaEmbedder())):
        if embedder is not None:
            embedder.embed(["warm up"])  # its load is the first run's figure, not ingest throughput
        with _open(f"sqlite:///{root}/ingest-{name}.db", embedder) as kb:
            start = time.perf_counter()
            written = kb.ingest([folder]).chunks_written
            rates[name] = written / (time.perf_counter() - start)
    report.add(
        "SQLite: ingest 10,000 chunks, chunks/s: embedded with WordLlama vs keyword only",
        f"{rates['wordllama']:,.0f}/s", f"{rates['none']:,.0f}/s", rates["none"] / rates["wordllama"], "(info)", True,
    )  # fmt: skip


def _scale(report: Report, root: Path, url: str | None, backend: str) -> None:
    from marsrag.rag import KnowledgeBase
    from marsrag.rag.embedders.wordllama import WordLlamaEmbedder
    from marsrag.store import open_store

    corpus = Corpus(seed=43)
    queries = corpus.queries(by_frequency=False)
    kb = _open(url, WordLlamaEmbedder())
    try:
        total = 0
        for target in (10_000, 100_000):
            folder = root / f"scale-{backend}" / f"to-{target}"
            corpus.write(folder, total // SECTIONS_PER_DOCUMENT, (target - total) // SECTIONS_PER_DOCUMENT)
            total += kb.ingest([folder]).chunks_written
            start = time.perf_counter()
            kb.search(queries[0], 5)  # the first search after the ingest reloads the vectors
            reload = time.perf_counter() - start
            with open_store(kb.url) as store:
                keyword = KnowledgeBase(store)
                hybrid_times = _latencies(kb.search, queries)
                keyword_times = _latencies(keyword.search, queries)
            for label, fraction in (("p50", 0.5), ("p95", 0.95)):
                ours, base = _percentile(hybrid_times, fraction), _percentile(keyword_times, fraction)
                report.add(
                    f"{backend}: search {label} at {total:,} chunks: hybrid vs keyword only",
                    ms(ours), ms(base), ours / base, "(info)", True,
                )  # fmt: skip
            report.add(
                f"{backend}: first search after an ingest at {total:,} chunks (vectors reloaded) vs hybrid p50",
                ms(reload), ms(_percentile(hybrid_times, 0.5)), reload / _percentile(hybrid_times, 0.5), "(info)", True,
            )  # fmt: skip
    finally:
        kb.close()


def _million(report: Report) -> None:
    import numpy as np

    generator = np.random.default_rng(43)
    matrix = generator.standard_normal((1_000_000, 256), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    small = matrix[:100_000]
    query = matrix[7]

    def scan(vectors: np.ndarray) -> float:
        times = []
        for _ in range(20):
            start = time.perf_counter()
            scores = vectors @ query
            np.argpartition(-scores, 20)[:20]
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    big, base = scan(matrix), scan(small)
    report.add(
        "exact scan (matrix-vector product + top 20), 1,000,000 vs 100,000 chunks of 256 dimensions (1 GB vs 100 MB)",
        ms(big), ms(base), big / base, "(info)", True,
    )  # fmt: skip


def _first_run(report: Report, root: Path) -> None:
    times = {}
    for name in ("none", "wordllama"):
        home = root / f"home-{name}"
        env = {**os.environ, "MARSRAG_HOME": str(home), "MARSRAG_EMBEDDER": name}
        env.pop("MARSRAG_DB", None)
        start = time.perf_counter()
        for args in (["ingest", str(KNOWLEDGE)], ["run", GOAL]):
            done = subprocess.run([sys.executable, "-m", "marsrag", *args], env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"marsrag {args[0]} failed: {done.stderr[-500:]}")
        times[name] = time.perf_counter() - start
    report.add(
        "first run (marsrag ingest + marsrag run, fresh data dir): embedded default vs MARSRAG_EMBEDDER=none",
        f"{times['wordllama']:.2f} s", f"{times['none']:.2f} s", times["wordllama"] / times["none"], "(info)", True,
    )  # fmt: skip
    import wordllama

    folder = Path(wordllama.__file__).parent
    size = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
    report.note(f"WordLlama installed: {size / 1e6:.1f} MB in {folder} (its weights {_weights(folder)})")


def _weights(folder: Path) -> str:
    files = sorted(folder.rglob("*.safetensors"))
    return ", ".join(f"{path.name} {path.stat().st_size / 1e6:.1f} MB" for path in files) or "none found"


def _latencies(call: Callable[[str], object], arguments: Sequence[str]) -> list[float]:
    for argument in arguments[:20]:
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
