"""Recall at 5 on the judged paraphrase sets (:mod:`tests.rag.paraphrase_set`), per retriever, on both backends.

On each set (the judged one and the held-out one), hybrid must recall at least what keyword search recalls in
every class of goal, and the vector list must find goals the keyword list misses (else fusing it would add
nothing). ``python -m bench retrieval`` prints the figures.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from marsrag.rag.embedders.wordllama import WordLlamaEmbedder
from marsrag.rag.knowledge import KEYWORD, VECTOR, KnowledgeBase
from tests.rag.paraphrase_set import HELD_OUT, JUDGED, GoalClass, recalled

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "knowledge_base"


@pytest.fixture
def sample_kb(db_url: str) -> Iterator[KnowledgeBase]:
    with KnowledgeBase.open(db_url, embedder=WordLlamaEmbedder()) as kb:
        kb.ingest([SAMPLE])
        yield kb


@pytest.mark.parametrize("goals", [JUDGED, HELD_OUT], ids=["judged", "held-out"])
def test_hybrid_recalls_at_least_what_keywords_do_in_every_class_and_vectors_add_to_it(
    sample_kb: KnowledgeBase, goals: tuple[tuple[GoalClass, str, tuple[str, ...]], ...]
) -> None:
    keyword = recalled(sample_kb, [KEYWORD], goals=goals)
    vector = recalled(sample_kb, [VECTOR], goals=goals)
    hybrid = recalled(sample_kb, [KEYWORD, VECTOR], goals=goals)
    for kind in keyword:
        assert sum(hybrid[kind]) >= sum(keyword[kind]), (kind, keyword[kind], hybrid[kind])
    only_vector = [
        goal
        for kind in keyword
        for goal, k, v in zip([g for c, g, _ in goals if c == kind], keyword[kind], vector[kind], strict=True)
        if v and not k
    ]
    assert only_vector, "the vector list found nothing the keyword list missed"
