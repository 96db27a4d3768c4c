"""Streaming (issue 41): how soon an answer is seen forming, and what streaming costs a run that does not stream.

1. **Time to the first visible section vs time to task completion**, per task (the mean over a run's tasks), from
   the task's start: the first progress holding a section (what the run publishes, in this process; a viewer of
   the event stream sees it up to one poll, 0.2 s, later) vs the task's stored verdict. With the streaming replay
   LLM at 30 tokens/s (the sample's support_answer, 3 tasks); with SmolLM2-135M streaming from llama-cpp-python's
   server on the sample knowledge base when the real-model files are installed (``make models``). Reported, no
   target: the ratio is the share of the task's time before the user sees anything.
2. **Across processes, through the store**: the delay from a progress write (by another store connection, as a
   Celery worker's) to its event reaching a client of a live server's event stream (uvicorn on loopback), median
   and worst of 30 writes, next to the server's poll interval (:data:`marsrag.web.events_stream.POLL_SECONDS`, a
   constant: the delay expected on average is half of it plus a read).
3. **Streaming's overhead on a run whose LLM does not stream**: the runner as it is (stream listeners registered,
   the LLM boundary announcing each call) vs the same runner with the listeners replaced by no-ops, a 20-task
   workflow with a zero-latency replay LLM at the boundary, alternated (target <= 1.02x).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._samples import CLEAN
from bench._timing import Report, best_of_timed
from bench.crewai_bench import chain_project

ROOT = Path(__file__).resolve().parents[1]
#: The streaming replay LLM's rate, chunks (about tokens) a second.
TOKENS_PER_SECOND = 30
GOAL = "Checkout latency breached its SLO in three regions right after cache nodes restarted. What should we do?"


class Timeline:
    """When each task of a run started, first showed a section, and was stored (a watcher and an event sink)."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.visible: dict[str, float] = {}
        self.done: dict[str, float] = {}

    def watch(self, progress: Any) -> None:
        now = time.monotonic()
        self.started.setdefault(progress.task_id, now)
        if progress.sections:
            self.visible.setdefault(progress.task_id, now)

    def __call__(self, events: Any) -> None:
        for event in events:
            if event.name in ("loop.contract.validated", "loop.contract.failed") and event.task_id:
                self.done.setdefault(event.task_id, time.monotonic())

    def means(self) -> tuple[float, float, int]:
        """Mean seconds to the first visible section and to completion, over the tasks that showed one."""
        tasks = [task for task in self.visible if task in self.done]
        if not tasks:
            return float("nan"), float("nan"), 0
        first = sum(self.visible[t] - self.started[t] for t in tasks) / len(tasks)
        whole = sum(self.done[t] - self.started[t] for t in tasks) / len(tasks)
        return first, whole, len(tasks)


def _replay_timeline(tmp: Path) -> Timeline:
    from marsrag.compose import run_goal
    from marsrag.settings import Settings

    script = tmp / "streamed.jsonl"
    step = json.dumps({"output": CLEAN, "tokens_per_second": TOKENS_PER_SECOND})
    script.write_text(f"{step}\n" * 3, encoding="utf-8")
    timeline = Timeline()
    settings = Settings.resolve(llm=f"replay:{script}", db=f"sqlite:///{tmp / 'replay.db'}")
    document = run_goal(settings, GOAL, sinks=[timeline], watchers=[timeline.watch])
    if document["status"] != "completed":
        raise SystemExit(f"benchmark run failed: {document['status_reason']}")
    return timeline


def _smollm2_timeline(tmp: Path) -> Timeline | str:
    """SmolLM2's timeline, or why it could not be measured here."""
    from tests._net import free_port
    from tests.realmodel.models import SMOLLM2, start_server, stop_server

    try:
        SMOLLM2.file()
    except RuntimeError as error:
        return f"skipped: {error}"
    from marsrag.compose import ingest, run_goal
    from marsrag.settings import Settings

    os.environ.setdefault("MARSRAG_LLM_TIMEOUT", "900")
    os.environ.setdefault("MARSRAG_LLM_MAX_TOKENS", "1000")
    port = free_port()
    process = start_server(SMOLLM2, port, tmp / "server.log", preexec_fn=_all_cores)
    try:
        settings = Settings.resolve(
            llm=f"openai/{SMOLLM2.alias}",
            base_url=f"http://127.0.0.1:{port}/v1",
            db=f"sqlite:///{tmp / 'smollm2.db'}",
            structured_output="json_object",
        )
        ingest(settings, [ROOT / "examples" / "knowledge_base"], progress=False)
        timeline = Timeline()
        run_goal(settings, GOAL, sinks=[timeline], watchers=[timeline.watch])
        return timeline
    finally:
        stop_server(process)


def _all_cores() -> None:
    # The bench pins itself to one core; the model server gets them all (it is what is being measured).
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, range(os.cpu_count() or 1))


class _Silent:
    """The stream listeners' registry with nothing behind it: the runner as it was before streaming."""

    def listen(self, task: object, listener: object) -> None:
        """Nothing."""

    def forget(self, task: object) -> None:
        """Nothing."""

    def call_started(self, task: object) -> None:
        """Nothing."""

    def call_ended(self, task: object) -> None:
        """Nothing."""

    def chunk(self, task: object, text: str) -> None:
        """Nothing."""


