"""Support: how well a task's retrieved passages support what it was asked, from the retrieval itself (no LLM).

What the task was asked is the run's goal and, for a chained task, the hook handed to it. Its terms are the
Snowball stems of its content words (:func:`marsrag.tokens.stems`), each weighted by how rare it is in the
knowledge base (BM25's inverse document frequency over chunks: a term in every chunk says little about what
the question is about, a term in no chunk says the most, and it is one the knowledge base does not have).
Each retrieved passage is then scored on two kinds of evidence, and the best passage's score is the task's:

- **coverage**: the share of the asked terms' weight the passage contains;
- **proximity**: the share of the question's neighbouring term pairs ("connection pool", "single sign-on") the
  passage has near each other (within :data:`WINDOW` terms); a passage that has a question's words scattered
  across unrelated sentences covers them without being about them.

A word right after "how" ("how often", "how high", "how much") belongs to the question's form, not to what
it is about, and is not a term.

The score is their mean (coverage alone for a one-term question), and the level follows from it: ``strong``
from :data:`STRONG`, ``weak`` from :data:`WEAK`, else ``none``; ``none`` too when nothing was retrieved or the
knowledge base is empty. Every number is computed from the passages' text and the term counts, never from the
backend's ranking score, so SQLite (BM25) and PostgreSQL (``ts_rank_cd``) give the same level for the same
passages.

- **similarity** (with an embedder whose scale is calibrated, :data:`SIMILARITY_SCALES`): the passage's
  cosine similarity to the query (``similarity`` in the passage, set by the vector search), mapped onto the
  same score scale: the embedder's calibrated cosine for ``weak`` scores :data:`WEAK`, for ``strong``
  :data:`STRONG`. A passage's score is the larger of its term score and this one: a paraphrased question
  shares few terms with the passage that answers it, but not its meaning.

The thresholds were calibrated on the sample knowledge base with goals of both kinds (``bench/_support_goals.py``:
goals it answers, worded plainly, and goals about topics it lacks, some sharing its vocabulary) and checked on a
second set held out from calibration; ``python -m bench support`` measures both. A paraphrased goal that shares
few words with its document scores low on terms: the similarity evidence is what lifts it. Cosines differ in
scale between embedders, so each embedder's two cosines are calibrated on its own (``python -m bench support``
prints them); an embedder without a calibrated scale adds no similarity evidence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from marsrag.state import Support, SupportLevel, SupportTerm
from marsrag.store.queries import TermCounts
from marsrag.tokens import STOPWORDS, stems, words

#: The score from which the passages support the task strongly, and from which they support it at all.
STRONG: Final = 0.55
WEAK: Final = 0.40
#: Terms of a passage this close (in content words) count as near each other.
WINDOW: Final = 3
#: The identity of this way of measuring support, stored with each assessment.
METHOD: Final = "terms-1"
#: Terms of one question considered at most: a 10 KB goal still makes a bounded assessment.
MAX_TERMS: Final = 32


@dataclass(frozen=True)
class SimilarityScale:
    """An embedder's calibrated cosines: from ``weak`` a passage supports a question weakly, from ``strong``
    strongly (the cosines at which its score reaches :data:`WEAK` and :data:`STRONG`)."""

    weak: float
    strong: float

    def __post_init__(self) -> None:
        if not (-1.0 <= self.weak < self.strong <= 1.0):
            raise ValueError(f"a similarity scale needs -1 <= weak < strong <= 1, got {self.weak}, {self.strong}")

    def score(self, cosine: float) -> float:
        """``cosine`` on the support score's scale: linear through (weak, WEAK) and (strong, STRONG), in 0-1."""
        slope = (STRONG - WEAK) / (self.strong - self.weak)
        return min(1.0, max(0.0, WEAK + (cosine - self.weak) * slope))


