"""The statistics layer on seeded counts: interval coverage, sample sizes, the sample-ratio check.

Each coverage test draws 200 data sets with known true rates (or depth distributions) and counts how often the
95% interval covers the true difference. The floor is the binomial's: at the coverage named below (a little
under the nominal 95%), a count under the floor has a chance below one in a million, so the test cannot flake;
an interval that covers too rarely (a wrong method, a swapped sign) fails it. The intervals' mean width is held
near the normal approximation's, so an interval too wide to mean anything fails too.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from marsrag.experiments.statistics import (
    Interval,
    depth_difference,
    depth_sessions_needed,
    rate_difference,
    rate_differences,
    rate_sessions_needed,
    sample_ratio,
    wilson_interval,
)

SEEDS = 200


def floor(at: float) -> int:
    """The least covering data sets out of SEEDS when the true coverage is ``at``: fewer has P < 1e-6."""
    return int(binom.ppf(1e-6, SEEDS, at))


def test_the_floors_are_what_the_binomial_says() -> None:
    """At a true coverage of 94%, fewer than 169 of 200 has a chance under one in a million."""
    assert floor(0.94) == 169
    assert binom.cdf(floor(0.94) - 1, SEEDS, 0.94) < 1e-6


def test_wilson_matches_its_closed_form_and_has_no_interval_without_trials() -> None:
    """Wilson's score interval of 30/100 (closed form), [0, x] for 0 successes, None for 0 trials."""
    z = 1.959963984540054
    p, n = 0.3, 100
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    interval = wilson_interval(30, 100)
    assert interval is not None
    assert interval.low == pytest.approx(centre - half) and interval.high == pytest.approx(centre + half)
    zero = wilson_interval(0, 10)
    assert zero is not None and zero.low == pytest.approx(0.0) and 0.2 < zero.high < 0.35
    assert wilson_interval(0, 0) is None


def test_newcombe_covers_the_true_difference_of_two_rates() -> None:
    """200 seeded pairs of 200 trials at true rates 0.40 and 0.30: the interval of the difference covers 0.10."""
    p_arm, p_base, n = 0.40, 0.30, 200
    covered, widths = 0, []
    for seed in range(SEEDS):
        rng = np.random.default_rng(seed)
        arm, base = int(rng.binomial(n, p_arm)), int(rng.binomial(n, p_base))
        interval = rate_difference(arm, n, base, n)
        assert interval is not None
        covered += interval.covers(p_arm - p_base)
        widths.append(interval.high - interval.low)
    assert covered >= floor(0.94), covered
    wald = 2 * 1.96 * math.sqrt(p_arm * (1 - p_arm) / n + p_base * (1 - p_base) / n)
    assert np.mean(widths) == pytest.approx(wald, rel=0.1)


def test_newcombe_is_arm_minus_base_and_none_without_trials() -> None:
    """The sign follows the arguments' order; an empty rate has no interval."""
    up = rate_difference(60, 100, 30, 100)
    down = rate_difference(30, 100, 60, 100)
    assert up is not None and down is not None
    assert up.low > 0 and up.excludes_zero and down.high < 0
    assert up.low == pytest.approx(-down.high) and up.high == pytest.approx(-down.low)
    assert rate_difference(1, 0, 1, 10) is None and rate_difference(1, 10, 0, 0) is None


#: Two depth distributions over 1..6 runs per session: the arm's sessions go deeper.
DEPTHS = np.arange(1, 7)
P_BASE = np.array([0.50, 0.20, 0.12, 0.08, 0.06, 0.04])
P_ARM = np.array([0.40, 0.22, 0.14, 0.10, 0.08, 0.06])


def histogram(counts: np.ndarray) -> dict[int, int]:
    return {int(depth): int(count) for depth, count in zip(DEPTHS, counts, strict=True) if count}


def test_the_depth_bootstrap_covers_the_true_difference_of_means() -> None:
    """200 seeded pairs of 200 sessions each: the bootstrap interval of the mean difference covers the true one."""
    n = 200
    true = float((DEPTHS * P_ARM).sum() - (DEPTHS * P_BASE).sum())
    sd = math.sqrt(sum(float(((DEPTHS - (DEPTHS * p).sum()) ** 2 * p).sum()) / n for p in (P_ARM, P_BASE)))
    covered, widths = 0, []
    for seed in range(SEEDS):
        rng = np.random.default_rng(seed)
        arm, base = histogram(rng.multinomial(n, P_ARM)), histogram(rng.multinomial(n, P_BASE))
        result = depth_difference(arm, base)
        assert result is not None
        covered += result.mean_interval.covers(true)
        widths.append(result.mean_interval.high - result.mean_interval.low)
    assert covered >= floor(0.93), covered
    assert np.mean(widths) == pytest.approx(2 * 1.96 * sd, rel=0.15)


