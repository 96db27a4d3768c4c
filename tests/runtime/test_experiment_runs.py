"""Runs under an experiment: the session's arm recorded on every run, the arm's loop mode, agent and LLM applied."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from marsrag.experiments.assignment import assign_arm
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from marsrag.tasks.config import ArmConfig, ExperimentConfig
from tests.contract.samples import CONTENT
from tests.runtime.conftest import project_with

pytestmark = pytest.mark.crewai

HARD_VS_SOFT = ExperimentConfig(
    name="hard_vs_soft",
    arms={"hard": ArmConfig(loop_mode="hard", weight=50), "soft": ArmConfig(loop_mode="soft", weight=50)},
)


def answer(**changes: Any) -> str:
    return json.dumps({k: v for k, v in {**CONTENT, **changes}.items() if v is not None})


def with_experiment(sample: ProjectConfig, experiment: ExperimentConfig | None, tasks: list[str]) -> ProjectConfig:
    """The sample with workflow ``flow`` (user-facing, loop_mode hard) running ``tasks`` under ``experiment``."""
    project = project_with(sample, tasks)
    flow = project.workflows["flow"].model_copy(update={"experiment": experiment})
    return project.model_copy(update={"workflows": {**project.workflows, "flow": flow}})


def session_in(experiment: ExperimentConfig, arm: str) -> str:
    """The first session id of s0, s1, ... that the hash assigns to ``arm``."""
    return next(f"s{i}" for i in range(1000) if assign_arm(experiment, f"s{i}") == arm)


def runner_for(store: RunStore, project: ProjectConfig, outputs: list[str]) -> Any:
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    llm = ReplayLLM.from_outputs(outputs)
    return WorkflowRunner(store, project, llm), llm


def assigned(store: RunStore, run_id: str) -> list[dict[str, Any] | None]:
    return [event.detail for event in store.get_events(run_id) if event.name == "loop.experiment.assigned"]


def test_each_arm_runs_under_its_own_loop_mode(store: RunStore, sample: ProjectConfig) -> None:
    """The same partial answer: the hard arm repairs it (one more call), the soft arm hands it on as it is."""
    project = with_experiment(sample, HARD_VS_SOFT, ["diagnose", "recommend"])
    partial = answer(grip=None, loop="Which cache tier first?")
    hard_runner, hard_llm = runner_for(store, project, [partial, answer(), answer()])
    hard = hard_runner.run("latency", workflow="flow", session_id=session_in(HARD_VS_SOFT, "hard"))
    soft_runner, soft_llm = runner_for(store, project, [partial, answer()])
    soft = soft_runner.run("latency", workflow="flow", session_id=session_in(HARD_VS_SOFT, "soft"))
    assert (hard.experiment, hard.arm, hard.loop_mode) == ("hard_vs_soft", "hard", "hard")
    assert (soft.experiment, soft.arm, soft.loop_mode) == ("hard_vs_soft", "soft", "soft")
    assert (hard.status, soft.status) == ("completed", "completed")
    assert (len(hard_llm.calls), len(soft_llm.calls)) == (3, 2)
    hard_first, soft_first = store.get_tasks(hard.run_id)[0], store.get_tasks(soft.run_id)[0]
    assert [a.status for a in hard_first.attempts] == ["partial", "valid"] and hard_first.loop_mode == "hard"
    assert [a.status for a in soft_first.attempts] == ["partial"] and soft_first.loop_mode == "soft"
    assert store.get_transitions(soft.run_id)[0].transition_mode == "direct"


def test_the_session_keeps_its_arm_on_a_follow_and_is_assigned_once(store: RunStore, sample: ProjectConfig) -> None:
    """A follow of the session's run has the same experiment and arm; only the first run stores the assignment."""
    project = with_experiment(sample, HARD_VS_SOFT, ["diagnose"])
    session = session_in(HARD_VS_SOFT, "soft")
    runner, _ = runner_for(store, project, [answer()] * 3)
    first = runner.run("latency", workflow="flow", session_id=session)
    second = runner.follow(first.run_id, workflow="flow")
    third = runner.follow(second.run_id, workflow="flow")
    runs = store.list_runs(session_id=session)
    assert [(r.experiment, r.arm, r.loop_mode) for r in runs] == [("hard_vs_soft", "soft", "soft")] * 3
    assert assigned(store, first.run_id) == [{"experiment": "hard_vs_soft", "arm": "soft", "session_id": session}]
    assert assigned(store, second.run_id) == assigned(store, third.run_id) == []
    (event,) = [e for e in store.get_events(first.run_id) if e.name == "loop.experiment.assigned"]
    assert event.loop_mode == "soft" and event.run_id == first.run_id


