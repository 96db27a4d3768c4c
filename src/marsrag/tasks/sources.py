"""Config entries (agents, tasks, workflows) gathered from YAML files, folders or Python factories.

Lint and the loader both work on these entries, so a rule is written once and applies to YAML and Python
configs alike; every entry knows where its keys are, for messages that name the file, line and key.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from marsrag.errors import ConfigError
from marsrag.tasks._yaml import Position, YamlDoc, read_yaml
from marsrag.tasks.config import AgentConfig, ProjectConfig, TaskConfig, ToolConfig, WorkflowConfig

EntryKind = Literal["agent", "tool", "task", "workflow"]
_KIND_BY_STEM: dict[str, EntryKind] = {"agents": "agent", "tools": "tool", "tasks": "task", "workflows": "workflow"}
_SECTION_KIND = _KIND_BY_STEM
YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Entry:
    """One named agent, task or workflow, with the raw mapping it was written as."""

    kind: EntryKind
    name: str
    data: Any
    path: str
    doc: YamlDoc | None = None
    key_path: tuple[str, ...] = ()
    fixed: Position = Position(1, 1)

    def at(self, key: str | None = None) -> Position:
        """Where this entry (or one of its keys) is written."""
        if self.doc is None:
            return self.fixed
        return self.doc.position(*self.key_path, *((key,) if key else ()))

    def at_keys(self, keys: Sequence[str]) -> Position:
        """Where a key nested in this entry is written (``("experiment", "arms", "soft", "weight")``)."""
        if self.doc is None:
            return self.fixed
        return self.doc.position(*self.key_path, *keys)

    def at_offset(self, key: str, offset: int) -> Position:
        """Where character ``offset`` of this entry's string value ``key`` is written."""
        if self.doc is None or not isinstance(self.data, Mapping):
            return self.at(key)
        return self.doc.line_in_value((*self.key_path, key), offset, str(self.data.get(key, "")))


@dataclass
class ConfigSet:
    """Entries that reference each other by name: one config folder, one file, or one Python factory.

    ``complete`` is true for a whole config (a folder, a factory's ``ProjectConfig``): what it does not define
    does not exist. A file linted alone may lean on agents defined elsewhere.
    """

    label: str
    entries: list[Entry] = field(default_factory=list)
    problems: list[tuple[str, Position, str]] = field(default_factory=list)
    docs: list[YamlDoc] = field(default_factory=list)
    complete: bool = False

    def of(self, kind: EntryKind) -> list[Entry]:
        """The entries of one kind, in file order."""
        return [entry for entry in self.entries if entry.kind == kind]

    def names(self, kind: EntryKind) -> set[str]:
        """The names defined for one kind."""
        return {entry.name for entry in self.entries if entry.kind == kind}


def _infer_kind(value: Any) -> EntryKind:
    if isinstance(value, Mapping):
        if "tasks" in value:
            return "workflow"
        if "role" in value or "goal" in value:
            return "agent"
    return "task"


def entries_from_doc(doc: YamlDoc, config: ConfigSet) -> None:
    """Add the entries of one YAML document to ``config`` (shape problems are recorded, not raised)."""
    config.docs.append(doc)
    data = doc.data
    if data is None:
        return
    if not isinstance(data, Mapping):
        config.problems.append((doc.path, Position(1, 1), "the top level must be a mapping of names to entries"))
        return
    stem = Path(doc.path).stem.lower()
    if stem in _KIND_BY_STEM:
        sections: list[tuple[EntryKind | None, tuple[str, ...], Mapping[str, Any]]] = [(_KIND_BY_STEM[stem], (), data)]
    elif set(data) <= set(_SECTION_KIND) and all(isinstance(v, Mapping) or v is None for v in data.values()):
        sections = [(_SECTION_KIND[str(key)], (str(key),), value or {}) for key, value in data.items()]
    else:
        sections = [(None, (), data)]
    for kind, prefix, mapping in sections:
        for name, value in mapping.items():
            entry_kind = kind or _infer_kind(value)
            config.entries.append(Entry(entry_kind, str(name), value, doc.path, doc, (*prefix, str(name))))


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def config_sets_from_paths(paths: Iterable[Path]) -> list[ConfigSet]:
    """One config set per folder (its YAML files together) or per file named directly.

    A file named directly is read together with its sibling ``agents.yaml``/``tasks.yaml``/``workflows.yaml``,
    so cross-file rules (unknown agent, unknown task) still see the whole config.

    Raises:
        ConfigError: a path does not exist, cannot be read, or is not valid YAML.
    """
    sets: list[ConfigSet] = []
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix.lower() in YAML_SUFFIXES and p.is_file())
            config = ConfigSet(_display(path), complete=True)
        elif path.exists():
            siblings = [path.with_name(f"{stem}{path.suffix}") for stem in _KIND_BY_STEM]
            is_standard = path.stem.lower() in _KIND_BY_STEM
            files = [path] + ([s for s in siblings if s.exists() and s != path] if is_standard else [])
            config = ConfigSet(_display(path))
        else:
            raise ConfigError(f"{path}: no such file or directory")
        for file in files:
            entries_from_doc(read_yaml(file, _display(file)), config)
        sets.append(config)
    return sets


def config_set_from_factory(spec: str) -> ConfigSet:
    """Entries from a Python factory ``package.module:function`` returning task (or project) configs.

    Raises:
        ConfigError: the spec is malformed, the module or function cannot be imported, or it fails.
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"{spec}: expected 'package.module:factory'")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"{spec}: cannot import: {error}") from None
    try:
        produced = factory() if callable(factory) else factory
    except Exception as error:  # noqa: BLE001 - user code: report, never crash the linter
        raise ConfigError(f"{spec}: the factory raised {type(error).__name__}: {error}") from None
    try:
        line = inspect.getsourcelines(factory)[1]
    except (OSError, TypeError):
        line = 1
    config = ConfigSet(spec, complete=isinstance(produced, ProjectConfig))
    items = produced.agents.values() if isinstance(produced, ProjectConfig) else []
    models: list[Any] = list(items)
    if isinstance(produced, ProjectConfig):
        models += [*produced.tools.values(), *produced.tasks.values(), *produced.workflows.values()]
    elif isinstance(produced, Mapping):
        models += list(produced.values())
    else:
        models += list(produced)
    kinds: dict[type, EntryKind] = {
        AgentConfig: "agent",
        ToolConfig: "tool",
        TaskConfig: "task",
        WorkflowConfig: "workflow",
    }
    for model in models:
        kind = kinds.get(type(model))
        if kind is None:
            raise ConfigError(f"{spec}: the factory returned {type(model).__name__}, not a MarsRAG config")
        data = model.model_dump(exclude={"name"}, exclude_none=True)
        config.entries.append(Entry(kind, model.name, data, spec, fixed=Position(line, 1)))
    return config
