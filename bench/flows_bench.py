"""Flow benchmark (issue 21: the contract in CrewAI Flows).

Per-step wall time of a LoopFlow of three contract steps (each a one-task crew, committed to a SQLite store
file with its events, chained by the planner) next to a bare CrewAI Flow of the same three steps (each a
one-task crew with ``output_pydantic=LoopOutput`` and CrewAI's own conversion, nothing stored), both with a
zero-latency replay LLM and CrewAI's flow events off, measured alternately in one run (target: <= 1.15x).
Both sides are timed from building the flow to the end of its kickoff; each side's figure is its best of 25
alternated rounds (a round is one flow of about 70 ms: on a shared machine the best is the run least disturbed).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._samples import CLEAN
from bench._timing import Report, best_of_timed

STEPS = 3


def _flows() -> tuple[type[Any], type[Any]]:
    """The LoopFlow and the bare Flow of the same steps (built here: importing them imports CrewAI)."""
    from crewai import Crew, Process, Task
    from crewai.flow import Flow, listen, start

    from marsrag.contract import EXPECTED_OUTPUT_TEMPLATE, LoopOutput
    from marsrag.flows import LoopFlow
    from marsrag.integrations.crewai import Agent

    class Ours(LoopFlow):
        @start()
        def diagnose(self) -> Any:
            return self.contract_step("diagnose", agent="analyst", description="Diagnose: {goal}.")

        @listen(diagnose)
        def recommend(self) -> Any:
            return self.contract_step("recommend", agent="advisor", description="Recommend the fix for: {goal}.")

        @listen(recommend)
        def plan(self) -> Any:
            return self.contract_step("plan", agent="planner", description="Plan the rollout for: {goal}.")

    class Bare(Flow[dict[str, Any]]):  # type: ignore[misc]
        _skip_auto_memory: bool = True  # as LoopFlow: no Memory built per flow

        def __init__(self, llm: Any, **options: Any) -> None:
            super().__init__(**options)
            self._llm = llm

        def one(self, description: str) -> Any:
            agent = Agent(role="Analyst", goal="Diagnose problems.", backstory="Seasoned.", llm=self._llm)
            task = Task(
                description=description,
                expected_output=EXPECTED_OUTPUT_TEMPLATE,
                agent=agent,
                output_pydantic=LoopOutput,
            )
            crew = Crew(agents=[agent], tasks=[task], process=Process.sequential, verbose=False)
            return crew.kickoff(inputs={"goal": self.state["goal"]}).pydantic

        @start()
        def diagnose(self) -> Any:
            return self.one("Diagnose: {goal}.")

        @listen(diagnose)
        def recommend(self) -> Any:
            return self.one("Recommend the fix for: {goal}.")

        @listen(recommend)
        def plan(self) -> Any:
            return self.one("Plan the rollout for: {goal}.")

    return Ours, Bare


def run(rounds: int = 25) -> None:
    """Run the benchmark and print its table."""
    from marsrag.llm.replay import ReplayLLM
    from marsrag.store import open_store
    from marsrag.tasks import load_config, sample_config_dir

    report = Report("flows (zero-latency replay LLM; SQLite store file)")
    ours_flow, bare_flow = _flows()
    project = load_config(sample_config_dir())
    with tempfile.TemporaryDirectory() as tmp, open_store(f"sqlite:///{Path(tmp) / 'bench.db'}") as store:

        def ours() -> float:
            llm = ReplayLLM.from_outputs([CLEAN] * STEPS)
            start = time.perf_counter()
            flow = ours_flow(store=store, llm=llm, project=project, suppress_flow_events=True)
            flow.kickoff(inputs={"goal": "latency"})
            elapsed = time.perf_counter() - start
            if flow.run is None or flow.run.status != "completed" or llm.remaining:
                raise SystemExit(f"benchmark flow failed: {flow.run}")
            return elapsed

        def bare() -> float:
            llm = ReplayLLM.from_outputs([CLEAN] * STEPS)
            start = time.perf_counter()
            bare_flow(llm, suppress_flow_events=True).kickoff(inputs={"goal": "latency"})
            return time.perf_counter() - start

        times: dict[str, list[float]] = {"ours": [], "bare": []}

        def kept(name: str, side: Callable[[], float]) -> Callable[[], float]:
            def timed_and_kept() -> float:
                times[name].append(side())
                return times[name][-1]

            return timed_and_kept

        # Warms both paths first (imports, migrations); the warm-up rounds are dropped from the medians.
        pair = best_of_timed(kept("ours", ours), kept("bare", bare), rounds=rounds)
    per_ours, per_bare = pair.ours / STEPS * 1e3, pair.base / STEPS * 1e3
    median_ours, median_bare = (statistics.median(times[name][1:]) / STEPS * 1e3 for name in ("ours", "bare"))
    report.add(
        f"per step: LoopFlow with store and events ({STEPS} steps) vs bare CrewAI Flow of one-task crews",
        f"{per_ours:.2f} ms",
        f"{per_bare:.2f} ms",
        per_ours / per_bare,
        "<= 1.15x",
        per_ours / per_bare <= 1.15,
    )
    report.note(
        f"best of {rounds} alternated rounds; medians: {median_ours:.2f} ms vs {median_bare:.2f} ms per step "
        f"({median_ours / median_bare:.2f}x)"
    )
    report.print()


if __name__ == "__main__":
    run()
