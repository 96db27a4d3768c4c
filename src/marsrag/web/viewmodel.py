"""The UI view model mapper, kept importable here (the README documents ``marsrag.web.viewmodel``).

It lives in :mod:`marsrag.views.viewmodel` now, shared by the web pages and the terminal printer.
"""

from __future__ import annotations

from marsrag.views.viewmodel import (
    NEXT_ACTION_HEADING,
    SECTION_TITLES,
    AttemptView,
    NextActionCard,
    OperatorAction,
    RunView,
    SectionCard,
    SourceView,
    StatusBadge,
    TaskView,
    TransitionView,
    next_action_card,
    operator_action,
    read_run_view,
    run_view,
    section_cards,
    status_badge,
    task_view,
    transition_view,
)

__all__ = [
    "NEXT_ACTION_HEADING",
    "SECTION_TITLES",
    "AttemptView",
    "NextActionCard",
    "OperatorAction",
    "RunView",
    "SectionCard",
    "SourceView",
    "StatusBadge",
    "TaskView",
    "TransitionView",
    "next_action_card",
    "operator_action",
    "read_run_view",
    "run_view",
    "section_cards",
    "status_badge",
    "task_view",
    "transition_view",
]
