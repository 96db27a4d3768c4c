"""The embedder seam: what every :class:`~marsrag.rag.embedders.base.Embedder` must do, run on each one.

The embedded default (WordLlama, at its full and a truncated dimension) and an OpenAI-compatible endpoint (the
tests' own, serving WordLlama's vectors over HTTP; a real model server is in ``tests/realmodel``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from marsrag.rag.embedders.base import MAX_CHARS, Embedder
from marsrag.rag.embedders.endpoint import EndpointEmbedder
from marsrag.rag.embedders.wordllama import WordLlamaEmbedder
from tests._net import serving
from tests.rag.embedding_endpoint import EmbeddingServer


@pytest.fixture(params=["wordllama", "wordllama-64", "endpoint"])
def embedder(request: pytest.FixtureRequest) -> Iterator[Embedder]:
    if request.param == "wordllama":
        yield WordLlamaEmbedder()
    elif request.param == "wordllama-64":
        yield WordLlamaEmbedder(64)
    else:
        with serving(EmbeddingServer(), "embeddings") as server:
            yield EndpointEmbedder("wl", server.base_url, provider="custom")


def test_one_unit_float32_row_per_text_in_order(embedder: Embedder) -> None:
    texts = ["cache restarts", "payment provider outage", "cache restarts"]
    rows = embedder.embed(texts)
    assert rows.dtype == np.float32 and rows.ndim == 2 and rows.shape[0] == 3 and rows.shape[1] > 0
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert np.allclose(rows[0], rows[2], atol=1e-6) and not np.allclose(rows[0], rows[1])
    alone = embedder.embed(["payment provider outage"])
    assert np.allclose(alone[0], rows[1], atol=1e-5)  # a text's vector does not depend on its batch


def test_nothing_empty_huge_and_hostile_texts_are_embedded(embedder: Embedder) -> None:
    assert embedder.embed([]).shape[0] == 0
    rows = embedder.embed(["", "x" * (MAX_CHARS * 3), "\x00\ud800 \u202e ünïcödé 🚀", "a" * 200])
    assert rows.shape[0] == 4 and np.isfinite(rows).all()


def test_many_texts_go_in_batches_and_keep_their_order(embedder: Embedder) -> None:
    texts = [f"incident number {index} in region {index % 7}" for index in range(150)]
    rows = embedder.embed(texts)
    assert rows.shape[0] == 150
    assert np.allclose(rows[149], embedder.embed([texts[149]])[0], atol=1e-5)


def test_an_identity_names_the_embedder_and_its_dimension_or_model(embedder: Embedder) -> None:
    assert embedder.identity and "/" in embedder.identity and embedder.identity == embedder.identity.strip()
