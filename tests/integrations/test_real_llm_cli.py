"""`marsrag run --llm openai/MODEL --base-url URL`: the real-LLM path, against a local chat-completions server."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.contract.samples import CONTENT
from tests.integrations.test_structured_output import StrictChatServer, server  # noqa: F401 - fixture

pytestmark = pytest.mark.crewai


def test_run_against_an_openai_compatible_server(server: StrictChatServer, tmp_path: object) -> None:  # noqa: F811
    """Every task's LLM call reaches the local server (as Ollama, llama.cpp or vLLM would get it); all valid."""
    server.script = [json.dumps({**CONTENT, "loop": f"Question {i}?"}) for i in range(3)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MARSRAG_LLM", "MARSRAG_BASE_URL"))}
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "run", "API latency SLO breaches", "--llm", "openai/test-model",
         "--base-url", server.base_url, "--db", f"sqlite:///{tmp_path}/real.db", "--format", "json"],
        capture_output=True, env=env, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    document = json.loads(proc.stdout)
    assert [task["validation"]["status"] for task in document["tasks"]] == ["valid"] * 3
    assert [t["transition_mode"] for t in document["transitions"]] == ["direct", "direct"]
    assert len(server.exchanges) == 3 and all(e.body["model"] == "test-model" for e in server.exchanges)
    assert all(e.status == 200 for e in server.exchanges)


def test_an_unreachable_server_fails_the_run_and_stdout_stays_one_json_document(tmp_path: object) -> None:
    """Nothing listens: the run fails with the cause; CrewAI's console warnings go to stderr, not into the JSON."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]  # released at once: nothing listens there
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MARSRAG_LLM", "MARSRAG_BASE_URL"))}
    env.update(OPENAI_API_KEY="sk-test", MARSRAG_LLM_RETRIES="0")
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "run", "API latency SLO breaches", "--llm", "openai/test-model",
         "--base-url", f"http://127.0.0.1:{closed}/v1", "--db", f"sqlite:///{tmp_path}/down.db", "--format", "json"],
        capture_output=True, env=env, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr.decode()[-3000:]
    document = json.loads(proc.stdout)  # the whole of stdout: one document
    assert document["status"] == "failed"
    assert document["status_reason"].startswith("LLMCallError: the LLM call to 'test-model' failed after 1 attempt(s)")
