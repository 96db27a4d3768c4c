"""Printing runs for people in a terminal (Rich): the view model the web pages render, and the runs list.

Separate from :mod:`marsrag.render_text` so that ``marsrag validate`` (which prints contract results only)
never loads the view model and the store interface behind it. Every text from data goes through
:func:`~marsrag.render_text.shown` (control characters visible, no markup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from marsrag.render_text import BADGE_STYLE, console, shown
from marsrag.views.outcome import run_header

if TYPE_CHECKING:
    # Types only: ``runs list`` prints rows and never loads the view model.
    from marsrag.views.viewmodel import RunView, TaskView

#: Terminals narrower than this show each run's short id: its 32-character id would leave the other columns
#: too little room (and Rich would wrap it over several lines).
FULL_ID_COLUMNS = 120
#: A creation time as the runs list shows it: ``2026-12-04T15:49:49``, to the second, without the zone (UTC).
CREATED_AT_CHARS = 19
#: The longest status word (``completed``): a status folds between its words, never inside one.
STATUS_MIN_CHARS = 9
#: The fewest columns the goal keeps before the workflow column is left out to make room for it.
GOAL_MIN_CHARS = 16
#: The space between two columns (one either side).
COLUMN_GAP = 2


def print_run_rows(rows: list[dict[str, Any]]) -> None:
    """Print the runs list as a table, each run's status as its header (how its tasks ended).

    The run id, the workflow and the creation time are never wrapped, however narrow the terminal: below
    :data:`FULL_ID_COLUMNS` columns the id is the run's ``short_id``, a unique prefix every command accepts;
    the goal folds to make room, and where it would get fewer than :data:`GOAL_MIN_CHARS` columns the
    workflow column is left out (``--format json`` has it).
    """
    out = console()
    full = out.width >= FULL_ID_COLUMNS
    ids = [row["run_id"] if full else row.get("short_id", row["run_id"]) for row in rows]
    widths = [max((len(text) for text in texts), default=0) for texts in (ids, [r["workflow"] for r in rows])]
    # The widest status word ("completed") stays whole; longer statuses fold between their words.
    fixed = sum(widths) + STATUS_MIN_CHARS + CREATED_AT_CHARS + 4 * COLUMN_GAP
    with_workflow = out.width - fixed >= GOAL_MIN_CHARS
    # One space either side of a column, none at the edges: narrow terminals keep their width for the goal.
    table = Table(box=None, padding=(0, 1), pad_edge=False)
    table.add_column("run_id", no_wrap=True)
    table.add_column("status", overflow="fold", min_width=STATUS_MIN_CHARS)
    if with_workflow:
        table.add_column("workflow", no_wrap=True)
    table.add_column("created_at", no_wrap=True, min_width=CREATED_AT_CHARS)
    table.add_column("goal", overflow="fold")
    for run_id, row in zip(ids, rows, strict=True):
        header = run_header(row["status"], row["outcome"])
        stale = " (stale)" if row.get("stale") else ""
        table.add_row(
            shown(run_id),
            shown(header.text + stale, _RUN_STYLE.get(header.level, "")),
            *([shown(row["workflow"])] if with_workflow else []),
            shown(row["created_at"][:CREATED_AT_CHARS]),
            shown(row["goal"]) if row["goal"].strip() else shown("(no goal)", "dim"),
        )
    out.print(table)


#: A support badge's style: a task not in the knowledge base stands out, a weakly supported one less.
SUPPORT_STYLE = {"none": "bold yellow", "weak": "yellow"}
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
    header = shown(f"run {view.run_id}  ")
    stale = " (stale: its process is gone)" if view.stale else ""
    header.append_text(shown(view.header.text + stale, "bold " + _RUN_STYLE.get(view.header.level, "")))
    header.append_text(shown(f"  workflow {view.workflow} ({view.loop_mode})"))
    out.print(header)
    if view.status_reason:
        out.print(shown(f"reason: {view.status_reason}", "red"))
    for task in view.tasks:
        _print_task(out, task)
    if view.summary:
        out.print(shown("\nSummary", "bold"))
        _print_summary(out, view)
    if view.next_action is not None:
        out.print(shown(f"\n{view.next_action.heading}: ", "bold") + shown(view.next_action.text))
        if view.next_action.note:
            out.print(shown(view.next_action.note, "dim"))


def _print_task(out: Console, task: TaskView) -> None:
    line = shown(f"\n{task.task_id}  ")
    line.append_text(shown(f"[{task.badge.label.upper()}]", BADGE_STYLE.get(task.badge.status, "bold")))
    if task.support is not None:
        line.append_text(shown(f" [{task.support.label}]", SUPPORT_STYLE.get(task.support.level, "")))
    line.append_text(shown(f"  hook from: {task.hook_source}"))
    if task.transition_in is not None:
        line.append_text(shown(f" ({task.transition_in.reason})", "dim"))
    out.print(line)
    if task.fallback_message:
        out.print(shown(task.fallback_message, "yellow"))
    if not task.cards:
        out.print(shown(task.machine_output or ""))
    else:
        _print_cards(out, task)
    _print_sources(out, task)
    for attempt in task.attempts:
        # Only attempts whose LLM call is known: older runs print as before.
        if attempt.call:
            heading = f"attempt {attempt.number} · {attempt.kind} · {attempt.status}"
            out.print(shown(f"{heading}: {attempt.call}", "dim"))


def _print_summary(out: Console, view: RunView) -> None:
    """The summary's text, then the run's sources as a task's are printed (the full ``path#Heading`` is in JSON)."""
    listed = [line for line in view.summary_lines if line.kind == "source"]
    if not listed:
        out.print(shown(view.summary))
        return
    text = [line for line in view.summary.splitlines() if line.strip()]
    out.print(shown("\n".join(text[: len(text) - len(listed) - 1])))
    rows = []
    for line in listed:
        path, _, heading = "".join(part.text for part in line.parts[1:]).strip().partition("#")
        rows.append((line.ref or "", path, heading))
    _print_grid(out, rows)


