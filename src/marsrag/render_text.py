"""Rendering contract results for people in a terminal (Rich).

Every text from data reaches Rich through :func:`shown`: a ``Text`` (never parsed as markup, so ``[bold]`` in a
goal is printed as it is) whose control characters are made visible (:func:`marsrag.terminal.visible`).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from marsrag.contract.template import FIELDS
from marsrag.experiments.text import difference_text, interval_text, value_text
from marsrag.terminal import visible

BADGE_STYLE = {"valid": "bold green", "partial": "bold yellow", "failed": "bold red"}
#: The longest metric name (``loop_schema_pass_rate``, ``downstream_action_rate``): a table's metric column
#: keeps it whole, as a run list keeps its ids and times.
_NAME_CHARS = len("downstream_action_rate")
_console: Console | None = None


def shown(value: object, style: str = "") -> Text:
    """``value`` as Rich text for the terminal: its control characters visible, its brackets not markup."""
    return Text(visible(str(value)), style=style)


def console() -> Console:
    """The shared stdout console; Rich drops colour by itself when stdout is not a terminal."""
    global _console
    if _console is None:
        _console = Console(highlight=False, soft_wrap=False)
    return _console


def print_result(source: str, result: dict[str, Any]) -> None:
    """Print one validation result: the status badge, then the five sections in contract order."""
    out = console()
    status = result["status"]
    header = shown(f"{source}  ")
    header.append_text(shown(f"[{status.upper()}]", BADGE_STYLE.get(status, "bold")))
    header.append_text(shown("  completes" if result["completes"] else "  does not complete"))
    out.print(header)
    _print_sections(out, result)
    for issue in result["warnings"]:
        where = f"{issue['field']}: " if issue["field"] else ""
        out.print(shown(f"! {where}{issue['message']}", "yellow"))
    out.print()


def _print_sections(out: Console, result: dict[str, Any]) -> None:
    errors_by_field: dict[str | None, list[str]] = {}
    for issue in result["errors"]:
        errors_by_field.setdefault(issue["field"], []).append(issue["message"])
    table = Table(show_header=False, box=None, padding=(0, 1), expand=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for name in FIELDS:
        value = result["loop_output"].get(name)
        cell = shown(value, "") if value is not None else shown("—", "dim")
        for message in errors_by_field.get(name, []):
            cell.append_text(shown(f"\n✗ {message}", "red"))
        table.add_row(shown(name.upper()), cell)
    out.print(table)
    for message in errors_by_field.get(None, []):
        out.print(shown(f"✗ {message}", "red"))


class ProgressSink:
    """An event sink printing a run's progress on stderr, one line per task and per handoff."""

    def __init__(self) -> None:
        self._console = Console(stderr=True, highlight=False)

    def __call__(self, events: Any) -> None:
        for event in events:
            if event.name == "loop.contract.validated" or event.name == "loop.contract.failed":
                status = event.validation_status or "?"
                self._console.print(shown(f"  {event.task_id}: ") + shown(status, BADGE_STYLE.get(status, "")))
            elif event.name == "loop.transition.planned":
                self._console.print(shown(f"  -> {event.task_id} (hook: {event.transition_mode})", "dim"))


def print_metrics(document: dict[str, Any], scope: str) -> None:
    """The six loop metrics and helpful_rate as a table: value, numerator/denominator (n/a for an empty
    denominator), a split rate's parts under it."""
    table = Table(title=shown(f"Loop metrics: {scope}"), title_justify="left")
    # Metric names and counts never wrap nor lose a character, however narrow the terminal: the value folds.
    table.add_column("metric", no_wrap=True, min_width=_NAME_CHARS)
    table.add_column("value", justify="right", overflow="fold")
    table.add_column("of", justify="right", no_wrap=True)
    for name, record in document.items():
        if name == "session_depth":
            if record["sessions"]:
                value = f"mean {record['value']:.2f}, p50 {record['p50']:g}, max {record['max']}"
            else:
                value = "n/a"
            table.add_row(shown(name), shown(value), shown(f"{record['sessions']} sessions"))
            continue
        table.add_row(shown(name), *_rate_cells(record))
        # A split rate's parts, indented under it (loop_follow_rate by kind, helpful_rate by target).
        for split in ("by_kind", "by_target"):
            for part, figures in record.get(split, {}).items():
                table.add_row(shown(f"  {part}"), *_rate_cells(figures))
    console().print(table)


