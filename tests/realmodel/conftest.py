"""Real models on a real OpenAI-compatible server: llama-cpp-python's server, one per model (:mod:`.models`).

``model_server`` serves SmolLM2-135M-Instruct, ``qwen_server`` Qwen2.5-Coder-0.5B-Instruct: one session fixture
each over the same launch code, started the first time a test asks for it, on a free loopback port, and
stopped after the session. The tests that use them are in one file, and ``make test`` distributes by file
(``--dist loadfile``), so one worker runs them all, one model at a time (a call takes seconds on 2 cores, tens
of seconds for Qwen: two servers answering at once would share them). Nothing skips: a missing package, a
missing model file or a server that does not come up is an error saying what to install or run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests._net import free_port
from tests.realmodel.models import QWEN, SMOLLM2, RealModel, start_server, stop_server


@dataclass(frozen=True)
class ModelServer:
    """A running llama-cpp-python server: its OpenAI-compatible base URL and the model's name there."""

    base_url: str
    model: str
    log: Path

    @property
    def llm(self) -> str:
        """The ``--llm`` spec for this server."""
        return f"openai/{self.model}"


def serve(
    model: RealModel, tmp_path_factory: pytest.TempPathFactory, extra: tuple[str, ...] = ()
) -> Iterator[ModelServer]:
    """Run a server for ``model`` for as long as the generator is open (what each session fixture yields from)."""
    port = free_port()
    log = tmp_path_factory.mktemp(f"llama-{model.alias}") / "server.log"
    process = start_server(model, port, log, extra=extra)
    try:
        yield ModelServer(f"http://127.0.0.1:{port}/v1", model.alias, log)
    finally:
        stop_server(process)
    if process.returncode not in (0, -15):
        # A crash mid-session (e.g. a llama.cpp build using CPU features the machine lacks) is named here.
        print(f"llama_cpp.server ({model.label}) ended with {process.returncode}; its log: {log}", file=sys.stderr)


@pytest.fixture(scope="session")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    """SmolLM2-135M-Instruct on a llama-cpp-python server for the session."""
    yield from serve(SMOLLM2, tmp_path_factory)


@pytest.fixture(scope="session")
def qwen_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    """Qwen2.5-Coder-0.5B-Instruct on a llama-cpp-python server for the session."""
    yield from serve(QWEN, tmp_path_factory)


@pytest.fixture(scope="session")
def embedding_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    """SmolLM2-135M on a llama-cpp-python server with embeddings on (poor vectors, the real protocol)."""
    yield from serve(SMOLLM2, tmp_path_factory, ("--embedding", "true"))