def _print_sources(out: Console, task: TaskView) -> None:
    """The sources the task cites, by number: its document and its own heading (the full path is in JSON)."""
    _print_grid(out, [(source.ref, source.title, source.heading) for source in task.sources if source.cited])
    for warning in task.citation_warnings:
        out.print(shown(f"! {warning}", "yellow"))


def _print_grid(out: Console, rows: list[tuple[str, str, str]]) -> None:
    """``SOURCES  [ref]  document · own heading`` rows (none: nothing printed)."""
    if not rows:
        return
    # A grid, so that a long path folds inside its column instead of leaving its number alone on a line.
    table = Table(show_header=False, box=None, padding=(0, 1), expand=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for number, (ref, title, heading) in enumerate(rows):
        own = heading.rsplit(" > ", 1)[-1] if heading else ""
        table.add_row(
            shown("SOURCES" if number == 0 else ""), shown(f"[{ref}]"), shown(title + (f" · {own}" if own else ""))
        )
    out.print(table)


def _print_cards(out: Console, task: TaskView) -> None:
    table = Table(show_header=False, box=None, padding=(0, 1), expand=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    printed: set[str] = set()
    for card in task.cards:
        cell = shown(card.text) if card.text is not None else shown("—", "dim")
        if card.problem:
            cell.append_text(shown(f"\n✗ {card.problem}", "red"))
            printed.add(f"{card.title}: {card.problem}")
        # Upper case marks the section labels in a terminal, as ``marsrag validate`` prints them.
        table.add_row(shown(card.title.upper()), cell)
    out.print(table)
    for problem in task.problems:
        if problem not in printed:
            out.print(shown(f"✗ {problem}", "red"))
