"""Contract lint: rules that keep narrative task configs on the Loop Contract (spec section 6).

Each rule has an id, a severity and a one-line summary; findings carry the file, line and column. LC001-LC004
are the spec's checks; LC1xx are what a user wants next. Lint never imports CrewAI or SQLAlchemy: it runs in
editors and pre-commit hooks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from marsrag.contract import EXPECTED_OUTPUT_TEMPLATE, FIELDS, compatibility_problem, section_labels
from marsrag.tasks._yaml import SHOWN as _SHOWN
from marsrag.tasks._yaml import KeyPath, Position
from marsrag.tasks.config import (
    AGENT_TOOLS,
    AUTO_AGENT,
    CONTRACT_BOUND_KEYS,
    KICKOFF_INPUTS,
    LOOP_OUTPUT_NAMES,
    unknown_tools_message,
)
from marsrag.tasks.entry_names import entry_name_problem
from marsrag.tasks.experiment_rules import Problem, experiment_problems, none_arm_problems
from marsrag.tasks.sources import ConfigSet, Entry

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One lint finding, located in a file."""

    path: str
    line: int
    column: int
    rule: str
    task: str | None
    severity: Severity
    message: str

    def to_dict(self) -> dict[str, Any]:
        """The finding as JSON-ready data."""
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "rule": self.rule,
            "task": self.task,
            "severity": self.severity,
            "message": self.message,
        }

    def to_text(self) -> str:
        """``path:line:col: RULE message``, the format editors and CI annotate."""
        return f"{self.path}:{self.line}:{self.column}: {self.rule} {self.message}"


@dataclass(frozen=True)
class Spot:
    """A finding's place when it is not an entry's key: the second of two keys written alike."""

    path: str
    position: Position
    task: str | None


# Each check yields (entry, key the finding points at, message, character offset in that key's value); a Spot
# instead of the entry places the finding itself (key and offset are then None).
Hit = tuple[Entry | Spot, str | None, str, int | None]


@dataclass(frozen=True)
class Rule:
    """A lint rule: id, severity, summary, and the check producing its findings."""

    id: str
    severity: Severity
    summary: str
    check: Callable[[ConfigSet], Iterator[Hit]]


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_\-]*)\}")
_TEMPLATE_FOLDED = " ".join(EXPECTED_OUTPUT_TEMPLATE.split())
_LABELS = tuple(name.upper() for name in FIELDS)


def _mapping(entry: Entry) -> Mapping[str, Any]:
    return entry.data if isinstance(entry.data, Mapping) else {}


def _is_narrative(entry: Entry) -> bool:
    return entry.kind == "task" and _mapping(entry).get("narrative", True) is not False


def _narrative_tasks(config: ConfigSet) -> Iterator[tuple[Entry, Mapping[str, Any]]]:
    for entry in config.of("task"):
        if _is_narrative(entry) and isinstance(entry.data, Mapping):
            yield entry, entry.data


def _expected(data: Mapping[str, Any]) -> str | None:
    value = data.get("expected_output")
    return value if isinstance(value, str) else None


def _check_order(config: ConfigSet) -> Iterator[Hit]:
    for entry, data in _narrative_tasks(config):
        text = _expected(data)
        if text is None:
            continue
        first: dict[str, int] = {}
        for name, offset in section_labels(text):
            first.setdefault(name, offset)
        present = sorted(first, key=first.__getitem__)
        canonical = [name for name in FIELDS if name in first]
        if present != canonical:
            wrong = next(name for name, want in zip(present, canonical, strict=True) if name != want)
            order = ", ".join(name.upper() for name in present)
            yield (
                entry,
                "expected_output",
                f"expected_output sections are out of order ({order}); the canonical order is {', '.join(_LABELS)}",
                first[wrong],
            )


def _check_labels(config: ConfigSet) -> Iterator[Hit]:
    for entry, data in _narrative_tasks(config):
        text = _expected(data)
        if text is None:
            key = "expected_output" if "expected_output" in data else None
            yield (
                entry,
                key,
                "expected_output is missing or not text: a narrative task needs the five section "
                f"labels {', '.join(_LABELS)} (use the canonical template)",
                None,
            )
            continue
        missing = [name.upper() for name in FIELDS if name not in {label for label, _ in section_labels(text)}]
        if missing:
            yield (entry, "expected_output", f"expected_output lacks section label(s) {', '.join(missing)}", None)


def _check_version(config: ConfigSet) -> Iterator[Hit]:
    for entry, data in _narrative_tasks(config):
        if "loop_contract_version" not in data:
            yield entry, None, "loop_contract_version is missing", None
            continue
        problem = compatibility_problem(data["loop_contract_version"])
        if problem is not None:
            yield entry, "loop_contract_version", problem, None


