"""The experiment report from per-arm counts: its JSON shape, the differences, guardrails and the warnings."""

from __future__ import annotations

from typing import Any

import pytest

from marsrag.metrics.definitions import METRIC_NAMES
from marsrag.metrics.experiment import REPORT_METRICS, build_report
from marsrag.store import LoopCounts
from marsrag.tasks.config import ArmConfig, ExperimentConfig

EXPERIMENT = ExperimentConfig(
    name="hard_vs_soft",
    arms={"hard": ArmConfig(loop_mode="hard", weight=50), "soft": ArmConfig(loop_mode="soft", weight=50)},
)


def counts(sessions: int, *, follow: float, fallback: float = 0.1, repair: float = 0.1, deep: int = 0) -> LoopCounts:
    """One run per session (``deep`` sessions of two runs), each completed with a next action, two executions."""
    runs = sessions + deep
    executions = 2 * runs
    return LoopCounts(
        executions=executions,
        first_valid=executions - round(repair * executions),
        repaired=round(repair * executions),
        transitions=runs,
        fallbacks=round(fallback * runs),
        completed=runs,
        offering=runs,
        followed=round(follow * runs),
        downstream=round(follow * runs),
        depths={1: sessions - deep, 2: deep} if deep else {1: sessions},
        followed_edited=0,
        answer_up=runs // 2,
        answer_votes=runs,
    )


def figures(record: dict[str, Any]) -> dict[str, Any]:
    """A rate's own figures (a split rate also has its parts beside them)."""
    return {key: record[key] for key in ("value", "numerator", "denominator")}


def report(hard: LoopCounts, soft: LoopCounts) -> dict[str, Any]:
    return build_report("support_answer", EXPERIMENT, {"hard": hard, "soft": soft}).to_dict()


def test_the_json_has_the_experiment_the_arms_and_the_differences() -> None:
    """The documented shape: experiment facts, per arm the metrics as {value, numerator, denominator}."""
    document = report(counts(200, follow=0.30), counts(200, follow=0.45))
    assert list(document) == ["experiment", "arms", "differences"]
    experiment = document["experiment"]
    assert experiment["name"] == "hard_vs_soft" and experiment["workflow"] == "support_answer"
    assert experiment["arms"] == {
        "hard": {"loop_mode": "hard", "weight": 50.0, "agent": None, "llm": None},
        "soft": {"loop_mode": "soft", "weight": 50.0, "agent": None, "llm": None},
    }
    assert experiment["baseline"] == "hard" and experiment["primary_metric"] == "loop_follow_rate"
    assert experiment["sessions"] == 400
    assert experiment["srm"]["mismatch"] is False and experiment["srm"]["p_value"] == pytest.approx(1.0)
    soft = document["arms"]["soft"]
    assert soft["sessions"] == 200 and soft["loop_mode"] == "soft"
    assert set(REPORT_METRICS) <= set(soft)
    assert figures(soft["loop_follow_rate"]) == {"value": 0.45, "numerator": 90, "denominator": 200}
    assert figures(soft["helpful_rate"]) == {"value": 0.5, "numerator": 100, "denominator": 200}
    assert soft["session_depth"] == {"value": 1.0, "p50": 1.0, "max": 1, "sessions": 200}
    assert [d["metric"] for d in document["differences"]] == list(REPORT_METRICS)
    assert all(d["arms"] == ["soft", "hard"] for d in document["differences"])


def test_a_difference_has_its_interval_significance_and_sessions_needed() -> None:
    """Follow 0.45 vs 0.30 at 200 sessions: +0.15, significant, 162 per arm needed (already there)."""
    document = report(counts(200, follow=0.30), counts(200, follow=0.45))
    follow = next(d for d in document["differences"] if d["metric"] == "loop_follow_rate")
    assert follow["difference"] == pytest.approx(0.15)
    low, high = follow["ci"]
    assert 0 < low < 0.15 < high
    assert follow["significant"] is True
    assert follow["sessions_needed"] == 162 and follow["more_sessions_needed"] == 0
    assert follow["guardrail"] is False and follow["worse"] == "hard"
    assert document["experiment"]["planned_sessions"] == 162 and document["experiment"]["planned_reached"] is True
    assert document["experiment"]["warning"] is None


def test_equal_arms_need_no_sessions_and_are_not_significant() -> None:
    """The same counts in both arms: difference 0, not significant, sessions_needed null, a peek warning."""
    document = report(counts(100, follow=0.3), counts(100, follow=0.3))
    for difference in document["differences"]:
        if difference["metric"] == "session_depth":
            continue
        assert difference["difference"] == 0 and difference["significant"] is False
        assert difference["sessions_needed"] is None and difference["more_sessions_needed"] is None
        assert difference["worse"] is None
    warning = document["experiment"]["warning"]
    assert warning.startswith("Peek: no difference in loop_follow_rate is observed yet (100 sessions")
    assert "inflates false positives" in warning


