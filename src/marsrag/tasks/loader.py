"""Loading a config folder into a :class:`ProjectConfig`, checked by the same rules as ``marsrag lint``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from marsrag.errors import ConfigError
from marsrag.tasks.config import AgentConfig, ProjectConfig, TaskConfig, ToolConfig, WorkflowConfig
from marsrag.tasks.lint import lint_config
from marsrag.tasks.sources import ConfigSet, Entry, config_sets_from_paths

_MODELS: dict[str, type[BaseModel]] = {
    "agent": AgentConfig,
    "tool": ToolConfig,
    "task": TaskConfig,
    "workflow": WorkflowConfig,
}


def sample_config_dir() -> Path:
    """The sample config shipped inside the package."""
    return Path(str(resources.files("marsrag.tasks").joinpath("sample_config")))


def default_config_dir() -> Path:
    """``./config`` when it exists, else the sample config shipped inside the package."""
    local = Path("config")
    return local if local.is_dir() else sample_config_dir()


def load_config(path: str | Path | None = None) -> ProjectConfig:
    """Read a config folder (``agents.yaml``, ``tasks.yaml``, ``workflows.yaml``) into checked models.

    Raises:
        ConfigError: a file is unreadable or invalid YAML, or a lint rule of error severity fails; the
            message names the file, the line and the key.
    """
    folder = Path(path) if path is not None else default_config_dir()
    if not folder.is_dir():
        raise ConfigError(f"{folder}: not a config folder (expected agents.yaml, tasks.yaml, workflows.yaml)")
    (config,) = config_sets_from_paths([folder])
    return project_from_set(config)


def project_from_set(config: ConfigSet) -> ProjectConfig:
    """Check a config set with the lint rules and build its models.

    Raises:
        ConfigError: the first error-severity finding, or a value the models reject.
    """
    errors = [finding for finding in lint_config(config) if finding.severity == "error"]
    if errors:
        more = f" (and {len(errors) - 1} more: run marsrag lint)" if len(errors) > 1 else ""
        raise ConfigError(errors[0].to_text() + more)
    built: dict[str, dict[str, Any]] = {kind: {} for kind in _MODELS}
    for entry in config.entries:
        built[entry.kind][entry.name] = _build(entry)
    return ProjectConfig(
        source=config.label,
        agents=built["agent"],
        tools=built["tool"],
        tasks=built["task"],
        workflows=built["workflow"],
    )


def _build(entry: Entry) -> BaseModel:
    try:
        return _MODELS[entry.kind].model_validate({**entry.data, "name": entry.name})
    except ValidationError as error:
        detail = error.errors(include_url=False)[0]
        key = str(detail["loc"][0]) if detail["loc"] else None
        position = entry.at(key)
        where = f"{entry.path}:{position.line}:{position.column}"
        message = str(detail["msg"]).removeprefix("Value error, ")
        named = f", key {key!r}" if key is not None else ""
        raise ConfigError(f"{where}: {entry.kind} {entry.name!r}{named}: {message}") from None
