"""LLM faults on real runs: every run ends recorded and readable, whatever the LLM does."""

from __future__ import annotations

import json

import pytest

from marsrag.llm.resilient import CallPolicy
from marsrag.state import FALLBACK_HOOK
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT
from tests.faults.conftest import POLICY, runner
from tests.faults.fault_llm import HANG, HUGE, VALID, FaultLLM, always, status_error

pytestmark = pytest.mark.crewai

GOAL = "Checkout latency breached its SLO after the cache restart"
#: Agents are built with max_retry_limit=0: a task whose LLM call raised is not executed again by CrewAI.
AGENT_EXECUTIONS = 1


def test_transport_errors_below_the_retry_budget_are_absorbed(sqlite_store: RunStore, project: ProjectConfig) -> None:
    """A connection refused once per call budget is retried: the run completes with every task valid."""
    llm = FaultLLM.transport(times=POLICY.retries)
    run = runner(sqlite_store, project, llm).run(GOAL, workflow="flow")
    assert run.status == "completed", run.status_reason
    tasks = sqlite_store.get_tasks(run.run_id)
    assert [t.validation.status for t in tasks] == ["valid", "valid"]
    assert [len(t.attempts) for t in tasks] == [1, 1]  # a transport retry is not a contract repair
    assert llm.calls == 2 + POLICY.retries
    assert [t.transition_mode for t in sqlite_store.get_transitions(run.run_id)] == ["direct"]


def test_transport_errors_beyond_the_budget_fail_the_run_with_the_cause(
    sqlite_store: RunStore, project: ProjectConfig
) -> None:
    """Connection refused on every call: the run is failed, its reason names the attempts and the cause."""
    llm = FaultLLM.transport(times=None)
    run = runner(sqlite_store, project, llm).run(GOAL, workflow="flow")
    assert run.status == "failed"
    assert run.status_reason is not None
    assert run.status_reason.startswith("LLMCallError: the LLM call to 'fault' failed after 2 attempt(s)")
    assert "ConnectError: [Errno 111] Connection refused" in run.status_reason
    assert llm.calls == AGENT_EXECUTIONS * POLICY.attempts
    stored, tasks, transitions = sqlite_store.read_run(run.run_id)
    assert stored.status == "failed" and tasks == [] and transitions == []


def test_a_failure_in_a_later_task_keeps_the_committed_ones(any_store: RunStore, project: ProjectConfig) -> None:
    """The first task commits; the second task's LLM stays down: failed run, first task and its handoff kept."""
    llm = FaultLLM.scripted([json.dumps({**CONTENT, "loop": "Which tier first?"}), always()])
    run = runner(any_store, project, llm).run(GOAL, workflow="flow")
    assert run.status == "failed" and "LLMCallError" in (run.status_reason or "")
    stored, tasks, transitions = any_store.read_run(run.run_id)
    assert [(t.task_id, t.validation.status) for t in tasks] == [("diagnose", "valid")]
    assert [(t.transition_target_task_id, t.hook) for t in transitions] == [("recommend", "Which tier first?")]


@pytest.mark.parametrize("status", [429, 503])
def test_rate_limits_and_server_errors_are_retried_by_the_policy_only(
    sqlite_store: RunStore, project: ProjectConfig, status: int
) -> None:
    """429 and 5xx are transport errors; with no retries configured each agent execution calls once.

    CrewAI's own 429 retry (three attempts) would otherwise run inside every call.
    """
    llm = FaultLLM.transport(times=None, error=lambda: status_error(status))
    policy = CallPolicy(timeout=5, retries=0, backoff=0)
    run = runner(sqlite_store, project, llm, policy).run(GOAL, workflow="flow")
    assert run.status == "failed"
    assert "failed after 1 attempt(s)" in (run.status_reason or "")
    assert llm.calls == AGENT_EXECUTIONS


def test_other_errors_are_not_retried(sqlite_store: RunStore, project: ProjectConfig) -> None:
    """A 400 is the request's fault: raised at once (no LLMCallError), the run failed with it."""
    llm = FaultLLM.transport(times=None, error=lambda: status_error(400))
    run = runner(sqlite_store, project, llm).run(GOAL, workflow="flow")
    assert run.status == "failed"
    assert (run.status_reason or "").startswith("BadRequestError:")
    assert llm.calls == AGENT_EXECUTIONS


def test_a_hanging_call_is_abandoned_at_the_time_limit(
    sqlite_store: RunStore, project: ProjectConfig, released: list[FaultLLM]
) -> None:
    """A call that never answers times out, is retried, and fails the run with the time limit named."""
    llm = FaultLLM.scripted([HANG] * 20)
    released.append(llm)
    run = runner(sqlite_store, project, llm).run(GOAL, workflow="flow")
    assert run.status == "failed"
    assert "failed after 2 attempt(s), at most 0.5 s each: LLMTimeoutError: no answer within 0.5 s" in (
        run.status_reason or ""
    )
    assert sqlite_store.read_run(run.run_id)[1] == []


