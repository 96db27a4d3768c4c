"""loop_mode tuning (spec section 9, step 6): a recommended loop_mode per workflow from measured outcomes.

The rules, in order (the first that applies decides; thresholds are :class:`TuneRules`):

1. **policy**: a user-facing workflow with ``loop_mode: none`` -> ``hard`` (spec section 7's default policy:
   user-facing narrative workflows run the strict contract).
2. **not enough data**: fewer than ``min_executions`` narrative task executions in the window -> keep.
3. **hard -> soft**: a user-facing workflow in hard mode whose fallback rate is at least ``fallback_high``,
   and at least ``partial_share_of_fallbacks`` of those fallbacks come after a *partial* task. Soft mode hands
   a partial task's valid loop on instead of the fallback question, so the chain keeps its thread.
4. **soft -> hard**: a workflow in soft mode whose partial outputs are rare (final partial share at most
   ``partial_rare``) while its follow rate suffers (below ``follow_low``): strictness costs little and a
   clean, validated loop is what people follow.
5. otherwise keep, with the figures that were checked.

A workflow with an ``experiment`` is decided by it instead (:func:`decide_experiment`): once every arm has the
sessions planned for ``loop_follow_rate`` (80% power for the observed difference) and the difference's 95%
interval excludes 0, the better arm's loop_mode wins (rule ``experiment_winner``), unless the split is off
(``experiment_sample_ratio_mismatch``) or the winner is worse on a guardrail (``experiment_guardrail``);
before, it says how many more sessions it needs (``experiment_needs_sessions``): reading a fixed-horizon test
before its planned size inflates false positives.

Recommendations never change a config by themselves; :func:`write_recommendations` edits ``workflows.yaml``
only when asked (the ``loop_mode`` lines, and an ended experiment's block), and the config must still load
(lint included) afterwards, or nothing is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from marsrag.errors import ConfigError, InputError
from marsrag.experiments.text import difference_text, interval_text
from marsrag.metrics.compute import metrics_by
from marsrag.metrics.experiment import PRIMARY_METRIC, Difference, ExperimentReport
from marsrag.metrics.experiment_service import read_report
from marsrag.metrics.window import Window
from marsrag.store import RunStore
from marsrag.tasks._yaml import parse_yaml
from marsrag.tasks.config import ProjectConfig
from marsrag.tasks.loader import load_config, sample_config_dir


@dataclass(frozen=True)
class TuneRules:
    """Thresholds of the tuning rules."""

    min_executions: int = 20
    fallback_high: float = 0.25
    partial_share_of_fallbacks: float = 0.5
    partial_rare: float = 0.05
    follow_low: float = 0.30


@dataclass(frozen=True)
class Recommendation:
    """A workflow's current and recommended loop_mode, the rule that decided, why, and the numbers."""

    workflow: str
    kind: str
    current: str
    recommended: str
    rule: str
    reasons: list[str]
    numbers: dict[str, Any] = field(default_factory=dict)
    #: The experiment the recommendation was read from (its name), None for the measured-history rules.
    experiment: str | None = None

    @property
    def change(self) -> bool:
        """Whether the recommendation differs from the current mode."""
        return self.recommended != self.current

    @property
    def ends_experiment(self) -> bool:
        """Whether writing it ends the workflow's experiment (a winner was found)."""
        return self.experiment is not None and self.rule == "experiment_winner"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "workflow": self.workflow,
            "kind": self.kind,
            "current": self.current,
            "recommended": self.recommended,
            "change": self.change,
            "experiment": self.experiment,
            "ends_experiment": self.ends_experiment,
            "rule": self.rule,
            "reasons": self.reasons,
            "numbers": self.numbers,
        }


