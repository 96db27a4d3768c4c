"""Reciprocal rank fusion: several ranked lists of chunks made into one, by rank alone.

A chunk's fused score is the sum over the lists that found it of ``1 / (K + rank)`` (Cormack, Clarke and
Büttcher, 2009). Only ranks count, never the retrievers' own scores: BM25, ``ts_rank_cd`` and cosine similarity
are not on one scale, and fusion must rank a SQLite and a PostgreSQL knowledge base alike. A chunk both lists
found near their tops beats one that only one list ranks first; each list keeps what only it found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from marsrag.store import ChunkHit

#: The rank constant: 60, as in the paper and most hybrid search engines; larger flattens the top ranks' lead.
K: Final = 60


@dataclass
class Fused:
    """A chunk of the fused list: the chunk, its fused score, and its rank (1-based) in each list that found it."""

    hit: ChunkHit
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)


def fuse(lists: Mapping[str, Sequence[ChunkHit]]) -> list[Fused]:
    """The chunks of ``lists`` (retriever name -> its hits, best first) by fused score, best first.

    Ties (the same ranks in different lists) go to the chunk the first list ranks higher, then to the lower id.
    """
    fused: dict[int, Fused] = {}
    for name, hits in lists.items():
        for rank, hit in enumerate(hits, start=1):
            entry = fused.setdefault(hit.chunk_id, Fused(hit))
            if name not in entry.ranks:
                entry.ranks[name] = rank
                entry.score += 1.0 / (K + rank)
    first = next(iter(lists), None)
    worst = 1 + max((len(hits) for hits in lists.values()), default=0)
    return sorted(
        fused.values(),
        key=lambda entry: (-entry.score, entry.ranks.get(first, worst) if first else worst, entry.hit.chunk_id),
    )
