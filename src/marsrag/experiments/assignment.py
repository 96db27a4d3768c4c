"""Which arm of an experiment a session runs under: a hash of its id, decided at its first run, kept after.

The hash is SHA-256, not Python's ``hash()`` (salted per process): every server and every restart assigns a
session the same arm. Weights are relative and split the hash's range in the arms' config order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from marsrag.experiments.weights import scaled_weights
from marsrag.state import LoopEvent, RunRecord
from marsrag.tasks.config import ArmConfig, ExperimentConfig, WorkflowConfig

#: The hash's first 8 bytes, read as an integer, are divided by this: a point in [0, 1).
_SPAN = 2**64


def assign_arm(experiment: ExperimentConfig, session_id: str) -> str:
    """The arm of ``experiment`` a session is assigned: deterministic, the same in every process.

    SHA-256 of ``"{name}:{session_id}"``, its first 8 bytes (big-endian) over 2**64, falls into the cumulative
    weight split of the arms, in their config order. Weights outside the config's limits (a model built without
    validation) still split: one that is not a finite number above 0 gets no sessions, and when none is one
    the arms share equally.
    """
    digest = hashlib.sha256(f"{experiment.name}:{session_id}".encode()).digest()
    point = int.from_bytes(digest[:8], "big") / _SPAN
    names = list(experiment.arms)
    # Scaled by a power of two (exact): the same split as the weights, with a total that cannot overflow.
    weights = scaled_weights([arm.weight for arm in experiment.arms.values()]) or [1.0] * len(names)
    # Compared on the weights' scale, not as fractions summed one by one: no rounding drift on many arms.
    threshold = point * sum(weights)
    cumulative = 0.0
    for name, weight in zip(names, weights, strict=True):
        cumulative += weight
        if threshold < cumulative:
            return name
    # Rounding put the point on the total: the last arm that gets sessions.
    return next(name for name, weight in zip(reversed(names), reversed(weights), strict=True) if weight > 0)


def _aware(moment: datetime) -> datetime:
    # A YAML start without an offset (2026-03-01 09:00) is read as UTC, as every stored time is.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def experiment_applies(workflow: WorkflowConfig, session_start: datetime) -> bool:
    """Whether the workflow's experiment takes a session that began at ``session_start`` (its first run's time).

    True when the workflow has an experiment whose ``start`` is unset or not after the session's start.
    """
    experiment = workflow.experiment
    if experiment is None:
        return False
    return experiment.start is None or _aware(experiment.start) <= _aware(session_start)


@dataclass(frozen=True)
class Assignment:
    """A run's place in an experiment: the experiment, the arm, and whether this is the session's first run in it."""

    experiment: str
    arm: str
    config: ArmConfig
    #: The session's first run in the experiment: the one that stores the ``loop.experiment.assigned`` event.
    first: bool

    def event(self, run_id: str, session_id: str) -> LoopEvent:
        """The ``loop.experiment.assigned`` event of the session's first run in the experiment."""
        return LoopEvent(
            name="loop.experiment.assigned",
            run_id=run_id,
            loop_mode=self.config.loop_mode,
            detail={"experiment": self.experiment, "arm": self.arm, "session_id": session_id},
        )


def session_assignment(
    workflow: WorkflowConfig, session_id: str, earlier: Sequence[RunRecord], now: datetime
) -> Assignment | None:
    """The arm a new run of ``workflow`` in session ``session_id`` runs under; None: outside the experiment.

    ``earlier`` are the session's runs stored so far (any workflow), ``now`` the new run's time. A session keeps
    the arm of its earlier runs of this workflow in this experiment (even after the weights change); a session
    with earlier runs of the workflow outside it (it began before the experiment existed), or that began
    before the experiment's ``start``, stays outside; any other session is assigned by :func:`assign_arm`.
    An arm removed from the config since leaves its sessions outside (there is nothing left to run it with).
    """
    experiment = workflow.experiment
    if experiment is None:
        return None
    mine = [run for run in earlier if run.workflow == workflow.name]
    kept = next((run.arm for run in mine if run.experiment == experiment.name and run.arm is not None), None)
    if kept is not None:
        arm = experiment.arms.get(kept)
        return Assignment(experiment.name, kept, arm, first=False) if arm is not None else None
    if mine:
        return None
    began = min((run.created_at for run in earlier), key=_aware, default=now)
    if not experiment_applies(workflow, began):
        return None
    name = assign_arm(experiment, session_id)
    return Assignment(experiment.name, name, experiment.arms[name], first=True)


__all__ = ["Assignment", "assign_arm", "experiment_applies", "session_assignment"]
