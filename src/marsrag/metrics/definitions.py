"""The six loop metrics of spec section 6, the readers' ``helpful_rate`` and the operators' ``unsupported_rate``:
names, definitions, records.

``loop_follow_rate`` is also reported per follow kind (``by_kind``: the next action taken as suggested, or with
the user's own edited goal) and ``helpful_rate`` per rated part (``by_target``), each part a rate of its own
beside the metric's ``{value, numerator, denominator}``. ``unsupported_rate`` is the share of runs whose first
task's support (:class:`marsrag.state.Support`) was ``none``: what users ask that the knowledge base lacks. Its
denominator is the runs whose first task was assessed, so runs stored before support was (migration 0015) are
left out rather than counted as supported: a store upgraded with a long history would otherwise show a rate
diluted by its age, falling for months as old runs dominate, with nothing about the knowledge base changed.

Every number comes from the store's counts (``marsrag.metrics.compute``: rollups the writes keep, equal to an
aggregation over the stored states, transitions and events), so the CLI, Prometheus, the dashboard and the
weekly review agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The metric names, in the spec's order.
METRIC_NAMES: tuple[str, ...] = (
    "loop_schema_pass_rate",
    "loop_follow_rate",
    "downstream_action_rate",
    "session_depth",
    "repair_rate",
    "fallback_rate",
)
#: The rates (every metric but session_depth).
RATE_NAMES: tuple[str, ...] = tuple(name for name in METRIC_NAMES if name != "session_depth")
#: The readers' feedback: thumbs up among the latest ratings of answers and next actions.
HELPFUL_RATE = "helpful_rate"
#: The operators' view of the knowledge base's gaps: runs whose first task's retrieval did not support it.
UNSUPPORTED_RATE = "unsupported_rate"
#: Every reported metric (the six, then helpful_rate and unsupported_rate) and every reported rate.
REPORTED_NAMES: tuple[str, ...] = (*METRIC_NAMES, HELPFUL_RATE, UNSUPPORTED_RATE)
REPORTED_RATE_NAMES: tuple[str, ...] = (*RATE_NAMES, HELPFUL_RATE, UNSUPPORTED_RATE)
#: The parts a split rate is reported by, per metric: the key beside its figures, and the parts' names.
SPLITS: dict[str, tuple[str, tuple[str, ...]]] = {
    "loop_follow_rate": ("by_kind", ("suggested", "edited")),
    HELPFUL_RATE: ("by_target", ("answer", "next_action")),
}

#: One line per metric, for help texts, the dashboard and the README.
DEFINITIONS: dict[str, str] = {
    "loop_schema_pass_rate": "narrative task executions whose first output validated / all narrative task executions",
    "loop_follow_rate": "completed runs whose next action was followed / completed runs that offered a next action",
    "downstream_action_rate": (
        "completed runs followed by a downstream action (a follow, an operator repair or regenerate, or a later "
        "run of the session in a workflow the run routed to) / completed runs"
    ),
    "session_depth": "runs per session: mean, p50 and max",
    "repair_rate": "narrative task executions that ran a repair attempt / all narrative task executions",
    "fallback_rate": "transitions in fallback mode / all transitions (current rows; superseded ones excluded)",
    HELPFUL_RATE: (
        "runs' answers and next actions whose latest rating is a thumbs up / runs' answers and next actions rated "
        "(a re-vote replaces the earlier one)"
    ),
    UNSUPPORTED_RATE: (
        "runs whose first task's retrieved passages did not support it (support none) / runs whose first task's "
        "support was assessed (runs stored before migration 0015 were not: left out)"
    ),
}


@dataclass(frozen=True)
class Rate:
    """A rate with its counts; ``value`` is None when the denominator is 0 (no data is not 0%)."""

    numerator: int
    denominator: int

    @property
    def value(self) -> float | None:
        """numerator / denominator, or None for an empty denominator."""
        return self.numerator / self.denominator if self.denominator else None

    def to_dict(self) -> dict[str, Any]:
        """``{"value", "numerator", "denominator"}``."""
        return {"value": self.value, "numerator": self.numerator, "denominator": self.denominator}


@dataclass(frozen=True)
class SplitRate(Rate):
    """A rate with the same rate per part beside it (``loop_follow_rate`` by kind, ``helpful_rate`` by target)."""

    split: str = ""
    parts: dict[str, Rate] = field(default_factory=dict, hash=False)

    def to_dict(self) -> dict[str, Any]:
        """``{"value", "numerator", "denominator", SPLIT: {PART: {"value", "numerator", "denominator"}}}``."""
        return {**super().to_dict(), self.split: {name: rate.to_dict() for name, rate in self.parts.items()}}


@dataclass(frozen=True)
class Depth:
    """Runs per session: mean (``value``), median and maximum over ``sessions`` sessions (None without any)."""

    value: float | None
    p50: float | None
    max: int | None
    sessions: int

    @classmethod
    def from_histogram(cls, histogram: dict[int, int]) -> Depth:
        """From ``{depth: number of sessions with that depth}``."""
        sessions = sum(histogram.values())
        if not sessions:
            return cls(None, None, None, 0)
        mean = sum(depth * count for depth, count in histogram.items()) / sessions
        ordered = sorted(histogram.items())

        def at(rank: int) -> int:  # the depth of the rank-th session (0-based) in ascending order
            seen = 0
            for depth, count in ordered:
                seen += count
                if rank < seen:
                    return depth
            return ordered[-1][0]

        middle = sessions // 2
        p50 = float(at(middle)) if sessions % 2 else (at(middle - 1) + at(middle)) / 2
        return cls(mean, p50, ordered[-1][0], sessions)

    def to_dict(self) -> dict[str, Any]:
        """``{"value" (the mean), "p50", "max", "sessions"}``."""
        return {"value": self.value, "p50": self.p50, "max": self.max, "sessions": self.sessions}


@dataclass(frozen=True)
class LoopMetrics:
    """The six metrics, helpful_rate and unsupported_rate over one slice of history (a window, a workflow, a day,
    an arm)."""

    loop_schema_pass_rate: Rate
    loop_follow_rate: Rate
    downstream_action_rate: Rate
    session_depth: Depth
    repair_rate: Rate
    fallback_rate: Rate
    helpful_rate: Rate
    unsupported_rate: Rate

    def rate(self, name: str) -> Rate:
        """One of the rates by name."""
        value = getattr(self, name)
        assert isinstance(value, Rate), name
        return value

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``marsrag metrics --format json``: metric name -> its record (the six first)."""
        return {name: getattr(self, name).to_dict() for name in REPORTED_NAMES}