def test_one_hang_then_answers_completes(
    sqlite_store: RunStore, project: ProjectConfig, released: list[FaultLLM]
) -> None:
    """One hung call within the retry budget: the retry answers and the run completes valid."""
    llm = FaultLLM.scripted([HANG])
    released.append(llm)
    run = runner(sqlite_store, project, llm).run(GOAL, workflow="flow")
    assert run.status == "completed", run.status_reason
    assert [t.validation.status for t in sqlite_store.get_tasks(run.run_id)] == ["valid", "valid"]


def crewai_empty_answer_reason() -> str:
    """What CrewAI says of an empty answer: its EmptyLLMResponseError (1.15.4x, after one retry), else the older
    ValueError's words."""
    try:
        from crewai.llms.base_llm import EmptyLLMResponseError
    except ImportError:
        return "None or empty"
    return str(EmptyLLMResponseError("fault"))


def test_an_empty_answer_fails_the_run_with_crewai_s_reason(sqlite_store: RunStore, project: ProjectConfig) -> None:
    """CrewAI refuses an empty answer (before our guardrail sees it): the run is failed with that reason."""
    llm = FaultLLM.scripted([""] * 10)
    run = runner(sqlite_store, project, llm).run(GOAL, workflow="flow")
    assert run.status == "failed"
    assert crewai_empty_answer_reason() in (run.status_reason or "")
    assert sqlite_store.read_run(run.run_id)[1] == []


def test_a_five_megabyte_answer_is_a_failed_task_and_a_fallback(any_store: RunStore, project: ProjectConfig) -> None:
    """5 MB of prose, twice (answer and repair): the task fails, the next hook is the fallback; all stored."""
    llm = FaultLLM.scripted([HUGE, HUGE])
    run = runner(any_store, project, llm).run(GOAL, workflow="flow")
    assert run.status == "completed", run.status_reason
    stored, tasks, transitions = any_store.read_run(run.run_id)
    assert [t.validation.status for t in tasks] == ["failed", "valid"]
    assert [len(a.raw) for a in tasks[0].attempts] == [len(HUGE), len(HUGE)]
    assert [t.transition_mode for t in transitions] == ["fallback"]
    assert tasks[1].loop_output.hook == FALLBACK_HOOK


@pytest.mark.parametrize(
    "output",
    [
        pytest.param(json.dumps({**CONTENT, "grip": "Cache \udcff tier is cold."}, ensure_ascii=False), id="str"),
        # PostgreSQL stores no NUL in text: a raw one is replaced like an undecodable byte.
        pytest.param(
            "HOOK: "
            + CONTENT["hook"]
            + "\nGRIP: Cache \x00 tier is cold.\n"
            + "\n".join(f"{name.upper()}: {CONTENT[name]}" for name in ("payoff", "reinforce", "loop")),
            id="nul",
        ),
        pytest.param(
            json.dumps({**CONTENT, "grip": "Cache é tier."}, ensure_ascii=False).encode() + b"\xff", id="bytes"
        ),
    ],
)
def test_invalid_utf8_is_replaced_and_stored(any_store: RunStore, project: ProjectConfig, output: object) -> None:
    """A lone surrogate, a NUL or undecodable bytes become U+FFFD at the LLM boundary; the run stores and reads back."""
    llm = FaultLLM.scripted([output])
    run = runner(any_store, project, llm).run(GOAL, workflow="flow")
    assert run.status == "completed", run.status_reason
    stored, tasks, _ = any_store.read_run(run.run_id)
    raw = tasks[0].attempts[0].raw
    assert "\ufffd" in raw and raw.encode("utf-8")
    assert [t.validation.status for t in tasks] == ["valid", "valid"]


def test_a_json_escaped_nul_is_stored_as_a_replacement_character(any_store: RunStore, project: ProjectConfig) -> None:
    """``\\u0000`` in a JSON answer parses to a NUL, which no PostgreSQL text holds: the store keeps U+FFFD."""
    llm = FaultLLM.scripted([json.dumps({**CONTENT, "grip": "Cache \x00 tier is cold."})])
    run = runner(any_store, project, llm).run(GOAL, workflow="flow")
    assert run.status == "completed", run.status_reason
    grip = any_store.get_tasks(run.run_id)[0].loop_output.grip
    assert grip == "Cache \ufffd tier is cold."


def test_valid_answers_pass_through_untouched(sqlite_store: RunStore, project: ProjectConfig) -> None:
    """The policy changes nothing on a healthy run."""
    llm = FaultLLM.scripted([VALID, VALID])
    run = runner(sqlite_store, project, llm).run(GOAL, workflow="flow")
    assert run.status == "completed" and llm.calls == 2
