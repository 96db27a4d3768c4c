"""loop_mode tuning on scripted histories: each rule, its reasons and numbers, and --write keeping lint green."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from marsrag.contract import ContractIssue
from marsrag.errors import InputError
from marsrag.state import AttemptRecord, LoopEvent, LoopFields, RunRecord, TaskState, TransitionRecord, Validation
from marsrag.store import RunStore, open_store
from marsrag.tasks import load_config, sample_config_dir
from tests.contract.samples import CONTENT

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def scripted(
    store: RunStore, workflow: str, runs: int, *, first: str, followed: bool = False, mode: str = "hard"
) -> None:
    """``runs`` runs of two tasks: the first ends ``first``, the second valid; in hard mode a fallback after partial."""
    for n in range(runs):
        run_id = f"{workflow}-{n}"
        at = T0 + timedelta(minutes=n)
        store.create_run(
            RunRecord(
                run_id=run_id,
                session_id=run_id,
                goal="g",
                workflow=workflow,
                loop_mode=mode,
                status="completed",
                created_at=at,
                updated_at=at,
            )
        )
        errors = [ContractIssue(field="grip", code="empty", message="grip is empty")] if first == "partial" else []
        attempts = [AttemptRecord(number=1, raw="r", status=first, errors=errors)]  # type: ignore[arg-type]
        if first == "partial":
            attempts.append(AttemptRecord(number=2, raw="r", status="partial", errors=errors, kind="repair"))
        fields = LoopFields(**{**CONTENT, "grip": None if first == "partial" else CONTENT["grip"]})
        hand_on = "fallback" if first == "partial" and mode == "hard" else "direct"
        transition = TransitionRecord(
            run_id=run_id,
            transition_source_task_id="t1",
            transition_target_task_id="t2",
            transition_mode=hand_on,  # type: ignore[arg-type]
            transition_reason=hand_on,
            hook=CONTENT["loop"],
        )
        state = TaskState(
            run_id=run_id,
            task_id="t1",
            position=0,
            loop_mode=mode,
            validation=Validation(status=first, errors=errors),  # type: ignore[arg-type]
            loop_output=fields,
            attempts=attempts,
            created_at=at,
        )
        store.save_task(state, transition=transition)
        store.save_task(
            state.model_copy(
                update={
                    "task_id": "t2",
                    "position": 1,
                    "validation": Validation(status="valid"),
                    "loop_output": LoopFields(**CONTENT),
                    "attempts": [AttemptRecord(number=1, raw="r", status="valid")],
                }
            )
        )
        if followed:
            store.add_events([LoopEvent(name="loop.action.followed", run_id=run_id, task_id="t2")])


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    """A copy of the sample config the test may edit (change_review has no loop_mode line: policy default)."""
    target = tmp_path / "config"
    shutil.copytree(sample_config_dir(), target)
    return target


def set_mode(config_dir: Path, workflow: str, mode: str) -> None:
    path = config_dir / "workflows.yaml"
    text = path.read_text()
    block = text.index(f"{workflow}:")
    path.write_text(text[: block + len(workflow) + 1] + f"\n  loop_mode: {mode}" + text[block + len(workflow) + 1 :])


def recommend_for(store: RunStore, config_dir: Path) -> dict[str, Any]:
    from marsrag.metrics.tune import recommend

    return {r.workflow: r for r in recommend(store, load_config(config_dir))}


def test_fallbacks_after_partial_tasks_move_a_user_facing_workflow_from_hard_to_soft(
    store: RunStore, config_dir: Path
) -> None:
    """Every run's first task partial -> fallback: 100% fallbacks, all after partial -> soft, with the numbers."""
    scripted(store, "support_answer", 10, first="partial")
    rec = recommend_for(store, config_dir)["support_answer"]
    assert (rec.current, rec.recommended, rec.rule, rec.change) == ("hard", "soft", "fallbacks_dominate", True)
    assert rec.numbers["executions"] == 20 and rec.numbers["fallback_rate"] == 1.0
    assert rec.numbers["fallbacks_after_partial"] == 10 and rec.numbers["partial_share"] == 0.5
    assert any("10 of 10 fallbacks came after a partial task" in reason for reason in rec.reasons)


