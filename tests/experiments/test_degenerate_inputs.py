"""The statistics and the split on degenerate inputs: weights that overflow, vanish or are no numbers, arms with
no sessions, rates with nothing between them. Each gives a clear result (None, p = 0 or 1), never nan, never an
exception: the report, tune and the dashboard read them all."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.experiments.assignment import assign_arm
from marsrag.experiments.statistics import (
    depth_difference,
    depth_sessions_needed,
    rate_differences,
    rate_sessions_needed,
    sample_ratio,
)
from marsrag.experiments.weights import scaled_weights, weight_shares
from marsrag.metrics.experiment import build_report
from marsrag.metrics.tune import decide_experiment
from marsrag.store import LoopCounts
from marsrag.tasks.config import ArmConfig, ExperimentConfig
from marsrag.web.dashboard import experiment_panel

#: Any float a weight could be if it skipped validation: nan, infinities, subnormals, negatives, the extremes.
ANY_WEIGHT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
    st.sampled_from([0.0, -0.0, 1e308, 1.7976931348623157e308, 1e-320, 5e-324, math.nan, math.inf]),
)
SESSIONS = st.integers(min_value=0, max_value=10**12)


def unchecked(**weights: float) -> ExperimentConfig:
    """An experiment with these weights, built without validation (as no config can be any more)."""
    arms = {name: ArmConfig.model_construct(loop_mode="hard", weight=w) for name, w in weights.items()}
    return ExperimentConfig.model_construct(name="hard_vs_soft", arms=arms, start=None)


def test_the_reported_weights_give_a_plain_check() -> None:
    """1e308 each (whose sum overflowed: a division by zero) and 1e-320 each (p = nan, "ok"): p = 1, no mismatch."""
    for weight in (1e308, 1e-320, 5e-324):
        assert sample_ratio([5000, 5000], [weight, weight]).to_dict() == {"p_value": 1.0, "mismatch": False}
        assert sample_ratio([6000, 4000], [weight, weight]) == sample_ratio([6000, 4000], [1, 1])


def test_an_arm_the_weights_give_no_share_is_a_mismatch_only_with_sessions() -> None:
    """No share and no sessions: the arm drops out; no share and sessions: p = 0, a mismatch; no split: None."""
    assert sample_ratio([100, 0], [1.0, 0.0]).to_dict() == {"p_value": 1.0, "mismatch": False}
    assert sample_ratio([100, 0, 100], [1.0, math.nan, 1.0]).p_value == 1.0
    assert sample_ratio([100, 1], [1e308, 5e-324]).to_dict() == {"p_value": 0.0, "mismatch": True}
    assert sample_ratio([100, 100], [0.0, -1.0]).to_dict() == {"p_value": None, "mismatch": False}
    assert sample_ratio([100, 100], [1.0]).to_dict() == {"p_value": None, "mismatch": False}


@given(st.lists(st.tuples(SESSIONS, ANY_WEIGHT), max_size=6))
def test_the_sample_ratio_check_is_a_probability_or_none(arms: list[tuple[int, float]]) -> None:
    """Any sessions against any weights: p is None or a number in [0, 1], and a mismatch exactly below 0.001."""
    check = sample_ratio([sessions for sessions, _ in arms], [weight for _, weight in arms])
    if check.p_value is None:
        assert check.mismatch is False
    else:
        assert 0.0 <= check.p_value <= 1.0
        assert check.mismatch == (check.p_value < 0.001)
    json.dumps(check.to_dict(), allow_nan=False)


@given(
    st.lists(SESSIONS, min_size=2, max_size=6).filter(any),
    st.lists(st.floats(min_value=0.001, max_value=1_000_000), min_size=6, max_size=6),
    st.integers(min_value=-1000, max_value=1000),
)
def test_weights_in_the_limits_always_give_a_p_value_whatever_their_scale(
    sessions: list[int], weights: list[float], power: int
) -> None:
    """Weights the config allows, and the same weights times any power of two: the same p-value, never None."""
    weights = weights[: len(sessions)]
    check = sample_ratio(sessions, weights)
    assert check.p_value is not None
    assert sample_ratio(sessions, [math.ldexp(w, power) for w in weights]) == check


@given(st.lists(ANY_WEIGHT, min_size=1, max_size=6))
def test_the_shares_are_a_split_or_none(weights: list[float]) -> None:
    """Shares are finite, at least 0, summing to 1, zero exactly for weights that are no finite positive number."""
    shares = weight_shares(weights)
    usable = [math.isfinite(w) and w > 0 for w in weights]
    if not any(usable):
        assert shares is None and scaled_weights(weights) is None
        return
    assert shares is not None
    assert all(math.isfinite(share) and share >= 0 for share in shares)
    assert math.fsum(shares) == pytest.approx(1.0)
    assert all(share == 0 for share, ok in zip(shares, usable, strict=True) if not ok)


@given(st.lists(ANY_WEIGHT, min_size=2, max_size=5), st.text(max_size=20))
def test_any_weights_assign_a_session_to_an_arm_that_gets_sessions(weights: list[float], session: str) -> None:
    """An experiment whose weights skipped validation still assigns: an arm with a usable weight if there is one."""
    experiment = unchecked(**{f"arm{i}": w for i, w in enumerate(weights)})
    arm = assign_arm(experiment, session)
    assert arm in experiment.arms
    weight = experiment.arms[arm].weight
    assert (math.isfinite(weight) and weight > 0) or not any(math.isfinite(w) and w > 0 for w in weights)


def test_weights_of_1e308_split_sessions_as_equal_weights_do() -> None:
    """The last arm no longer takes every session: 1e308 each splits as 1 each, session by session."""
    sessions = [f"s{i}" for i in range(2000)]
    huge, tiny, even = unchecked(a=1e308, b=1e308), unchecked(a=1e-320, b=1e-320), unchecked(a=1.0, b=1.0)
    assigned = [assign_arm(even, s) for s in sessions]
    assert [assign_arm(huge, s) for s in sessions] == assigned == [assign_arm(tiny, s) for s in sessions]
    assert 900 < Counter(assigned)["a"] < 1100


RATE = st.floats(min_value=0.0, max_value=1.0)


@given(RATE, RATE, st.one_of(st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True), RATE))
def test_the_sessions_needed_for_a_rate_are_a_count_or_none(rate: float, base: float, per_session: float) -> None:
    """Equal or nearly equal rates, a zero, subnormal or non-finite per-session figure: None or a count >= 1."""
    needed = rate_sessions_needed(rate, base, per_session=per_session)
    assert needed is None or (isinstance(needed, int) and needed >= 1)


HISTOGRAM = st.dictionaries(st.integers(min_value=0, max_value=60), st.integers(min_value=0, max_value=500), max_size=6)


@given(HISTOGRAM, HISTOGRAM)
def test_depth_statistics_on_any_histograms_are_finite_or_none(arm: dict[int, int], base: dict[int, int]) -> None:
    """Empty arms, one session, no spread, zero counts: a finite difference and interval or None."""
    difference = depth_difference(arm, base, resamples=50)
    if difference is not None:
        figures = [difference.mean, difference.median, *difference.mean_interval.to_list()]
        assert all(math.isfinite(figure) for figure in figures)
    needed = depth_sessions_needed(arm, base)
    assert needed is None or (isinstance(needed, int) and needed >= 2)


COUNTS = st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)).map(lambda pair: (min(pair), max(pair)))


@given(st.lists(st.tuples(COUNTS, COUNTS), max_size=8))
def test_rate_intervals_on_any_counts_are_finite_or_none(pairs: list[tuple[tuple[int, int], tuple[int, int]]]) -> None:
    """No trials on a side: None; else a finite interval within [-1, 1]."""
    cases = [(s, n, bs, bn) for (s, n), (bs, bn) in pairs]
    for (_, trials, _, base_trials), interval in zip(cases, rate_differences(cases), strict=True):
        if not trials or not base_trials:
            assert interval is None
        else:
            assert interval is not None and -1.0 - 1e-9 <= interval.low <= interval.high <= 1.0 + 1e-9


def arm_counts(sessions: int, followed: int) -> LoopCounts:
    return LoopCounts(
        executions=sessions,
        first_valid=sessions,
        transitions=sessions,
        completed=sessions,
        offering=sessions,
        followed=followed,
        downstream=followed,
        depths={1: sessions} if sessions else {},
    )


def test_the_report_tune_and_the_panel_read_an_experiment_of_extreme_weights() -> None:
    """Weights of 1e308 or 1e-320 (a config from before the limits): the report, tune's decision and the
    dashboard's panel are built, with a plain sample-ratio check and a JSON document without nan."""
    counts = {"hard": arm_counts(200, 60), "soft": arm_counts(200, 90)}
    for weight in (1e308, 1e-320):
        report = build_report("support_answer", unchecked(hard=weight, soft=weight), counts)
        assert report.srm.to_dict() == {"p_value": 1.0, "mismatch": False}
        json.dumps(report.to_dict(), allow_nan=False)
        decision = decide_experiment("user_facing", "hard", report)
        assert (decision.rule, decision.numbers["winner"]) == ("experiment_winner", "soft")
        assert experiment_panel(report).srm == "p = 1"
    empty = build_report("support_answer", unchecked(hard=1e308, soft=1e-320), {})
    assert empty.srm.p_value is None
    assert decide_experiment("user_facing", "hard", empty).rule == "experiment_needs_sessions"
    assert experiment_panel(empty).srm == "no sessions yet"
