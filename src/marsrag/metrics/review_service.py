"""Library function behind ``marsrag review``: the weekly review of a store, as Markdown or a standalone HTML file."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from marsrag.errors import InputError
from marsrag.metrics.review import parse_week, render_html, render_markdown, weekly_review
from marsrag.metrics.service import check_workflow
from marsrag.store import open_store

#: What ``--out`` may end with, and the renderer each suffix means.
FORMATS = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown"}


def review(
    *,
    db: str | None = None,
    week: str | None = None,
    out: str | None = None,
    now: datetime | None = None,
    workflow: str | None = None,
    config: str | Path | None = None,
) -> str:
    """The review of ISO week ``week`` (``YYYY-Www``; default the last complete week) of the store at ``db``,
    of one ``workflow`` or all.

    With ``out`` ending in ``.html`` a standalone HTML report is written there, with ``.md`` Markdown; without
    ``out`` nothing is written. Returns the text written (or, without ``out``, the Markdown to print).

    Raises:
        InputError: an unreadable week, an ``out`` with another suffix, an ``out`` that cannot be written, or
            a workflow neither the config folder ``config`` nor the store knows.
        StoreError: the store cannot be opened.
    """
    if week is not None:
        parse_week(week)  # a bad week is an input error before the store is opened
    target = Path(out) if out is not None else None
    kind = "markdown"
    if target is not None:
        kind = FORMATS.get(target.suffix.lower(), "")
        if not kind:
            raise InputError(f"--out {out}: write the review to a .html or .md file")
    with open_store(db) as store:
        check_workflow(store, workflow, config)
        report = weekly_review(store, week, now, workflow)
    text = render_html(report) if kind == "html" else render_markdown(report)
    if target is not None:
        try:
            target.write_text(text, encoding="utf-8")
        except OSError as error:
            raise InputError(f"--out {out}: cannot write it ({error.strerror or error})") from None
    return text