def test_a_new_session_without_an_id_is_assigned_too(store: RunStore, sample: ProjectConfig) -> None:
    """A run started with no session id gets a fresh one, and the arm that id hashes to."""
    runner, _ = runner_for(store, with_experiment(sample, HARD_VS_SOFT, ["diagnose"]), [answer()])
    run = runner.run("latency", workflow="flow")
    assert run.arm == assign_arm(HARD_VS_SOFT, run.session_id) and len(assigned(store, run.run_id)) == 1


def test_runs_outside_an_experiment_are_unchanged(store: RunStore, sample: ProjectConfig) -> None:
    """No experiment on the workflow: experiment and arm None, the workflow's mode, no assignment event."""
    runner, _ = runner_for(store, with_experiment(sample, None, ["diagnose"]), [answer()] * 2)
    first = runner.run("latency", workflow="flow", session_id="s1")
    second = runner.follow(first.run_id, workflow="flow")
    for run in (first, second):
        assert (run.experiment, run.arm, run.loop_mode) == (None, None, "hard")
        assert assigned(store, run.run_id) == []


def test_a_session_from_before_the_experiment_stays_outside(store: RunStore, sample: ProjectConfig) -> None:
    """A session with a run of the workflow from before the block was added follows on outside it."""
    before, _ = runner_for(store, with_experiment(sample, None, ["diagnose"]), [answer()])
    first = before.run("latency", workflow="flow", session_id=session_in(HARD_VS_SOFT, "soft"))
    after, _ = runner_for(store, with_experiment(sample, HARD_VS_SOFT, ["diagnose"]), [answer()])
    later = after.follow(first.run_id, workflow="flow")
    assert (later.experiment, later.arm, later.loop_mode) == (None, None, "hard")
    assert assigned(store, later.run_id) == []


def test_a_session_begun_before_the_start_stays_outside(store: RunStore, sample: ProjectConfig) -> None:
    """start in the future: a new session runs under the workflow's own loop_mode, unassigned."""
    future = HARD_VS_SOFT.model_copy(update={"start": datetime.now(UTC) + timedelta(days=1)})
    runner, _ = runner_for(store, with_experiment(sample, future, ["diagnose"]), [answer()])
    run = runner.run("latency", workflow="flow", session_id=session_in(future, "soft"))
    assert (run.experiment, run.arm, run.loop_mode) == (None, None, "hard")


def test_an_arm_agent_runs_every_task_and_an_arm_llm_answers(
    store: RunStore, sample: ProjectConfig, tmp_path: Path
) -> None:
    """The arm's agent replaces each task's own; its llm spec is resolved and answers instead of the runner's."""
    script = tmp_path / "arm.jsonl"
    lines = [answer(loop="Arm question one?"), answer(loop="Arm question two?")]
    script.write_text("".join(json.dumps({"output": line}) + "\n" for line in lines))
    variant = ExperimentConfig(
        name="planner_arm",
        arms={
            "control": ArmConfig(loop_mode="hard"),
            "planner": ArmConfig(loop_mode="hard", agent="planner", llm=f"replay:{script}"),
        },
    )
    runner, own_llm = runner_for(store, with_experiment(sample, variant, ["diagnose", "recommend"]), [])
    run = runner.run("latency", workflow="flow", session_id=session_in(variant, "planner"))
    assert run.status == "completed", run.status_reason
    tasks = store.get_tasks(run.run_id)
    assert [t.agent for t in tasks] == ["planner", "planner"]
    assert [t.loop_output.loop for t in tasks] == ["Arm question one?", "Arm question two?"]
    assert own_llm.calls == []
    assert sample.tasks["diagnose"].agent == "analyst"  # the config itself is untouched


