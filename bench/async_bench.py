"""Async executor benchmark (issue 21): runs completed per second with a slow LLM, async vs thread executor.

``serve``'s two in-process executors on the same runner (the shipped sample's default workflow, three
contract tasks; a SQLite store file; the replay LLM at the LLM boundary, every call taking 0.5 s): the
async executor (runs as tasks on one event loop, each LLM call awaited) against the thread executor with
the pool ``serve`` gives it by default (``--run-threads 2``). For 1, 10 and 50 runs submitted at once, the
figure is runs completed per second, from the first submit to the last run's end (one round per figure:
a round at 50 takes the thread executor about 40 s). With one run the two should match; above the thread
pool's size the thread executor queues runs while the async one lets them all wait on the LLM together,
until the loop's own CPU work (CrewAI's per-task bookkeeping, the store's commits) becomes the limit.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench._samples import CLEAN
from bench._timing import Report

#: Seconds each LLM call takes.
LATENCY = 0.5
#: Runs submitted at once, per figure.
CONCURRENCY = (1, 10, 50)
#: The thread executor's pool, as ``marsrag serve`` configures it by default.
SERVE_THREADS = 2
#: Per concurrency, the least async/thread ratio expected: parity for one run, then well above the pool's
#: 2 runs at once. Not the ideal 5x and 25x: each run costs the loop about 0.2 s of CPU (CrewAI's per-task
#: work, measured at 0.01 s latency on a loaded machine), so at 50 runs the loop's CPU, not the LLM, is the limit.
TARGETS = {1: 0.9, 10: 2.0, 50: 3.0}


def _no_action(*_: Any) -> Any:
    raise AssertionError("the benchmark runs no operator action")


def run() -> None:
    """Run the benchmark and print its table."""
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.async_executor import AsyncRunExecutor
    from marsrag.runtime.executor import ThreadRunExecutor
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.store import open_store
    from marsrag.tasks import load_config, sample_config_dir

    project = load_config(sample_config_dir())
    workflow = project.workflow(None)
    calls_per_run = len(workflow.tasks)
    report = Report(f"async executor (replay LLM, {LATENCY:g} s per call; {calls_per_run}-task workflow; SQLite)")
    with tempfile.TemporaryDirectory() as tmp, open_store(f"sqlite:///{Path(tmp) / 'bench.db'}") as store:

        def runs_per_second(kind: str, count: int) -> float:
            llm = make_resilient(ReplayLLM.from_outputs([CLEAN] * (count * calls_per_run), latency=LATENCY))
            runner = WorkflowRunner(store, project, llm)
            executor: Any
            if kind == "async":
                executor = AsyncRunExecutor(runner.aresume, _no_action, count, stopping=runner.stopping)
            else:
                executor = ThreadRunExecutor(runner.resume, _no_action, SERVE_THREADS, stopping=runner.stopping)
            run_ids = [runner.start(f"latency {number}", workflow=workflow.name).run_id for number in range(count)]
            start = time.perf_counter()
            for run_id in run_ids:
                executor.submit(run_id)
            if not executor.wait(timeout=600):
                raise SystemExit(f"benchmark runs on the {kind} executor did not finish")
            elapsed = time.perf_counter() - start
            executor.shutdown()
            failed = [run.status_reason for run in map(store.get_run, run_ids) if run.status != "completed"]
            if failed:
                raise SystemExit(f"benchmark run failed on the {kind} executor: {failed[0]}")
            return count / elapsed

        runs_per_second("async", 1), runs_per_second("thread", 1)  # warm both paths (imports, migrations)
        for count in CONCURRENCY:
            base = runs_per_second("thread", count)
            ours = runs_per_second("async", count)
            report.add(
                f"runs/s, {count} at once: async executor vs thread executor ({SERVE_THREADS} threads)",
                f"{ours:.2f}/s",
                f"{base:.2f}/s",
                ours / base,
                f">= {TARGETS[count]:.1f}x",
                ours / base >= TARGETS[count],
            )
    ideal = 1 / (calls_per_run * LATENCY)
    report.note(
        f"A run waits {calls_per_run * LATENCY:g} s on its LLM: at most {ideal:.2f} runs/s per run in flight"
        f" (the thread executor: {SERVE_THREADS * ideal:.2f}/s with {SERVE_THREADS} threads)."
    )
    report.print()
