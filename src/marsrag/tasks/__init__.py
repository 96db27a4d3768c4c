"""Narrative task and workflow configs, YAML loading and the contract lint.

Public interface::

    from marsrag.tasks import TaskConfig, WorkflowConfig, AgentConfig, ProjectConfig, load_config
"""

from marsrag.tasks.config import AgentConfig, ProjectConfig, TaskConfig, ToolConfig, WorkflowConfig
from marsrag.tasks.lint import RULES, Finding, lint_config
from marsrag.tasks.loader import default_config_dir, load_config, sample_config_dir

__all__ = [
    "RULES",
    "AgentConfig",
    "Finding",
    "ProjectConfig",
    "TaskConfig",
    "ToolConfig",
    "WorkflowConfig",
    "default_config_dir",
    "lint_config",
    "load_config",
    "sample_config_dir",
]
