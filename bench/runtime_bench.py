"""Orchestrator benchmark (issue: the MarsRAG orchestrator).

Per-task wall time of our runner on a 20-task workflow, with its SQLite store writes and events, next to a
bare CrewAI crew of the same tasks, both with a zero-latency replay LLM, measured alternately in one run
(target: ratio <= 1.10). Both sides are timed from building the crew (ours: the runner's whole run, which
builds it) to the end of the kickoff.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench._samples import CLEAN
from bench._timing import Report, best_of_timed
from bench.crewai_bench import chain_project, plain_crew


def run(count: int = 20, rounds: int = 9) -> None:
    """Run the benchmark and print its table."""
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.store import open_store

    report = Report("orchestrator (zero-latency replay LLM; SQLite store file)")
    project = chain_project(count)
    with tempfile.TemporaryDirectory() as tmp, open_store(f"sqlite:///{Path(tmp) / 'bench.db'}") as store:

        def ours() -> float:
            runner = WorkflowRunner(store, project, ReplayLLM.from_outputs([CLEAN] * count))
            start = time.perf_counter()
            record = runner.run("latency", workflow="long")
            elapsed = time.perf_counter() - start
            if record.status != "completed":
                raise SystemExit(f"benchmark run failed: {record.status_reason}")
            return elapsed

        def bare() -> float:
            llm = ReplayLLM.from_outputs([CLEAN] * count)
            start = time.perf_counter()  # the crew's build is timed, as the runner's is
            plain_crew(llm, count).kickoff(inputs={"goal": "latency"})
            return time.perf_counter() - start

        pair = best_of_timed(ours, bare, rounds=rounds)  # warms both paths first (imports, migrations)
    per_ours, per_bare = pair.ours / count * 1e3, pair.base / count * 1e3
    report.add(
        f"per task: runner with store and events ({count} tasks) vs bare CrewAI crew (build + kickoff)",
        f"{per_ours:.2f} ms",
        f"{per_bare:.2f} ms",
        per_ours / per_bare,
        "<= 1.10x",
        per_ours / per_bare <= 1.10,
    )
    report.print()
