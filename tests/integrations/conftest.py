"""Fixtures for tests that run real CrewAI crews with the replay LLM."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from marsrag.tasks import ProjectConfig, WorkflowConfig, load_config, sample_config_dir
from tests.contract.samples import CONTENT

VALID = json.dumps(CONTENT)


@pytest.fixture(scope="session")
def sample_project() -> ProjectConfig:
    """The sample config shipped in the package."""
    return load_config(sample_config_dir())


@pytest.fixture
def single_task_project(sample_project: ProjectConfig) -> Callable[[str, str], ProjectConfig]:
    """A project whose only workflow runs one task of the sample config under a given loop mode."""

    def make(task: str, mode: str = "hard") -> ProjectConfig:
        workflow = WorkflowConfig(name=f"only_{task}", kind="user_facing", loop_mode=mode, tasks=[task])  # type: ignore[arg-type]
        return sample_project.model_copy(update={"workflows": {workflow.name: workflow}})

    return make
