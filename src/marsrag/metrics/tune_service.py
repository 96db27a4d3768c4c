"""Library function behind ``marsrag tune``: it takes the same keyword arguments as the CLI flags."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from marsrag.metrics.service import check_workflow
from marsrag.metrics.tune import TuneRules, recommend, write_recommendations
from marsrag.metrics.window import window
from marsrag.store import open_store
from marsrag.tasks.loader import default_config_dir, load_config


def tune(
    *,
    db: str | None = None,
    config: str | None = None,
    since: str | None = None,
    until: str | None = None,
    min_executions: int = 20,
    write: bool = False,
    workflow: str | None = None,
) -> dict[str, Any]:
    """Recommend a loop_mode per workflow of the config (or only ``workflow``) from the store's outcomes; with
    ``write``, apply them.

    Returns ``{"window", "recommendations": [...], "written": [workflow names]}``.

    Raises:
        ConfigError: the config does not load (or would not after writing: then nothing is written).
        InputError: a bad window, ``write`` on the shipped sample config, or a workflow neither the config nor
            the store knows.
    """
    chosen = window(since, until)
    folder = Path(config) if config is not None else default_config_dir()
    project = load_config(folder)
    with open_store(db) as store:
        check_workflow(store, workflow, folder)
        recommendations = recommend(store, project, chosen, TuneRules(min_executions=min_executions))
    if workflow is not None:
        recommendations = [r for r in recommendations if r.workflow == workflow]
    written = write_recommendations(folder, recommendations) if write else []
    return {
        "window": chosen.describe(),
        "recommendations": [r.to_dict() for r in recommendations],
        "written": written,
    }
