"""Several runs of the sample workflow on one event loop, through ``WorkflowRunner.arun`` (CrewAI's ``akickoff``).

Offline: a replay LLM answers every task after ``--latency`` seconds, standing in for a model's time to answer,
awaited on the async path, so the runs' LLM calls are in flight together while one thread runs them all::

    python examples/async/concurrent_runs.py --runs 3 --latency 0.3 --db sqlite:///runs.db

Prints one line per run (its id and status), then how many LLM calls were in flight at once at most; each run
is stored like any other (``marsrag runs show RUN_ID --db ...``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from marsrag.llm.boundary import make_resilient
from marsrag.llm.replay import ReplayLLM
from marsrag.runtime.runner import WorkflowRunner
from marsrag.store import open_store
from marsrag.tasks import load_config, sample_config_dir

#: A valid answer for every task of the sample workflow: its first line of the flow example's replay script.
ANSWER = json.loads(Path(__file__).parents[1].joinpath("flows", "replay.jsonl").read_text().splitlines()[0])["output"]
GOALS = (
    "Checkout latency breached its SLO in three regions after cache restarts. What should we do?",
    "Payments fail with TLS handshake errors since this morning. What is going on?",
    "The order queue backlog keeps growing during the sale. What should we do first?",
    "Search returns empty results after a config push. How do we recover?",
)


def most_in_flight(llm: ReplayLLM) -> int:
    """The most calls of ``llm`` that were in flight at one moment, from their recorded start and end times."""
    moments = sorted([(call.started, 1) for call in llm.calls] + [(call.ended, -1) for call in llm.calls])
    current = most = 0
    for _, change in moments:
        current += change
        most = max(most, current)
    return most


async def main() -> None:
    """Start the runs together on this event loop and print what they ended as."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="how many runs to start at once (1-4)")
    parser.add_argument("--latency", type=float, default=0.3, help="seconds each LLM call takes")
    parser.add_argument("--db", default=None, help="run store URL (default: the data directory's SQLite file)")
    options = parser.parse_args()
    goals = GOALS[: max(1, min(options.runs, len(GOALS)))]
    project = load_config(sample_config_dir())
    tasks = len(project.workflow(None).tasks)
    replay = ReplayLLM.from_outputs([ANSWER] * (tasks * len(goals)), latency=options.latency)
    with open_store(options.db) as store:
        runner = WorkflowRunner(store, project, make_resilient(replay))
        runs = await asyncio.gather(*(runner.arun(goal) for goal in goals))
    for run in runs:
        print(run.run_id, run.status)
    print(f"{len(replay.calls)} LLM calls, at most {most_in_flight(replay)} in flight at once")


if __name__ == "__main__":
    asyncio.run(main())
