"""The lint checks of a workflow's ``experiment`` block (LC111, LC112), on the raw YAML data.

The limits on names and weights come from :mod:`marsrag.tasks.experiment_limits`, which the models enforce too.

Each check yields the key path of the problem inside the workflow entry and its message; :mod:`marsrag.tasks.lint`
places them (file, line, column). The loader runs them before building :class:`~marsrag.tasks.config.ExperimentConfig`,
so a broken block is a config error naming its line, not a pydantic error naming none.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import date, datetime
from typing import Any

from marsrag.tasks._yaml import SHOWN as _SHOWN
from marsrag.tasks._yaml import KeyPath
from marsrag.tasks.experiment_limits import lightest_arm, name_problem, ratio_problem, weight_problem

#: The keys of an ``experiment`` block and of one arm.
EXPERIMENT_KEYS = ("name", "arms", "start")
ARM_KEYS = ("loop_mode", "weight", "agent", "llm")
_MODES = ("none", "soft", "hard")

Problem = tuple[KeyPath, str]


def experiment_problems(workflow: str, data: Mapping[str, Any], agents: set[str] | None) -> Iterator[Problem]:
    """LC111: what is malformed in workflow ``workflow``'s experiment block (nothing when it has none).

    ``agents`` are the agents an arm may name (None: none in view, as for a workflows file linted alone).
    """
    block = data.get("experiment")
    if block is None:
        return
    where = f"workflow {workflow!r}: experiment"
    if not isinstance(block, Mapping):
        yield ("experiment",), f"{where} must be a mapping with name and arms, not {_SHOWN.repr(block)}"
        return
    unknown = sorted(str(key) for key in block if key not in EXPERIMENT_KEYS)
    if unknown:
        yield (
            ("experiment", unknown[0]),
            f"{where} has unknown key(s) {', '.join(unknown)} (its keys: {', '.join(EXPERIMENT_KEYS)})",
        )
    name = block.get("name")
    if not isinstance(name, str) or not name.strip():
        if "name" in block:
            yield ("experiment", "name"), f"{where} name must be text, not {_SHOWN.repr(name)}"
        else:
            yield ("experiment",), f"{where} needs a name (text): sessions are assigned by a hash of it"
    elif (problem := name_problem(name)) is not None:
        yield ("experiment", "name"), f"{where} name {problem}"
    if "start" in block and not _is_moment(block["start"]):
        shown = _SHOWN.repr(block["start"])
        yield ("experiment", "start"), f"{where} start must be a date-time (2026-03-01T09:00:00Z), not {shown}"
    yield from _arms_problems(where, data, agents)


def _is_moment(value: Any) -> bool:
    if isinstance(value, date):  # a YAML timestamp: a datetime, or a date read as its midnight
        return True
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _arms_problems(where: str, data: Mapping[str, Any], agents: set[str] | None) -> Iterator[Problem]:
    block = data["experiment"]
    arms = block.get("arms")
    if not isinstance(arms, Mapping) or len(arms) < 2:
        shown = f"it has {len(arms)}" if isinstance(arms, Mapping) else f"not {_SHOWN.repr(arms)}"
        yield (
            ("experiment", "arms") if "arms" in block else ("experiment",),
            f"{where} needs arms: a mapping of at least two arm names to settings (loop_mode, weight); {shown}",
        )
        if not isinstance(arms, Mapping):
            return
    for name, arm in arms.items():
        here: KeyPath = ("experiment", "arms", str(name))
        label = f"{where} arm {_SHOWN.repr(name)}"
        if not isinstance(name, str):
            yield here, f"{label}: an arm's name must be text"
        elif (problem := name_problem(name)) is not None:
            yield here, f"{where} arm name {problem}"
        if not isinstance(arm, Mapping):
            yield here, f"{label} must be a mapping with loop_mode (and weight, agent, llm), not {_SHOWN.repr(arm)}"
            continue
        unknown = sorted(str(key) for key in arm if key not in ARM_KEYS)
        if unknown:
            known = ", ".join(ARM_KEYS)
            yield (*here, unknown[0]), f"{label} has unknown key(s) {', '.join(unknown)} (its keys: {known})"
        mode = arm.get("loop_mode")
        if not isinstance(mode, str) or mode not in _MODES:
            key = (*here, "loop_mode") if "loop_mode" in arm else here
            yield key, f"{label} loop_mode must be none, soft or hard, not {_SHOWN.repr(mode)}"
        if "weight" in arm and (problem := weight_problem(arm["weight"])) is not None:
            yield (*here, "weight"), f"{label} weight {problem}"
        yield from _variant_problems(label, here, data, arm, agents)
    yield from _ratio_problems(where, arms)


def _ratio_problems(where: str, arms: Mapping[Any, Any]) -> Iterator[Problem]:
    """The weights' ratio, once every arm is a mapping with a weight in range (else that is the finding)."""
    if not all(isinstance(arm, Mapping) and weight_problem(arm.get("weight", 1.0)) is None for arm in arms.values()):
        return
    written = {str(name): arm for name, arm in arms.items()}
    weights = {name: float(arm.get("weight", 1.0)) for name, arm in written.items()}
    problem = ratio_problem(weights)
    if problem is not None:
        lightest = lightest_arm(weights)
        here: KeyPath = ("experiment", "arms", lightest)
        # The key whose weight to raise; an arm without one weighs the default 1.
        yield (*here, "weight") if "weight" in written[lightest] else here, f"{where} weights: {problem}"


def _variant_problems(
    label: str, here: KeyPath, data: Mapping[str, Any], arm: Mapping[str, Any], agents: set[str] | None
) -> Iterator[Problem]:
    for key in ("agent", "llm"):
        value = arm.get(key)
        if key in arm and (not isinstance(value, str) or not value.strip()):
            yield (*here, key), f"{label} {key} must be a name (text), not {_SHOWN.repr(value)}"
    agent = arm.get("agent")
    if not isinstance(agent, str) or not agent.strip():
        return
    if agents is not None and agent not in agents:
        yield (*here, "agent"), f"{label} names unknown agent {agent!r}"
    elif data.get("process") == "hierarchical" and agent == data.get("manager_agent"):
        yield (
            (*here, "agent"),
            f"{label} agent {agent!r} is the workflow's manager agent: CrewAI refuses a manager among the crew's "
            "agents",
        )


def none_arm_problems(workflow: str, data: Mapping[str, Any]) -> Iterator[Problem]:
    """LC112: an arm of a user-facing workflow's experiment turns the contract off (loop_mode none)."""
    block = data.get("experiment")
    if data.get("kind", "user_facing") != "user_facing" or not isinstance(block, Mapping):
        return
    arms = block.get("arms")
    for name, arm in arms.items() if isinstance(arms, Mapping) else ():
        if isinstance(arm, Mapping) and arm.get("loop_mode") == "none":
            yield (
                ("experiment", "arms", str(name), "loop_mode"),
                f"workflow {workflow!r}: experiment arm {_SHOWN.repr(name)} has loop_mode none: the sessions it is "
                "assigned get answers not held to the contract (user-facing workflows default to hard)",
            )


__all__ = ["ARM_KEYS", "EXPERIMENT_KEYS", "Problem", "experiment_problems", "none_arm_problems"]
