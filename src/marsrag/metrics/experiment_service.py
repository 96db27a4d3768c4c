"""Library functions behind ``marsrag experiment report``: the config's experiment and the store's counts per arm.

:func:`read_report` is what the CLI, ``tune`` and the dashboard share: one read of the store's counts per arm
(from the rollups), turned into an :class:`~marsrag.metrics.experiment.ExperimentReport`.
"""

from __future__ import annotations

from pathlib import Path

from marsrag.errors import InputError
from marsrag.metrics.experiment import ExperimentReport, build_report
from marsrag.metrics.window import Window, window
from marsrag.store import RunStore, open_store
from marsrag.tasks.config import ProjectConfig, WorkflowConfig
from marsrag.tasks.loader import default_config_dir, load_config

__all__ = ["experiment_report", "experiment_workflow", "read_report"]


def read_report(store: RunStore, workflow: WorkflowConfig, window: Window | None = None) -> ExperimentReport:
    """The report of ``workflow``'s experiment over the runs of the window (default all history).

    Every run of the experiment counts under its session's arm, whatever workflow it ran (a follow may route
    elsewhere); runs with no arm or an arm the config no longer has are left out.

    Raises:
        InputError: the workflow declares no experiment.
    """
    experiment = workflow.experiment
    if experiment is None:
        raise InputError(f"workflow {workflow.name!r} has no experiment (declare one under `experiment:`)")
    chosen = window or Window()
    grouped = store.loop_counts(since=chosen.since, until=chosen.until, by=("arm",), experiment=experiment.name)
    counts = {str(key[0]): value for key, value in grouped.items() if key[0] is not None}
    return build_report(workflow.name, experiment, counts)


def experiment_workflow(project: ProjectConfig, workflow: str) -> WorkflowConfig:
    """The config's workflow ``workflow``, which must declare an experiment.

    Raises:
        InputError: no such workflow in the config, or it has no experiment.
    """
    found = project.workflows.get(workflow)
    if found is None:
        known = ", ".join(sorted(project.workflows)) or "none"
        raise InputError(f"unknown workflow {workflow!r} in {project.source} (known: {known})", field="workflow")
    if found.experiment is None:
        with_one = ", ".join(sorted(name for name, w in project.workflows.items() if w.experiment)) or "none"
        raise InputError(
            f"workflow {workflow!r} has no experiment: declare one under `experiment:` in workflows.yaml "
            f"(workflows with one: {with_one})",
            field="workflow",
        )
    return found


def experiment_report(
    workflow: str,
    *,
    db: str | None = None,
    config: str | Path | None = None,
    since: str | None = None,
    until: str | None = None,
) -> ExperimentReport:
    """The report of the experiment ``workflow`` declares in the config folder, from the store at ``db``.

    Raises:
        InputError: an unreadable ``since``/``until``, a workflow the config lacks or one without an experiment.
        ConfigError: the config does not load.
        StoreError: the store cannot be opened or read.
    """
    chosen = window(since, until)
    project = load_config(Path(config) if config is not None else default_config_dir())
    found = experiment_workflow(project, workflow)
    with open_store(db) as store:
        return read_report(store, found, chosen)
