"""Flow benchmark (issue 21: the contract in CrewAI Flows).

Per-step wall time of a LoopFlow of three contract steps (each a one-task crew, committed to a SQLite store
file with its events, chained by the planner) next to a bare CrewAI Flow of the same three steps (each a
one-task crew with ``output_pydantic=LoopOutput`` and CrewAI's own conversion, nothing stored), both with a
zero-latency replay LLM and CrewAI's flow events off, measured alternately in one run (target: <= 1.15x).
Both sides are timed from building the flow to the end of its kickoff, in 25 rounds of one flow each, back to
back in alternating order; the ratio is the median of the rounds' ratios (on a shared machine the load drifts
between rounds far more than within one, and a best-of pairs two different moments of it).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._samples import CLEAN
from bench._timing import Report

STEPS = 3


@dataclass
class Clocked:
    """One flow's wall time and its process's CPU time (all threads: CrewAI runs sync steps in threads), seconds."""

    wall: float = 0.0
    cpu: float = 0.0


@contextmanager
def _clock() -> Iterator[Clocked]:
    clocked = Clocked()
    wall, cpu = time.perf_counter(), time.process_time()
    yield clocked
    clocked.wall, clocked.cpu = time.perf_counter() - wall, time.process_time() - cpu


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

        def ours() -> Clocked:
            llm = ReplayLLM.from_outputs([CLEAN] * STEPS)
            with _clock() as clocked:
                flow = ours_flow(store=store, llm=llm, project=project, suppress_flow_events=True)
                flow.kickoff(inputs={"goal": "latency"})
            if flow.run is None or flow.run.status != "completed" or llm.remaining:
                raise SystemExit(f"benchmark flow failed: {flow.run}")
            return clocked

        def bare() -> Clocked:
            llm = ReplayLLM.from_outputs([CLEAN] * STEPS)
            with _clock() as clocked:
                bare_flow(llm, suppress_flow_events=True).kickoff(inputs={"goal": "latency"})
            return clocked

        ours(), bare()  # warm both paths (imports, migrations, CrewAI's own storage)
        pairs: list[tuple[Clocked, Clocked]] = []
        for number in range(rounds):
            # One round is a pair run back to back, its order alternating: the machine's load drifts between
            # rounds (it is shared), much less within one, so each round's ratio compares like with like.
            if number % 2:
                pairs.append((ours(), bare()))
            else:
                base = bare()
                pairs.append((ours(), base))
    ratio = statistics.median(mine.wall / base.wall for mine, base in pairs)
    cpu_ratio = statistics.median(mine.cpu / base.cpu for mine, base in pairs)
    per_ours, per_bare = (statistics.median(c.wall for c in side) / STEPS * 1e3 for side in zip(*pairs, strict=True))
    best_ours, best_bare = (min(c.wall for c in side) / STEPS * 1e3 for side in zip(*pairs, strict=True))
    report.add(
        f"per step: LoopFlow with store and events ({STEPS} steps) vs bare CrewAI Flow of one-task crews",
        f"{per_ours:.2f} ms",
        f"{per_bare:.2f} ms",
        ratio,
        "<= 1.15x",
        ratio <= 1.15,
    )
    report.note(
        f"medians of {rounds} paired rounds (order alternating); the ratio is the median of the rounds' ratios; "
        f"best of each side: {best_ours:.2f} ms vs {best_bare:.2f} ms ({best_ours / best_bare:.2f}x); "
        f"the process's CPU time, median ratio: {cpu_ratio:.2f}x"
    )
    report.print()


if __name__ == "__main__":
    run()