def _rate_cells(record: dict[str, Any]) -> tuple[Text, Text]:
    """A rate's value (n/a for an empty denominator) and numerator/denominator cells."""
    rate = "n/a" if record["value"] is None else f"{record['value']:.1%}"
    return shown(rate), shown(f"{record['numerator']}/{record['denominator']}")


def print_tune(result: dict[str, Any]) -> None:
    """loop_mode recommendations: one block per workflow with its reasons and numbers."""
    out = console()
    out.print(shown(f"loop_mode recommendations over {result['window']}"))
    for item in result["recommendations"]:
        arrow = f"{item['current']} -> {item['recommended']}" if item["change"] else f"keep {item['current']}"
        if item.get("ends_experiment"):
            arrow = f"end experiment {item['experiment']}: {item['current']} -> {item['recommended']}"
        line = shown("\n") + shown(item["workflow"], "bold")
        line.append_text(shown(f" ({item['kind']}): {arrow}  [{item['rule']}]"))
        out.print(line)
        for reason in item["reasons"]:
            out.print(shown(f"  - {reason}"))
        numbers = ", ".join(f"{key} {_number(value)}" for key, value in item["numbers"].items() if value is not None)
        out.print(shown(f"  numbers: {numbers}"))
    if result["written"]:
        out.print(shown(f"\nWrote loop_mode for: {', '.join(result['written'])}"))
    elif any(item["change"] or item.get("ends_experiment") for item in result["recommendations"]):
        out.print(shown("\nNothing written: pass --write to apply the changes."))


def _number(value: Any) -> str:
    """A tune number: floats to two places, a mapping (sessions per arm) as ``name value`` pairs."""
    if isinstance(value, dict):
        return "(" + ", ".join(f"{key} {_number(inner)}" for key, inner in value.items()) + ")"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def print_experiment(document: dict[str, Any], scope: str) -> None:
    """An experiment report (its JSON document): the arms table, the differences table, the sample ratio check,
    the planned sample size and the warning."""
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
    table.add_column("metric", no_wrap=True, min_width=_NAME_CHARS)
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
    # Short cells, to fit 80 columns with two arms: an arm column only with several arms compared, a flag
    # column only when something is flagged, the interval in the difference's unit. Narrower, the figures wrap
    # (never cropped: every figure stays readable) and the metric names stay whole.
    flagged = any(item["guardrail"] and item["worse"] for item in document["differences"])
    several = len(arms) > 2
    differences.add_column("metric", no_wrap=True, min_width=_NAME_CHARS)
    if several:
        differences.add_column("arm", overflow="fold")
    for column in ("difference", "95% CI", "sig.", "needed"):
        differences.add_column(column, justify="right", overflow="fold")
    if flagged:
        differences.add_column("flag", overflow="fold")
    for item in document["differences"]:
        metric = item["metric"]
        needed = "n/a" if item["sessions_needed"] is None else str(item["sessions_needed"])
        if item["more_sessions_needed"]:
            needed += f" (+{item['more_sessions_needed']})"
        flag = f"guardrail: {item['worse']} worse" if item["guardrail"] and item["worse"] else ""
        arm = [shown(item["arms"][0])] if several else []
        differences.add_row(
            shown(metric),
            *arm,
            shown(difference_text(metric, item["difference"])),
            shown(interval_text(metric, item["ci"], unit=False)),
            shown("yes" if item["significant"] else "no"),
            shown(needed),
            *([shown(flag, "bold red")] if flagged else []),
        )
        if "median" in item:
            median = item["median"]
            differences.add_row(
                shown("  median"),
                *arm,
                shown(difference_text(metric, median["difference"])),
                shown(interval_text(metric, median["ci"], unit=False)),
                shown(""),
                shown(""),
                *([shown("")] if flagged else []),
            )
    out.print(differences)
    out.print(shown("needed: sessions per arm to detect the difference at 80% power (+ those still to come)"))
    planned = experiment["planned_sessions"]
    if planned is not None:
        out.print(shown(f"Planned sample size ({experiment['primary_metric']}, 80% power): {planned} sessions per arm"))
    if experiment["warning"]:
        out.print(shown(f"! {experiment['warning']}", "yellow"))
