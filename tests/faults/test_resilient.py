"""The LLM call policy: its settings, what counts as a transport error, and that CrewAI still works through it."""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from marsrag.errors import InputError
from marsrag.llm.boundary import make_resilient
from marsrag.llm.resilient import (
    CallPolicy,
    LLMCallError,
    LLMTimeoutError,
    call_with_policy,
    clean_text,
    is_transport_error,
)
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests._net import serving
from tests.faults.fault_llm import VALID, FaultLLM, connect_error, status_error
from tests.integrations.test_structured_output import StrictChatServer

pytestmark = pytest.mark.crewai


# -- settings --------------------------------------------------------------------------------------------------


def test_defaults_and_environment() -> None:
    """120 s per attempt, two retries, 1 s base backoff; each overridable; 0 s means no time limit."""
    assert CallPolicy.from_env({}) == CallPolicy(timeout=120.0, retries=2, backoff=1.0)
    env = {"MARSRAG_LLM_TIMEOUT": "7.5", "MARSRAG_LLM_RETRIES": "0", "MARSRAG_LLM_BACKOFF": "0.25"}
    assert CallPolicy.from_env(env) == CallPolicy(timeout=7.5, retries=0, backoff=0.25)
    assert CallPolicy.from_env({"MARSRAG_LLM_TIMEOUT": "0"}).timeout is None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MARSRAG_LLM_TIMEOUT", "soon"),
        ("MARSRAG_LLM_TIMEOUT", "-1"),
        ("MARSRAG_LLM_TIMEOUT", "inf"),
        ("MARSRAG_LLM_RETRIES", "1.5"),
        ("MARSRAG_LLM_BACKOFF", "nan"),
    ],
)
def test_unusable_settings_name_the_variable(name: str, value: str) -> None:
    """A value that is not a usable number is an InputError naming the variable and the value."""
    with pytest.raises(InputError, match=f"{name} must be .* got {value!r}"):
        CallPolicy.from_env({name: value})


def test_backoff_doubles_is_jittered_and_capped() -> None:
    """Retry n waits base * 2**(n-1), capped at 30 s, scaled to 50-100% by the jitter."""
    policy = CallPolicy(backoff=1.0)
    assert [policy.delay(n, rand=lambda: 1.0) for n in (1, 2, 3, 6, 20)] == [1.0, 2.0, 4.0, 30.0, 30.0]
    assert [policy.delay(n, rand=lambda: 0.0) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]


# -- what is a transport error ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(connect_error(), id="httpx-connect"),
        pytest.param(httpx.ReadTimeout("read timed out"), id="httpx-read-timeout"),
        pytest.param(httpx.RemoteProtocolError("peer closed connection"), id="httpx-disconnect"),
        pytest.param(status_error(429), id="openai-429"),
        pytest.param(status_error(503), id="openai-503"),
        pytest.param(ConnectionResetError(104, "Connection reset by peer"), id="builtin-reset"),
        pytest.param(LLMTimeoutError("no answer within 1 s"), id="our-time-limit"),
    ],
)
def test_transport_errors(error: Exception) -> None:
    """Connections refused, reset or timed out, and HTTP 429/5xx are transport errors."""
    assert is_transport_error(error)


def test_a_transport_cause_makes_a_wrapped_error_transport() -> None:
    """CrewAI re-raises openai's APIConnectionError as ConnectionError(...) from it; any wrapper with such a
    cause counts."""
    try:
        try:
            raise status_error(502)
        except Exception as inner:
            raise RuntimeError("provider call failed") from inner
    except RuntimeError as outer:
        assert is_transport_error(outer)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(status_error(400), id="openai-400"),
        pytest.param(ValueError("Model x not found"), id="value-error"),
        pytest.param(LLMCallError("gave up", attempts=3, cause=connect_error()), id="already-retried"),
        pytest.param(KeyError("bug"), id="bug"),
    ],
)
def test_other_errors_are_not_transport(error: Exception) -> None:
    """Request errors, bugs and an already-exhausted call are not retried."""
    assert not is_transport_error(error)


