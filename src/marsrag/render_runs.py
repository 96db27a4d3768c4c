"""Printing runs for people in a terminal (Rich): the view model the web pages render, and the runs list.

Separate from :mod:`marsrag.render_text` so that ``marsrag validate`` (which prints contract results only)
never loads the view model and the store interface behind it.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from marsrag.render_text import BADGE_STYLE, console
from marsrag.views.outcome import run_header
from marsrag.views.viewmodel import RunView, TaskView


def print_run_rows(rows: list[dict[str, Any]]) -> None:
    """Print the runs list as a table, each run's status as its header (how its tasks ended)."""
    table = Table(box=None, padding=(0, 2))
    for column in ("run_id", "status", "workflow", "created_at", "goal"):
        table.add_column(column, overflow="fold")
    for row in rows:
        header = run_header(row["status"], row["outcome"])
        stale = " (stale)" if row.get("stale") else ""
        table.add_row(
            row["run_id"],
            Text(header.text + stale, style=_RUN_STYLE.get(header.level, "")),
            row["workflow"],
            row["created_at"][:19],
            Text(row["goal"]),
        )
    console().print(table)


_RUN_STYLE = {
    "completed": "green",
    "partial": "yellow",
    "failed": "red",
    "running": "yellow",
    "pending": "dim",
}


def print_run(view: RunView) -> None:
    """Print a run's view model: its header, each task's badge, provenance and five cards, summary, next action."""
    out = console()
    header = Text(f"run {view.run_id}  ")
    stale = " (stale: its process is gone)" if view.stale else ""
    header.append(view.header.text + stale, style="bold " + _RUN_STYLE.get(view.header.level, ""))
    header.append(f"  workflow {view.workflow} ({view.loop_mode})")
    out.print(header)
    if view.status_reason:
        out.print(Text(f"reason: {view.status_reason}", style="red"))
    for task in view.tasks:
        _print_task(out, task)
    if view.summary:
        out.print(Text("\nSummary", style="bold"))
        out.print(Text(view.summary))
    if view.next_action is not None:
        out.print(Text(f"\n{view.next_action.heading}: ", style="bold") + Text(view.next_action.text))
        if view.next_action.note:
            out.print(Text(view.next_action.note, style="dim"))


def _print_task(out: Console, task: TaskView) -> None:
    line = Text(f"\n{task.task_id}  ")
    line.append(f"[{task.badge.label.upper()}]", style=BADGE_STYLE.get(task.badge.status, "bold"))
    line.append(f"  hook from: {task.hook_source}")
    if task.transition_in is not None:
        line.append(f" ({task.transition_in.reason})", style="dim")
    out.print(line)
    if task.fallback_message:
        out.print(Text(task.fallback_message, style="yellow"))
    if not task.cards:
        out.print(Text(task.machine_output or ""))
    else:
        _print_cards(out, task)
    for attempt in task.attempts:
        # Only attempts whose LLM call is known: older runs print as before.
        if attempt.call:
            heading = f"attempt {attempt.number} · {attempt.kind} · {attempt.status}"
            out.print(Text(f"{heading}: {attempt.call}", style="dim"))


def _print_cards(out: Console, task: TaskView) -> None:
    table = Table(show_header=False, box=None, padding=(0, 1), expand=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    shown: set[str] = set()
    for card in task.cards:
        cell = Text(card.text if card.text is not None else "—", style="" if card.text is not None else "dim")
        if card.problem:
            cell.append(f"\n✗ {card.problem}", style="red")
            shown.add(f"{card.title}: {card.problem}")
        # Upper case marks the section labels in a terminal, as ``marsrag validate`` prints them.
        table.add_row(card.title.upper(), cell)
    out.print(table)
    for problem in task.problems:
        if problem not in shown:
            out.print(Text(f"✗ {problem}", style="red"))
