"""The experiment report: per arm the loop metrics, between arms the differences with their intervals.

Built from a workflow's :class:`~marsrag.tasks.config.ExperimentConfig` and the store's counts per arm
(:meth:`marsrag.store.RunStore.loop_counts` with ``experiment=NAME, by=("arm",)``). Each arm's metrics are
those of :mod:`marsrag.metrics.definitions` (plus ``helpful_rate``, from the feedback counts); each arm after
the first (the baseline, in config order) is compared with it on every metric
(:mod:`marsrag.experiments.statistics`). It sits beside the weekly review: a report over the same counts.

The report also says when it must not be acted on yet: a sample ratio mismatch (the sessions per arm do not
follow the configured split: something assigns or counts wrongly), and a peek (the planned sample size is not
reached: reading a fixed-horizon test again and again and stopping at the first significant difference
inflates false positives far beyond 5%).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from marsrag.experiments.statistics import (
    DepthDifference,
    Interval,
    SampleRatio,
    depth_difference,
    depth_sessions_needed,
    rate_differences,
    rate_sessions_needed,
    sample_ratio,
)
from marsrag.metrics.compute import loop_metrics
from marsrag.metrics.definitions import REPORTED_NAMES, REPORTED_RATE_NAMES, UNSUPPORTED_RATE, Rate
from marsrag.store import LoopCounts
from marsrag.tasks.config import ExperimentConfig

__all__ = [
    "GUARDRAILS",
    "LOWER_IS_BETTER",
    "PRIMARY_METRIC",
    "REPORT_METRICS",
    "ArmResult",
    "Difference",
    "ExperimentReport",
    "build_report",
]

#: The metric an experiment is decided on (and its sample size planned for): whether people follow the loop.
PRIMARY_METRIC = "loop_follow_rate"
#: Metrics that must not get worse whatever the primary one does: an arm is flagged on them when its rate is
#: higher than the other's with the interval of the difference excluding 0.
GUARDRAILS: tuple[str, ...] = ("fallback_rate", "repair_rate")
#: Metrics where less is better; on the others (the pass, follow, downstream and helpful rates, session depth:
#: a loop that carries people on) more is.
LOWER_IS_BETTER = frozenset(GUARDRAILS)
#: The metrics of an arm, in report order: the six, then helpful_rate. Not unsupported_rate: whether the knowledge
#: base has what a goal asks does not depend on the arm its session was assigned.
REPORT_METRICS: tuple[str, ...] = tuple(name for name in REPORTED_NAMES if name != UNSUPPORTED_RATE)


@dataclass(frozen=True)
class ArmResult:
    """One arm: its configuration, its sessions and its counts."""

    name: str
    loop_mode: str
    weight: float
    agent: str | None
    llm: str | None
    counts: LoopCounts

    @property
    def sessions(self) -> int:
        """Sessions assigned to the arm (counted once each, under the arm, with all their runs)."""
        return sum(self.counts.depths.values())

    def rate(self, metric: str) -> Rate:
        """One of the rates (``helpful_rate`` included) by name."""
        return loop_metrics(self.counts).rate(metric)

    def to_dict(self) -> dict[str, Any]:
        """``{"sessions", "loop_mode", metric name: its record...}``."""
        metrics = loop_metrics(self.counts).to_dict()
        reported = {name: metrics[name] for name in REPORT_METRICS}
        return {"sessions": self.sessions, "loop_mode": self.loop_mode, **reported}


@dataclass(frozen=True)
class Difference:
    """``arm`` minus ``base`` on one metric, with its 95% interval and the sessions a test of it needs.

    For ``session_depth`` the difference is of the means (the medians' is in ``median``). ``sessions`` is the
    smaller arm's; ``sessions_needed`` is per arm, at 80% power for the observed difference (None when there
    is none, or no data).
    """

    metric: str
    arm: str
    base: str
    difference: float | None
    interval: Interval | None
    sessions: int
    sessions_needed: int | None
    median: DepthDifference | None = None

    @property
    def significant(self) -> bool:
        """The interval excludes 0."""
        return self.interval is not None and self.interval.excludes_zero

    @property
    def guardrail(self) -> bool:
        """The metric is a guardrail (:data:`GUARDRAILS`)."""
        return self.metric in GUARDRAILS

    @property
    def more_sessions_needed(self) -> int | None:
        """Sessions per arm still to come before the test has its planned power (0 once reached)."""
        return None if self.sessions_needed is None else max(0, self.sessions_needed - self.sessions)

    @property
    def better(self) -> str | None:
        """The arm better on this metric beyond the interval, or None."""
        if not self.significant or self.difference is None:
            return None
        arm_higher = self.difference > 0
        return self.arm if arm_higher != (self.metric in LOWER_IS_BETTER) else self.base

    @property
    def worse(self) -> str | None:
        """The arm worse on this metric beyond the interval, or None."""
        better = self.better
        return None if better is None else (self.base if better == self.arm else self.arm)

    def to_dict(self) -> dict[str, Any]:
        """The JSON record of ``differences``."""
        record: dict[str, Any] = {
            "metric": self.metric,
            "arms": [self.arm, self.base],
            "difference": self.difference,
            "ci": self.interval.to_list() if self.interval else None,
            "significant": self.significant,
            "sessions_needed": self.sessions_needed,
            "more_sessions_needed": self.more_sessions_needed,
            "guardrail": self.guardrail,
            "worse": self.worse,
        }
        if self.median is not None:
            record["median"] = {"difference": self.median.median, "ci": self.median.median_interval.to_list()}
        return record


@dataclass(frozen=True)
class ExperimentReport:
    """The arms of a workflow's experiment and how they differ."""

    name: str
    workflow: str
    arms: tuple[ArmResult, ...]
    srm: SampleRatio
    differences: tuple[Difference, ...]

    @property
    def sessions(self) -> int:
        """Sessions over every arm."""
        return sum(arm.sessions for arm in self.arms)

    @property
    def baseline(self) -> ArmResult:
        """The first arm in config order, which the others are compared with."""
        return self.arms[0]

    def primary(self) -> tuple[Difference, ...]:
        """The differences on :data:`PRIMARY_METRIC`, one per arm after the baseline."""
        return tuple(d for d in self.differences if d.metric == PRIMARY_METRIC)

    @property
    def planned_sessions(self) -> int | None:
        """Sessions per arm the primary metric's observed differences need (the largest), None if none."""
        needed = [d.sessions_needed for d in self.primary() if d.sessions_needed is not None]
        return max(needed) if needed else None

    @property
    def planned_reached(self) -> bool:
        """Every arm has the planned sessions (false while no sample size can be planned)."""
        planned = self.planned_sessions
        return planned is not None and all(arm.sessions >= planned for arm in self.arms)

    @property
    def flagged(self) -> tuple[Difference, ...]:
        """The guardrail differences where an arm is worse beyond the interval."""
        return tuple(d for d in self.differences if d.guardrail and d.worse is not None)

    @property
    def warning(self) -> str | None:
        """What to heed before acting on the report: a sample ratio mismatch, a peek; None when neither."""
        parts = []
        if self.srm.mismatch:
            split = ", ".join(f"{arm.name} {arm.sessions}" for arm in self.arms)
            parts.append(
                f"Sample ratio mismatch: the sessions per arm ({split}) do not follow the configured weights "
                f"(chi-square p = {self.srm.p_value:.2g} < 0.001). Something assigns or counts sessions wrongly: "
                "do not trust the differences until it is found."
            )
        if not self.planned_reached:
            least = min(arm.sessions for arm in self.arms)
            planned = self.planned_sessions
            if planned is None:
                where = f"no difference in {PRIMARY_METRIC} is observed yet ({least} sessions in the smallest arm)"
            else:
                where = f"the smallest arm has {least} of the {planned} sessions planned for {PRIMARY_METRIC}"
            parts.append(
                f"Peek: {where}. A fixed-horizon test read again and again inflates false positives: do not stop "
                "the experiment on a significant difference before every arm has the planned sessions."
            )
        return " ".join(parts) or None

    def to_dict(self) -> dict[str, Any]:
        """``{"experiment": {...}, "arms": {ARM: {...}}, "differences": [...]}``."""
        return {
            "experiment": {
                "name": self.name,
                "workflow": self.workflow,
                "arms": {
                    arm.name: {"loop_mode": arm.loop_mode, "weight": arm.weight, "agent": arm.agent, "llm": arm.llm}
                    for arm in self.arms
                },
                "baseline": self.baseline.name,
                "primary_metric": PRIMARY_METRIC,
                "sessions": self.sessions,
                "planned_sessions": self.planned_sessions,
                "planned_reached": self.planned_reached,
                "srm": self.srm.to_dict(),
                "warning": self.warning,
            },
            "arms": {arm.name: arm.to_dict() for arm in self.arms},
            "differences": [difference.to_dict() for difference in self.differences],
        }