def _check_output_pydantic(config: ConfigSet) -> Iterator[Hit]:
    for entry, data in _narrative_tasks(config):
        value = data.get("output_pydantic")
        # A YAML list or mapping here is unhashable: test it as text only.
        if not isinstance(value, str) or value not in LOOP_OUTPUT_NAMES:
            key = "output_pydantic" if "output_pydantic" in data else None
            shown = "missing" if value is None else _SHOWN.repr(value)
            yield (
                entry,
                key,
                f"output_pydantic is {shown}; narrative tasks must use LoopOutput (or set narrative: false)",
                None,
            )


def _check_workflow_tasks(config: ConfigSet) -> Iterator[Hit]:
    known = config.names("task")
    for entry in config.of("workflow"):
        tasks = _mapping(entry).get("tasks")
        if isinstance(tasks, list):
            for task in tasks:
                if isinstance(task, str) and task not in known:
                    yield entry, "tasks", f"workflow {entry.name!r} names unknown task {task!r}", None


def _workflow_mode(data: Mapping[str, Any]) -> str:
    mode = data.get("loop_mode")
    if isinstance(mode, str):
        return mode
    return "none" if data.get("kind") == "internal" else "hard"


def _check_narrative_in_none(config: ConfigSet) -> Iterator[Hit]:
    narrative = {entry.name for entry, _ in _narrative_tasks(config)}
    for entry in config.of("workflow"):
        data = _mapping(entry)
        tasks = data.get("tasks")
        if _workflow_mode(data) == "none" and isinstance(tasks, list):
            for task in tasks:
                if isinstance(task, str) and task in narrative:
                    yield (
                        entry,
                        "tasks",
                        f"narrative task {task!r} runs in workflow {entry.name!r} with loop_mode "
                        "none: its contract is not applied (set narrative: false, or loop_mode soft/hard)",
                        None,
                    )


def _check_placeholders(config: ConfigSet) -> Iterator[Hit]:
    for entry, data in _narrative_tasks(config):
        text = _expected(data)
        for match in _PLACEHOLDER.finditer(text or ""):
            if match.group(1) in KICKOFF_INPUTS:  # any other placeholder is LC108's error
                yield (
                    entry,
                    "expected_output",
                    f"expected_output contains {match.group(0)}: CrewAI replaces it with that kickoff input, "
                    "so the contract template the model is given changes with every goal",
                    match.start(),
                )


#: The settings CrewAI interpolates kickoff inputs into, per entry kind.
_INTERPOLATED: dict[str, tuple[str, ...]] = {
    "task": ("description", "expected_output", "output_file"),
    "agent": ("role", "goal", "backstory"),
}
_FILLED = ", ".join(f"{{{name}}}" for name in sorted(KICKOFF_INPUTS))


def _check_unfilled(config: ConfigSet) -> Iterator[Hit]:
    for entry in config.entries:
        data = _mapping(entry)
        for key in _INTERPOLATED.get(entry.kind, ()):
            text = data.get(key)
            for match in _PLACEHOLDER.finditer(text if isinstance(text, str) else ""):
                if match.group(1) not in KICKOFF_INPUTS:
                    yield (
                        entry,
                        key,
                        f"{entry.kind} {entry.name!r}: {key} contains {_SHOWN.repr(match.group(0))}, which no input "
                        f"fills (the inputs are {_FILLED}): CrewAI would fail the run; rephrase it without braces",
                        match.start(),
                    )


def _check_duplicates(config: ConfigSet) -> Iterator[Hit]:
    for doc in config.docs:
        for duplicate in doc.duplicates:
            owner = _owner(config, doc.path, duplicate.keys)
            task = owner.name if owner is not None and owner.kind == "task" else None
            first, again = (f"{doc.path}:{p.line}:{p.column}" for p in (duplicate.first, duplicate.again))
            yield (
                Spot(doc.path, duplicate.again, task),
                None,
                f"key {_key_text(duplicate.keys)} is written twice, at {first} and at {again}: YAML keeps only "
                "the last (remove or rename one)",
                None,
            )
    seen: dict[tuple[str, str], Entry] = {}
    for entry in config.entries:
        earlier = seen.setdefault((entry.kind, entry.name), entry)
        if earlier is not entry:
            first, again = (f"{e.path}:{e.at().line}:{e.at().column}" for e in (earlier, entry))
            yield (
                Spot(entry.path, entry.at(), entry.name if entry.kind == "task" else None),
                None,
                f"{entry.kind} {_SHOWN.repr(entry.name)} is defined twice, at {first} and at {again}: only the last "
                "would be used (remove or rename one)",
                None,
            )


