"""The embedded default embedder: WordLlama's static token embeddings (MIT), loaded from its own wheel.

WordLlama averages 256-dimension embeddings of the tokens of a text (an LLM's embedding table distilled for
similarity): no model runs, so a batch embeds in milliseconds on a CPU, and its weights (about 19 MB) ship in
the package, so it works offline with no key. It is loaded once per process with downloads disabled: it never
reaches for a model hub.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from marsrag.rag.embedders.base import BATCH, EmbeddingError, clipped, unit_rows

if TYPE_CHECKING:
    import numpy as np

#: The configuration whose weights ship in the wheel, and its dimension.
CONFIG: Final = "l2_supercat"
DIMENSION: Final = 256

_LOCK = threading.Lock()
_MODEL: list[Any] = []


class WordLlamaEmbedder:
    """WordLlama's ``l2_supercat`` from the installed package's own weights, at 256 dimensions or fewer.

    Its embeddings were trained Matryoshka-style: their first 64 or 128 dimensions are an embedding too
    (a little less accurate, 4 or 2 times smaller to store and scan). Each dimension is its own identity.
    """

    def __init__(self, dimension: int = DIMENSION) -> None:
        """The embedder keeping the first ``dimension`` (1 to 256) dimensions of WordLlama's embeddings."""
        if not 1 <= dimension <= DIMENSION:
            raise ValueError(f"WordLlama's dimension is 1 to {DIMENSION}, got {dimension}")
        self.dimension: Final = dimension
        self.identity: Final = f"wordllama/{CONFIG}-{dimension}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length rows, one per text (see :class:`~marsrag.rag.embedders.base.Embedder`)."""
        if not texts:
            # lazy: NumPy, loaded when something is embedded
            import numpy as np

            return np.zeros((0, self.dimension), dtype=np.float32)
        return unit_rows(_model().embed(clipped(texts), batch_size=BATCH)[:, : self.dimension])

    def __repr__(self) -> str:
        return f"WordLlamaEmbedder({self.identity!r})"


def _model() -> Any:
    """The process's WordLlama model, loaded on first use (about a second) from the package folder."""
    with _LOCK:
        if not _MODEL:
            root = logging.getLogger()
            handlers, level = list(root.handlers), root.level
            try:
                # lazy: WordLlama loads tokenizers and its weights, only when something is embedded
                import wordllama
                from wordllama import WordLlama
            except ImportError as error:  # pragma: no cover - a dependency of the package
                raise EmbeddingError(f"the embedded embedder needs the wordllama package: {error}") from error
            finally:
                # Its modules call logging.basicConfig at import: the application's logging stays the application's.
                root.handlers[:] = handlers
                root.setLevel(level)
            folder = Path(wordllama.__file__).parent
            try:
                _MODEL.append(WordLlama.load(config=CONFIG, dim=DIMENSION, cache_dir=folder, disable_download=True))
            except Exception as error:  # noqa: BLE001 - any failure to load is one line naming the embedder
                raise EmbeddingError(f"cannot load WordLlama's {CONFIG} weights from {folder}: {error}") from error
        return _MODEL[0]