def test_rare_partials_and_a_suffering_follow_rate_move_soft_to_hard(store: RunStore, config_dir: Path) -> None:
    """A soft workflow, no partials, nobody follows: hard."""
    set_mode(config_dir, "change_review", "soft")
    scripted(store, "change_review", 10, first="valid", mode="soft")
    rec = recommend_for(store, config_dir)["change_review"]
    assert (rec.current, rec.recommended, rec.rule) == ("soft", "hard", "strict_is_cheap")
    assert rec.numbers["partial_share"] == 0.0 and rec.numbers["loop_follow_rate"] == 0.0


def test_a_healthy_soft_workflow_is_kept_with_the_figures_checked(store: RunStore, config_dir: Path) -> None:
    """Soft, no partials, but people follow: keep, and say what was checked."""
    set_mode(config_dir, "change_review", "soft")
    scripted(store, "change_review", 10, first="valid", mode="soft", followed=True)
    rec = recommend_for(store, config_dir)["change_review"]
    assert (rec.recommended, rec.rule, rec.change) == ("soft", "keep", False)
    assert "follow rate 100%" in rec.reasons[0]


def test_too_little_data_keeps_the_mode(store: RunStore, config_dir: Path) -> None:
    """9 runs x 2 tasks = 18 executions < 20: keep, saying how many were measured."""
    scripted(store, "support_answer", 9, first="partial")
    rec = recommend_for(store, config_dir)["support_answer"]
    assert (rec.recommended, rec.rule) == ("hard", "not_enough_data") and "18 narrative task executions" in rec.reasons[
        0
    ]


def test_a_user_facing_workflow_without_the_contract_gets_hard_by_policy(store: RunStore, config_dir: Path) -> None:
    """loop_mode none on a user-facing workflow: hard, whatever was measured; internal none is kept."""
    set_mode(config_dir, "change_review", "none")
    recs = recommend_for(store, config_dir)
    assert (recs["change_review"].recommended, recs["change_review"].rule) == ("hard", "policy")
    assert (recs["fact_extraction"].current, recs["fact_extraction"].recommended) == ("none", "none")


def test_write_changes_only_loop_mode_lines_and_lint_still_passes(tmp_path: Path, config_dir: Path) -> None:
    """--write edits the changed workflows' loop_mode (adding the line when missing); the rest stays byte for byte."""
    from marsrag.metrics.tune_service import tune

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with open_store(url) as store:
        scripted(store, "support_answer", 10, first="partial")
    set_mode(config_dir, "change_review", "none")
    before = (config_dir / "workflows.yaml").read_text()
    dry = tune(db=url, config=str(config_dir))
    assert dry["written"] == [] and (config_dir / "workflows.yaml").read_text() == before
    result = tune(db=url, config=str(config_dir), write=True)
    assert result["written"] == ["support_answer", "change_review"]
    after = (config_dir / "workflows.yaml").read_text()
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert changed == [("  loop_mode: hard", "  loop_mode: soft"), ("  loop_mode: none", "  loop_mode: hard")]
    project = load_config(config_dir)
    assert project.workflow("support_answer").effective_loop_mode == "soft"
    assert project.workflow("change_review").effective_loop_mode == "hard"


def test_write_adds_a_missing_loop_mode_line(tmp_path: Path, config_dir: Path) -> None:
    """A workflow relying on the default policy gets an explicit loop_mode line; lint passes."""
    from marsrag.metrics.tune import Recommendation, write_recommendations

    rec = Recommendation("change_review", "user_facing", "hard", "soft", "test", ["because"])
    assert write_recommendations(config_dir, [rec]) == ["change_review"]
    text = (config_dir / "workflows.yaml").read_text()
    assert "change_review:\n  loop_mode: soft\n  description:" in text
    assert load_config(config_dir).workflow("change_review").effective_loop_mode == "soft"


def test_the_shipped_sample_is_never_written(store: RunStore) -> None:
    """--write on the sample config inside the package: a clear error."""
    from marsrag.metrics.tune import Recommendation, write_recommendations

    rec = Recommendation("support_answer", "user_facing", "hard", "soft", "test", ["because"])
    with pytest.raises(InputError, match="sample config"):
        write_recommendations(sample_config_dir(), [rec])


def test_cli_json_reports_each_workflow(tmp_path: Path, config_dir: Path) -> None:
    """marsrag tune --format json: one recommendation per workflow, with rule, reasons and numbers."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with open_store(url) as store:
        scripted(store, "support_answer", 10, first="partial")
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "tune", "--db", url, "--config", str(config_dir), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert [r["workflow"] for r in result["recommendations"]] == ["support_answer", "fact_extraction", "change_review"]
    assert result["recommendations"][0]["recommended"] == "soft" and result["written"] == []
