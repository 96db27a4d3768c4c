"""The names of a config's agents, tasks, tools and workflows: what they may be, checked once for lint and models.

A task's and a workflow's name are stored on every run and task and in the metric rollups' primary key, whose
index rows PostgreSQL caps at about 2.7 kB: a name thousands of characters long made every run fail to store
(the experiment's and the arms' names have a stricter rule of their own, :mod:`marsrag.tasks.experiment_limits`).
So a name is short.
Plain Python: lint imports it.
"""

from __future__ import annotations

from marsrag.tasks.experiment_limits import shown

#: The longest name of an agent, task, tool or workflow: room for any descriptive identifier, and at 4 bytes a
#: character, a task's and a workflow's name together still leave the rollups' key far below PostgreSQL's cap.
ENTRY_NAME_MAX = 128


def entry_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name an agent, task, tool or workflow (``must be ..., not ...``); None when it can.

    Any printable or unprintable text is allowed within the length (every output escapes what it prints; a
    hostile name is shown, not obeyed): only its length is a storage limit.
    """
    rule = f"must be 1-{ENTRY_NAME_MAX} characters and not blank"
    if not isinstance(name, str) or not name.strip():
        return f"{rule}, not {shown(name)}"
    if len(name) > ENTRY_NAME_MAX:
        return f"{rule}, not {shown(name)} ({len(name):,} characters)"
    return None


def check_entry_name(name: str) -> str:
    """``name`` as it is (a pydantic validator); raises ValueError with :func:`entry_name_problem`'s words."""
    problem = entry_name_problem(name)
    if problem is not None:
        raise ValueError(f"a name {problem}")
    return name


__all__ = ["ENTRY_NAME_MAX", "check_entry_name", "entry_name_problem"]
