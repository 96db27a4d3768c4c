"""The support signal: how well retrieved passages support a goal, on a knowledge base of the tests' own.

``support_kb`` is a community bike workshop's manuals (nothing like the sample's operations documents), and
the goals below were written for it: ones it answers, worded plainly, and ones about topics it lacks, some of
them sharing its words ("repair", "bike", "opening hours").
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from marsrag.rag import KnowledgeBase
from marsrag.rag.support import STRONG, WEAK, asked_terms, assess, level
from marsrag.runtime.retrieval import NoRetriever, retrieve
from marsrag.store import TermCounts
from tests.store.migrations import at_revision

KNOWLEDGE = Path(__file__).parent / "support_kb"

INSIDE = [
    "How do I fix a flat tube?",
    "How often should I lubricate the chain?",
    "How do I replace worn brake pads?",
    "How do I true a wobbly wheel?",
    "What tyre pressure should I use?",
    "How high should my saddle be?",
    "How do I bleed hydraulic disc brakes?",
    "Can members borrow tools from the workshop?",
    "When is the chain worn out?",
    "The gears rattle when I shift. What should I adjust?",
]
OUTSIDE = [
    "How do I change the oil in my car?",
    "What is a good pizza dough recipe?",
    "How do I file my income tax return?",
    "Which football team won the league last season?",
    "How do I repair a leaking kitchen tap?",
    "How much does a new electric bike cost to insure?",
    "How do I install Linux on a laptop?",
    "What are the opening hours of the public library?",
    "Who painted the ceiling of the Sistine Chapel?",
    "How do I train a puppy to sit?",
]


def _levels(kb: KnowledgeBase) -> dict[str, str]:
    levels = {}
    for goal in [*INSIDE, *OUTSIDE]:
        support = retrieve(kb, None, goal, 5).support
        assert support is not None
        levels[goal] = support.level
    return levels


def test_goals_it_answers_are_supported_and_others_are_not_on_both_backends(tmp_path: Path, postgres_url: str) -> None:
    found = {}
    for name, url in (("sqlite", f"sqlite:///{tmp_path}/kb.db"), ("postgresql", postgres_url)):
        with KnowledgeBase.open(url) as kb:
            kb.ingest([KNOWLEDGE])
            found[name] = _levels(kb)
    for levels in found.values():
        assert [goal for goal in INSIDE if levels[goal] == "none"] == []
        assert [goal for goal in OUTSIDE if levels[goal] != "none"] == []
    # The level rests on the passages' text and the term counts, never on the backend's score scale.
    assert found["sqlite"] == found["postgresql"]


def test_the_evidence_names_the_terms_the_passages_have_and_lack(kb: KnowledgeBase) -> None:
    kb.ingest([KNOWLEDGE])
    support = retrieve(kb, None, "How do I bleed hydraulic disc brakes on a unicycle?", 5).support
    assert support is not None and support.best is not None
    by_word = {term.word: term for term in support.terms}
    assert by_word["unicycle"].chunks == 0 and by_word["unicycle"].found_in == []
    assert support.best in by_word["hydraulic"].found_in
    # The rarer a term in the knowledge base, the more it weighs.
    assert by_word["unicycle"].weight > by_word["hydraulic"].weight > by_word["brakes"].weight
    assert support.missing[0] == "unicycle"


def test_a_hook_adds_its_terms_and_pairs() -> None:
    passages = [{"heading": "Chains", "text": "Measure chain wear with a chain checker."}]
    counts = TermCounts(10, {"measur": 1, "chain": 3, "wear": 1, "checker": 1, "lube": 2})
    alone = assess("chain wear", None, passages, counts)
    chained = assess("chain wear", "Which lube?", passages, counts)
    assert [term.asked_in for term in chained.terms] == ["goal", "goal", "hook"]
    assert chained.score < alone.score  # the hook's term is not in the passage
    assert asked_terms("chain wear", "Which lube for the chain?") == ["chain", "wear", "lube"]


def test_scattered_words_support_less_than_the_same_words_together() -> None:
    counts = TermCounts(20, {"singl": 2, "sign": 2, "portal": 2})
    together = [{"text": "Set up single sign on through the staff portal."}]
    scattered = [{"text": "Single requests pass quickly. Sign every change first. Later someone opens the portal."}]
    near = assess("single sign-on portal", None, together, counts)
    far = assess("single sign-on portal", None, scattered, counts)
    assert near.coverage == far.coverage == 1.0
    assert near.proximity == 1.0 and far.proximity < near.proximity
    assert near.level == "strong" and far.score < near.score


def test_nothing_retrieved_or_an_empty_knowledge_base_is_none() -> None:
    assert assess("How do I fix a flat?", None, [], TermCounts(50, {})).level == "none"
    assert assess("How do I fix a flat?", None, [{"text": "fix a flat"}], TermCounts(0, {})).level == "none"
    support = retrieve(NoRetriever(), None, "How do I fix a flat?", 5).support
    assert support is not None and support.level == "none" and support.terms


def test_a_retriever_without_term_counts_weighs_terms_alike() -> None:
    class Mine:
        def search(self, query: str, limit: int = 5) -> list[dict[str, str]]:
            return [{"source": "notes.md", "text": "Fix a flat tube with a patch."}]

    support = retrieve(Mine(), None, "fix flat tube", 5).support
    assert support is not None
    assert {term.weight for term in support.terms} == {1.0}
    assert support.level == "strong"


@pytest.mark.parametrize(("score", "expected"), [(STRONG, "strong"), (WEAK, "weak"), (WEAK - 0.01, "none")])
def test_levels_follow_the_thresholds(score: float, expected: str) -> None:
    assert level(score) == expected


def test_term_counts_follow_ingest_and_the_migration_counts_stored_documents(db_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "a.md").write_text("# Chains\n\nLube the chain.\n\n## Wear\n\nMeasure chain wear.\n", encoding="utf-8")
    with KnowledgeBase.open(db_url) as kb:
        kb.ingest([folder])
        assert kb.term_counts(["chain", "lube", "wear", "absent"]) == TermCounts(
            2, {"chain": 2, "lube": 1, "wear": 1, "absent": 0}
        )
        (folder / "a.md").write_text("# Chains\n\nWax the chain.\n", encoding="utf-8")
        kb.ingest([folder])  # replaced: the old version's counts go with its chunks
        before = kb.term_counts(["chain", "lube", "wax"])
        assert before == TermCounts(1, {"chain": 1, "lube": 0, "wax": 1})
    # A database from before the counts existed: the migration counts its stored chunks.
    with at_revision(db_url, "0014", downgrade=True) as connection:
        assert connection.execute(text("SELECT count(*) FROM chunks")).scalar_one() == 1
    with KnowledgeBase.open(db_url) as kb:
        assert kb.term_counts(["chain", "lube", "wax"]) == before


def test_a_passage_similar_in_meaning_supports_a_paraphrase_that_shares_no_term() -> None:
    """With a calibrated scale, similarity lifts a passage whose terms miss; without one, or below it, nothing."""
    from marsrag.rag.support import SimilarityScale

    scale = SimilarityScale(weak=0.5, strong=0.7)
    passage = {"heading": "Payments gateway", "text": "Fail over to the secondary acquirer."}
    counts = TermCounts(100, {})
    goal = "the card processor keeps rejecting charges"
    terms_only = assess(goal, None, [passage], counts)
    assert terms_only.level == "none" and terms_only.similarity is None
    similar = assess(goal, None, [{**passage, "similarity": 0.6}], counts, scale=scale)
    assert similar.level == "weak" and similar.similarity == 0.6 and similar.best == 1
    assert similar.method == "terms-1+similarity"
    assert WEAK < similar.score < STRONG
    assert assess(goal, None, [{**passage, "similarity": 0.75}], counts, scale=scale).level == "strong"
    assert assess(goal, None, [{**passage, "similarity": 0.3}], counts, scale=scale).level == "none"
    assert assess(goal, None, [{**passage, "similarity": 0.9}], counts).level == "none"  # no scale: no evidence
    for junk in (float("nan"), "0.9", True, None):
        assert assess(goal, None, [{**passage, "similarity": junk}], counts, scale=scale).level == "none"


def test_the_embedded_default_s_scale_is_calibrated_and_ordered() -> None:
    from marsrag.rag.embedders.wordllama import WordLlamaEmbedder
    from marsrag.rag.support import SIMILARITY_SCALES

    scale = SIMILARITY_SCALES[WordLlamaEmbedder().identity]
    assert 0 < scale.weak < scale.strong < 1
    assert scale.score(scale.weak) == pytest.approx(WEAK) and scale.score(scale.strong) == pytest.approx(STRONG)
