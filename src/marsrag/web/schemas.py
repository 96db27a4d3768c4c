"""The JSON shapes the health check and the metrics endpoints answer with: typed models with real examples.

The documentation pages draw their samples from these: a bare JSON object (no properties, no example) would
show as ``"property1": "string"`` in ReDoc, so every object the API answers with is one of these models or
carries an example (``tests/web/test_openapi.py`` walks the whole document for such objects).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from marsrag.state import RunStatus


class Health(BaseModel):
    """The liveness answer: the process serves (the store is not touched)."""

    status: Literal["ok"] = Field(examples=["ok"])


class RateFigures(BaseModel):
    """A rate with its counts; ``value`` is null when the denominator is 0 (no data is not 0%)."""

    value: float | None = Field(description="numerator / denominator; null for an empty denominator.", examples=[0.8])
    numerator: int = Field(ge=0, examples=[12])
    denominator: int = Field(ge=0, examples=[15])


class FollowKinds(BaseModel):
    """The follows by kind, each over the same denominator (the runs offering a next action)."""

    suggested: RateFigures = Field(description="The next action followed as offered.")
    edited: RateFigures = Field(description="The next action followed with the user's own edit of it.")


class FollowRate(RateFigures):
    """``loop_follow_rate``: its figures and the same rate per follow kind."""

    by_kind: FollowKinds


class RatedParts(BaseModel):
    """The ratings by the part of the run rated."""

    answer: RateFigures
    next_action: RateFigures


class HelpfulRate(RateFigures):
    """``helpful_rate``: its figures and the same rate per rated part."""

    by_target: RatedParts


class SessionDepth(BaseModel):
    """Runs per session: the mean (``value``), median and maximum over ``sessions`` (null without any)."""

    value: float | None = Field(description="The mean number of runs per session.", examples=[1.6])
    p50: float | None = Field(examples=[1.0])
    max: int | None = Field(examples=[4])
    sessions: int = Field(ge=0, examples=[10])


class MetricsDocument(BaseModel):
    """The six loop metrics, ``helpful_rate`` and ``unsupported_rate`` (the ``marsrag metrics --format json`` document).

    Definitions are in docs/metrics.md.
    """

    loop_schema_pass_rate: RateFigures
    loop_follow_rate: FollowRate
    downstream_action_rate: RateFigures
    session_depth: SessionDepth
    repair_rate: RateFigures
    fallback_rate: RateFigures
    helpful_rate: HelpfulRate
    unsupported_rate: RateFigures


class DailyMetrics(BaseModel):
    """The metrics per workflow and UTC day: each day's document, or null for a day without runs."""

    since: str | None = Field(
        description="The start of the first day (ISO 8601, UTC).", examples=["2026-12-01T00:00:00+00:00"]
    )
    until: str | None = Field(
        description="The end of the last day, exclusive (ISO 8601, UTC).", examples=["2026-12-03T00:00:00+00:00"]
    )
    days: list[str] = Field(description="The days, oldest first (YYYY-MM-DD).", examples=[["2026-12-01", "2026-12-02"]])
    workflows: dict[str, list[MetricsDocument | None]] = Field(
        description="Workflow name -> one entry per day of `days`: its metrics document, or null (no runs).",
        examples=[
            {
                "support_answer": [
                    None,
                    {
                        "loop_schema_pass_rate": {"value": 1.0, "numerator": 3, "denominator": 3},
                        "loop_follow_rate": {
                            "value": 0.5,
                            "numerator": 1,
                            "denominator": 2,
                            "by_kind": {
                                "suggested": {"value": 0.5, "numerator": 1, "denominator": 2},
                                "edited": {"value": 0.0, "numerator": 0, "denominator": 2},
                            },
                        },
                        "downstream_action_rate": {"value": 0.5, "numerator": 1, "denominator": 2},
                        "session_depth": {"value": 1.5, "p50": 1.5, "max": 2, "sessions": 2},
                        "repair_rate": {"value": 0.0, "numerator": 0, "denominator": 3},
                        "fallback_rate": {"value": 0.0, "numerator": 0, "denominator": 1},
                        "helpful_rate": {
                            "value": None,
                            "numerator": 0,
                            "denominator": 0,
                            "by_target": {
                                "answer": {"value": None, "numerator": 0, "denominator": 0},
                                "next_action": {"value": None, "numerator": 0, "denominator": 0},
                            },
                        },
                        "unsupported_rate": {"value": 0.0, "numerator": 0, "denominator": 2},
                    },
                ]
            }
        ],
    )


class FailedTask(BaseModel):
    """A failed or partial task, with its run's goal and workflow, the first error and a link to it."""

    run_id: str = Field(examples=["3f2a9c01aa6e4f4f9a1d2b7c8e0f1a2b"])
    task_id: str = Field(examples=["diagnose"])
    position: int = Field(ge=0, examples=[1])
    status: Literal["failed", "partial"] = Field(description="The task's validation status.", examples=["partial"])
    workflow: str = Field(examples=["support_answer"])
    goal: str = Field(examples=["Checkout latency breached its SLO after the cache nodes restarted"])
    run_status: RunStatus = Field(examples=["completed"])
    created_at: str = Field(
        description="When the task state was stored (ISO 8601).", examples=["2026-12-04T15:49:49+00:00"]
    )
    message: str | None = Field(
        description="The first error of its validation or of its latest attempt.",
        examples=["payoff: missing (every section needs text)"],
    )
    link: str = Field(
        description="The task on its run page.", examples=["/runs/3f2a9c01aa6e4f4f9a1d2b7c8e0f1a2b#task-diagnose"]
    )