def test_more_sessions_needed_shrinks_as_sessions_are_added() -> None:
    """True follow rates 0.30 and 0.40 counted exactly at growing sizes: the same 356 planned, fewer to go."""
    remaining = []
    for sessions in (50, 100, 200, 300, 400):
        document = report(counts(sessions, follow=0.30), counts(sessions, follow=0.40))
        follow = next(d for d in document["differences"] if d["metric"] == "loop_follow_rate")
        assert follow["sessions_needed"] == 356
        remaining.append(follow["more_sessions_needed"])
        peeking = document["experiment"]["warning"]
        assert (peeking is None) is (sessions >= 356)
        if peeking:
            assert f"the smallest arm has {sessions} of the 356 sessions planned" in peeking
    assert remaining == [306, 256, 156, 56, 0]


def test_a_guardrail_flags_the_arm_with_the_higher_fallback_rate_beyond_its_interval() -> None:
    """Soft falls back on 30% of transitions against 10%: flagged worse; the repair rates are equal: no flag."""
    document = report(counts(300, follow=0.3, fallback=0.10), counts(300, follow=0.3, fallback=0.30))
    by_metric = {d["metric"]: d for d in document["differences"]}
    fallback = by_metric["fallback_rate"]
    assert fallback["guardrail"] is True and fallback["significant"] is True and fallback["worse"] == "soft"
    assert by_metric["repair_rate"]["guardrail"] is True and by_metric["repair_rate"]["worse"] is None
    # Lower is better on a guardrail: a lower fallback rate flags the baseline instead.
    reverse = report(counts(300, follow=0.3, fallback=0.30), counts(300, follow=0.3, fallback=0.10))
    assert next(d for d in reverse["differences"] if d["metric"] == "fallback_rate")["worse"] == "hard"


def test_session_depth_is_compared_by_the_bootstrap_with_the_median_beside_it() -> None:
    """Half of soft's sessions have two runs: mean depth +0.5, significant, with its median difference."""
    document = report(counts(200, follow=0.3), counts(200, follow=0.3, deep=100))
    depth = next(d for d in document["differences"] if d["metric"] == "session_depth")
    assert depth["difference"] == pytest.approx(0.5) and depth["significant"] is True
    assert 0 < depth["ci"][0] < 0.5 < depth["ci"][1]
    assert depth["median"]["difference"] == 0.5  # medians 1.5 (100 of 200 deep) and 1
    # Cohen's d: 0.5 over the pooled sd (soft's 0.50, the baseline's 0) of 0.35, d = 1.41: 9 sessions per arm.
    assert depth["sessions_needed"] == 9
    assert depth["worse"] == "hard"


def test_a_sample_ratio_mismatch_is_reported_and_warned_about() -> None:
    """600 vs 400 sessions on a 50/50 split: p < 0.001, mismatch, the warning says so first."""
    document = report(counts(600, follow=0.3), counts(400, follow=0.3))
    srm = document["experiment"]["srm"]
    assert srm["mismatch"] is True and srm["p_value"] < 0.001
    warning = document["experiment"]["warning"]
    assert warning.startswith("Sample ratio mismatch: the sessions per arm (hard 600, soft 400)")


def test_an_arm_without_runs_has_empty_metrics_and_no_differences() -> None:
    """No counts for soft (no runs yet): zeros, null values, null differences; the arms stay in config order."""
    document = build_report("support_answer", EXPERIMENT, {"hard": counts(10, follow=0.5)}).to_dict()
    assert list(document["arms"]) == ["hard", "soft"]
    soft = document["arms"]["soft"]
    assert soft["sessions"] == 0
    assert figures(soft["loop_follow_rate"]) == {"value": None, "numerator": 0, "denominator": 0}
    assert all(d["difference"] is None and d["ci"] is None for d in document["differences"])
    assert document["experiment"]["srm"] == {"p_value": pytest.approx(0.0016, abs=1e-4), "mismatch": False}


def test_every_arm_after_the_first_is_compared_with_the_first() -> None:
    """Three arms: differences for b and c against a, each metric once."""
    three = ExperimentConfig(
        name="three",
        arms={name: ArmConfig(loop_mode=mode) for name, mode in (("a", "hard"), ("b", "soft"), ("c", "none"))},
    )
    document = build_report("w", three, {name: counts(50, follow=0.3) for name in "abc"}).to_dict()
    pairs = [(d["metric"], tuple(d["arms"])) for d in document["differences"]]
    assert pairs == [(m, ("b", "a")) for m in REPORT_METRICS] + [(m, ("c", "a")) for m in REPORT_METRICS]
    assert REPORT_METRICS[: len(METRIC_NAMES)] == METRIC_NAMES
