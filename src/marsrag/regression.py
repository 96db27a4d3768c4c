"""Spec section 6's regression checks for the narrative tasks of a config folder, on real CrewAI crews.

Per narrative task, six checks: schema conformance success, missing field, empty string, over-length field,
chaining from the prior loop, fallback transition. Each kicks off a real crew of the config (the task, or a
prior task and the task) with the replay LLM, in a one-workflow copy of the project under ``hard`` mode, and
checks what the run stored in a real SQLite store: statuses, attempts, hooks and transitions. A smoke check
runs the task once against a real model instead. :mod:`marsrag.pytest_plugin` turns each into a test.

Collecting the checks (:func:`narrative_tasks`) reads YAML only; CrewAI loads when a check runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from marsrag.contract import validate_output
from marsrag.errors import ConfigError, MarsRAGError
from marsrag.state import FALLBACK_HOOK
from marsrag.store import open_store
from marsrag.tasks.config import ProjectConfig, WorkflowConfig
from marsrag.tasks.lint import lint_config
from marsrag.tasks.loader import project_from_set
from marsrag.tasks.sources import ConfigSet, Entry, config_sets_from_paths

if TYPE_CHECKING:
    from marsrag.state import TaskState, TransitionRecord

__all__ = [
    "BROKEN_FIELD",
    "CHECKS",
    "CheckFailed",
    "CheckReport",
    "SMOKE",
    "narrative_tasks",
    "run_check",
    "run_smoke",
    "valid_answer",
]

#: The six checks of spec section 6, in its order, with what each shows.
CHECKS: Mapping[str, str] = {
    "schema_success": "a conforming answer is stored valid on the first attempt",
    "missing_field": "an answer without a field fails; a valid repair is used, a broken one leaves the task partial",
    "empty_string": "an answer with a blank field fails; a valid repair is used, a broken one leaves the task partial",
    "over_length": "an answer with a field over 800 characters fails; a valid repair is used, a broken one does not",
    "chaining": "the prior task's loop becomes the task's hook (transition direct), in its prompt and its state",
    "fallback": "a prior task still invalid after its repair gives the fallback question (transition fallback)",
}

#: What the smoke check (``--loop-contract-llm``) shows.
SMOKE = "the task, run once against a real model, is stored valid or partial"

#: The field the missing, empty and over-length checks break.
BROKEN_FIELD = "payoff"
_BROKEN: Mapping[str, tuple[Any, str]] = {
    "missing_field": (None, "missing"),
    "empty_string": ("   ", "empty"),
    "over_length": ("x" * 801, "too_long"),
}
_WORKFLOW = "loop_contract"
_GOAL = "Checkout latency doubled after last night's cache restart."


class CheckFailed(MarsRAGError):
    """A regression check found the task breaking the Loop Contract (the message says where and how)."""


@dataclass
class CheckReport:
    """What a check ran: the task's attempts per run, for test reports."""

    task: str
    check: str
    runs: list[list[str]] = field(default_factory=list)

    def describe(self) -> str:
        """One line: the attempt statuses of each run."""
        shown = "; ".join(" -> ".join(run) or "no attempt" for run in self.runs)
        return f"{self.task} {self.check}: attempts {shown}"


def valid_answer(task: str, **changes: str | None) -> dict[str, str]:
    """A conforming LoopOutput for ``task`` (a ``None`` change drops that field)."""
    answer = {
        "hook": "Checkout latency doubled overnight and every slow request started after the cache restart.",
        "grip": f"The {task} step finds that cold caches send every lookup to the database until they warm up.",
        "payoff": "Pre-warm each cache node from a snapshot before it rejoins the pool, one node at a time.",
        "reinforce": "Pre-warmed nodes reach a 95% hit rate in two minutes, against forty minutes when cold.",
        "loop": f"Which cache tier should the step after {task} pre-warm first?",
    }
    return {k: v for k, v in {**answer, **changes}.items() if v is not None}


def narrative_tasks(folder: str | Path) -> list[str]:
    """The narrative tasks of a config folder, in file order (YAML is read; nothing is imported).

    Raises:
        ConfigError: the folder does not exist or a file is not valid YAML.
    """
    return [entry.name for entry in _config_set(folder).of("task") if _narrative(entry.data)]


