"""What a run assigned to an arm executes with: the workflow at the arm's loop mode, the arm's agent and LLM.

The config stays as written; a run under an arm gets a copy of the project with its workflow changed, so the
crew builders (``build_crew``, a ``@CrewBase`` binding) and operator actions need no experiment of their own.
"""

from __future__ import annotations

from typing import cast

from marsrag.contract import Mode
from marsrag.state import RunRecord
from marsrag.tasks.config import ArmConfig, ProjectConfig


def run_arm(project: ProjectConfig, run: RunRecord) -> ArmConfig | None:
    """The arm ``run`` was assigned, while its workflow's experiment still declares it; else None."""
    if run.arm is None or run.workflow not in project.workflows:
        return None
    experiment = project.workflows[run.workflow].experiment
    if experiment is None or experiment.name != run.experiment:
        return None
    return experiment.arms.get(run.arm)


def project_for_run(project: ProjectConfig, run: RunRecord) -> ProjectConfig:
    """The project as ``run`` executes it: ``project`` itself outside an experiment.

    Under an arm the run's workflow has the run's loop mode (the arm's, recorded when the run was started, so
    a run resumed after the experiment ended finishes as it began) and, when the arm names an agent, every task
    of the workflow is that agent's.
    """
    if run.arm is None or run.workflow not in project.workflows:
        return project
    workflow = project.workflows[run.workflow]
    arm = run_arm(project, run)
    changed = workflow.model_copy(update={"loop_mode": cast(Mode, run.loop_mode)})
    tasks = project.tasks
    if arm is not None and arm.agent is not None:
        agent = arm.agent
        tasks = {**tasks, **{name: tasks[name].model_copy(update={"agent": agent}) for name in workflow.tasks}}
    return project.model_copy(update={"workflows": {**project.workflows, workflow.name: changed}, "tasks": tasks})


__all__ = ["project_for_run", "run_arm"]
