"""A task state whose text cites its retrieved passages by number, as the runner stores one (issue 18).

Shared by the view-model tests and the browser tests, which save it through the real store.
"""

from __future__ import annotations

from typing import Any

from marsrag.contract import ContractIssue
from marsrag.state import AttemptRecord, Citation, LoopFields, Retrieval, TaskState, Validation
from tests.contract.samples import CONTENT

#: Two passages the retrieval step gave the task: result i (from 0) is marker [i+1].
RESULTS: list[dict[str, Any]] = [
    {
        "chunk_id": 11,
        "source": "runbooks/cache-restarts.md#Cache restarts > Pre-warming",
        "heading": "Cache restarts > Pre-warming",
        "text": "Pre-warm each node from the latest snapshot before it rejoins the pool.\nIt takes two minutes.",
        "score": 0.91,
    },
    {
        "chunk_id": 12,
        "source": "incidents/2024-05-14-latency.md#Root cause",
        "heading": "Root cause",
        "text": "Every breach started within ten minutes of a cache node restart.",
        "score": 0.74,
    },
]
#: The sections with markers: [1] and [2] are citations; [9] names no passage (a warning, shown as text).
CITED = {
    **CONTENT,
    "grip": CONTENT["grip"] + " [2]",
    "payoff": CONTENT["payoff"] + " [1]",
    "reinforce": CONTENT["reinforce"] + " [1][2] [9]",
}
WARNING = "marker [9] in reinforce names no passage given to the task (it has 2)"


def cited_task(run_id: str = "cited", task_id: str = "diagnose", position: int = 0, **changes: Any) -> TaskState:
    """A valid task whose grip, payoff and reinforce cite passages [1] and [2], and whose reinforce has a bad [9]."""
    values: dict[str, Any] = {
        "run_id": run_id,
        "task_id": task_id,
        "position": position,
        "agent": "analyst",
        "loop_mode": "hard",
        "validation": Validation(status="valid"),
        "loop_output": LoopFields(**CITED),
        "attempts": [
            AttemptRecord(
                number=1,
                raw='{"hook": "..."}',
                status="failed",
                errors=[ContractIssue(field="grip", code="missing_field", message="grip is missing")],
                model="offline-composer",
            ),
            AttemptRecord(number=2, raw='{"hook": "...", "grip": "..."}', status="valid", kind="repair"),
        ],
        "retrieval": Retrieval(query="api latency cache restart", results=RESULTS),
        "citations": [
            Citation(ref="1", source=RESULTS[0]["source"], chunk_id=11, fields=["payoff", "reinforce"]),
            Citation(ref="2", source=RESULTS[1]["source"], chunk_id=12, fields=["grip", "reinforce"]),
        ],
        "citation_warnings": [WARNING],
    }
    return TaskState(**{**values, **changes})