#: Each embedder's calibrated scale, by identity (``bench/support_bench.py`` measured them on the calibration
#: goals by :func:`calibrate`'s rule). Another embedder's scale is the user's to calibrate: ``marsrag kb
#: calibrate`` measures it on their own knowledge base and goals, and the ``similarity_scale`` setting gives it.
SIMILARITY_SCALES: Final[dict[str, SimilarityScale]] = {
    "wordllama/l2_supercat-256": SimilarityScale(weak=0.47, strong=0.65),
}
#: How far above the highest cosine of a goal outside the knowledge base :func:`calibrate` puts ``weak``.
CALIBRATION_MARGIN: Final = 0.02
#: The least distance :func:`calibrate` keeps between ``weak`` and ``strong``.
CALIBRATION_SPREAD: Final = 0.05


def calibrate(inside: Sequence[float], outside: Sequence[float]) -> SimilarityScale:
    """An embedder's scale from the best passages' cosines for goals the knowledge base answers (``inside``)
    and for goals it does not cover (``outside``).

    ``weak`` is :data:`CALIBRATION_MARGIN` above the highest ``outside`` cosine, so no goal outside the
    knowledge base reaches ``weak`` by similarity alone (a question it does not cover stays ``none``);
    ``strong`` is the ``inside`` cosines' upper quartile, and at least :data:`CALIBRATION_SPREAD` above
    ``weak``. Both are rounded up to two decimals.

    Raises:
        ValueError: either list is empty or holds a number that is not a finite cosine (-1 to 1).
    """
    for name, values in (("inside", inside), ("outside", outside)):
        if not values:
            raise ValueError(f"calibration needs goals {name} the knowledge base, got none")
        if any(not (math.isfinite(value) and -1.0 <= value <= 1.0) for value in values):
            raise ValueError(f"the {name} cosines must be finite numbers from -1 to 1")
    weak = _up(max(outside) + CALIBRATION_MARGIN)
    ordered = sorted(inside)
    quartile = ordered[min(len(ordered) - 1, math.ceil(0.75 * len(ordered)) - 1)]
    strong = _up(max(quartile, weak + CALIBRATION_SPREAD))
    return SimilarityScale(weak=weak, strong=strong)


def _up(value: float) -> float:
    """``value`` rounded up to two decimals (a float's noise below 1e-9 ignored)."""
    return math.ceil(round(value * 100, 6)) / 100


# "how" and the word after it: a degree ("how often", "how high") unless that word is a function word ("how do").
_DEGREE = re.compile(r"\bhow\s+([^\W\d_]+)", re.IGNORECASE)


@dataclass(frozen=True)
class _Asked:
    """The terms of what a task was asked: each term's first word and where it was asked, and the pairs."""

    terms: dict[str, tuple[str, str]]
    pairs: list[tuple[str, str]]


def asked_terms(goal: str, hook: str | None) -> list[str]:
    """The terms of a goal and a hook (stems, each once, goal first): what :func:`assess` needs counts for."""
    return list(_asked(goal, hook).terms)