def test_call_with_policy_retries_then_names_attempts_and_cause() -> None:
    """Each transport failure is retried after its backoff; the last one is raised as LLMCallError."""
    waits: list[float] = []
    policy = CallPolicy(timeout=None, retries=2, backoff=1.0)

    def refuse() -> str:
        raise connect_error()

    with pytest.raises(LLMCallError) as raised:
        call_with_policy(refuse, policy, model="m", sleep=waits.append)
    assert raised.value.attempts == 3 and isinstance(raised.value.cause, httpx.ConnectError)
    assert (
        str(raised.value)
        == "the LLM call to 'm' failed after 3 attempt(s): ConnectError: [Errno 111] Connection refused"
    )
    assert len(waits) == 2 and 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0


def test_the_time_limit_abandons_a_call_that_never_returns() -> None:
    """A call blocked past the limit raises LLMTimeoutError (retried like any transport error)."""
    gate = threading.Event()
    try:
        with pytest.raises(LLMCallError, match="at most 0.1 s each: LLMTimeoutError: no answer within 0.1 s"):
            call_with_policy(lambda: gate.wait(60), CallPolicy(timeout=0.1, retries=1, backoff=0), sleep=lambda _: None)
    finally:
        gate.set()


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Cache \udcff tier", "Cache \ufffd tier"),
        ("\ud83d alone", "\ufffd alone"),
        ("emoji 😀 and é", "emoji 😀 and é"),
        (b"caf\xc3\xa9 \xff", "café \ufffd"),
        (None, None),
    ],
)
def test_clean_text(raw: Any, clean: Any) -> None:
    """Lone surrogates and undecodable bytes become U+FFFD; valid text and non-text pass unchanged."""
    assert clean_text(raw) == clean


# -- CrewAI through the policy ----------------------------------------------------------------------------------


def test_the_llm_keeps_its_identity_class_and_state() -> None:
    """make_resilient changes the object's calls only: same object, isinstance, fields, copies."""
    from marsrag.integrations.crewai import BaseLLM

    llm = FaultLLM.scripted([connect_error(), "answer"])
    same = make_resilient(llm, CallPolicy(timeout=5, retries=1, backoff=0))
    assert same is llm and isinstance(llm, FaultLLM) and isinstance(llm, BaseLLM)
    assert type(llm).__name__ == "FaultLLM" and llm.model == "fault"
    llm.stop = ["\nObservation:"]
    assert llm.stop == ["\nObservation:"] and type(copy.copy(llm)) is type(llm)
    assert llm.call("q") == "answer" and llm.calls == 2
    assert make_resilient(llm, CallPolicy(timeout=1, retries=0)).call("q") == VALID  # re-applied, not stacked


def test_crewai_s_per_call_stop_words_reach_the_llm_through_the_time_limit() -> None:
    """CrewAI keys a call's stop words by the LLM's id in a context variable: the call, run on a worker thread
    for its time limit, still sees them (a wrapper object would not)."""
    from crewai.llms.base_llm import call_stop_override

    llm = FaultLLM.scripted([lambda _n: "|".join(llm.stop_sequences)])
    make_resilient(llm, CallPolicy(timeout=5, retries=0))
    with call_stop_override(llm, ["\nObservation:"]):
        assert llm.call("q") == "\nObservation:"


