"""Library functions behind ``marsrag metrics``: each takes the same keyword arguments as the CLI flags."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from marsrag.metrics.compute import compute_metrics
from marsrag.metrics.definitions import LoopMetrics
from marsrag.metrics.tune import TuneRules, recommend, write_recommendations
from marsrag.metrics.window import Window, window
from marsrag.store import open_store
from marsrag.tasks.loader import default_config_dir, load_config


def metrics(
    *, db: str | None = None, since: str | None = None, until: str | None = None, workflow: str | None = None
) -> LoopMetrics:
    """The six metrics of the store at ``db`` over the window (default all history), optionally one workflow.

    Raises:
        InputError: an unreadable ``since``/``until``.
        StoreError: the store cannot be opened.
    """
    chosen = window(since, until)
    return metrics_in(db=db, window=chosen, workflow=workflow)


def metrics_in(*, db: str | None = None, window: Window | None = None, workflow: str | None = None) -> LoopMetrics:
    """:func:`metrics` with a parsed window."""
    with open_store(db) as store:
        return compute_metrics(store, window, workflow)


def metrics_document(
    *, db: str | None = None, since: str | None = None, until: str | None = None, workflow: str | None = None
) -> dict[str, Any]:
    """``marsrag metrics --format json``: metric name -> ``{"value", "numerator", "denominator"}``."""
    return metrics(db=db, since=since, until=until, workflow=workflow).to_dict()


def tune(
    *,
    db: str | None = None,
    config: str | None = None,
    since: str | None = None,
    until: str | None = None,
    min_executions: int = 20,
    write: bool = False,
) -> dict[str, Any]:
    """Recommend a loop_mode per workflow of the config from the store's outcomes; with ``write``, apply them.

    Returns ``{"window", "recommendations": [...], "written": [workflow names]}``.

    Raises:
        ConfigError: the config does not load (or would not after writing: then nothing is written).
        InputError: a bad window, or ``write`` on the shipped sample config.
    """
    chosen = window(since, until)
    folder = Path(config) if config is not None else default_config_dir()
    project = load_config(folder)
    with open_store(db) as store:
        recommendations = recommend(store, project, chosen, TuneRules(min_executions=min_executions))
    written = write_recommendations(folder, recommendations) if write else []
    return {
        "window": chosen.describe(),
        "recommendations": [r.to_dict() for r in recommendations],
        "written": written,
    }
