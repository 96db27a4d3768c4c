"""An OpenAI-compatible ``/v1/embeddings`` endpoint of the test's own: WordLlama's vectors, cut to a dimension.

What the tests need from an endpoint that real servers do only by accident: answering slowly, changing its
dimension, going down. The vectors are real (WordLlama's, first ``dimension`` numbers), so searches through it
find what the embedded default finds. Requests are counted, to tell which chunks were embedded.
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from marsrag.rag.embedders.wordllama import WordLlamaEmbedder


class EmbeddingServer(ThreadingHTTPServer):
    """The endpoint's state: its vectors' dimension, its delay, the texts it was asked to embed."""

    daemon_threads = True
    dimension = 64
    delay = 0.0
    #: Every text embedded, in order.
    texts: ClassVar[list[str]]

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.texts = []

    @property
    def base_url(self) -> str:
        """Its ``/v1`` base URL."""
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: EmbeddingServer

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
        self.server.texts.extend(texts)
        if self.server.delay:
            time.sleep(self.server.delay)
        vectors = WordLlamaEmbedder(self.server.dimension).embed(texts)
        data: list[dict[str, Any]] = [
            {"object": "embedding", "index": index, "embedding": vector.tolist()}
            for index, vector in enumerate(vectors)
        ]
        answer = json.dumps({"object": "list", "model": body["model"], "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the http.server API
        pass