def test_the_control_arm_keeps_the_tasks_agents(store: RunStore, sample: ProjectConfig) -> None:
    """An arm without agent or llm runs the workflow's own agents on the runner's LLM."""
    variant = ExperimentConfig(
        name="planner_arm",
        arms={"control": ArmConfig(loop_mode="hard"), "planner": ArmConfig(loop_mode="hard", agent="planner")},
    )
    runner, own_llm = runner_for(store, with_experiment(sample, variant, ["diagnose", "recommend"]), [answer()] * 2)
    run = runner.run("latency", workflow="flow", session_id=session_in(variant, "control"))
    assert [t.agent for t in store.get_tasks(run.run_id)] == ["analyst", "advisor"]
    assert len(own_llm.calls) == 2


def test_runs_show_and_runs_list_json_carry_the_experiment_and_arm(tmp_path: Path) -> None:
    """marsrag run on a config with an experiment: the document and the list row name the experiment and arm."""
    import shutil

    from marsrag.tasks import load_config, sample_config_dir
    from tests.runtime.test_cli_runs import marsrag

    config = tmp_path / "config"
    shutil.copytree(sample_config_dir(), config)
    workflows = config / "workflows.yaml"
    block = (
        "  experiment:\n    name: hard_vs_soft\n    arms:\n"
        "      hard: {loop_mode: hard, weight: 50}\n      soft: {loop_mode: soft, weight: 50}\n"
    )
    workflows.write_text(
        workflows.read_text().replace(
            "tasks: [diagnose, recommend, plan]\n", f"tasks: [diagnose, recommend, plan]\n{block}", 1
        )
    )
    experiment = load_config(config).workflow("support_answer").experiment
    assert experiment is not None
    session = session_in(experiment, "soft")
    script = tmp_path / "answers.jsonl"
    script.write_text("".join(json.dumps({"output": answer()}) + "\n" for _ in range(3)))
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    common = ["--config", str(config), "--db", db, "--llm", f"replay:{script}"]
    proc = marsrag("run", "latency", "--session", session, *common, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert (document["experiment"], document["arm"], document["loop_mode"]) == ("hard_vs_soft", "soft", "soft")
    assert [e["detail"] for e in document["events"] if e["name"] == "loop.experiment.assigned"] == [
        {"experiment": "hard_vs_soft", "arm": "soft", "session_id": session}
    ]
    shown = json.loads(marsrag("runs", "show", document["run_id"], "--db", db, "--format", "json").stdout)
    assert (shown["experiment"], shown["arm"]) == ("hard_vs_soft", "soft")
    (row,) = json.loads(marsrag("runs", "list", "--db", db, "--format", "json").stdout)
    assert (row["experiment"], row["arm"]) == ("hard_vs_soft", "soft")


def test_an_operator_repair_reruns_the_task_as_its_arm_ran_it(
    store: RunStore, sample: ProjectConfig, tmp_path: Path
) -> None:
    """runs repair on a run under an arm: the arm's LLM answers it (the runner's own LLM is never called)."""
    from marsrag.runtime.actions import repair_task

    script = tmp_path / "arm.jsonl"
    lines = ["No idea.", "Still no idea.", answer(loop="Repaired by the arm?")]
    script.write_text("".join(json.dumps({"output": line}) + "\n" for line in lines))
    variant = ExperimentConfig(
        name="arm_llm",
        arms={"control": ArmConfig(loop_mode="hard"), "other": ArmConfig(loop_mode="hard", llm=f"replay:{script}")},
    )
    runner, own_llm = runner_for(store, with_experiment(sample, variant, ["diagnose"]), [])
    run = runner.run("latency", workflow="flow", session_id=session_in(variant, "other"))
    assert store.get_tasks(run.run_id)[0].validation.status == "failed"
    fixed = repair_task(runner, run.run_id, "diagnose")
    assert fixed.validation.status == "valid" and fixed.loop_output.loop == "Repaired by the arm?"
    assert own_llm.calls == []


def test_the_async_path_runs_under_the_arm_too(store: RunStore, sample: ProjectConfig) -> None:
    """arun: the soft arm's partial answer is handed on without a repair, as on the sync path."""
    import asyncio

    project = with_experiment(sample, HARD_VS_SOFT, ["diagnose", "recommend"])
    runner, llm = runner_for(store, project, [answer(grip=None, loop="Which tier first?"), answer()])
    run = asyncio.run(runner.arun("latency", workflow="flow", session_id=session_in(HARD_VS_SOFT, "soft")))
    assert (run.status, run.arm, run.loop_mode, len(llm.calls)) == ("completed", "soft", "soft", 2)
    assert [t.validation.status for t in store.get_tasks(run.run_id)] == ["partial", "valid"]