def _owner(config: ConfigSet, path: str, keys: KeyPath) -> Entry | None:
    """The entry whose mapping holds the key at ``keys`` of file ``path``, if any."""
    for entry in config.entries:
        if entry.path == path and entry.key_path and keys[: len(entry.key_path)] == entry.key_path:
            return entry
    return None


def _key_text(keys: KeyPath) -> str:
    where = f" (in {_SHOWN.repr('.'.join(keys[:-1]))})" if len(keys) > 1 else ""
    return f"{_SHOWN.repr(keys[-1])}{where}"


def _check_agents(config: ConfigSet) -> Iterator[Hit]:
    agents = config.names("agent")
    if not agents and not config.complete:
        return  # no agents in view (a tasks file linted alone): nothing to check against
    for entry in config.of("task"):
        agent = _mapping(entry).get("agent")
        if not isinstance(agent, str):
            continue
        if not agents:  # a whole config without agents.yaml: even agent: auto has no one to route to
            message = (
                f"task {entry.name!r} needs agent {agent!r}, but {config.label} defines no agents (add agents.yaml)"
            )
            yield entry, "agent", message, None
        elif agent != AUTO_AGENT and agent not in agents:
            yield entry, "agent", f"task {entry.name!r} names unknown agent {agent!r}", None


def _check_agent_tools(config: ConfigSet) -> Iterator[Hit]:
    for entry in config.of("agent"):
        tools = _mapping(entry).get("tools")
        if not isinstance(tools, list):
            continue  # a mistyped value is the agent model's error at load, naming the key
        unknown = [name for name in dict.fromkeys(map(str, tools)) if name not in AGENT_TOOLS]
        if unknown:
            yield entry, "tools", unknown_tools_message(entry.name, unknown), None


def _check_wording(config: ConfigSet) -> Iterator[Hit]:
    for entry, data in _narrative_tasks(config):
        text = _expected(data)
        if text is not None and _TEMPLATE_FOLDED not in " ".join(text.split()):
            labels = {label for label, _ in section_labels(text)}
            if set(FIELDS) <= labels:
                yield (
                    entry,
                    "expected_output",
                    "expected_output departs from the canonical template's wording "
                    "(render it with marsrag.contract.render_expected_output)",
                    None,
                )


_REQUIRED: dict[str, tuple[str, ...]] = {
    "task": ("description", "agent"),
    "agent": ("role", "goal"),
    "tool": ("description",),
}


def _check_shape(config: ConfigSet) -> Iterator[Hit]:
    for entry in config.entries:
        if (problem := entry_name_problem(entry.name)) is not None:
            yield entry, None, f"the name of {entry.kind} {problem}", None
        if not isinstance(entry.data, Mapping):
            yield entry, None, f"{entry.kind} {entry.name!r} must be a mapping of settings", None
            continue
        for key in _REQUIRED.get(entry.kind, ()):
            if not isinstance(entry.data.get(key), str) or not entry.data[key].strip():
                yield entry, key if key in entry.data else None, f"{entry.kind} {entry.name!r} needs {key} (text)", None
        if entry.kind == "task" and not isinstance(entry.data.get("narrative", True), bool):
            yield entry, "narrative", "narrative must be true or false", None
        elif entry.kind == "task" and entry.data.get("narrative", True):
            for key in sorted(str(key) for key in entry.data if key in CONTRACT_BOUND_KEYS):
                yield entry, key, f"{key} is set by the Loop Contract binding on a narrative task: remove it", None
        if entry.kind == "workflow":
            yield from _workflow_shape(entry)


_WORKFLOW_KEYS = frozenset(
    {
        "description",
        "kind",
        "loop_mode",
        "tasks",
        "process",
        "manager_agent",
        "manager_llm",
        "experiment",
        "collections",
    }
)


