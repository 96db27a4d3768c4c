"""Loop metrics (spec section 6): definitions, their counts (rollups kept by the store), time windows.

The heavy parts (SQLAlchemy) load with :mod:`marsrag.metrics.compute`; this package imports light.
"""

from __future__ import annotations

from marsrag.metrics.definitions import (
    DEFINITIONS,
    HELPFUL_RATE,
    METRIC_NAMES,
    RATE_NAMES,
    REPORTED_NAMES,
    REPORTED_RATE_NAMES,
    UNSUPPORTED_RATE,
    Depth,
    LoopMetrics,
    Rate,
    SplitRate,
)
from marsrag.metrics.window import Window, parse_moment, window

__all__ = [
    "DEFINITIONS",
    "HELPFUL_RATE",
    "METRIC_NAMES",
    "RATE_NAMES",
    "REPORTED_NAMES",
    "REPORTED_RATE_NAMES",
    "Depth",
    "LoopMetrics",
    "Rate",
    "UNSUPPORTED_RATE",
    "SplitRate",
    "Window",
    "parse_moment",
    "window",
]
