"""Hybrid retrieval (issue 43): chunks embedded at ingest, keyword and vector lists fused, never mixed.

On real stores of both backends, with the embedded default (WordLlama) and an OpenAI-compatible endpoint of the
test's own (:mod:`tests.rag.embedding_endpoint`: real vectors, a dimension and a delay it can change, a port
that can go down). The endpoint's protocol on a real model server is in ``tests/realmodel``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from marsrag.errors import InputError
from marsrag.rag.embedders.base import EmbeddingError
from marsrag.rag.embedders.endpoint import EndpointEmbedder
from marsrag.rag.embedders.select import resolve_embedder
from marsrag.rag.embedders.wordllama import WordLlamaEmbedder
from marsrag.rag.knowledge import KnowledgeBase
from marsrag.store import open_store
from tests._net import free_port, serving
from tests.rag.conftest import write
from tests.rag.embedding_endpoint import EmbeddingServer

#: Documents whose words the paraphrased questions below avoid.
LATENCY = """# Checkout latency SLO

## Objective
The p95 latency of checkout requests stays under 800 ms over a rolling hour.

## Alerting
Page the on-call engineer when p95 latency breaches the objective for ten minutes.
"""
PAYMENTS = """# Payment provider outages

## Symptoms
Authorisations to the payment provider time out and orders stay pending.

## Response
Fail over to the secondary acquirer and pause retries to the provider.
"""
BACKUPS = """# Database backups

