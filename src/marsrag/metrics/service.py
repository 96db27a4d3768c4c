"""Library functions behind ``marsrag metrics``: each takes the same keyword arguments as the CLI flags.

The config folder is read (YAML) only to check a workflow the store does not know, so ``metrics`` starts
without the config loader.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from marsrag.errors import ConfigError, InputError
from marsrag.metrics.compute import compute_metrics
from marsrag.metrics.definitions import LoopMetrics
from marsrag.metrics.verify import Verdict
from marsrag.metrics.verify import verify as check_against_rows
from marsrag.metrics.window import Window, window
from marsrag.store import RunStore, open_store


def check_workflow(store: RunStore, workflow: str | None, config: str | Path | None = None) -> None:
    """Refuse a ``workflow`` that neither the config folder (default: ./config or the sample) nor the store knows.

    A config that does not load contributes no names (the store's still count).

    Raises:
        InputError: the workflow is unknown (the message names the closest known one and lists them).
    """
    if workflow is None:
        return
    known = set(store.workflow_names())
    if workflow in known:
        return
    # lazy: the config loader (PyYAML, the lint), only for a workflow the store does not know
    from marsrag.tasks.loader import default_config_dir, load_config

    folder = Path(config) if config is not None else default_config_dir()
    try:
        known |= set(load_config(folder).workflows)
    except ConfigError:
        pass
    if workflow in known:
        return
    close = difflib.get_close_matches(workflow, sorted(known), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    listed = ", ".join(sorted(known)) or "none yet"
    raise InputError(
        f"unknown workflow {workflow!r}: neither the config ({folder}) nor the store has it; {hint}known: {listed}",
        field="workflow",
    )


def metrics(
    *,
    db: str | None = None,
    since: str | None = None,
    until: str | None = None,
    workflow: str | None = None,
    config: str | Path | None = None,
) -> LoopMetrics:
    """The six metrics of the store at ``db`` over the window (default all history), optionally one workflow.

    Raises:
        InputError: an unreadable ``since``/``until``, or a workflow neither ``config`` nor the store knows.
        StoreError: the store cannot be opened.
    """
    chosen = window(since, until)
    return metrics_in(db=db, window=chosen, workflow=workflow, config=config)


def metrics_in(
    *,
    db: str | None = None,
    window: Window | None = None,
    workflow: str | None = None,
    config: str | Path | None = None,
) -> LoopMetrics:
    """:func:`metrics` with a parsed window."""
    with open_store(db) as store:
        check_workflow(store, workflow, config)
        return compute_metrics(store, window, workflow)


def metrics_document(
    *,
    db: str | None = None,
    since: str | None = None,
    until: str | None = None,
    workflow: str | None = None,
    config: str | Path | None = None,
) -> dict[str, Any]:
    """``marsrag metrics --format json``: metric name -> ``{"value", "numerator", "denominator"}``."""
    return metrics(db=db, since=since, until=until, workflow=workflow, config=config).to_dict()


def check_rollups(*, db: str | None = None, rebuild: bool = False, verify: bool = True) -> dict[str, Any]:
    """``marsrag metrics --rebuild`` and/or ``--verify``: ``{"rebuilt": rows or None, "ok", "checked", "differences"}``.

    ``rebuild`` recounts the rollups from the raw rows first; ``verify`` then compares every figure with the raw
    rows (:func:`marsrag.metrics.verify.verify`); without it ``ok`` is true and nothing is checked.

    Raises:
        StoreError: the store cannot be opened, read or written.
    """
    with open_store(db) as store:
        rebuilt = store.rebuild_rollups() if rebuild else None
        verdict = check_against_rows(store) if verify else Verdict(0, ())
    return {"rebuilt": rebuilt, **verdict.to_dict()}
