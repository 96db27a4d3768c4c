"""The run header and outcome counts on their own: status words, counts, and the level a header is styled by."""

from __future__ import annotations

import pytest

from marsrag.views.outcome import run_header, task_outcome


def test_task_outcome_counts_every_status_with_zeros() -> None:
    """Every status key is present; each task counts once under its status."""
    assert task_outcome(["valid", "failed", "skipped", "failed"]) == {
        "valid": 1,
        "partial": 0,
        "failed": 2,
        "skipped": 1,
    }
    assert task_outcome([]) == {"valid": 0, "partial": 0, "failed": 0, "skipped": 0}


@pytest.mark.parametrize(
    ("status", "statuses", "text", "level"),
    [
        ("completed", ["valid", "valid", "valid"], "completed", "completed"),
        ("completed", ["failed", "valid", "valid"], "completed · 1 of 3 tasks failed", "failed"),
        ("completed", ["valid", "partial"], "completed · 1 of 2 tasks partial", "partial"),
        (
            "completed",
            ["failed", "partial", "valid"],
            "completed · 1 of 3 tasks failed, 1 of 3 tasks partial",
            "failed",
        ),
        ("completed", ["valid", "skipped"], "completed", "completed"),  # no contract is not a failure
        ("completed", ["failed"], "completed · 1 of 1 task failed", "failed"),
        ("failed", ["valid"], "failed", "failed"),
        ("failed", ["partial"], "failed · 1 of 1 task partial", "failed"),
        ("running", ["valid", "failed"], "running · 1 of 2 tasks failed", "failed"),
        ("pending", [], "pending", "pending"),
    ],
)
def test_run_header_names_every_non_valid_outcome_and_is_never_a_success_with_failures(
    status: str, statuses: list[str], text: str, level: str
) -> None:
    """The status, then failed and partial counts (worst first); styled by the worst outcome."""
    header = run_header(status, task_outcome(statuses))
    assert (header.text, header.level) == (text, level)
