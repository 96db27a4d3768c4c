"""The experiment report for people in a terminal (Rich): the arms' metrics, the differences, the warnings.

It prints the JSON document (:meth:`ExperimentReport.to_dict`), so text and ``--format json`` cannot disagree.
Every text from data goes through :func:`marsrag.render_text.shown` (control characters visible, no markup).
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from marsrag.experiments.text import difference_text, interval_text, value_text
from marsrag.render_text import console, shown

__all__ = ["print_report"]


def print_report(document: dict[str, Any], scope: str) -> None:
    """The arms table, the differences table, then the warnings (sample ratio, peek) and guardrail flags."""
    out = console()
    experiment, arms = document["experiment"], document["arms"]
    split = ", ".join(f"{name} {record['sessions']}" for name, record in arms.items())
    out.print(
        shown(f"Experiment {experiment['name']} on {experiment['workflow']} ({scope}): ")
        + shown(f"{experiment['sessions']} sessions ({split})")
    )
    srm = experiment["srm"]
    if srm["p_value"] is not None:
        verdict = "MISMATCH" if srm["mismatch"] else "ok"
        out.print(shown(f"Sample ratio check (chi-square vs the weights): p = {srm['p_value']:.3g}, {verdict}"))
    table = Table(title=shown("Arms"), title_justify="left")
    table.add_column("metric")
    for name, config in experiment["arms"].items():
        table.add_column(shown(f"{name} ({config['loop_mode']}, weight {config['weight']:g})"), justify="right")
    metrics = [key for key in next(iter(arms.values())) if key not in ("sessions", "loop_mode")]
    for metric in metrics:
        table.add_row(shown(metric), *(shown(value_text(metric, record[metric])) for record in arms.values()))
    out.print(table)
    differences = Table(
        title=shown(f"Differences from {experiment['baseline']} (arm minus baseline, 95% intervals)"),
        title_justify="left",
    )
    for column in ("metric", "arm", "difference", "95% CI", "significant", "sessions needed", "flag"):
        differences.add_column(column, justify="left" if column in ("metric", "arm", "flag") else "right")
    for item in document["differences"]:
        metric = item["metric"]
        needed = "n/a" if item["sessions_needed"] is None else str(item["sessions_needed"])
        if item["more_sessions_needed"]:
            needed += f" ({item['more_sessions_needed']} more)"
        flag = f"guardrail: {item['worse']} worse" if item["guardrail"] and item["worse"] else ""
        differences.add_row(
            shown(metric),
            shown(item["arms"][0]),
            shown(difference_text(metric, item["difference"])),
            shown(interval_text(metric, item["ci"])),
            shown("yes" if item["significant"] else "no"),
            shown(needed),
            shown(flag, "bold red" if flag else ""),
        )
        if "median" in item:
            median = item["median"]
            differences.add_row(
                shown("  median depth"),
                shown(item["arms"][0]),
                shown(difference_text(metric, median["difference"])),
                shown(interval_text(metric, median["ci"])),
                shown(""),
                shown(""),
                shown(""),
            )
    out.print(differences)
    planned = experiment["planned_sessions"]
    if planned is not None:
        out.print(shown(f"Planned sample size ({experiment['primary_metric']}, 80% power): {planned} sessions per arm"))
    if experiment["warning"]:
        out.print(shown(f"! {experiment['warning']}", "yellow"))
