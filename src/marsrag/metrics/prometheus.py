"""The loop events and metrics as Prometheus metric families, read from the database at scrape time.

:class:`LoopMetricsCollector` holds no counts of its own: every ``collect()`` asks the store for the same counts
as ``marsrag metrics`` and the events per name, in one read (:meth:`marsrag.store.RunStore.metric_totals`: on
the SQL store one query of the all-time rollup rows), so any number of stateless server processes over one
database export the same numbers, and they are the CLI's.

Exported families (every gauge but the ``overall`` ones is labelled by ``workflow``, over all history):

- ``marsrag_loop_events_total{name}``: stored events per event name (every name of spec section 8, 0 when
  none).
- ``marsrag_<rate>`` for the five rates and ``helpful_rate``, with ``marsrag_<rate>_numerator`` and
  ``_denominator`` (the follow kinds and rated parts are not exported: ``marsrag metrics`` has them). A rate whose
  denominator is 0 has no sample for that workflow (no data is not 0%, and a NaN would poison ``sum()``);
  its numerator and denominator (0) are always there, so ``sum(num) / sum(den)`` is the cross-workflow rate.
- ``marsrag_session_depth_mean``, ``_p50``, ``_max`` and ``marsrag_sessions``: runs per session within one
  workflow.
- ``marsrag_overall_session_depth_mean``, ``_p50``, ``_max`` and ``marsrag_overall_sessions``: runs per
  session over every workflow. Unlike the rates these cannot be derived from the per-workflow families (a
  session whose runs span two workflows counts once here, once per workflow there).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from marsrag.metrics.compute import loop_metrics
from marsrag.metrics.definitions import DEFINITIONS, REPORTED_RATE_NAMES, Depth, LoopMetrics
from marsrag.state import EVENT_NAMES
from marsrag.store import RunStore

PREFIX = "marsrag_"
#: The counter family (the exposition adds ``_total``).
EVENTS_FAMILY = "marsrag_loop_events"
#: Session depth per workflow: family name -> (Depth attribute, help).
DEPTH_FAMILIES: dict[str, tuple[str, str]] = {
    "marsrag_session_depth_mean": ("value", "Mean runs per session"),
    "marsrag_session_depth_p50": ("p50", "Median runs per session"),
    "marsrag_session_depth_max": ("max", "Most runs in one session"),
    "marsrag_sessions": ("sessions", "Sessions with at least one run"),
}
#: The same over every workflow at once.
OVERALL_PREFIX = "marsrag_overall_"


def rate_family(name: str) -> str:
    """The gauge family of a rate in :data:`REPORTED_RATE_NAMES` (``repair_rate`` -> ``marsrag_repair_rate``)."""
    return PREFIX + name


def overall_family(depth_family: str) -> str:
    """The overall (all workflows) family of a session depth family."""
    return OVERALL_PREFIX + depth_family.removeprefix(PREFIX)


def family_names() -> list[str]:
    """Every family the collector exports, counters without their ``_total`` suffix."""
    rates = [
        rate_family(name) + suffix for name in REPORTED_RATE_NAMES for suffix in ("", "_numerator", "_denominator")
    ]
    return [EVENTS_FAMILY, *rates, *DEPTH_FAMILIES, *(overall_family(name) for name in DEPTH_FAMILIES)]


class LoopMetricsCollector(Collector):
    """Events and loop metrics of ``store``, queried anew at every ``collect()``.

    Raises (from ``collect()``):
        StoreError: the database cannot be read (the scrape fails rather than exporting partial numbers).
    """

    def __init__(self, store: RunStore) -> None:
        self.store = store

    def describe(self) -> Iterable[Metric]:
        """The families without samples, so registering the collector does not query the database."""
        return list(_families())

    def collect(self) -> Iterable[Metric]:
        """Query the database now (one read) and return every family with its samples."""
        # The store's StoreError ("cannot read the loop metrics in URL: ...") fails the scrape as a whole.
        totals = self.store.metric_totals()
        counts = _every_name(totals.events)
        per_workflow = {key: loop_metrics(count) for key, count in totals.per_workflow.items()}
        return list(_families(counts, per_workflow, Depth.from_histogram(totals.depths)))


def loop_metrics_registry(store: RunStore) -> CollectorRegistry:
    """A fresh registry holding only a :class:`LoopMetricsCollector` (never the process-wide default one)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LoopMetricsCollector(store))
    return registry


def event_counts(store: RunStore) -> dict[str, int]:
    """Stored events per name: every name of :data:`EVENT_NAMES` (0 when none), plus any other name stored.

    One ``GROUP BY name`` in the store (:meth:`marsrag.store.RunStore.event_counts`), served by an index.
    """
    return _every_name(store.event_counts())


def _every_name(counts: dict[str, int]) -> dict[str, int]:
    """Events per name with every name of :data:`EVENT_NAMES` present (0 when none stored)."""
    return dict.fromkeys(EVENT_NAMES, 0) | counts


def _families(
    counts: dict[str, int] | None = None,
    per_workflow: dict[tuple[object, ...], LoopMetrics] | None = None,
    overall: Depth | None = None,
) -> Iterator[Metric]:
    # Events carry no workflow column: a workflow label would join every event to its run at every scrape
    # (a hash join over millions of rows), where a GROUP BY name reads only the name index. The per-workflow
    # view of what the events count is in the gauges below (their numerators and denominators).
    loop_events = CounterMetricFamily(
        EVENTS_FAMILY,
        "Stored loop events per event name (spec section 8), read from the database at scrape time",
        labels=["name"],
    )
    for name, count in sorted((counts or {}).items()):
        loop_events.add_metric([name], count)
    yield loop_events

    workflows = sorted((str(key[0]), metrics) for key, metrics in (per_workflow or {}).items())
    for name in REPORTED_RATE_NAMES:
        numerator_text, _, denominator_text = DEFINITIONS[name].partition(" / ")
        rate = GaugeMetricFamily(
            rate_family(name),
            f"{name}: {DEFINITIONS[name]}; per workflow, all history; no sample while the denominator is 0",
            labels=["workflow"],
        )
        numerator = GaugeMetricFamily(
            rate_family(name) + "_numerator", f"{name} numerator: {numerator_text}", labels=["workflow"]
        )
        denominator = GaugeMetricFamily(
            rate_family(name) + "_denominator", f"{name} denominator: {denominator_text}", labels=["workflow"]
        )
        for workflow, metrics in workflows:
            figures = metrics.rate(name)
            if figures.value is not None:
                rate.add_metric([workflow], figures.value)
            numerator.add_metric([workflow], figures.numerator)
            denominator.add_metric([workflow], figures.denominator)
        yield from (rate, numerator, denominator)

    for family, (attribute, text) in DEPTH_FAMILIES.items():
        depth = GaugeMetricFamily(
            family, f"{text} (session_depth) within each workflow, all history", labels=["workflow"]
        )
        for workflow, metrics in workflows:
            value = _depth(metrics.session_depth, attribute)
            if value is not None:
                depth.add_metric([workflow], value)
        yield depth
    for family, (attribute, text) in DEPTH_FAMILIES.items():
        everywhere = GaugeMetricFamily(
            overall_family(family), f"{text} (session_depth) over all workflows at once, all history"
        )
        value = _depth(overall, attribute) if overall is not None else None
        if value is not None:
            everywhere.add_metric([], value)
        yield everywhere


def _depth(depth: Depth, attribute: str) -> float | None:
    value = getattr(depth, attribute)
    return None if value is None else float(value)
