"""What a person reads about a run, framework-free: the view model (cards, badge, next action, header), the run
document (JSON) and the summary, shared by the CLI, the web pages and the API.

Above the store, the planner and the records; below the runtime, the web app and the terminal printer, so
both front ends render the same model and none of them decides on its own what a run says.
"""

from __future__ import annotations

from marsrag.views.document import run_document, run_summary_row
from marsrag.views.outcome import OUTCOMES, RunHeader, outcome_text, run_header, task_outcome
from marsrag.views.summary import summarize
from marsrag.views.viewmodel import RunView, attempt_call_line, read_run_view, run_view

__all__ = [
    "OUTCOMES",
    "RunHeader",
    "RunView",
    "attempt_call_line",
    "outcome_text",
    "read_run_view",
    "run_document",
    "run_header",
    "run_summary_row",
    "run_view",
    "summarize",
    "task_outcome",
]