def recommend(
    store: RunStore, project: ProjectConfig, window: Window | None = None, rules: TuneRules | None = None
) -> list[Recommendation]:
    """One recommendation per workflow of ``project``, in config order, from the store's measured outcomes."""
    rules = rules or TuneRules()
    window = window or Window()
    measured = {key[0]: value for key, value in metrics_by(store, window, by=("workflow",)).items()}
    extra = store.partial_counts(since=window.since, until=window.until)
    out = []
    for workflow in project.workflows.values():
        if workflow.experiment is not None:
            report = read_report(store, workflow, window)
            out.append(decide_experiment(workflow.kind, workflow.effective_loop_mode, report))
            continue
        metrics = measured.get(workflow.name)
        counts = extra.get(workflow.name, {})
        executions = metrics.loop_schema_pass_rate.denominator if metrics else 0
        fallback = metrics.fallback_rate if metrics else None
        follow = metrics.loop_follow_rate.value if metrics else None
        partial_share = counts.get("partial", 0) / executions if executions else None
        fallbacks = fallback.numerator if fallback else 0
        from_partial = counts.get("fallbacks_after_partial", 0)
        numbers = {
            "executions": executions,
            "loop_schema_pass_rate": metrics.loop_schema_pass_rate.value if metrics else None,
            "repair_rate": metrics.repair_rate.value if metrics else None,
            "fallback_rate": fallback.value if fallback else None,
            "fallbacks": fallbacks,
            "fallbacks_after_partial": from_partial,
            "partial_share": partial_share,
            "loop_follow_rate": follow,
        }
        out.append(_decide(workflow.name, workflow.kind, workflow.effective_loop_mode, numbers, rules))
    return out