def test_the_depth_bootstrap_is_seeded_and_gives_the_observed_differences() -> None:
    """The same histograms give the same intervals; the point estimates are the observed mean and median."""
    arm, base = {1: 40, 2: 30, 3: 30}, {1: 60, 2: 30, 3: 10}
    first, again = depth_difference(arm, base), depth_difference(arm, base)
    assert first == again and first is not None
    assert first.mean == pytest.approx(1.9 - 1.5)
    assert first.median == 1.0  # medians 2 and 1
    assert first.mean_interval.low < first.mean < first.mean_interval.high
    assert first.median_interval.low <= first.median <= first.median_interval.high
    assert depth_difference({}, base) is None and depth_difference(arm, {}) is None


def test_the_bootstrap_median_of_an_even_sample_averages_the_middle_two() -> None:
    """One depth per arm: every resample is the same, so the interval is the point (the even median is 1.5)."""
    result = depth_difference({1: 1, 2: 1}, {1: 2})
    assert result is not None
    assert result.median == 0.5 and result.mean == 0.5
    # A resample of {1, 2} is {1,1}, {1,2} or {2,2}: medians 1, 1.5, 2, so differences from 0 to 1.
    assert result.median_interval.low >= 0 and result.median_interval.high <= 1


def test_sessions_needed_for_rates_is_the_textbook_figure() -> None:
    """0.30 vs 0.40 at 80% power and 5%: 356 per arm (Cohen's h); runs per session divide it; no difference: None."""
    assert rate_sessions_needed(0.40, 0.30) == 356
    assert rate_sessions_needed(0.30, 0.40) == 356
    assert rate_sessions_needed(0.40, 0.30, per_session=2.0) == 178
    assert rate_sessions_needed(0.30, 0.30) is None


def test_sessions_needed_shrinks_as_the_true_difference_grows() -> None:
    """A bigger gap from 0.30 needs fewer sessions per arm, strictly."""
    needed = [rate_sessions_needed(0.30 + gap, 0.30) for gap in (0.02, 0.05, 0.10, 0.20)]
    assert all(isinstance(n, int) for n in needed)
    assert needed == sorted(needed, reverse=True) and len(set(needed)) == 4


def test_sessions_needed_for_depth_uses_cohens_d() -> None:
    """Means 3 and 2 with a pooled sd of about 1 (d ~ 1): 17 per arm, the t-test's textbook figure."""
    assert depth_sessions_needed({2: 50, 4: 50}, {1: 50, 3: 50}) == 17
    assert depth_sessions_needed({1: 50, 3: 50}, {1: 50, 3: 50}) is None
    assert depth_sessions_needed({2: 5}, {1: 5}) == 2  # no spread at all: any two sessions tell them apart
    assert depth_sessions_needed({2: 1}, {1: 5}) is None  # one session is no sample


def test_the_sample_ratio_check_flags_a_60_40_split_and_passes_50_50() -> None:
    """10,000 sessions split 6,000/4,000 against equal weights: flagged; 5,000/5,000 and 5,050/4,950 pass."""
    skewed = sample_ratio([6000, 4000], [50, 50])
    assert skewed.mismatch and skewed.p_value is not None and skewed.p_value < 1e-80
    even = sample_ratio([5000, 5000], [50, 50])
    assert not even.mismatch and even.p_value == pytest.approx(1.0)
    near = sample_ratio([5050, 4950], [1, 1])
    assert not near.mismatch and near.p_value == pytest.approx(0.3173, abs=1e-3)


def test_the_sample_ratio_check_follows_the_configured_weights() -> None:
    """6,000/4,000 is the expected split of weights 60/40 (and 3/2): no mismatch; no sessions: no p-value."""
    assert not sample_ratio([6000, 4000], [60, 40]).mismatch
    assert sample_ratio([6000, 4000], [3, 2]).p_value == pytest.approx(1.0)
    assert sample_ratio([0, 0], [1, 1]).to_dict() == {"p_value": None, "mismatch": False}


