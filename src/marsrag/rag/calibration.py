"""Calibrating an embedder's similarity scale on the user's own knowledge base and goals (``marsrag kb calibrate``).

The support signal counts a passage's cosine to the question as evidence only on a scale calibrated for the
embedder (:class:`marsrag.rag.support.SimilarityScale`): cosines differ in scale between embedders, and only
the embedded default's is known. A user with another embedder (an OpenAI-compatible endpoint) writes goals their
knowledge base answers and goals it does not cover, one per line; each goal's best passage cosine is measured
by the knowledge base's own vector search, and :func:`marsrag.rag.support.calibrate` turns the two lists into
the scale, which the ``similarity_scale`` setting then gives every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from marsrag.errors import InputError
from marsrag.files import read_regular_file
from marsrag.goals import clean_goal
from marsrag.rag.knowledge import VECTOR, KnowledgeBase
from marsrag.rag.support import SimilarityScale, calibrate

__all__ = ["MAX_GOALS_BYTES", "Calibration", "measure", "read_goals"]

#: A goals file larger than this is refused unread: it is a hand-written list.
MAX_GOALS_BYTES = 1_048_576


@dataclass(frozen=True)
class Calibration:
    """A calibration: the embedder's identity, each goal's best cosine, and the scale they give."""

    embedder: str
    scale: SimilarityScale
    inside: list[tuple[str, float]] = field(default_factory=list)
    outside: list[tuple[str, float]] = field(default_factory=list)

    @property
    def setting(self) -> str:
        """The ``similarity_scale`` setting's value: ``WEAK,STRONG``."""
        return f"{self.scale.weak:.2f},{self.scale.strong:.2f}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view: the embedder, the scale, the setting, and each goal with its cosine."""
        return {
            "embedder": self.embedder,
            "weak": self.scale.weak,
            "strong": self.scale.strong,
            "similarity_scale": self.setting,
            "inside": [{"goal": goal, "cosine": round(cosine, 4)} for goal, cosine in self.inside],
            "outside": [{"goal": goal, "cosine": round(cosine, 4)} for goal, cosine in self.outside],
        }


def read_goals(path: str | Path) -> list[str]:
    """The goals of a file: one per line, blank lines and lines starting with ``#`` left out, each a valid goal.

    Raises:
        InputError: the file cannot be read, is not UTF-8, holds no goal, or a line is not a valid goal (the
            message names the file and the line).
    """
    data = read_regular_file(path, limit=MAX_GOALS_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text (one goal per line)") from None
    goals = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            goals.append(clean_goal(line))
        except InputError as error:
            raise InputError(f"{path}, line {number}: {error}") from None
    if not goals:
        raise InputError(f"{path}: no goal in it (one goal per line; # starts a comment)")
    return goals


def measure(kb: KnowledgeBase, inside: Sequence[str], outside: Sequence[str], *, limit: int = 5) -> Calibration:
    """Each goal's best passage cosine among the vector search's first ``limit``, and the scale they give.

    Raises:
        InputError: the knowledge base has no embedder, or its vector search cannot answer (no vector of this
            embedder is stored: the message says why), or either list is empty.
        StoreError: the database fails.
        EmbeddingError: the embedder failed.
    """
    if kb.embedder is None:
        raise InputError("calibration needs an embedder: the embedder setting is none (keyword search only)")
    if not inside or not outside:
        raise InputError("calibration needs goals the knowledge base answers and goals it does not cover")
    measured = (
        [(goal, _best(kb, goal, limit)) for goal in inside],
        [(goal, _best(kb, goal, limit)) for goal in outside],
    )
    scale = calibrate([cosine for _, cosine in measured[0]], [cosine for _, cosine in measured[1]])
    return Calibration(kb.embedder.identity, scale, *measured)


def _best(kb: KnowledgeBase, goal: str, limit: int) -> float:
    found = kb.find(goal, limit, retrievers=[VECTOR])
    if found.skipped is not None:
        raise InputError(f"cannot calibrate: {found.skipped}")
    cosines = [float(hit["similarity"]) for hit in found.results if "similarity" in hit]
    if not cosines:
        raise InputError("cannot calibrate: the knowledge base is empty (ingest documents first)")
    return max(cosines)
