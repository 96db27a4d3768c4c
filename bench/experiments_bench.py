"""Experiment report benchmark (issue 22: ``marsrag experiment report`` over 100,000 sessions, SQLite and PostgreSQL).

Each backend's store is migrated (by opening it) and seeded in bulk by :func:`bench._metrics_seed.seed` with the
metrics benchmark's history (three workflows, sessions of 1-4 runs over 60 days) until 100,000 sessions of its
first workflow are stored in an experiment of two arms (hard and soft, 50/50, assigned by the runner's hash);
one run in ten of the experiment carries a reader's rating. The seeder rebuilds the rollups and checks their
reads, per workflow and arm included, against the raw rows before anything is timed.

Figures, each next to its baseline measured alternately with it in the same run (warm cache, best of 5 rounds
after a warm-up):

- The report (:func:`marsrag.metrics.experiment_service.read_report`: the counts per arm from the rollups,
  then the statistics: Newcombe intervals, the depth bootstrap, sessions needed, the sample-ratio check) next
  to ``compute_metrics`` over all history of the same store (target: within 2x). Its first call in the process
  pays the import of NumPy, SciPy and statsmodels, which the warm-up takes: a note gives that cost.
- For information, the report's store read alone (``loop_counts`` per arm of the experiment) next to the same.
- Growth: the report over 100,000 sessions next to the same over 10,000 (a second store, the same seeder and
  random seed over the same 60 days; best of 20 alternating rounds; target: within 1.5x, flat in the sessions:
  its store read costs the rollup rows of the experiment's days and arms, its statistics the arms' counts).
"""

from __future__ import annotations

import tempfile
import time
from contextlib import ExitStack

from bench._metrics_seed import EVENTS, WORKFLOWS, seed
from bench._timing import Report, best_of_timed, ms, timed
from bench._web_seed import postgres_schema
from marsrag.metrics.compute import compute_metrics
from marsrag.metrics.experiment_service import read_report
from marsrag.store import open_store
from marsrag.tasks.config import ArmConfig, ExperimentConfig, WorkflowConfig

SESSIONS = 100_000
SMALL_SESSIONS = 10_000
ROUNDS = 5
GROWTH_ROUNDS = 20
#: Targets (issue 22): the report within 2x compute_metrics over the same store; flat from 10,000 sessions.
TARGET = 2.0
TARGET_GROWTH = 1.5
EXPERIMENT = ExperimentConfig(
    name="hard_vs_soft",
    arms={"hard": ArmConfig(loop_mode="hard", weight=50), "soft": ArmConfig(loop_mode="soft", weight=50)},
)
WORKFLOW = WorkflowConfig(
    name=WORKFLOWS[0][0], tasks=[task for task, _ in WORKFLOWS[0][3]], loop_mode="hard", experiment=EXPERIMENT
)


def run() -> None:
    """Seed each backend, time the report next to compute_metrics, print."""
    report = Report(
        f"experiment report over {SESSIONS:,} sessions in an experiment of two arms (warm cache, best of {ROUNDS} "
        "alternating rounds; baseline compute_metrics over all history of the same store)"
    )
    with tempfile.TemporaryDirectory(prefix="marsrag-experiments-bench-") as tmp, ExitStack() as schemas:
        postgres, why = schemas.enter_context(postgres_schema())
        backends = {"SQLite": (f"sqlite:///{tmp}/experiments.db", f"sqlite:///{tmp}/experiments-small.db")}
        if postgres is not None:
            small, _ = schemas.enter_context(postgres_schema())
            assert small is not None
            backends["PostgreSQL"] = (postgres, small)
        for name, (url, small_url) in backends.items():
            # The events cap is far above what 100,000 sessions take (about 2.1M events): sessions end the seeding.
            report.notes.extend(seed(url, 10 * EVENTS, experiment=EXPERIMENT, sessions=SESSIONS).notes(name))
            small_seeded = seed(small_url, 10 * EVENTS, experiment=EXPERIMENT, sessions=SMALL_SESSIONS)
            report.notes.extend(small_seeded.notes(f"{name} (growth store)"))
            _measure(report, name, url, small_url)
        if postgres is None:
            report.add("PostgreSQL: skipped (unreachable), not measured", "-", "-", 1.0, "(info)", True)
            report.note(f"PostgreSQL rows skipped: {why}")
    report.print()


def _measure(report: Report, name: str, url: str, small_url: str) -> None:
    with open_store(url) as store, open_store(small_url) as small:
        start = time.perf_counter()
        first = read_report(store, WORKFLOW)
        report.notes.append(
            f"{name}: the first report in the process took {(time.perf_counter() - start) * 1e3:.0f} ms (imports of "
            f"NumPy, SciPy, statsmodels); {first.sessions:,} sessions, arms "
            + ", ".join(f"{arm.name} {arm.sessions:,}" for arm in first.arms)
        )
        if first.sessions != SESSIONS:
            raise RuntimeError(f"the report counts {first.sessions:,} sessions, {SESSIONS:,} were seeded")
        metrics = timed(lambda: compute_metrics(store))
        pair = best_of_timed(timed(lambda: read_report(store, WORKFLOW)), metrics, rounds=ROUNDS)
        report.add(
            f"{name}: experiment report vs compute_metrics, all history",
            ms(pair.ours), ms(pair.base), pair.ratio, f"<= {TARGET:.0f}x", pair.ratio <= TARGET,
        )  # fmt: skip
        counts = timed(lambda: store.loop_counts(by=("arm",), experiment=EXPERIMENT.name))
        pair = best_of_timed(counts, metrics, rounds=ROUNDS)
        report.add(
            f"{name}: its store read (loop_counts per arm) vs compute_metrics",
            ms(pair.ours), ms(pair.base), pair.ratio, "(info)", True,
        )  # fmt: skip
        if read_report(small, WORKFLOW).sessions != SMALL_SESSIONS:
            raise RuntimeError(f"the growth store's report does not count its {SMALL_SESSIONS:,} sessions")
        big, little = timed(lambda: read_report(store, WORKFLOW)), timed(lambda: read_report(small, WORKFLOW))
        pair = best_of_timed(big, little, rounds=GROWTH_ROUNDS)
        report.add(
            f"{name}: growth, experiment report over {SESSIONS:,} vs {SMALL_SESSIONS:,} sessions",
            ms(pair.ours), ms(pair.base), pair.ratio, f"<= {TARGET_GROWTH}x", pair.ratio <= TARGET_GROWTH,
        )  # fmt: skip