def run_check(folder: str | Path, task: str, check: str, workdir: Path, *, answer: str | None = None) -> CheckReport:
    """Run one check of :data:`CHECKS` for ``task`` of the config ``folder``; a store is made in ``workdir``.

    ``answer`` is a raw output recorded from a real model (any form ``marsrag validate`` reads): the schema
    success check replays it instead of the generated conforming answer (twice: its repair answers alike).

    Raises:
        CheckFailed: the task breaks the contract; the message names the task, the check, expected and got.
    """
    project = _project(folder, task)
    fields = valid_answer(task)
    report = CheckReport(task, check)
    if check == "schema_success":
        replayed = answer if answer is not None else json.dumps(fields)
        wanted = _answer_fields(answer) if answer is not None else fields
        states, _, _ = _run(project, [task], [replayed, replayed], workdir, report)
        what = "the stored status and attempts" + (" (of the recorded answer)" if answer is not None else "")
        _expect(task, check, what, ("valid", ["valid"]), _outcome(states[0]), states[0])
        stored = states[0].loop_output.model_dump()
        _expect(task, check, "the stored sections", wanted, {k: stored[k] for k in wanted})
    elif check in _BROKEN:
        value, code = _BROKEN[check]
        broken = json.dumps({**fields, BROKEN_FIELD: value} if value is not None else _without(fields))
        states, _, _ = _run(project, [task], [broken, json.dumps(fields)], workdir / "repaired", report)
        repaired = ("valid", ["partial", "valid"])
        _expect(task, check, "a valid repair: status and attempts", repaired, _outcome(states[0]))
        _expect(task, check, "the first attempt's errors", [(BROKEN_FIELD, code)], _errors(states[0]))
        stored_field = states[0].loop_output.model_dump()[BROKEN_FIELD]
        _expect(task, check, f"the stored {BROKEN_FIELD} (the repair's)", fields[BROKEN_FIELD], stored_field)
        states, _, _ = _run(project, [task], [broken, broken], workdir / "unrepaired", report)
        unrepaired = ("partial", ["partial", "partial"])
        _expect(task, check, "a broken repair: status and attempts", unrepaired, _outcome(states[0]))
    elif check in ("chaining", "fallback"):
        prior = _prior(project, task)
        names = [prior, task]
        if check == "chaining":
            loop = f"What should the {task} step settle first about the cold caches?"
            outputs = [json.dumps(valid_answer(prior, loop=loop)), json.dumps(fields)]
            want_hook, want_mode, want_prior = loop, "direct", "valid"
        else:
            outputs = ["Nothing useful.", "Still nothing useful.", json.dumps(fields)]
            want_hook, want_mode, want_prior = FALLBACK_HOOK, "fallback", "failed"
        states, transitions, prompts = _run(project, names, outputs, workdir, report)
        _expect(task, check, f"the prior task {prior!r}'s status", want_prior, states[0].validation.status)
        got = [(t.transition_source_task_id, t.transition_target_task_id, t.transition_mode) for t in transitions]
        _expect(task, check, "the stored transition", [(prior, task, want_mode)], got)
        _expect(task, check, "the stored hook and its source", (want_hook, want_mode), _hook(states[1]))
        if want_hook not in prompts.get(task, ""):
            raise CheckFailed(f"task {task!r}, check {check}: the hook {want_hook!r} is not in the task's prompt")
    else:
        raise CheckFailed(f"unknown check {check!r} (known: {', '.join(CHECKS)})")
    return report


def run_smoke(folder: str | Path, task: str, llm: Any, workdir: Path) -> CheckReport:
    """Run ``task`` alone once with a real LLM; fail unless it is stored valid or partial.

    Raises:
        CheckFailed: the run failed, or the task's stored status is ``failed``.
    """
    report = CheckReport(task, "smoke")
    states, _, _ = _run(_project(folder, task), [task], None, workdir, report, llm=llm)
    status = states[0].validation.status
    if status not in ("valid", "partial"):
        errors = ", ".join(f"{field_}: {code}" for field_, code in _errors(states[0], last=True))
        raise CheckFailed(
            f"task {task!r}, check smoke: expected the stored status valid or partial, got {status!r} "
            f"after {len(states[0].attempts)} attempt(s) ({errors})"
        )
    return report


# -- internals -----------------------------------------------------------------------------------------------------


def _narrative(data: Any) -> bool:
    return isinstance(data, Mapping) and data.get("narrative", True) is not False


def _config_set(folder: str | Path) -> ConfigSet:
    path = Path(folder)
    if not path.is_dir():
        raise ConfigError(f"{path}: not a config folder (expected agents.yaml, tasks.yaml, workflows.yaml)")
    (config,) = config_sets_from_paths([path])
    return config


