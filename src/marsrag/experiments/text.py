"""An experiment report's figures in words, shared by the terminal, the dashboard and tune's reasons.

Plain string formatting of the report's JSON records (no import beyond the standard library): the text
printers load it without the store.
"""

from __future__ import annotations

from typing import Any

__all__ = ["difference_text", "interval_text", "value_text"]


def value_text(metric: str, record: dict[str, Any]) -> str:
    """A metric's value with what it is over: ``45.0% (90/200)``, ``mean 1.52 (200 sessions)``, ``n/a (0/0)``."""
    if metric == "session_depth":
        if record["value"] is None:
            return "n/a (0 sessions)"
        return f"mean {record['value']:.2f}, p50 {record['p50']:g} ({record['sessions']} sessions)"
    value = "n/a" if record["value"] is None else f"{record['value']:.1%}"
    return f"{value} ({record['numerator']}/{record['denominator']})"


def difference_text(metric: str, value: float | None) -> str:
    """A difference in points (rates) or runs per session (depth), signed."""
    if value is None:
        return "n/a"
    return f"{value:+.2f}" if metric == "session_depth" else f"{value * 100:+.1f} pt"


def interval_text(metric: str, ci: list[float] | None, *, unit: bool = True) -> str:
    """A 95% interval in the difference's unit (points for rates; ``unit=False`` leaves the `` pt`` off)."""
    if ci is None:
        return "n/a"
    if metric == "session_depth":
        return f"[{ci[0]:+.2f}, {ci[1]:+.2f}]"
    return f"[{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}]" + (" pt" if unit else "")
