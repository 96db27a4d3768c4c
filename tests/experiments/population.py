"""Scripted experiment histories on a real store: sessions of one completed run each, under an arm, some followed."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from marsrag.state import AttemptRecord, LoopEvent, LoopFields, RunRecord, TaskState, Validation
from marsrag.store import RunStore
from marsrag.tasks import sample_config_dir
from tests.contract.samples import CONTENT

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)

#: The experiment block the tests add to the sample config's support_answer (comments inside it on purpose).
EXPERIMENT_BLOCK = """\
  # hard against soft, half the sessions each
  experiment:
    name: hard_vs_soft
    # soft hands a partial task's valid loop on
    arms:
      hard: {loop_mode: hard, weight: 50}

      soft: {loop_mode: soft, weight: 50}
"""


def add_experiment(workflows_yaml: str) -> str:
    """The sample ``workflows.yaml`` with :data:`EXPERIMENT_BLOCK` at the end of support_answer."""
    anchor = "  tasks: [diagnose, recommend, plan]\n"
    assert anchor in workflows_yaml
    return workflows_yaml.replace(anchor, anchor + EXPERIMENT_BLOCK, 1)


def sample_with_experiment(target: Path) -> Path:
    """A copy of the sample config at ``target`` whose support_answer declares :data:`EXPERIMENT_BLOCK`."""
    shutil.copytree(sample_config_dir(), target)
    path = target / "workflows.yaml"
    path.write_text(add_experiment(path.read_text(encoding="utf-8")), encoding="utf-8")
    return target


def write_session(
    store: RunStore,
    session_id: str,
    *,
    experiment: str,
    arm: str,
    followed: bool,
    workflow: str = "support_answer",
    mode: str = "hard",
    at: datetime = T0,
) -> None:
    """One session of one completed run (one valid task, so it offers a next action), followed or not."""
    run_id = f"run-{session_id}"
    store.create_run(
        RunRecord(
            run_id=run_id,
            session_id=session_id,
            goal="g",
            workflow=workflow,
            loop_mode=mode,
            status="completed",
            created_at=at,
            updated_at=at,
            experiment=experiment,
            arm=arm,
        )
    )
    store.save_task(
        TaskState(
            run_id=run_id,
            task_id="t1",
            position=0,
            loop_mode=mode,
            validation=Validation(status="valid"),
            loop_output=LoopFields(**CONTENT),
            attempts=[AttemptRecord(number=1, raw="r", status="valid")],
            created_at=at,
        )
    )
    if followed:
        store.add_events([LoopEvent(name="loop.action.followed", run_id=run_id, task_id="t1")])


def write_arm(
    store: RunStore,
    arm: str,
    sessions: int,
    followed: int,
    *,
    experiment: str = "hard_vs_soft",
    workflow: str = "support_answer",
    mode: str = "hard",
    start: int = 0,
) -> None:
    """``sessions`` sessions of ``arm``, each one completed run with one valid task; the first ``followed`` followed."""
    for n in range(sessions):
        write_session(
            store,
            f"s-{arm}-{start + n}",
            experiment=experiment,
            arm=arm,
            followed=n < followed,
            workflow=workflow,
            mode=mode,
            at=T0 + timedelta(seconds=start + n),
        )