def _decide(name: str, kind: str, mode: str, numbers: dict[str, Any], rules: TuneRules) -> Recommendation:
    def make(recommended: str, rule: str, *reasons: str) -> Recommendation:
        return Recommendation(name, kind, mode, recommended, rule, list(reasons), numbers)

    facing = kind == "user_facing"
    if facing and mode == "none":
        return make("hard", "policy", "user-facing workflows run the strict contract (spec section 7 default policy)")
    executions = numbers["executions"]
    if executions < rules.min_executions:
        return make(
            mode,
            "not_enough_data",
            f"{executions} narrative task executions measured; at least {rules.min_executions} are needed to tune",
        )
    fallback = numbers["fallback_rate"]
    if facing and mode == "hard" and fallback is not None and fallback >= rules.fallback_high:
        fallbacks, after_partial = numbers["fallbacks"], numbers["fallbacks_after_partial"]
        if fallbacks and after_partial / fallbacks >= rules.partial_share_of_fallbacks:
            return make(
                "soft",
                "fallbacks_dominate",
                f"fallback rate {fallback:.0%} is at least {rules.fallback_high:.0%}",
                f"{after_partial} of {fallbacks} fallbacks came after a partial task: soft mode would hand on their "
                "valid loops instead of the fallback question",
            )
    partial, follow = numbers["partial_share"], numbers["loop_follow_rate"]
    if mode == "soft" and partial is not None and follow is not None:
        if partial <= rules.partial_rare and follow < rules.follow_low:
            return make(
                "hard",
                "strict_is_cheap",
                f"partial outputs are rare ({partial:.0%} <= {rules.partial_rare:.0%}), so the strict contract costs "
                "little",
                f"the follow rate suffers ({follow:.0%} < {rules.follow_low:.0%}): validated loops are what people "
                "follow",
            )
    checked = ", ".join(
        f"{label} {_pct(numbers[key])}"
        for key, label in (
            ("fallback_rate", "fallback rate"),
            ("partial_share", "partial share"),
            ("loop_follow_rate", "follow rate"),
        )
    )
    return make(mode, "keep", f"no rule applies ({checked}, over {executions} executions)")


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def decide_experiment(kind: str, mode: str, report: ExperimentReport) -> Recommendation:
    """The recommendation an experiment's report supports: the winner's loop_mode, or what it still needs."""
    arms = {arm.name: arm for arm in report.arms}
    least = min(arm.sessions for arm in report.arms)
    planned = report.planned_sessions
    numbers: dict[str, Any] = {
        "sessions": {arm.name: arm.sessions for arm in report.arms},
        "planned_sessions": planned,
        "srm_p_value": report.srm.p_value,
    }

    def make(recommended: str, rule: str, *reasons: str) -> Recommendation:
        return Recommendation(report.workflow, kind, mode, recommended, rule, list(reasons), numbers, report.name)

    label = f"experiment {report.name}"
    if report.srm.mismatch:
        return make(mode, "experiment_sample_ratio_mismatch", f"{label}: {report.warning}")
    if not report.planned_reached:
        if planned is None:
            return make(
                mode,
                "experiment_needs_sessions",
                f"{label}: no difference in {PRIMARY_METRIC} observed yet ({least} sessions in the smallest arm); "
                "it needs more sessions before a sample size can be planned",
            )
        numbers["more_sessions"] = planned - least
        return make(
            mode,
            "experiment_needs_sessions",
            f"{label} needs {planned - least} more sessions per arm: the smallest arm has {least} of the {planned} "
            f"planned for {PRIMARY_METRIC} (80% power for the observed difference)",
            "reading the experiment before then and stopping on a significant peek inflates false positives",
        )
    primary = report.primary()
    better = [d for d in primary if d.better == d.arm]
    if better:
        won = max(better, key=lambda d: arms[d.arm].rate(PRIMARY_METRIC).value or 0.0)
        winner, evidence = won.arm, won
    elif primary and all(d.better == d.base for d in primary):
        winner, evidence = report.baseline.name, primary[0]
    else:
        shown = ", ".join(f"{d.arm} {_interval(d)}" for d in primary)
        return make(
            mode,
            "experiment_no_difference",
            f"{label}: every arm has the {planned} planned sessions and no arm is better on {PRIMARY_METRIC} beyond "
            f"its interval ({shown}); keep the mode, or end the experiment by hand",
        )
    flagged = [d for d in report.flagged if d.worse == winner]
    numbers.update(
        winner=winner,
        difference=evidence.difference,
        ci_low=evidence.interval.low if evidence.interval else None,
        ci_high=evidence.interval.high if evidence.interval else None,
    )
    if flagged:
        guard = ", ".join(f"{d.metric} {_interval(d)} against {d.base if d.arm == winner else d.arm}" for d in flagged)
        return make(
            mode,
            "experiment_guardrail",
            f"{label}: {winner} is better on {PRIMARY_METRIC} but worse on a guardrail ({guard}); not recommended",
        )
    other = evidence.base if winner == evidence.arm else evidence.arm
    chosen = arms[winner]
    return make(
        chosen.loop_mode,
        "experiment_winner",
        f"{label}: {winner} ({chosen.loop_mode}) beats {other} on {PRIMARY_METRIC} by "
        f"{difference_text(PRIMARY_METRIC, abs(evidence.difference or 0.0)).lstrip('+')} "
        f"(arm {evidence.arm} minus {evidence.base}: {_interval(evidence)})",
        f"rule: every arm has at least the {planned} sessions planned (80% power) and the 95% interval excludes 0; "
        f"--write ends the experiment with loop_mode: {chosen.loop_mode}",
    )


def _interval(difference: Difference) -> str:
    ci = difference.interval.to_list() if difference.interval else None
    return f"{difference_text(difference.metric, difference.difference)}, 95% CI {interval_text(difference.metric, ci)}"


# -- writing -------------------------------------------------------------------------------------------------------

_LOOP_MODE_LINE = re.compile(r"^(?P<head>\s*loop_mode:\s*)(?P<value>[A-Za-z\"']+)(?P<tail>\s*(#.*)?)$")


