"""Arm weights as numbers safe to add: the split the assignment hashes into and the sample-ratio check tests.

A config's weights are held to :mod:`marsrag.tasks.experiment_limits`; these functions still take any floats
(a model built without validation, a report of weights that sum oddly) and never overflow, divide by zero or
return nan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def scaled_weights(weights: Sequence[float]) -> list[float] | None:
    """The weights times one power of two that puts the largest in [0.5, 1); None when no weight is usable.

    A power of two scales exactly: the ratios, and every sum and comparison of the split, are the weights' own,
    but a sum of them cannot overflow (1e308 + 1e308) and a subnormal weight (1e-320) becomes a normal number. A
    weight that is not a finite number above 0 counts 0: its arm gets no share.
    """
    usable = [weight if math.isfinite(weight) and weight > 0 else 0.0 for weight in weights]
    top = max(usable, default=0.0)
    if top <= 0:
        return None
    exponent = math.frexp(top)[1]
    return [math.ldexp(weight, -exponent) for weight in usable]


def weight_shares(weights: Sequence[float]) -> list[float] | None:
    """Each weight's share of their sum (together 1); None when no weight is a finite number above 0."""
    scaled = scaled_weights(weights)
    if scaled is None:
        return None
    total = math.fsum(scaled)  # at least 0.5 (the largest), at most the number of weights
    return [weight / total for weight in scaled]


__all__ = ["scaled_weights", "weight_shares"]
