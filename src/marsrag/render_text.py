"""Rendering contract results for people in a terminal (Rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from marsrag.contract.template import FIELDS

BADGE_STYLE = {"valid": "bold green", "partial": "bold yellow", "failed": "bold red"}
_console: Console | None = None


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
    header = Text()
    header.append(f"{source}  ")
    header.append(f"[{status.upper()}]", style=BADGE_STYLE.get(status, "bold"))
    header.append("  completes" if result["completes"] else "  does not complete")
    out.print(header)
    _print_sections(out, result)
    for issue in result["warnings"]:
        where = f"{issue['field']}: " if issue["field"] else ""
        out.print(Text(f"! {where}{issue['message']}", style="yellow"))
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
        cell = Text(value if value is not None else "—", style="" if value is not None else "dim")
        for message in errors_by_field.get(name, []):
            cell.append(f"\n✗ {message}", style="red")
        table.add_row(name.upper(), cell)
    out.print(table)
    for message in errors_by_field.get(None, []):
        out.print(Text(f"✗ {message}", style="red"))


class ProgressSink:
    """An event sink printing a run's progress on stderr, one line per task and per handoff."""

    def __init__(self) -> None:
        self._console = Console(stderr=True, highlight=False)

    def __call__(self, events: Any) -> None:
        for event in events:
            if event.name == "loop.contract.validated" or event.name == "loop.contract.failed":
                status = event.validation_status or "?"
                self._console.print(Text(f"  {event.task_id}: ") + Text(status, style=BADGE_STYLE.get(status, "")))
            elif event.name == "loop.transition.planned":
                self._console.print(Text(f"  -> {event.task_id} (hook: {event.transition_mode})", style="dim"))


def print_metrics(document: dict[str, Any], scope: str) -> None:
    """The six loop metrics as a table: value, numerator/denominator (n/a for an empty denominator)."""
    table = Table(title=f"Loop metrics: {scope}", title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("of", justify="right")
    for name, record in document.items():
        if name == "session_depth":
            if record["sessions"]:
                value = f"mean {record['value']:.2f}, p50 {record['p50']:g}, max {record['max']}"
            else:
                value = "n/a"
            table.add_row(name, value, f"{record['sessions']} sessions")
            continue
        shown = "n/a" if record["value"] is None else f"{record['value']:.1%}"
        table.add_row(name, shown, f"{record['numerator']}/{record['denominator']}")
    console().print(table)


def print_tune(result: dict[str, Any]) -> None:
    """loop_mode recommendations: one block per workflow with its reasons and numbers."""
    out = console()
    out.print(f"loop_mode recommendations over {result['window']}")
    for item in result["recommendations"]:
        arrow = f"{item['current']} -> {item['recommended']}" if item["change"] else f"keep {item['current']}"
        out.print(
            f"\n[bold]{escape(item['workflow'])}[/bold] ({item['kind']}): {arrow}  {escape('[' + item['rule'] + ']')}",
            highlight=False,
        )
        for reason in item["reasons"]:
            out.print(f"  - {reason}", highlight=False, markup=False)
        numbers = ", ".join(
            f"{key} {value:.2f}" if isinstance(value, float) else f"{key} {value}"
            for key, value in item["numbers"].items()
            if value is not None
        )
        out.print(f"  numbers: {numbers}", highlight=False, markup=False)
    if result["written"]:
        out.print(f"\nWrote loop_mode for: {', '.join(result['written'])}")
    elif any(item["change"] for item in result["recommendations"]):
        out.print("\nNothing written: pass --write to apply the changes.")