def _workflow_shape(entry: Entry) -> Iterator[Hit]:
    data = _mapping(entry)
    tasks = data.get("tasks")
    if not isinstance(tasks, list) or not tasks or not all(isinstance(task, str) for task in tasks):
        yield entry, "tasks" if "tasks" in data else None, f"workflow {entry.name!r} needs tasks: a list of names", None
    elif len(set(tasks)) != len(tasks):
        yield entry, "tasks", f"workflow {entry.name!r} lists a task twice", None
    if data.get("kind", "user_facing") not in ("user_facing", "internal"):
        yield entry, "kind", f"kind must be user_facing or internal, not {_SHOWN.repr(data.get('kind'))}", None
    if data.get("loop_mode") not in (None, "none", "soft", "hard"):
        mode = _SHOWN.repr(data.get("loop_mode"))
        yield entry, "loop_mode", f"loop_mode must be none, soft or hard, not {mode}", None
    if data.get("process", "sequential") not in ("sequential", "hierarchical"):
        process = _SHOWN.repr(data.get("process"))
        yield entry, "process", f"process must be sequential or hierarchical, not {process}", None
    for key in ("manager_agent", "manager_llm"):
        value = data.get(key)
        if key in data and (not isinstance(value, str) or not value.strip()):
            yield entry, key, f"{key} must be a name (text), not {_SHOWN.repr(value)}", None
    if "collections" in data and (problem := _collections_problem(data["collections"])) is not None:
        yield entry, "collections", f"workflow {entry.name!r}: collections {problem}", None
    # YAML keys may be numbers, booleans or null: compared as text, which is how messages show them.
    unknown = sorted(str(key) for key in set(data) - _WORKFLOW_KEYS)
    if unknown:
        yield entry, unknown[0], f"workflow {entry.name!r} has unknown key(s) {', '.join(unknown)}", None


def _collections_problem(value: Any) -> str | None:
    """What is wrong with a workflow's ``collections:`` (a non-empty list of collection names), else None."""
    if not isinstance(value, list) or not value:
        return f"must be a list of collection names (at least one), not {_SHOWN.repr(value)}"
    for name in value:
        if not isinstance(name, str) or not name.strip():
            return f"must list collection names (text), not {_SHOWN.repr(name)}"
    if len(set(value)) != len(value):
        return "lists a collection twice"
    return None


def _check_user_facing_none(config: ConfigSet) -> Iterator[Hit]:
    for entry in config.of("workflow"):
        data = _mapping(entry)
        if data.get("kind", "user_facing") == "user_facing" and data.get("loop_mode") == "none":
            yield (
                entry,
                "loop_mode",
                f"user-facing workflow {entry.name!r} has loop_mode none: its answers are not "
                "held to the contract (the default for user-facing workflows is hard)",
                None,
            )


def _check_manager(config: ConfigSet) -> Iterator[Hit]:
    agents = config.names("agent")
    task_agents = {entry.name: _mapping(entry).get("agent") for entry in config.of("task")}
    for entry in config.of("workflow"):
        data = _mapping(entry)
        manager, manager_llm = data.get("manager_agent"), data.get("manager_llm")
        given = [key for key in ("manager_agent", "manager_llm") if data.get(key) is not None]
        if given and data.get("process", "sequential") != "hierarchical":
            yield (
                entry,
                given[0],
                f"workflow {entry.name!r}: {given[0]} applies only to process: hierarchical (a sequential crew "
                "has no manager); set process: hierarchical or remove it",
                None,
            )
        if manager is not None and manager_llm is not None:
            yield (
                entry,
                "manager_llm",
                f"workflow {entry.name!r}: give manager_agent or manager_llm, not both (the manager agent's "
                "LLM is the run's)",
                None,
            )
        if not isinstance(manager, str):
            continue
        if (agents or config.complete) and manager not in agents:
            yield (
                entry,
                "manager_agent",
                f"workflow {entry.name!r}: manager_agent names unknown agent {manager!r}",
                None,
            )
            continue
        tasks = data.get("tasks")
        workers = (
            [t for t in tasks if isinstance(t, str) and task_agents.get(t) == manager]
            if isinstance(tasks, list)
            else []
        )
        if workers:
            yield (
                entry,
                "manager_agent",
                f"workflow {entry.name!r}: manager agent {manager!r} also runs task {workers[0]!r}; CrewAI refuses a "
                "manager among the crew's agents (give the task another agent, or add a manager agent)",
                None,
            )


def _placed(entry: Entry, problems: Iterable[Problem]) -> Iterator[Hit]:
    """Experiment problems as findings at their key (an arm's setting sits deeper than an entry's own keys)."""
    for keys, message in problems:
        yield Spot(entry.path, entry.at_keys(keys), None), None, message, None


def _check_experiment(config: ConfigSet) -> Iterator[Hit]:
    names = config.names("agent")
    agents = names if names or config.complete else None  # no agents in view: an arm's agent is not checked
    for entry in config.of("workflow"):
        yield from _placed(entry, experiment_problems(entry.name, _mapping(entry), agents))


