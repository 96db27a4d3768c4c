"""What a person reads about a run, framework-free: the view model (cards, badge, next action, header), the run
document (JSON) and the summary, shared by the CLI, the web pages and the API.

Above the store, the planner and the records; below the runtime, the web app and the terminal printer, so
both front ends render the same model and none of them decides on its own what a run says.

The run document and the outcome load with the package; the view model and the summary (the planner behind
them) on first use of one of their names, so ``marsrag runs list`` and ``runs show --format json`` skip them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from marsrag.views.document import run_document, run_summary_row
from marsrag.views.outcome import OUTCOMES, RunHeader, outcome_text, run_header, task_outcome

if TYPE_CHECKING:
    from marsrag.views.summary import summarize
    from marsrag.views.viewmodel import RunView, attempt_call_line, read_run_view, run_view

#: The names loaded on first use, and the module each is in.
_LAZY = {
    "RunView": "marsrag.views.viewmodel",
    "attempt_call_line": "marsrag.views.viewmodel",
    "read_run_view": "marsrag.views.viewmodel",
    "run_view": "marsrag.views.viewmodel",
    "summarize": "marsrag.views.summary",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'marsrag.views' has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


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
