"""The statistics of an experiment's comparison: intervals, sample sizes and the sample-ratio check.

Every distribution comes from a library made for it (statsmodels, SciPy, NumPy's random generator); this
module only hands them the counts. Rates are compared with Newcombe's hybrid score interval (built on Wilson's
interval of each rate), session depth with a bootstrap over the two depth histograms, the sessions needed with
the power of a two-sample test, and the split of sessions with a chi-square goodness-of-fit test.

NumPy, SciPy and statsmodels are imported inside the functions: the fast commands (``validate``, ``schema``,
``lint``) and the store commands import this package without paying for them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from marsrag.experiments.weights import weight_shares

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "ALPHA",
    "BOOTSTRAP_RESAMPLES",
    "POWER",
    "SRM_ALPHA",
    "DepthDifference",
    "Interval",
    "SampleRatio",
    "depth_difference",
    "depth_sessions_needed",
    "rate_difference",
    "rate_differences",
    "rate_sessions_needed",
    "sample_ratio",
    "wilson_interval",
]

#: The two-sided significance level of every interval (95% intervals) and of the sample-size calculation.
ALPHA = 0.05
#: The power the sample size is computed for.
POWER = 0.8
#: A sample ratio mismatch is flagged below this p-value (the usual threshold: a real mismatch is a bug in the
#: assignment or in what is counted, and checking it at every look must not cry wolf).
SRM_ALPHA = 0.001
#: Bootstrap resamples of the depth difference.
BOOTSTRAP_RESAMPLES = 2000
#: The bootstrap's seed: the same counts give the same interval at every read of the report.
BOOTSTRAP_SEED = 22


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval ``[low, high]``."""

    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        """Whether 0 lies outside the interval: the difference is significant at its level."""
        return self.low > 0 or self.high < 0

    def covers(self, value: float) -> bool:
        """Whether ``value`` lies inside the interval (bounds included)."""
        return self.low <= value <= self.high

    def to_list(self) -> list[float]:
        """``[low, high]``."""
        return [self.low, self.high]


def wilson_interval(successes: int, trials: int, alpha: float = ALPHA) -> Interval | None:
    """Wilson's score interval of ``successes / trials``; None without trials."""
    if trials <= 0:
        return None
    # lazy: statsmodels (and SciPy under it) only for the experiment report and tune
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(successes, trials, alpha=alpha, method="wilson")
    return Interval(float(low), float(high))


def rate_difference(
    successes: int, trials: int, base_successes: int, base_trials: int, alpha: float = ALPHA
) -> Interval | None:
    """Newcombe's hybrid score interval of ``successes/trials - base_successes/base_trials``; None when either
    rate has no trials."""
    if trials <= 0 or base_trials <= 0:
        return None
    # lazy: statsmodels (and SciPy under it) only for the experiment report and tune
    from statsmodels.stats.proportion import confint_proportions_2indep

    low, high = confint_proportions_2indep(
        successes, trials, base_successes, base_trials, method="newcomb", compare="diff", alpha=alpha
    )
    return Interval(float(low), float(high))


def rate_differences(cases: Sequence[tuple[int, int, int, int]], alpha: float = ALPHA) -> list[Interval | None]:
    """:func:`rate_difference` of each ``(successes, trials, base_successes, base_trials)``, in one pass.

    Newcombe's hybrid interval is built from the two rates' Wilson intervals (Newcombe 1998, method 10, as
    statsmodels' ``confint_proportions_2indep(method="newcomb")`` builds it); here statsmodels computes every
    Wilson interval of the report in one vectorised call, where a call per difference cost ~0.3 ms each.
    """
    found = [i for i, (_, trials, _, base_trials) in enumerate(cases) if trials > 0 and base_trials > 0]
    out: list[Interval | None] = [None] * len(cases)
    if not found:
        return out
    # lazy: NumPy and statsmodels only for the experiment report and tune
    import numpy as np
    from statsmodels.stats.proportion import proportion_confint

    chosen = np.array([cases[i] for i in found], dtype=float)
    counts, trials = chosen[:, [0, 2]], chosen[:, [1, 3]]
    low, high = proportion_confint(counts, trials, alpha=alpha, method="wilson")
    rates = counts / trials
    difference = rates[:, 0] - rates[:, 1]
    below = np.sqrt((rates[:, 0] - low[:, 0]) ** 2 + (high[:, 1] - rates[:, 1]) ** 2)
    above = np.sqrt((high[:, 0] - rates[:, 0]) ** 2 + (rates[:, 1] - low[:, 1]) ** 2)
    for index, lo, hi in zip(found, difference - below, difference + above, strict=True):
        out[index] = Interval(float(lo), float(hi))
    return out


