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

The thresholds were calibrated on the sample knowledge base with goals of both kinds (``bench/_support_goals.py``:
goals it answers, worded plainly, and goals about topics it lacks, some sharing its vocabulary) and checked on a
second set held out from calibration; ``python -m bench support`` measures both. A paraphrased goal that shares
few words with its document scores low here: similarity evidence (embeddings) is the next kind of evidence to
join the score, as another share next to coverage and proximity.
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


def assess(goal: str, hook: str | None, passages: Sequence[Mapping[str, Any]], counts: TermCounts | None) -> Support:
    """How well ``passages`` (dicts with ``text`` and, optionally, ``heading``) support ``goal`` and ``hook``.

    ``counts``: the knowledge base's term statistics for :func:`asked_terms`; None (a retriever that keeps
    none) weighs every term alike.
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
    best, score, coverage, proximity = None, 0.0, 0.0, 0.0
    if size > 0 and weights:
        for position, (found, near) in enumerate(evidence, start=1):
            covered = _share(weights, [term for term in weights if term in found])
            pairs = [pair for pair in asked.pairs if pair in near]
            close = _pair_share(weights, asked.pairs, pairs)
            total = covered if not asked.pairs else (covered + close) / 2
            if total > score:
                best, score, coverage, proximity = position, total, covered, close
    return Support(
        level=level(score),
        score=round(score, 3),
        coverage=round(coverage, 3),
        proximity=round(proximity, 3),
        best=best,
        chunks=size,
        terms=terms,
        method=METHOD,
    )


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