def write_recommendations(config_dir: Path, recommendations: list[Recommendation]) -> list[str]:
    """Set ``loop_mode`` in ``config_dir/workflows.yaml`` for every changed recommendation; the workflows changed.

    Only the ``loop_mode`` lines change (added after the workflow's first key when missing); a recommendation
    that ends an experiment replaces the workflow's whole ``experiment:`` block (its comments too) with the
    winner's ``loop_mode`` line, dropping the workflow's own ``loop_mode`` line. Other comments and the layout
    stay. The config is loaded (lint included) afterwards; if it fails, the file is restored.

    Raises:
        InputError: no workflows.yaml, the shipped sample config, or a workflow written in flow style.
        ConfigError: the edited config does not load (the file is restored).
    """
    if config_dir.resolve() == sample_config_dir().resolve():
        raise InputError("the shipped sample config is not written to: copy it to ./config and pass --config config")
    path = config_dir / "workflows.yaml"
    if not path.is_file():
        raise InputError(f"{path}: no workflows.yaml to write the recommended loop modes to")
    original = path.read_text(encoding="utf-8")
    lines = original.splitlines(keepends=True)
    changed = [r for r in recommendations if r.change or r.ends_experiment]
    for recommendation in changed:
        doc = parse_yaml("".join(lines), str(path))
        if recommendation.ends_experiment:
            lines = _end_experiment(doc, lines, recommendation.workflow, recommendation.recommended, path)
        else:
            lines = _set_mode(doc, lines, recommendation.workflow, recommendation.recommended, path)
    if not changed:
        return []
    path.write_text("".join(lines), encoding="utf-8")
    try:
        load_config(config_dir)
    except ConfigError:
        path.write_text(original, encoding="utf-8")
        raise
    return [r.workflow for r in changed]


def _set_mode(doc: Any, lines: list[str], workflow: str, mode: str, path: Path) -> list[str]:
    key = doc.positions.get((workflow, "loop_mode"))
    if key is not None:
        index = key.line - 1
        match = _LOOP_MODE_LINE.match(lines[index].rstrip("\r\n"))
        if match is None:
            raise InputError(f"{path}:{key.line}: loop_mode of {workflow!r} is not a plain `loop_mode: value` line")
        ending = lines[index][len(lines[index].rstrip("\r\n")) :]
        lines[index] = f"{match.group('head')}{mode}{match.group('tail')}{ending}"
        return lines
    children = [pos for keys, pos in doc.positions.items() if len(keys) == 2 and keys[0] == workflow]
    parent = doc.positions.get((workflow,))
    if not children or parent is None or min(p.line for p in children) == parent.line:
        raise InputError(f"{path}: workflow {workflow!r} is not a block mapping; set its loop_mode by hand")
    first = min(children, key=lambda p: p.line)
    indent = " " * (first.column - 1)
    ending = "\r\n" if lines[first.line - 1].endswith("\r\n") else "\n"
    lines.insert(first.line - 1, f"{indent}loop_mode: {mode}{ending}")
    return lines


def _end_experiment(doc: Any, lines: list[str], workflow: str, mode: str, path: Path) -> list[str]:
    """Replace ``workflow``'s ``experiment:`` block with ``loop_mode: MODE`` and drop its own loop_mode line."""
    key = doc.positions.get((workflow, "experiment"))
    if key is None:
        raise InputError(f"{path}: workflow {workflow!r} has no experiment: block to end")
    start = key.line - 1
    indent = key.column - 1
    end = start + 1  # the block: deeper lines (comments too) and the blank lines between them
    scan = end
    while scan < len(lines):
        text = lines[scan].rstrip("\r\n")
        if not text.strip():
            scan += 1
            continue
        if len(text) - len(text.lstrip()) <= indent:
            break
        scan += 1
        end = scan
    if lines[start][:indent].strip() or not lines[start][indent:].startswith("experiment"):
        raise InputError(f"{path}:{key.line}: the experiment of {workflow!r} is not a block key; end it by hand")
    own = doc.positions.get((workflow, "loop_mode"))
    if own is not None and _LOOP_MODE_LINE.match(lines[own.line - 1].rstrip("\r\n")) is None:
        raise InputError(f"{path}:{own.line}: loop_mode of {workflow!r} is not a plain `loop_mode: value` line")
    ending = "\r\n" if lines[start].endswith("\r\n") else "\n"
    # The later edit first, so the earlier one's line numbers still hold.
    if own is not None and own.line - 1 > start:
        del lines[own.line - 1]
    lines[start:end] = [f"{' ' * indent}loop_mode: {mode}{ending}"]
    if own is not None and own.line - 1 < start:
        del lines[own.line - 1]
    return lines