def rate_sessions_needed(
    rate: float, base_rate: float, *, per_session: float = 1.0, alpha: float = ALPHA, power: float = POWER
) -> int | None:
    """Sessions per arm for a two-sided test at ``alpha`` to detect ``rate`` vs ``base_rate`` with ``power``.

    The test's observations are the rate's denominator (runs, executions, transitions); ``per_session`` of them
    come with each session, so the observations needed are divided by it. None when the rates are equal (no
    difference to detect), ``per_session`` is not a finite number above 0, or the sessions needed are past
    counting (a vanishing difference).
    """
    if rate == base_rate or not (math.isfinite(per_session) and per_session > 0):
        return None
    # lazy: statsmodels (and SciPy under it) only for the experiment report and tune
    from statsmodels.stats.proportion import proportion_effectsize

    effect = abs(float(proportion_effectsize(rate, base_rate)))
    observations = _per_group(effect, alpha, power)
    sessions = None if observations is None else observations / per_session
    return None if sessions is None or not math.isfinite(sessions) else max(1, math.ceil(sessions))


def depth_sessions_needed(
    histogram: Mapping[int, int], base_histogram: Mapping[int, int], *, alpha: float = ALPHA, power: float = POWER
) -> int | None:
    """Sessions per arm for a two-sided t-test at ``alpha`` to detect the difference of the mean depths with
    ``power``, the effect being the observed Cohen's d (pooled standard deviation).

    None when the means are equal or an arm has fewer than two sessions; 2 (the least a t-test takes) when the
    depths do not vary at all but the means differ.
    """
    a, b = _moments(histogram), _moments(base_histogram)
    if a is None or b is None or a[0] < 2 or b[0] < 2 or a[1] == b[1]:
        return None
    (n1, mean1, var1), (n2, mean2, var2) = a, b
    pooled = math.sqrt(((n1 - 1) * var1 + (n2 - 1) * var2) / (n1 + n2 - 2))
    if pooled == 0:
        return 2
    normal = _per_group(abs(mean1 - mean2) / pooled, alpha, power)
    if normal is None:
        return None
    # Guenther's correction of the normal sample size for the t-test's heavier tails (what statsmodels'
    # TTestIndPower.solve_power finds to within a session).
    return max(2, math.ceil(normal + _quantiles(alpha, power)[0] ** 2 / 4))


def _per_group(effect: float, alpha: float, power: float) -> float | None:
    """Observations per group for a two-sided two-sample normal test of a standardised ``effect``.

    The closed form statsmodels' ``NormalIndPower.solve_power`` converges to (with the far rejection tail
    neglected, as sample-size tables do: it adds under 1e-6 of power here), from SciPy's normal quantiles:
    ``2 * ((z(1 - alpha/2) + z(power)) / effect) ** 2``. Closed, because the report computes one per metric at
    every read and the root finder took about 5 ms each. None for a vanishing effect (none at all, or so small
    that the observations overflow).
    """
    if not effect or not math.isfinite(effect):
        return None
    z_alpha, z_power = _quantiles(alpha, power)
    ratio = (z_alpha + z_power) / effect
    observations = 2 * ratio * ratio  # a product overflows to inf where a float's ** raises
    return observations if math.isfinite(observations) else None


@functools.cache
def _quantiles(alpha: float, power: float) -> tuple[float, float]:
    """The normal quantiles of a two-sided test at ``alpha`` and of ``power``."""
    # lazy: SciPy only for the experiment report and tune
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2)), float(norm.ppf(power))


@dataclass(frozen=True)
class DepthDifference:
    """The difference of mean and median session depth (arm minus base), each with its bootstrap interval."""

    mean: float
    mean_interval: Interval
    median: float
    median_interval: Interval