@contextmanager
def _without_streams() -> Iterator[None]:
    import marsrag.llm.boundary as boundary
    import marsrag.runtime.runner as runner

    saved = runner.STREAMS, boundary.STREAMS
    runner.STREAMS = boundary.STREAMS = _Silent()  # type: ignore[assignment]
    try:
        yield
    finally:
        runner.STREAMS, boundary.STREAMS = saved


def _overhead(tmp: Path, count: int = 20, rounds: int = 9) -> tuple[float, float]:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.store import open_store

    project = chain_project(count)
    with open_store(f"sqlite:///{tmp / 'overhead.db'}") as store:

        def one() -> float:
            runner = WorkflowRunner(store, project, make_resilient(ReplayLLM.from_outputs([CLEAN] * count)))
            start = time.perf_counter()
            record = runner.run("latency", workflow="long")
            elapsed = time.perf_counter() - start
            if record.status != "completed":
                raise SystemExit(f"benchmark run failed: {record.status_reason}")
            return elapsed

        def before() -> float:
            with _without_streams():
                return one()

        pair = best_of_timed(one, before, rounds=rounds)
    return pair.ours / count, pair.base / count


def _delivery(tmp: Path, writes: int = 30) -> list[float]:
    """Seconds from each of ``writes`` progress writes to its event at a client of a live server's stream."""
    import threading

    import httpx
    from tests.web._live_server import live_server

    from marsrag.liveness import owner_id
    from marsrag.settings import resolve_settings
    from marsrag.state import RunRecord, TaskProgress
    from marsrag.store import open_store
    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings

    db = f"sqlite:///{tmp / 'delivery.db'}"
    app = create_app(WebSettings(resolve_settings(db=db), sweep_seconds=0))
    received: dict[int, float] = {}
    with live_server(app) as base, open_store(db) as writer:
        run = RunRecord(run_id="delivery", session_id="delivery", goal="g", workflow="support_answer",
                        loop_mode="hard", status="running", owner=owner_id())  # fmt: skip
        writer.create_run(run)

        def listen() -> None:
            with httpx.stream("GET", f"{base}/api/runs/delivery/stream", timeout=httpx.Timeout(10, read=60)) as reply:
                for line in reply.iter_lines():
                    if line.startswith("data: "):
                        data = json.loads(line.removeprefix("data: "))
                        if "progress" in data:
                            received[data["progress"]["seq"]] = time.monotonic()

        client = threading.Thread(target=listen, daemon=True)
        client.start()
        time.sleep(1.0)  # the client is connected and polling
        sent: dict[int, float] = {}
        for number in range(writes):
            progress = TaskProgress(run_id="delivery", task_id="t", position=0, sections={"hook": "x" * (number + 1)})
            sent[writer.save_progress(progress)] = time.monotonic()
            deadline = time.monotonic() + 5
            while max(sent) not in received and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(0.05)  # writes land at different points of the server's poll cycle
        writer.set_run_status("delivery", "completed", seen=writer.get_run("delivery"))
        client.join(30)
    return sorted(received[seq] - at for seq, at in sent.items() if seq in received)


def run() -> None:
    """Run the benchmark and print its tables."""
    seen = Report("streaming: time to the first visible section vs time to task completion (per task, from its start)")
    cost = Report("streaming: overhead on a run whose LLM does not stream (zero-latency replay LLM, 20 tasks)")
    across = Report("streaming across processes: a progress write to its event at a client of a live server")
    with tempfile.TemporaryDirectory(prefix="marsrag-stream-") as folder:
        tmp = Path(folder)
        replay = _replay_timeline(tmp)
        first, whole, tasks = replay.means()
        seen.add(
            f"streaming replay LLM at {TOKENS_PER_SECOND} tokens/s ({tasks} tasks)",
            f"{first:.2f} s",
            f"{whole:.2f} s",
            first / whole,
            "report",
            True,
        )
        smol = _smollm2_timeline(tmp)
        if isinstance(smol, str):
            seen.note(f"SmolLM2-135M: {smol}")
        else:
            first, whole, tasks = smol.means()
            seen.add(f"SmolLM2-135M, llama-cpp-python server ({tasks} tasks)", f"{first:.2f} s", f"{whole:.2f} s",
                     first / whole, "report", True)  # fmt: skip
        seen.note("ours = first section published (a viewer of the event stream: up to one 0.2 s poll later); "
                  "baseline = the task's verdict stored")  # fmt: skip
        seen.print()
        delays = _delivery(tmp)
        ours, base = _overhead(tmp)
    from marsrag.web.events_stream import POLL_SECONDS

    if delays:
        median = delays[len(delays) // 2]
        across.add(f"median delay ({len(delays)} writes)", f"{median * 1e3:.0f} ms", f"{POLL_SECONDS * 1e3:.0f} ms",
                   median / POLL_SECONDS, "report", True)  # fmt: skip
        across.add("worst delay", f"{delays[-1] * 1e3:.0f} ms", f"{POLL_SECONDS * 1e3:.0f} ms",
                   delays[-1] / POLL_SECONDS, "report", True)  # fmt: skip
    across.note("baseline = the server's poll interval (a constant); the writer is another store connection, as a "
                "Celery worker's is; SQLite file")  # fmt: skip
    across.print()
    cost.add("per task: with stream listeners vs without (no-ops)", f"{ours * 1e3:.2f} ms", f"{base * 1e3:.2f} ms",
             ours / base, "<= 1.02x", ours / base <= 1.02)  # fmt: skip
    cost.print()