def _check_none_arm(config: ConfigSet) -> Iterator[Hit]:
    for entry in config.of("workflow"):
        yield from _placed(entry, none_arm_problems(entry.name, _mapping(entry)))


RULES: tuple[Rule, ...] = (
    Rule("LC001", "error", "expected_output sections are not in the canonical order", _check_order),
    Rule("LC002", "error", "a section label (HOOK, GRIP, PAYOFF, REINFORCE, LOOP) is missing", _check_labels),
    Rule("LC003", "error", "loop_contract_version is missing, not semver, or incompatible", _check_version),
    Rule("LC004", "error", "output_pydantic is not LoopOutput for a narrative task", _check_output_pydantic),
    Rule("LC100", "error", "an entry is malformed (missing or mistyped settings)", _check_shape),
    Rule("LC101", "error", "a workflow names an unknown task", _check_workflow_tasks),
    Rule("LC102", "warning", "a narrative task runs in a loop_mode none workflow", _check_narrative_in_none),
    Rule("LC103", "warning", "expected_output has a {goal} placeholder CrewAI fills in", _check_placeholders),
    Rule("LC104", "error", "a task names an unknown agent, or a whole config defines no agents", _check_agents),
    Rule("LC105", "warning", "expected_output departs from the canonical template wording", _check_wording),
    Rule("LC106", "warning", "a user-facing workflow turns the contract off (loop_mode none)", _check_user_facing_none),
    Rule("LC107", "error", "a key or an entry is written twice (YAML keeps only the last)", _check_duplicates),
    Rule("LC108", "error", "a {placeholder} no kickoff input fills (only {goal} is)", _check_unfilled),
    Rule("LC109", "error", "a hierarchical workflow's manager is misconfigured", _check_manager),
    Rule("LC110", "error", "an agent names an unknown tool (the agent tools: knowledge_base)", _check_agent_tools),
    Rule("LC111", "error", "a workflow's experiment block is malformed", _check_experiment),
    Rule("LC112", "warning", "an experiment arm of a user-facing workflow has loop_mode none", _check_none_arm),
)


def lint_config(config: ConfigSet, rules: Iterable[Rule] = RULES) -> list[Finding]:
    """Run the rules over one config set; findings sorted by file, line and rule."""
    findings = [
        Finding(path, position.line, position.column, "LC100", None, "error", message)
        for path, position, message in config.problems
    ]
    for rule in rules:
        for target, key, message, offset in rule.check(config):
            if isinstance(target, Spot):
                path, position, task = target.path, target.position, target.task
            else:
                path, task = target.path, target.name if target.kind == "task" else None
                position = target.at(key) if offset is None or key is None else target.at_offset(key, offset)
            findings.append(Finding(path, position.line, position.column, rule.id, task, rule.severity, message))
    return sorted(findings, key=lambda f: (f.path, f.line, f.column, f.rule))


def has_errors(findings: Iterable[Finding]) -> bool:
    """Whether any finding has error severity."""
    return any(finding.severity == "error" for finding in findings)


def missing_tasks(config: ConfigSet) -> str | None:
    """Why a whole config (a folder) has nothing to lint: it defines no task, as with no ``tasks.yaml``; else None."""
    if not config.complete or config.of("task"):
        return None
    return f"{config.label}: no tasks.yaml (the config defines no task): nothing to lint"


def missing_workflows(config: ConfigSet) -> str | None:
    """The warning for a whole config with tasks but no workflow (no ``workflows.yaml``); else None.

    Its tasks are linted all the same (most CrewAI projects have no workflows file), but ``marsrag run`` needs one.
    """
    if not config.complete or not config.of("task") or config.of("workflow"):
        return None
    return (
        f"{config.label}: no workflows.yaml: its tasks are linted, but marsrag run needs a workflow "
        "(a workflows.yaml naming the tasks in order)"
    )


def summary(configs: Iterable[ConfigSet], findings: Iterable[Finding]) -> str:
    """One line saying what was linted and what was found: ``lint: config: 3 tasks, 1 workflow: no findings``."""
    configs = list(configs)
    findings = list(findings)
    labels = ", ".join(config.label for config in configs)
    tasks = sum(len(config.of("task")) for config in configs)
    workflows = sum(len(config.of("workflow")) for config in configs)
    errors = sum(finding.severity == "error" for finding in findings)
    warnings = len(findings) - errors
    found = (
        ", ".join(part for part in (_count(errors, "error"), _count(warnings, "warning")) if not part.startswith("0 "))
        or "no findings"
    )
    return f"lint: {labels}: {_count(tasks, 'task')}, {_count(workflows, 'workflow')}: {found}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