def test_an_interval_knows_whether_it_excludes_zero() -> None:
    """Only an interval wholly above or below 0 is significant."""
    assert Interval(0.01, 0.2).excludes_zero and Interval(-0.2, -0.01).excludes_zero
    assert not Interval(-0.1, 0.1).excludes_zero and not Interval(0.0, 0.3).excludes_zero
    assert Interval(-0.1, 0.1).to_list() == [-0.1, 0.1]


@pytest.mark.parametrize("rates", [(0.30, 0.40), (0.05, 0.06), (0.50, 0.52), (0.90, 0.70), (0.01, 0.2)])
def test_sessions_needed_for_rates_agrees_with_statsmodels_root_finder(rates: tuple[float, float]) -> None:
    """The closed form is what NormalIndPower.solve_power converges to, within one session."""
    from statsmodels.stats.power import NormalIndPower
    from statsmodels.stats.proportion import proportion_effectsize

    effect = abs(float(proportion_effectsize(*rates)))
    solved = NormalIndPower().solve_power(effect_size=effect, alpha=0.05, power=0.8, alternative="two-sided")
    assert abs(rate_sessions_needed(*rates) - math.ceil(float(solved))) <= 1  # type: ignore[operator]


@pytest.mark.parametrize("shift", [1, 2, 5, 20])
def test_sessions_needed_for_depth_agrees_with_statsmodels_t_test(shift: int) -> None:
    """Guenther's corrected normal size is TTestIndPower.solve_power's, within one session."""
    from statsmodels.stats.power import TTestIndPower

    base = {1: 40, 2: 30, 3: 20, 4: 10}
    arm = {**base, 4: 10 + shift, 1: 40 - shift}
    n1, m1, v1 = _moments_of(arm)
    n2, m2, v2 = _moments_of(base)
    pooled = math.sqrt(((n1 - 1) * v1 + (n2 - 1) * v2) / (n1 + n2 - 2))
    solved = TTestIndPower().solve_power(effect_size=abs(m1 - m2) / pooled, alpha=0.05, power=0.8)
    assert abs(depth_sessions_needed(arm, base) - math.ceil(float(solved))) <= 1  # type: ignore[operator]


def _moments_of(histogram: dict[int, int]) -> tuple[int, float, float]:
    """Sessions, mean and sample variance of a depth histogram."""
    n = sum(histogram.values())
    mean = sum(d * c for d, c in histogram.items()) / n
    return n, mean, sum(c * (d - mean) ** 2 for d, c in histogram.items()) / (n - 1)


def test_the_batched_newcombe_intervals_are_statsmodels_own() -> None:
    """rate_differences equals confint_proportions_2indep(method="newcomb") case by case; no trials: None."""
    rng = np.random.default_rng(7)
    cases = [(0, 10, 10, 10), (10, 10, 0, 10), (3, 7, 0, 0), (0, 0, 1, 2)]
    for _ in range(60):
        trials, base_trials = (int(n) for n in rng.integers(1, 5000, size=2))
        cases.append((int(rng.integers(0, trials + 1)), trials, int(rng.integers(0, base_trials + 1)), base_trials))
    batched = rate_differences(cases)
    for case, interval in zip(cases, batched, strict=True):
        single = rate_difference(*case)
        if single is None:
            assert interval is None, case
        else:
            assert interval is not None, case
            assert (interval.low, interval.high) == pytest.approx((single.low, single.high), abs=1e-12), case


@pytest.mark.parametrize(
    ("sessions", "weights"),
    [([5000, 5000], [50, 50]), ([6000, 4000], [1, 1]), ([10, 31, 59], [1, 3, 6]), ([1, 0], [50, 50]), ([7, 9], [2, 1])],
)
def test_the_sample_ratio_p_value_is_scipys_chisquare(sessions: list[int], weights: list[float]) -> None:
    """The same p-value as scipy.stats.chisquare of the sessions against the weights' expected counts."""
    from scipy.stats import chisquare

    total = sum(sessions)
    expected = [w * total / sum(weights) for w in weights]
    assert sample_ratio(sessions, weights).p_value == pytest.approx(float(chisquare(sessions, expected)[1]), rel=1e-9)