def depth_difference(
    histogram: Mapping[int, int],
    base_histogram: Mapping[int, int],
    *,
    alpha: float = ALPHA,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> DepthDifference | None:
    """Percentile bootstrap intervals of the mean and median depth differences, from the two histograms.

    Each resample draws an arm's sessions again from its own histogram (a multinomial draw of the counts per
    depth, all resamples at once), so the cost follows the number of distinct depths, not of sessions. None
    when an arm has no session.
    """
    if not sum(histogram.values()) or not sum(base_histogram.values()):
        return None
    # lazy: NumPy only for the experiment report and tune
    import numpy as np

    rng = np.random.default_rng(seed)
    means, medians = _resampled(histogram, rng, resamples)
    base_means, base_medians = _resampled(base_histogram, rng, resamples)
    observed = _stats(histogram)
    base = _stats(base_histogram)
    # Both percentile pairs in one call (each call costs ~50 us of NumPy's dispatch).
    tails = [alpha / 2, 1 - alpha / 2]
    (mean_low, mean_high), (median_low, median_high) = np.quantile(
        np.stack([means - base_means, medians - base_medians]), tails, axis=1
    ).T
    return DepthDifference(
        observed[0] - base[0],
        Interval(float(mean_low), float(mean_high)),
        observed[1] - base[1],
        Interval(float(median_low), float(median_high)),
    )


def _resampled(
    histogram: Mapping[int, int], rng: np.random.Generator | None, resamples: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The mean and median depth of ``resamples`` bootstrap samples of the histogram's sessions (NumPy arrays);
    without ``rng``, of the histogram itself (one row)."""
    # lazy: NumPy only for the experiment report and tune
    import numpy as np

    depths = np.array(sorted(histogram), dtype=float)
    counts = np.array([histogram[int(depth)] for depth in depths], dtype=np.int64)
    sessions = int(counts.sum())
    drawn = counts[None, :] if rng is None else rng.multinomial(sessions, counts / sessions, size=resamples)
    means = drawn @ depths / sessions
    # The median of a sample from its counts: the depths at ranks (n-1)//2 and n//2 (0-based), averaged.
    cumulative = drawn.cumsum(axis=1)
    lower = depths[(cumulative > (sessions - 1) // 2).argmax(axis=1)]
    upper = depths[(cumulative > sessions // 2).argmax(axis=1)]
    return means, (lower + upper) / 2


def _stats(histogram: Mapping[int, int]) -> tuple[float, float]:
    """The mean and median depth of a histogram with sessions."""
    means, medians = _resampled(histogram, None, 1)
    return float(means[0]), float(medians[0])


def _moments(histogram: Mapping[int, int]) -> tuple[int, float, float] | None:
    """Sessions, mean and sample variance of a depth histogram; None without a session."""
    sessions = sum(histogram.values())
    if not sessions:
        return None
    mean = sum(depth * count for depth, count in histogram.items()) / sessions
    if sessions < 2:
        return sessions, mean, 0.0
    squares = sum(count * (depth - mean) ** 2 for depth, count in histogram.items())
    return sessions, mean, squares / (sessions - 1)


@dataclass(frozen=True)
class SampleRatio:
    """The sample-ratio-mismatch check: the chi-square p-value of the sessions per arm against the configured
    weights (None without sessions), and whether it is below :data:`SRM_ALPHA`."""

    p_value: float | None
    mismatch: bool

    def to_dict(self) -> dict[str, float | bool | None]:
        """``{"p_value", "mismatch"}``."""
        return {"p_value": self.p_value, "mismatch": self.mismatch}


def sample_ratio(sessions: Sequence[int], weights: Sequence[float], threshold: float = SRM_ALPHA) -> SampleRatio:
    """Chi-square goodness of fit of ``sessions`` per arm to the split ``weights`` (relative, in the same order).

    No p-value (None, no mismatch) without sessions, with fewer than two arms, or when no weight is a finite
    number above 0 (there is no split to test against). An arm whose weight gets no share (not a finite number
    above 0, or too small beside the others to count) drops out of the test while it has no sessions; with one
    it is a mismatch (p = 0): the split cannot give it any. Never nan, never a division by zero.
    """
    total = sum(sessions)
    shares = weight_shares(weights) if len(weights) == len(sessions) else None
    if total == 0 or len(sessions) < 2 or shares is None:
        return SampleRatio(None, False)
    # lazy: SciPy only for the experiment report and tune
    from scipy.special import chdtrc

    # Pearson's statistic and the chi-square survival function: what scipy.stats.chisquare returns, without its
    # array-policy wrapper (~0.35 ms of a report's ~1.5 ms).
    statistic, tested = 0.0, 0
    for seen, share in zip(sessions, shares, strict=True):
        wanted = share * total
        if wanted > 0:
            gap = seen - wanted
            statistic += gap * gap / wanted  # a product overflows to inf (p = 0) where a float's ** raises
            tested += 1
        elif seen:
            return SampleRatio(0.0, True)
    # One arm left to test: every session is where the split can put them, a perfect fit.
    p = float(chdtrc(tested - 1, statistic)) if tested > 1 else 1.0
    return SampleRatio(p, p < threshold)
