"""Rendering contract results for people in a terminal (Rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from marsrag.contract.template import FIELDS

_BADGE_STYLE = {"valid": "bold green", "partial": "bold yellow", "failed": "bold red"}
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
    header.append(f"[{status.upper()}]", style=_BADGE_STYLE.get(status, "bold"))
    header.append("  completes" if result["completes"] else "  does not complete")
    out.print(header)
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
    for issue in result["warnings"]:
        where = f"{issue['field']}: " if issue["field"] else ""
        out.print(Text(f"! {where}{issue['message']}", style="yellow"))
    out.print()
