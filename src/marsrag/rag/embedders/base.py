"""The embedder interface: a batch of texts in, one unit-length float32 vector per text out.

An embedder has an **identity** (stored with every vector it made): vectors of two identities are never
compared, so changing the embedder re-embeds the knowledge base rather than mixing two vector spaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from marsrag.errors import MarsRAGError
from marsrag.text import storable

if TYPE_CHECKING:
    import numpy as np

#: Texts sent in one request at most: a remote endpoint's request stays bounded, a local one's memory too.
BATCH = 64
#: The characters of one text embedded at most: a chunk is far shorter; a 10 KB query stays bounded.
MAX_CHARS = 8000


class EmbeddingError(MarsRAGError):
    """An embedder failed: unreachable, too slow, an answer that is not vectors, or of the wrong dimension."""


@runtime_checkable
class Embedder(Protocol):
    """Text to vectors."""

    @property
    def identity(self) -> str:
        """What made the vectors, stored with each (``wordllama/l2_supercat-256``, ``openai/nomic-embed-text``)."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length float32 row per text, in order (``len(texts)`` x the embedder's dimension).

        Raises:
            EmbeddingError: the embedder failed (the message is one line naming it and the problem).
        """
        ...


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` as float32 with each row scaled to unit length (a zero row stays zero): cosine is then a dot."""
    # lazy: NumPy, loaded when something is embedded
    import numpy as np

    rows = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return unit


def clipped(texts: Sequence[str]) -> list[str]:
    """The texts cut to :data:`MAX_CHARS` each and made storable (a lone surrogate, which no tokenizer or
    JSON encoder takes, becomes U+FFFD); an empty one becomes a space: some servers refuse ""."""
    return [(storable(text[:MAX_CHARS]) or " ") for text in texts]