## Schedule
Nightly snapshots of the orders database are kept for thirty days.
"""


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    write(root, "slo/latency.md", LATENCY)
    write(root, "incidents/payments.md", PAYMENTS)
    write(root, "ops/backups.md", BACKUPS)
    return root


@pytest.fixture
def hybrid(db_url: str) -> Iterator[KnowledgeBase]:
    """A knowledge base on each backend with the embedded default embedder."""
    with KnowledgeBase.open(db_url, embedder=WordLlamaEmbedder()) as opened:
        yield opened


@pytest.fixture
def endpoint() -> Iterator[EmbeddingServer]:
    with serving(EmbeddingServer(), "embeddings") as server:
        yield server


def documents(results: list[dict[str, object]]) -> list[str]:
    return list(dict.fromkeys(str(hit["source"]).split("#")[0] for hit in results))


def test_wordllama_embeds_offline_as_unit_vectors_that_place_paraphrases_near(tmp_path: Path) -> None:
    embedder = WordLlamaEmbedder()
    vectors = embedder.embed(["the site is sluggish", "p95 latency is high", "nightly database snapshots", ""])
    assert vectors.shape == (4, 256) and vectors.dtype.name == "float32"
    assert abs(float((vectors[0] ** 2).sum()) - 1) < 1e-5
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])
    assert (embedder.embed(["the site is sluggish"]) == vectors[:1]).all()  # deterministic
    short = WordLlamaEmbedder(64)
    assert short.identity == "wordllama/l2_supercat-64" != embedder.identity
    assert short.embed(["x"]).shape == (1, 64)


def test_ingest_embeds_every_chunk_once_and_search_fuses_both_lists(hybrid: KnowledgeBase, docs: Path) -> None:
    report = hybrid.ingest([docs])
    assert report.embedder == "wordllama/l2_supercat-256" and report.embedded == report.chunks_written == 5
    assert "5 embedded with wordllama/l2_supercat-256" in report.summary()
    again = hybrid.ingest([docs])
    assert (again.unchanged, again.embedded) == (3, 0)
    found = hybrid.find("what to do when the card processor is down", 5)
    assert found.retrievers == ["keyword", "vector"] and found.skipped is None
    assert documents(found.results)[0] == "docs/incidents/payments.md"
    assert all(set(hit["retrievers"]) <= {"keyword", "vector"} and hit["retrievers"] for hit in found.results)
    assert any("vector" in hit["retrievers"] for hit in found.results)
    scores = [hit["score"] for hit in found.results]
    assert scores == sorted(scores, reverse=True)


def test_a_paraphrase_with_no_shared_word_is_found_by_its_meaning(hybrid: KnowledgeBase, docs: Path) -> None:
    """ "sluggish storefront" shares no word with the latency SLO: the keyword list has nothing, the vector list
    has it first; the keyword-only knowledge base finds nothing at all."""
    hybrid.ingest([docs])
    found = hybrid.find("the storefront feels sluggish", 3)
    assert documents(found.results)[0] == "docs/slo/latency.md"
    assert found.results[0]["retrievers"] == {"vector": 1}
    with open_store(hybrid.url) as store:
        assert KnowledgeBase(store).search("the storefront feels sluggish", 3) == []


def test_a_changed_document_re_embeds_only_its_changed_chunks(hybrid: KnowledgeBase, docs: Path) -> None:
    hybrid.ingest([docs])
    write(docs, "slo/latency.md", LATENCY.replace("ten minutes", "five minutes"))
    report = hybrid.ingest([docs])
    assert (report.updated, report.embedded, report.reused) == (1, 1, 1)
    found = hybrid.find("page on-call when the objective is breached for five minutes", 1)
    assert "five minutes" in str(found.results[0]["text"])


def test_another_embedder_re_embeds_the_knowledge_base_and_the_old_one_is_skipped_never_mixed(
    db_url: str, docs: Path, endpoint: EmbeddingServer
) -> None:
    with KnowledgeBase.open(db_url, embedder=WordLlamaEmbedder()) as first:
        first.ingest([docs])
    other = EndpointEmbedder("wl-64", endpoint.base_url, provider="custom")
    with KnowledgeBase.open(db_url, embedder=other) as second:
        report = second.ingest([docs])
        assert (report.unchanged, report.embedded) == (3, 5)  # nothing re-read, every chunk re-embedded
        assert len(endpoint.texts) == 5
        found = second.find("the storefront feels sluggish", 3)
        assert found.skipped is None and documents(found.results)[0] == "docs/slo/latency.md"
    with KnowledgeBase.open(db_url, embedder=WordLlamaEmbedder()) as stale:
        found = stale.find("the storefront feels sluggish", 3)
        assert found.retrievers == ["keyword"] and found.results == []
        assert found.skipped == (
            "vector search skipped: the knowledge base was embedded with custom/wl-64, not "
            "wordllama/l2_supercat-256: ingest again with this embedder to re-embed it"
        )


def test_an_endpoint_that_is_down_fails_ingest_in_one_line_and_search_falls_back_to_keywords(
    hybrid: KnowledgeBase, docs: Path
) -> None:
    hybrid.ingest([docs])
    down = EndpointEmbedder("m", f"http://127.0.0.1:{free_port()}/v1", provider="custom", timeout=5)
    with open_store(hybrid.url) as store:
        broken = KnowledgeBase(store, embedder=down)
        write(docs, "ops/backups.md", BACKUPS + "\n## Restore\nRestore drills run monthly.\n")
        with pytest.raises(EmbeddingError) as raised:
            broken.ingest([docs])
        assert "cannot reach the embeddings endpoint http://127.0.0.1:" in str(raised.value)
        assert "\n" not in str(raised.value)
        found = broken.find("payment provider outage", 3)
        assert found.retrievers == ["keyword"] and documents(found.results)[0] == "docs/incidents/payments.md"
        assert found.skipped is not None and found.skipped.startswith("vector search skipped: cannot reach")


def test_an_endpoint_too_slow_or_of_another_dimension_is_one_line(endpoint: EmbeddingServer) -> None:
    embedder = EndpointEmbedder("m", endpoint.base_url, provider="custom", timeout=0.5)
    assert embedder.embed(["a", "b"]).shape == (2, 64)
    endpoint.dimension = 32
    with pytest.raises(EmbeddingError, match=r"answered vectors of dimension 32, expected 64 \(custom/m\)$"):
        embedder.embed(["a"])
    endpoint.delay = 2.0
    with pytest.raises(EmbeddingError, match=r"did not answer within 0.5 s$"):
        embedder.embed(["a"])


def test_a_knowledge_base_embedded_at_another_dimension_says_to_re_embed(
    db_url: str, docs: Path, endpoint: EmbeddingServer
) -> None:
    with KnowledgeBase.open(db_url, embedder=EndpointEmbedder("m", endpoint.base_url, provider="custom")) as kb:
        kb.ingest([docs])
    endpoint.dimension = 32
    with KnowledgeBase.open(db_url, embedder=EndpointEmbedder("m", endpoint.base_url, provider="custom")) as kb:
        found = kb.find("payment provider outage", 3)
        assert found.retrievers == ["keyword"] and found.results
        assert found.skipped == (
            "vector search skipped: the knowledge base's vectors of custom/m have 64 dimensions, the embedder "
            "now answers 32: ingest again to re-embed it"
        )


def test_an_embedder_setting_is_resolved_or_refused_in_one_line() -> None:
    assert resolve_embedder(None).identity == "wordllama/l2_supercat-256"  # type: ignore[union-attr]
    assert resolve_embedder("none") is None
    assert resolve_embedder("ollama/nomic-embed-text").base_url == "http://localhost:11434/v1"  # type: ignore[union-attr]
    assert resolve_embedder("vllm/bge", base_url="http://gpu:8000/v1").identity == "vllm/bge"  # type: ignore[union-attr]
    with pytest.raises(InputError, match="needs the URL of its OpenAI-compatible endpoint"):
        resolve_embedder("vllm/bge")
    with pytest.raises(InputError, match="is not one"):
        resolve_embedder("bge")
    with pytest.raises(InputError, match="not an http"):
        resolve_embedder("vllm/bge", base_url="ftp://x")


def test_a_knowledge_base_ingested_without_embeddings_is_embedded_by_the_next_hybrid_ingest(
    db_url: str, docs: Path
) -> None:
    with KnowledgeBase.open(db_url) as keyword_only:
        assert keyword_only.ingest([docs]).embedded == 0
        assert keyword_only.find("storefront sluggish", 3).retrievers == ["keyword"]
    with KnowledgeBase.open(db_url, embedder=WordLlamaEmbedder()) as hybrid:
        found = hybrid.find("the storefront feels sluggish", 3)
        assert found.skipped == (
            "vector search skipped: no chunk has a vector of wordllama/l2_supercat-256: ingest again to embed them"
        )
        report = hybrid.ingest([docs])
        assert (report.unchanged, report.embedded) == (3, 5)
        assert documents(hybrid.find("the storefront feels sluggish", 3).results)[0] == "docs/slo/latency.md"