def test_resolve_llm_applies_the_policy_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every LLM resolve_llm returns runs its calls under the environment's policy."""
    from marsrag.llm.boundary import BoundaryCalls
    from marsrag.llm.composer import OfflineComposer
    from marsrag.llm.select import resolve_llm

    monkeypatch.setenv("MARSRAG_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.delenv("MARSRAG_LLM", raising=False)
    monkeypatch.setenv("MARSRAG_LLM_TIMEOUT", "9")
    monkeypatch.setenv("MARSRAG_LLM_RETRIES", "4")
    llm = resolve_llm(None)
    assert isinstance(llm, OfflineComposer) and isinstance(llm, BoundaryCalls)
    assert llm.call_policy == CallPolicy(timeout=9.0, retries=4, backoff=1.0)


def test_a_crewai_provider_llm_retries_nothing_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI-compatible LLMs are rebuilt with the SDK's max_retries=0 and our time limit (ours is the only
    retry)."""
    from marsrag.llm.select import resolve_llm

    monkeypatch.setenv("MARSRAG_LLM_TIMEOUT", "11")
    llm = resolve_llm("openai/test-model", base_url="http://127.0.0.1:9/v1")
    assert (llm.max_retries, llm.timeout) == (0, 11.0)
    client = llm._get_sync_client()
    assert client.max_retries == 0 and client.timeout == 11.0
    assert llm.model == "test-model" and "127.0.0.1:9" in str(llm.base_url)


class FlakyChatServer(StrictChatServer):
    """The strict chat-completions server, answering the given HTTP error statuses first."""

    def __init__(self) -> None:
        super().__init__()
        self.failures: list[int] = []

    def _decide(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], str | None]:
        if self.failures:
            status = self.failures.pop(0)
            return status, {"error": {"message": f"scripted {status}", "type": "server_error"}}, f"status {status}"
        return super()._decide(path, body)


@pytest.fixture
def flaky() -> Iterator[FlakyChatServer]:
    """The flaky server on a loopback port, shut down after the test."""
    with serving(FlakyChatServer(), "flaky-chat-server") as httpd:
        yield httpd


def _run(store: RunStore, project: ProjectConfig, base_url: str, monkeypatch: pytest.MonkeyPatch, **env: str) -> Any:
    from marsrag.llm.select import resolve_llm
    from marsrag.runtime.runner import WorkflowRunner

    for name, value in {"MARSRAG_LLM_TIMEOUT": "30", "MARSRAG_LLM_BACKOFF": "0.01", **env}.items():
        monkeypatch.setenv(name, value)
    llm = resolve_llm("openai/test-model", base_url=base_url)
    return WorkflowRunner(store, project, llm).run("API latency SLO breaches", workflow="flow")


def test_a_real_provider_llm_recovers_from_503_and_429(
    flaky: FlakyChatServer, sqlite_store: RunStore, project: ProjectConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 503 and a 429 from a real OpenAI-compatible server are retried by the policy alone (exactly one request
    each), the structured-output request still carries the draft schema and the run completes valid."""
    flaky.failures = [503, 429]
    flaky.script = [VALID, VALID]
    run = _run(sqlite_store, project, flaky.base_url, monkeypatch, MARSRAG_LLM_RETRIES="2")
    assert run.status == "completed", run.status_reason
    assert [e.status for e in flaky.exchanges] == [503, 429, 200, 200]
    assert flaky.exchanges[2].response_format["json_schema"]["name"] == "LoopOutput"
    assert [t.validation.status for t in sqlite_store.get_tasks(run.run_id)] == ["valid", "valid"]


def test_a_real_provider_that_stays_down_fails_the_run_with_the_cause(
    flaky: FlakyChatServer, sqlite_store: RunStore, project: ProjectConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """503 on every request: each agent execution makes retries + 1 requests, then the run is failed."""
    flaky.failures = [503] * 50
    run = _run(sqlite_store, project, flaky.base_url, monkeypatch, MARSRAG_LLM_RETRIES="1")
    assert run.status == "failed"
    assert "LLMCallError: the LLM call to 'test-model' failed after 2 attempt(s)" in (run.status_reason or "")
    assert "InternalServerError" in (run.status_reason or "")
    assert len(flaky.exchanges) == 2  # one execution of the task (max_retry_limit 0), its call makes 2 attempts


class AsyncFaultLLM(FaultLLM):
    """A fault LLM with an async call: a script step ``"<sleep>"`` awaits far past any time limit."""

    async def acall(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        if self.script and self.script[0] == "<sleep>":
            self.script.pop(0)
            await asyncio.sleep(60)
        return super().call(messages)  # FaultLLM's own call, not the policy's


def test_async_calls_get_the_same_policy() -> None:
    """acall: a transport error and an await past the time limit are retried; the answer is cleaned."""
    llm = AsyncFaultLLM.scripted([connect_error(), "<sleep>", b"ok \xff"])
    make_resilient(llm, CallPolicy(timeout=0.2, retries=2, backoff=0))
    assert asyncio.run(llm.acall("q")) == "ok \ufffd"
    failing = make_resilient(AsyncFaultLLM.scripted(["<sleep>"] * 3), CallPolicy(timeout=0.1, retries=1, backoff=0))
    with pytest.raises(LLMCallError, match="failed after 2 attempt.*LLMTimeoutError"):
        asyncio.run(failing.acall("q"))