def build_report(workflow: str, experiment: ExperimentConfig, counts: Mapping[str, LoopCounts]) -> ExperimentReport:
    """The report of ``experiment`` on ``workflow`` from the counts per arm name (an arm absent has no runs;
    counts of an arm the config no longer has are left out)."""
    arms = tuple(
        ArmResult(name, arm.loop_mode, arm.weight, arm.agent, arm.llm, counts.get(name) or LoopCounts())
        for name, arm in experiment.arms.items()
    )
    srm = sample_ratio([arm.sessions for arm in arms], [arm.weight for arm in arms])
    base = arms[0]
    differences = tuple(difference for arm in arms[1:] for difference in _differences(arm, base))
    return ExperimentReport(experiment.name, workflow, arms, srm, differences)


def _differences(arm: ArmResult, base: ArmResult) -> list[Difference]:
    """``arm`` against ``base`` on every metric of :data:`REPORT_METRICS`, in order."""
    mine, theirs = loop_metrics(arm.counts), loop_metrics(base.counts)
    rated = [metric for metric in REPORT_METRICS if metric != "session_depth"]
    pairs = {metric: (mine.rate(metric), theirs.rate(metric)) for metric in rated}
    # Every rate's interval at once: one vectorised call, not one per metric.
    intervals = dict(
        zip(
            rated,
            rate_differences([(a.numerator, a.denominator, b.numerator, b.denominator) for a, b in pairs.values()]),
            strict=True,
        )
    )
    return [
        _depth_difference(arm, base)
        if metric == "session_depth"
        else _rate_difference(metric, arm, base, *pairs[metric], intervals[metric])
        for metric in REPORT_METRICS
    ]


def _depth_difference(arm: ArmResult, base: ArmResult) -> Difference:
    metric, sessions = "session_depth", min(arm.sessions, base.sessions)
    depth = depth_difference(arm.counts.depths, base.counts.depths)
    if depth is None:
        return Difference(metric, arm.name, base.name, None, None, sessions, None)
    needed = depth_sessions_needed(arm.counts.depths, base.counts.depths)
    return Difference(metric, arm.name, base.name, depth.mean, depth.mean_interval, sessions, needed, depth)


def _rate_difference(
    metric: str, arm: ArmResult, base: ArmResult, rate: Rate, base_rate: Rate, interval: Interval | None
) -> Difference:
    assert metric in REPORTED_RATE_NAMES, metric
    sessions = min(arm.sessions, base.sessions)
    if rate.value is None or base_rate.value is None:
        return Difference(metric, arm.name, base.name, None, None, sessions, None)
    both = arm.sessions + base.sessions
    per_session = (rate.denominator + base_rate.denominator) / both if both else 0.0
    needed = rate_sessions_needed(rate.value, base_rate.value, per_session=per_session)
    return Difference(metric, arm.name, base.name, rate.value - base_rate.value, interval, sessions, needed)
