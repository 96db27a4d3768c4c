"""The typed state of a :class:`~marsrag.flows.LoopFlow`: the run it is, and per step its loop and handoff.

Plain data only (strings, numbers, lists of flat models), so CrewAI's ``@persist`` and checkpoints serialize and
restore it whole. What is callable (the contract guardrail, the converter, the crew) is rebuilt for every step
and never kept here; the authoritative record of a step is the task state in the run store, this is its echo.
"""

from __future__ import annotations

import uuid

from pydantic import BaseModel, Field

from marsrag.state import HookSource, TaskState, TransitionMode, ValidationStatus


class StepRecord(BaseModel):
    """One finished step: the five fields it ended with, its verdict, and the hook it hands to the next step."""

    name: str
    #: The stored task's id: the step's name, with ``-2``, ``-3`` for its later runs in a looping flow.
    task_id: str
    position: int
    hook_source: HookSource
    validation_status: ValidationStatus
    attempts: int
    hook: str | None = None
    grip: str | None = None
    payoff: str | None = None
    reinforce: str | None = None
    loop: str | None = None
    #: What the next step opens with (the planner's hook: the loop, or the fallback question) and how it was got.
    next_hook: str
    transition_mode: TransitionMode
    #: The label a ``route_on_loop`` router chose after this step (None: not routed).
    route: str | None = None

    @classmethod
    def of(cls, name: str, state: TaskState, next_hook: str, mode: TransitionMode) -> StepRecord:
        """The record of a stored task state, with the transition planned out of it."""
        return cls(
            name=name,
            task_id=state.task_id,
            position=state.position,
            hook_source=state.hook_source,
            validation_status=state.validation.status,
            attempts=len(state.attempts),
            **state.loop_output.model_dump(),
            next_hook=next_hook,
            transition_mode=mode,
        )


class LoopFlowState(BaseModel):
    """A LoopFlow's state: CrewAI's state id, the MarsRAG run, its goal and session, and the steps so far."""

    #: CrewAI's flow state id (the key ``@persist`` stores snapshots under).
    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    #: The run in the MarsRAG store (set at the first step; given to resume one).
    run_id: str | None = None
    goal: str = ""
    session_id: str | None = None
    steps: list[StepRecord] = Field(default_factory=list)

    @property
    def last(self) -> StepRecord | None:
        """The step that finished last, if any."""
        return self.steps[-1] if self.steps else None

    def step(self, name: str) -> StepRecord | None:
        """The latest record of the step named ``name``, if it ran."""
        return next((step for step in reversed(self.steps) if step.name == name), None)
