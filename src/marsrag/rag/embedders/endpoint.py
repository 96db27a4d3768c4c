"""Any OpenAI-compatible ``/v1/embeddings`` endpoint as an embedder: Ollama, llama.cpp's server, vLLM, OpenAI.

An answer's vector may be a list of numbers, base64 of float32 numbers (``encoding_format: base64``), or one
vector per token (llama.cpp's server for a model without a pooling layer), which are averaged: mean pooling,
what such servers do when asked to pool. Texts go in batches of :data:`~marsrag.rag.embedders.base.BATCH`;
each answer must hold one vector per text, all of one dimension (the first answer's, or the one configured),
else the batch fails with one line saying what came back. A server that is down, too slow (``timeout`` seconds
per request) or answers an error status is an :class:`~marsrag.rag.embedders.base.EmbeddingError` naming the
URL, never a traceback.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from marsrag.rag.embedders.base import BATCH, EmbeddingError, clipped, unit_rows
from marsrag.urls import mask

if TYPE_CHECKING:
    import numpy as np

#: Seconds one request may take by default: a batch of chunks on a CPU server takes a few.
TIMEOUT = 60.0


class EndpointEmbedder:
    """``model`` on the OpenAI-compatible server at ``base_url`` (``http://host:port/v1``)."""

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        provider: str = "openai",
        api_key: str | None = None,
        dimension: int | None = None,
        timeout: float = TIMEOUT,
    ) -> None:
        """An embedder calling ``{base_url}/embeddings`` with ``model``.

        ``dimension``: the vectors' expected dimension (None: whatever the first answer has, then held to it).
        """
        self.model = model
        self.base_url = base_url.rstrip("/")
        #: The provider and model as configured: vectors of another model (or server family) are never mixed in.
        self.identity = f"{provider}/{model}"
        self.dimension = dimension
        self._api_key = api_key
        self._timeout = timeout
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length rows, one per text (see :class:`~marsrag.rag.embedders.base.Embedder`)."""
        # lazy: NumPy, loaded when something is embedded
        # lazy: httpx, loaded when an endpoint embeds
        import httpx
        import numpy as np

        # One client per call (its batches share a connection), closed after it: nothing is left open between
        # calls, whatever holds the embedder and however long.
        with httpx.Client() as client:
            batches = [
                self._batch(client, clipped(texts[start : start + BATCH])) for start in range(0, len(texts), BATCH)
            ]
        if not batches:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        return unit_rows(np.concatenate(batches))

    def _batch(self, client: Any, texts: list[str]) -> np.ndarray:
        # lazy: NumPy, loaded when something is embedded
        import numpy as np

        url = f"{self.base_url}/embeddings"
        where = mask(url)
        body = self._post(client, url, where, {"model": self.model, "input": texts})
        try:
            items = sorted(body["data"], key=lambda item: item.get("index", 0))
            vectors = [_vector(item["embedding"]) for item in items]
            rows = np.stack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
        except (KeyError, TypeError, ValueError, AttributeError, binascii.Error) as error:
            raise EmbeddingError(f"the embeddings endpoint {where} answered something other than vectors") from error
        if rows.ndim != 2 or rows.shape[0] != len(texts) or rows.shape[1] == 0:
            raise EmbeddingError(
                f"the embeddings endpoint {where} answered {rows.shape[0] if rows.ndim else 0} vector(s) "
                f"for {len(texts)} text(s)"
            )
        with self._lock:
            if self.dimension is None:
                self.dimension = int(rows.shape[1])
        if rows.shape[1] != self.dimension:
            raise EmbeddingError(
                f"the embeddings endpoint {where} answered vectors of dimension {rows.shape[1]}, "
                f"expected {self.dimension} ({self.identity})"
            )
        if not np.isfinite(rows).all():
            raise EmbeddingError(f"the embeddings endpoint {where} answered vectors that are not finite numbers")
        return rows

    def _post(self, client: Any, url: str, where: str, payload: dict[str, Any]) -> Any:
        # lazy: httpx, loaded when an endpoint embeds
        import httpx

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            answer = client.post(url, json=payload, headers=headers, timeout=self._timeout)
        except httpx.TimeoutException as error:
            raise EmbeddingError(
                f"the embeddings endpoint {where} did not answer within {self._timeout:g} s"
            ) from error
        except httpx.HTTPError as error:
            raise EmbeddingError(f"cannot reach the embeddings endpoint {where}: {error}") from error
        if answer.status_code >= 400:
            detail = " ".join(answer.text.split())[:200]
            raise EmbeddingError(f"the embeddings endpoint {where} answered {answer.status_code}: {detail}")
        try:
            return answer.json()
        except ValueError as error:
            raise EmbeddingError(f"the embeddings endpoint {where} answered something other than JSON") from error

    def __repr__(self) -> str:
        return f"EndpointEmbedder({self.model!r}, {mask(self.base_url)!r})"


def _vector(value: object) -> np.ndarray:
    """One answer's embedding as a float32 vector: numbers, base64 float32, or token vectors mean-pooled.

    Raises:
        ValueError: it is none of those (binascii.Error for bad base64).
    """
    # lazy: NumPy, loaded when something is embedded
    import numpy as np

    if isinstance(value, str):
        raw = base64.b64decode(value, validate=True)
        if len(raw) % 4:
            raise ValueError("base64 embedding is not float32")
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    array = np.asarray(value, dtype=np.float32)
    if array.ndim == 2 and array.shape[0] > 0:
        pooled: np.ndarray = array.mean(axis=0)
        return pooled
    if array.ndim != 1:
        raise ValueError(f"an embedding of {array.ndim} dimensions")
    return array
