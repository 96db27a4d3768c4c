"""Real-model tests: MarsRAG against llama-cpp-python's OpenAI-compatible server, SmolLM2-135M and Qwen2.5-Coder.

The server accepts ``response_format`` only as ``text`` or ``json_object`` (with an optional ``schema``, which
it turns into a grammar): ``auto`` must step down from ``json_schema`` once per process, record it, and then
get constrained, structurally valid answers from even this tiny model. Under ``prompt`` the model writes
what it likes; the run still completes, each task with a stored verdict. Kept few: a call takes seconds
(SmolLM2), 20-45 s (Qwen2.5-Coder-0.5B, one run only). One file, so one worker runs them, a model at a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._net import free_port
from tests._sse import events
from tests.conftest import REPO
from tests.realmodel.conftest import ModelServer

pytestmark = pytest.mark.realmodel

GOAL = "Checkout latency breached its SLO in three regions right after cache nodes restarted. What should we do?"
STATUSES = {"valid", "partial", "failed"}
#: Error codes of an answer without the contract's shape: what decoding under the schema rules out.
SHAPE = {"missing", "not_string", "unparseable"}


def marsrag(*args: str, home: Path, stream: str = "off") -> subprocess.CompletedProcess[str]:
    """Run the CLI in its own process, as a user would, with no API key set and generous call limits.

    Not streamed unless ``stream`` says so: llama-cpp-python's server reports no token usage in a stream (it
    ignores ``stream_options.include_usage``), and these tests check what the server reports.
    """
    # A cap on answers: a tiny model under `prompt` may write until its context is full, holding the server.
    limits = {"MARSRAG_LLM_TIMEOUT": "900", "MARSRAG_LLM_MAX_TOKENS": "1500", "MARSRAG_LLM_STREAM": stream}
    env = {**os.environ, "MARSRAG_HOME": str(home), "NO_COLOR": "1", **limits}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "marsrag", *args], capture_output=True, text=True, env=env, check=False, cwd=REPO
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory whose default store holds the sample knowledge base."""
    path = tmp_path_factory.mktemp("realmodel-home")
    ingested = marsrag("ingest", str(REPO / "examples" / "knowledge_base"), home=path)
    assert ingested.returncode == 0, ingested.stderr
    return path