def _project(folder: str | Path, task: str) -> ProjectConfig:
    """The config's project, failing with the task's own lint errors first, else the config's.

    Tasks with lint errors of their own (and workflows naming them) are left out, so that one broken task
    fails its own checks and no other task's.
    """
    config = _config_set(folder)
    errors = [finding for finding in lint_config(config) if finding.severity == "error"]
    own = [finding for finding in errors if finding.task == task]
    if own:
        lines = "\n  ".join(finding.to_text() for finding in own)
        raise CheckFailed(f"task {task!r} breaks the contract lint:\n  {lines}")
    broken = {finding.task for finding in errors if finding.task}
    try:
        project = _loaded(str(Path(folder).resolve()), frozenset(broken))
    except ConfigError as error:
        raise CheckFailed(f"task {task!r}: the config does not load: {error}") from None
    if task not in project.tasks:
        raise CheckFailed(f"task {task!r} is not in {folder}")
    return project


@lru_cache(maxsize=8)
def _loaded(folder: str, broken: frozenset[str]) -> ProjectConfig:
    """The folder's project without the ``broken`` tasks and the workflows naming them (checked as it loads)."""
    config = _config_set(folder)

    def kept(entry: Entry) -> bool:
        if entry.kind == "task":
            return entry.name not in broken
        if entry.kind == "workflow" and isinstance(entry.data, Mapping):
            named = entry.data.get("tasks")
            return not (isinstance(named, list) and broken.intersection(map(str, named)))
        return True

    return project_from_set(ConfigSet(config.label, [e for e in config.entries if kept(e)], complete=True))


def _answer_fields(answer: str) -> dict[str, str]:
    found = validate_output(answer).loop_output
    return {name: value for name, value in found.items() if value is not None}


def _without(fields: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in fields.items() if k != BROKEN_FIELD}


def _prior(project: ProjectConfig, task: str) -> str:
    """The narrative task before ``task`` in the config's workflows, else ``task`` itself (as a copy)."""
    for workflow in project.workflows.values():
        names = workflow.tasks
        for index, name in enumerate(names):
            if name != task:
                continue
            before = [n for n in names[:index] if n != task and project.tasks[n].narrative]
            if before:
                return before[-1]
    return f"{task}__prior"


def _run(
    project: ProjectConfig,
    names: list[str],
    outputs: list[str] | None,
    workdir: Path,
    report: CheckReport,
    *,
    llm: Any = None,
) -> tuple[list[TaskState], list[TransitionRecord], dict[str, str]]:
    """Kick off a workflow of ``names`` (hard mode) with the replay LLM over ``outputs`` (or ``llm``)."""
    # lazy: CrewAI and SQLAlchemy load only when a check runs
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    tasks = dict(project.tasks)
    for name in names:
        if name not in tasks and name.endswith("__prior"):
            tasks[name] = tasks[name.removesuffix("__prior")].model_copy(update={"name": name})
    workflow = WorkflowConfig(name=_WORKFLOW, kind="user_facing", loop_mode="hard", tasks=names)
    scoped = project.model_copy(update={"tasks": tasks, "workflows": {_WORKFLOW: workflow}})
    model = ReplayLLM.from_outputs(outputs) if outputs is not None else llm
    workdir.mkdir(parents=True, exist_ok=True)
    with open_store(f"sqlite:///{workdir / 'runs.db'}") as store:
        run = WorkflowRunner(store, scoped, model).run(_GOAL, workflow=_WORKFLOW)
        states = store.get_tasks(run.run_id)
        transitions = store.get_transitions(run.run_id)
    report.runs.append([attempt.status for state in states for attempt in state.attempts])
    if run.status != "completed" or len(states) != len(names):
        raise CheckFailed(
            f"task {names[-1]!r}, check {report.check}: the run of {' -> '.join(names)} ended {run.status} "
            f"({run.status_reason or 'no reason given'}) after {len(states)} of {len(names)} task(s)"
        )
    prompts: dict[str, str] = {}
    if isinstance(model, ReplayLLM):
        for call in model.calls:
            if call.task:
                prompts[call.task] = prompts.get(call.task, "") + json.dumps(call.messages)
    return states, transitions, prompts


def _outcome(state: TaskState) -> tuple[str, list[str]]:
    return state.validation.status, [attempt.status for attempt in state.attempts]


def _errors(state: TaskState, *, last: bool = False) -> list[tuple[str | None, str]]:
    attempt = state.attempts[-1 if last else 0] if state.attempts else None
    return [(issue.field, issue.code) for issue in attempt.errors] if attempt is not None else []


def _hook(state: TaskState) -> tuple[str | None, str]:
    return state.loop_output.hook, state.hook_source


def _expect(task: str, check: str, what: str, expected: Any, got: Any, state: TaskState | None = None) -> None:
    if expected == got:
        return
    detail = ""
    if state is not None and state.attempts:
        errors = ", ".join(f"{name}: {code}" for name, code in _errors(state, last=True))
        detail = f" (last attempt's errors: {errors or 'none'})"
    raise CheckFailed(f"task {task!r}, check {check}: {what}: expected {expected!r}, got {got!r}{detail}")
