"""The loop metrics from the store's counts: the six figures per group of runs, or over all of them.

The store counts (:meth:`marsrag.store.RunStore.loop_counts`: from the rollups its writes keep, with the raw
rows of a window's partial days); this module turns its numerators, denominators and depth histograms into
:class:`LoopMetrics`. One function computes everything (:func:`metrics_by`); the overall figures are the same
counts with no grouping.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from marsrag.metrics.definitions import SPLITS, Depth, LoopMetrics, Rate, SplitRate
from marsrag.metrics.window import Window
from marsrag.store import GroupKey, LoopCounts, RunStore

__all__ = ["GroupKey", "compute_metrics", "loop_metrics", "metrics_by", "session_depth"]


def compute_metrics(store: RunStore, window: Window | None = None, workflow: str | None = None) -> LoopMetrics:
    """The six metrics and helpful_rate over ``window`` (default: all history), for one workflow or all."""
    return metrics_by(store, window, workflow, by=()).get((), loop_metrics(LoopCounts()))


def metrics_by(
    store: RunStore, window: Window | None = None, workflow: str | None = None, *, by: Sequence[GroupKey] = ()
) -> dict[tuple[Any, ...], LoopMetrics]:
    """The six metrics per group (``workflow``, ``day`` of the run's creation in UTC, or both), in the window.

    Keys are tuples in the order of ``by`` (days as :class:`datetime.date`); a group with no runs is absent.
    """
    window = window or Window()
    grouped = store.loop_counts(since=window.since, until=window.until, workflow=workflow, by=by)
    return {key: loop_metrics(counts) for key, counts in grouped.items()}


def session_depth(store: RunStore, window: Window | None = None, workflow: str | None = None) -> Depth:
    """Runs per session of the sessions that started in the window (all workflows pooled: a session spanning
    two counts once)."""
    window = window or Window()
    return Depth.from_histogram(store.session_depths(since=window.since, until=window.until, workflow=workflow))


def loop_metrics(count: LoopCounts) -> LoopMetrics:
    """The six metrics and helpful_rate of one group's counts, the follow rate by kind and helpful_rate by target.

    A follow's kind splits the follows (numerators), over the same denominator: the offering runs.
    """
    kind, _ = SPLITS["loop_follow_rate"]
    target, _ = SPLITS["helpful_rate"]
    follows = {
        "suggested": Rate(count.followed - count.followed_edited, count.offering),
        "edited": Rate(count.followed_edited, count.offering),
    }
    ratings = {
        "answer": Rate(count.answer_up, count.answer_votes),
        "next_action": Rate(count.next_action_up, count.next_action_votes),
    }
    up, votes = count.answer_up + count.next_action_up, count.answer_votes + count.next_action_votes
    return LoopMetrics(
        loop_schema_pass_rate=Rate(count.first_valid, count.executions),
        loop_follow_rate=SplitRate(count.followed, count.offering, kind, follows),
        downstream_action_rate=Rate(count.downstream, count.completed),
        session_depth=Depth.from_histogram(count.depths),
        repair_rate=Rate(count.repaired, count.executions),
        fallback_rate=Rate(count.fallbacks, count.transitions),
        helpful_rate=SplitRate(up, votes, target, ratings),
        unsupported_rate=Rate(count.unsupported, count.assessed),
    )