def run(server: ModelServer, home: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    flags = ["--llm", server.llm, "--base-url", server.base_url, "--format", "json", *extra]
    proc = marsrag("run", GOAL, *flags, home=home)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json.loads(proc.stdout)


def attempts(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [attempt for task in document["tasks"] for attempt in task["attempts"]]


def test_auto_steps_down_once_and_the_tiny_model_answers_the_contract(model_server: ModelServer, home: Path) -> None:
    """The default (auto, --base-url, no key): json_schema refused once, json_object with the schema after.

    At least 2 of the 3 tasks are valid, every attempt says how it finished and what it cost, the refusal
    is recorded on the first attempt and is no attempt itself; following the result works.
    """
    proc, document = run(model_server, home)
    assert document["status"] == "completed"
    assert [task["validation"]["status"] in STATUSES for task in document["tasks"]] == [True] * 3
    assert sum(task["validation"]["status"] == "valid" for task in document["tasks"]) >= 2, document["tasks"]
    every = attempts(document)
    assert all(attempt["finish_reason"] for attempt in every), every
    assert all(attempt["structured_output"] == "json_object" for attempt in every)
    assert every[0]["structured_output_refused"] == ["json_schema"]
    assert all(attempt["structured_output_refused"] == [] for attempt in every[1:])  # remembered
    host = model_server.base_url.split("//", 1)[1].split("/", 1)[0]
    assert {(a["model"], a["endpoint"]) for a in every} == {("smollm2", host)}
    assert all(a["prompt_tokens"] and a["completion_tokens"] and a["latency_ms"] > 0 for a in every)
    assert document["tasks"][0]["attempts"][0]["kind"] == "answer"  # the refused request was not an attempt
    assert "[CrewAIEventsBus]" not in proc.stdout + proc.stderr
    assert "ERROR:root" not in proc.stderr and "Traceback" not in proc.stderr

    followed = marsrag(
        "follow", document["run_id"], "--llm", model_server.llm, "--base-url", model_server.base_url,
        "--format", "json", home=home,
    )  # fmt: skip
    assert followed.returncode == 0, followed.stderr[-3000:]
    after = json.loads(followed.stdout)
    assert after["session_id"] == document["session_id"] and after["run_id"] != document["run_id"]
    assert after["status"] == "completed"


@pytest.mark.parametrize("mode", ["prompt", "json_object"])
def test_each_mode_completes_with_a_verdict_for_every_task(model_server: ModelServer, home: Path, mode: str) -> None:
    """Under prompt and under the constrained mode the server supports, the run completes; attempts say the mode."""
    _, document = run(model_server, home, "--structured-output", mode)
    assert document["status"] == "completed"
    assert [task["validation"]["status"] in STATUSES for task in document["tasks"]] == [True] * 3
    assert {attempt["structured_output"] for attempt in attempts(document)} == {mode}
    assert all(attempt["structured_output_refused"] == [] for attempt in attempts(document))
    assert all(attempt["finish_reason"] for attempt in attempts(document))


def test_an_answer_cut_at_its_token_limit_is_never_valid(model_server: ModelServer, tmp_path: Path) -> None:
    """With max_tokens too small for an answer, the server reports ``length``: the cut field fails ``truncated``.

    No task is valid, and no cut loop is handed on: every transition falls back.
    """
    import crewai

    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.resilient import CallPolicy, tune_native_client
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.store import open_store
    from marsrag.tasks import load_config

    policy = CallPolicy(timeout=900, retries=0, backoff=0)
    raw = crewai.LLM(model=model_server.llm, base_url=model_server.base_url, api_key="not-needed", max_tokens=24)
    llm = make_resilient(tune_native_client(raw, policy), policy, structured_output="json_object")
    with open_store(f"sqlite:///{tmp_path / 'cut.db'}") as store:
        record = WorkflowRunner(store, load_config(None), llm).run(GOAL)
        tasks, transitions = store.get_tasks(record.run_id), store.get_transitions(record.run_id)
    assert record.status == "completed"
    assert [task.validation.status for task in tasks] != [] and all(t.validation.status != "valid" for t in tasks)
    every = [attempt for task in tasks for attempt in task.attempts]
    assert {attempt.finish_reason for attempt in every} == {"length"}
    assert all(attempt.status != "valid" for attempt in every)
    assert all(any(issue.code == "truncated" for issue in attempt.errors) for attempt in every), every
    assert [t.transition_mode for t in transitions] == ["fallback", "fallback"]


def test_grammar_mode_sends_the_contract_grammar_and_the_answer_has_its_shape(model_server: ModelServer) -> None:
    """``grammar`` (explicit only): llama.cpp's grammar field makes even this model answer the five keys in order."""
    import types

    from marsrag.integrations.calls import JOURNAL
    from marsrag.integrations.crewai import LoopOutputDraft, crewai_llm
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.resilient import CallPolicy

    llm = make_resilient(
        crewai_llm(model_server.llm, base_url=model_server.base_url),
        CallPolicy(timeout=900, retries=0, backoff=0),
        structured_output="grammar",
    )
    task = types.SimpleNamespace(id="grammar-probe", name="probe", agent=None, description="probe")
    prompt = "Cache restarts slowed checkout. Answer as JSON with keys hook, grip, payoff, reinforce, loop."
    answer = llm.call([{"role": "user", "content": prompt}], response_model=LoopOutputDraft, from_task=task)
    assert list(json.loads(answer)) == ["hook", "grip", "payoff", "reinforce", "loop"]
    assert all(value.strip() for value in json.loads(answer).values())
    [record] = JOURNAL.drain(task)
    assert (record.structured_output, record.structured_output_refused) == ("grammar", ())
    assert record.finish_reason == "stop" and record.completion_tokens


def test_qwen_answers_each_task_through_the_users_path(qwen_server: ModelServer, home: Path) -> None:
    """Qwen2.5-Coder-0.5B via the CLI (auto, --base-url, no key): every task gets a verdict and a parsed answer.

    ``auto`` steps down to ``json_object`` with the contract's schema, so the server decodes under it: an answer it
    did not cut parses into the five fields (no ``missing``, ``not_string`` or ``unparseable``), and a valid task's
    loop is the next task's hook. Whether a task is valid is the model's doing and is not asserted. The sample's
    two-task workflow (change_review) keeps it to two answers: Qwen takes tens of seconds for one.
    """
    _, document = run(qwen_server, home, "--workflow", "change_review")
    assert document["status"] == "completed" and document["workflow"] == "change_review"
    tasks = document["tasks"]
    assert [task["validation"]["status"] in STATUSES for task in tasks] == [True] * 2
    every = attempts(document)
    host = qwen_server.base_url.split("//", 1)[1].split("/", 1)[0]
    assert {(a["model"], a["endpoint"], a["structured_output"]) for a in every} == {
        ("qwen2.5-coder", host, "json_object")
    }
    assert every[0]["structured_output_refused"] == ["json_schema"]
    assert all(a["prompt_tokens"] and a["completion_tokens"] and a["finish_reason"] for a in every), every
    uncut = [a for a in every if a["finish_reason"] != "length"]
    assert uncut and all(not {e["code"] for e in a["errors"]} & SHAPE for a in uncut), every
    for task in tasks:
        if task["validation"]["status"] == "valid":
            assert all(
                str(task["loop_output"][name]).strip() for name in ("hook", "grip", "payoff", "reinforce", "loop")
            )
    by_id = {task["task_id"]: task for task in tasks}
    assert len(document["transitions"]) == 1
    for transition in document["transitions"]:
        source = by_id[transition["transition_source_task_id"]]
        if source["validation"]["status"] == "valid":
            assert transition["transition_mode"] in ("direct", "repair")
            assert transition["hook"] == source["loop_output"]["loop"]


def test_a_streamed_run_shows_each_task_being_written_and_stores_what_was_streamed(
    model_server: ModelServer, home: Path, tmp_path: Path
) -> None:
    """SmolLM2 streaming through ``marsrag serve``: the run's event stream has more task events than tasks, the
    first task is seen being written before it is stored, and each task's stored answer begins as its stream did.

    The last frame a viewer gets may be a little short of the whole text: the task's stored state supersedes the
    progress written after the last poll. The sections seen are compared up to their last few characters (a value
    cut inside an escape or a trailing space reads a little differently from the whole one).
    """
    from marsrag.contract import validate_output

    port = free_port()
    env = {**os.environ, "MARSRAG_HOME": str(home), "NO_COLOR": "1", "MARSRAG_LLM_TIMEOUT": "900",
           "MARSRAG_LLM_MAX_TOKENS": "1500", "MARSRAG_LLM_STREAM": "auto"}  # fmt: skip
    env.pop("OPENAI_API_KEY", None)
    command = [sys.executable, "-m", "marsrag", "serve", "--port", str(port), "--llm", model_server.llm,
               "--base-url", model_server.base_url, "--structured-output", "json_object"]  # fmt: skip
    log = tmp_path / "serve.log"
    with (
        log.open("wb") as out,
        subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO) as proc,
    ):
        try:
            base = f"http://127.0.0.1:{port}"
            wait_serving(base, proc, log)
            started = httpx.post(f"{base}/api/runs", json={"goal": GOAL}, timeout=30)
            assert started.status_code == 202, started.text
            run_id = started.json()["run_id"]
            events = stream_events(base, run_id)
            document = httpx.get(f"{base}/api/runs/{run_id}", timeout=30).json()
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    assert document["status"] == "completed", log.read_text(errors="replace")[-3000:]
    tasks = [data for kind, data in events if kind == "task"]
    final = [task for task in tasks if task["validation"]["status"] != "in_progress"]
    assert final == document["tasks"] and len(tasks) > len(final)
    first = next(index for index, task in enumerate(tasks) if task["task_id"] == final[0]["task_id"])
    assert tasks[first]["validation"]["status"] == "in_progress"  # seen being written before it was stored
    for stored in document["tasks"]:
        frames = [t for t in tasks if t["position"] == stored["position"] and "progress" in t]
        last = [t for t in frames if t["progress"]["call"] == len(stored["attempts"])]
        if last:  # what the viewer saw of the last request's text is how the stored answer begins
            read = validate_output(stored["attempts"][-1]["raw"]).loop_output
            seen = {k: v for k, v in last[-1]["loop_output"].items() if v}
            assert all(str(read[k]).startswith(v[: len(v) - 8]) for k, v in seen.items()), (seen, read)


def wait_serving(base: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Wait (bounded) for ``marsrag serve`` to answer its health check."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"marsrag serve did not start:\n{log.read_text(errors='replace')[-3000:]}")


def stream_events(base: str, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Every event of the run's stream until its end."""
    with httpx.stream("GET", f"{base}/api/runs/{run_id}/stream", timeout=httpx.Timeout(30, read=900)) as response:
        assert response.status_code == 200
        return [(event.kind, event.data) for event in events(response.iter_lines())]


def test_a_real_embeddings_endpoint_embeds_the_knowledge_base_and_search_fuses_its_vectors(
    embedding_server: ModelServer, home: Path
) -> None:
    """llama.cpp's server answers one vector per token for SmolLM2 (no pooling layer): they are mean-pooled
    into one vector per chunk, stored, and searched; the CLI says what embedded them."""
    from marsrag.rag.embedders.endpoint import EndpointEmbedder
    from marsrag.rag.knowledge import KnowledgeBase

    db = f"sqlite:///{home}/kb.db"
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "ingest", str(REPO / "examples" / "knowledge_base" / "runbooks"),
         "--db", db, "--embedder", f"llamacpp/{embedding_server.model}", "--embedder-url", embedding_server.base_url],
        capture_output=True, text=True, check=False, env={**os.environ, "MARSRAG_HOME": str(home)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith(f"embedded with llamacpp/{embedding_server.model}")
    embedder = EndpointEmbedder(embedding_server.model, embedding_server.base_url, provider="llamacpp")
    with KnowledgeBase.open(db, embedder=embedder) as kb:
        found = kb.find("rotate the TLS certificates", 5)
        assert found.retrievers == ["keyword", "vector"] and found.skipped is None
        assert embedder.dimension == 576  # SmolLM2-135M's hidden size
        assert any("vector" in hit["retrievers"] for hit in found.results)
        assert kb.embed_missing() == 0  # every chunk has its vector already