def assess(
    goal: str,
    hook: str | None,
    passages: Sequence[Mapping[str, Any]],
    counts: TermCounts | None,
    *,
    scale: SimilarityScale | None = None,
) -> Support:
    """How well ``passages`` (dicts with ``text`` and, optionally, ``heading`` and ``similarity``) support
    ``goal`` and ``hook``.

    ``counts``: the knowledge base's term statistics for :func:`asked_terms`; None (a retriever that keeps
    none) weighs every term alike. ``scale``: the embedder's calibrated similarity scale; None: the passages'
    similarity is not evidence.
    """
    asked = _asked(goal, hook)
    size = counts.chunks if counts is not None else len(passages)
    weights = {term: _weight(term, counts, size) for term in asked.terms}
    evidence = [_stems(passage) for passage in passages]
    terms = [
        SupportTerm(
            term=term,
            word=word,
            asked_in=where,  # type: ignore[arg-type]
            chunks=counts.counts.get(term, 0) if counts is not None else 0,
            weight=round(weights[term], 3),
            found_in=[position for position, (found, _) in enumerate(evidence, start=1) if term in found],
        )
        for term, (word, where) in asked.terms.items()
    ]
    best, score, coverage, proximity, similar = None, 0.0, 0.0, 0.0, None
    if size > 0 and weights:
        for position, ((found, near), passage) in enumerate(zip(evidence, passages, strict=True), start=1):
            covered = _share(weights, [term for term in weights if term in found])
            pairs = [pair for pair in asked.pairs if pair in near]
            close = _pair_share(weights, asked.pairs, pairs)
            total = covered if not asked.pairs else (covered + close) / 2
            cosine = _similarity(passage) if scale is not None else None
            if cosine is not None and scale is not None:
                total = max(total, scale.score(cosine))
            if total > score:
                best, score, coverage, proximity, similar = position, total, covered, close, cosine
    return Support(
        level=level(score),
        score=round(score, 3),
        coverage=round(coverage, 3),
        proximity=round(proximity, 3),
        best=best,
        chunks=size,
        similarity=round(similar, 3) if similar is not None else None,
        terms=terms,
        method=f"{METHOD}+similarity" if scale is not None else METHOD,
    )


def _similarity(passage: Mapping[str, Any]) -> float | None:
    """The passage's cosine similarity to the query, when the vector search gave it one (a finite number)."""
    value = passage.get("similarity")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def level(score: float) -> SupportLevel:
    """The support level of a score."""
    if score >= STRONG:
        return "strong"
    if score >= WEAK:
        return "weak"
    return "none"


def _asked(goal: str, hook: str | None) -> _Asked:
    terms: dict[str, tuple[str, str]] = {}
    pairs: list[tuple[str, str]] = []
    for text, where in ((goal, "goal"), (hook or "", "hook")):
        sequence: list[str] = []
        for word in words(_DEGREE.sub(_question_form, text)):
            found = stems(word)
            if not found:
                continue
            term = found[0]
            if term in terms:
                if terms[term][1] != where:
                    terms[term] = (terms[term][0], "both")
            elif len(terms) < MAX_TERMS:
                terms[term] = (word, where)
            else:
                continue
            if term not in sequence:
                sequence.append(term)
        pairs.extend(pair for pair in zip(sequence, sequence[1:], strict=False) if pair not in pairs)
    return _Asked(terms, pairs)


def _question_form(match: re.Match[str]) -> str:
    return match.group(0) if match.group(1).casefold() in STOPWORDS else "how"


def _weight(term: str, counts: TermCounts | None, size: int) -> float:
    """BM25's inverse document frequency of ``term`` over the knowledge base's chunks (1.0 without counts)."""
    if counts is None:
        return 1.0
    found = min(counts.counts.get(term, 0), size)
    return math.log(1 + (size - found + 0.5) / (found + 0.5))


def _stems(passage: Mapping[str, Any]) -> tuple[set[str], set[tuple[str, str]]]:
    """A passage's terms, and the pairs of terms within :data:`WINDOW` of each other (both orders)."""
    sequence = stems(f"{passage.get('heading') or ''}\n{passage.get('text') or ''}")
    near: set[tuple[str, str]] = set()
    for index, first in enumerate(sequence):
        for second in sequence[index + 1 : index + 1 + WINDOW]:
            near.add((first, second))
            near.add((second, first))
    return set(sequence), near


def _share(weights: Mapping[str, float], found: Sequence[str]) -> float:
    total = sum(weights.values())
    return sum(weights[term] for term in found) / total if total else 0.0


def _pair_share(
    weights: Mapping[str, float], pairs: Sequence[tuple[str, str]], found: Sequence[tuple[str, str]]
) -> float:
    """The share of the pairs' weight found near each other; a pair weighs as its lighter term."""
    total = sum(min(weights[a], weights[b]) for a, b in pairs)
    return sum(min(weights[a], weights[b]) for a, b in found) / total if total else 0.0
