"""Tracing (issue 42): what OpenTelemetry spans cost a run, with the exporter on and with traces off.

A 20-task workflow with a zero-latency replay LLM at the LLM boundary (every task: a run-child task span, its
retrieval span, its LLM call span, its loop events as span events), the runner alternated between:

1. **exporter on vs off**: OTLP/HTTP with the SDK's batch processor, configured the standard way
   (``OTEL_EXPORTER_OTLP_ENDPOINT``), to a collector on loopback in another process that takes each export and
   answers 200 (target <= 1.05x);
2. **off vs no tracing code**: nothing configured (every span function returns the no-op span after one look)
   vs the span functions the runner, the boundary, retrieval and the guardrail call replaced by ones that return
   the no-op span outright, the runner as it would be without tracing (target 1.00x: <= 1.02x is noise here).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._samples import CLEAN
from bench._timing import Report, best_of_timed
from bench.crewai_bench import chain_project

TASKS = 20
#: A collector that keeps nothing: each OTLP/HTTP export is read and answered 200 (on all cores, not the bench's).
_COLLECTOR = """
import os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, range(os.cpu_count() or 1))
class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@contextmanager
def _collector() -> Iterator[str]:
    process = subprocess.Popen([sys.executable, "-c", _COLLECTOR], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield f"http://127.0.0.1:{process.stdout.readline().strip()}"
    finally:
        process.terminate()
        process.wait()


@contextmanager
def _traces(endpoint: str | None) -> Iterator[None]:
    """Traces exported to ``endpoint`` (None: nothing configured) while the block runs."""
    from marsrag.tracing import provider

    saved = {name: os.environ.pop(name) for name in list(os.environ) if name.startswith("OTEL_")}
    if endpoint is not None:
        os.environ.update(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_LOGS_EXPORTER="none")
    provider.reset()
    provider.tracer()  # built once per process in production: not part of a run's cost
    try:
        yield
    finally:
        provider.reset()  # sends what is left, outside the timed run
        for name in [name for name in os.environ if name.startswith("OTEL_")]:
            del os.environ[name]
        os.environ.update(saved)


class _NoSpans:
    """The span functions as they would be without tracing: each returns the no-op span outright."""

    def __init__(self) -> None:
        from marsrag.tracing import spans

        self.none = spans.NO_SPAN

    def span(self, *args: Any, **kwargs: Any) -> Any:
        return self.none

    def nothing(self, *args: Any, **kwargs: Any) -> None:
        return None


@contextmanager
def _without_tracing() -> Iterator[None]:
    import marsrag.llm.boundary as boundary
    import marsrag.runtime.retrieval as retrieval
    import marsrag.runtime.runner as runner
    from marsrag.tracing import spans

    stub = _NoSpans()
    patches: list[tuple[Any, str, Any]] = [
        (runner, "start_run", stub.span),
        (runner, "start_task", stub.span),
        (runner, "end_run", stub.nothing),
        (runner, "current_traceparent", stub.nothing),
        (retrieval, "start_retrieval", stub.span),
        (spans, "start_call", stub.span),
        (spans, "end_call", stub.nothing),
    ]
    saved = [(module, name, getattr(module, name)) for module, name, _ in patches]
    for module, name, value in patches:
        setattr(module, name, value)
    assert boundary.spans is spans  # the boundary calls through the module: patched above
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def _runs(tmp: Path, endpoint: str, rounds: int = 9) -> tuple[tuple[float, float], tuple[float, float]]:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.store import open_store

    project = chain_project(TASKS)
    with open_store(f"sqlite:///{tmp / 'tracing.db'}") as store:

        def one() -> float:
            runner = WorkflowRunner(store, project, make_resilient(ReplayLLM.from_outputs([CLEAN] * TASKS)))
            start = time.perf_counter()
            record = runner.run("latency", workflow="long")
            elapsed = time.perf_counter() - start
            if record.status != "completed":
                raise SystemExit(f"benchmark run failed: {record.status_reason}")
            return elapsed

        def exported() -> float:
            with _traces(endpoint):
                return one()

        def off() -> float:
            with _traces(None):
                return one()

        def untraced() -> float:
            with _traces(None), _without_tracing():
                return one()

        on = best_of_timed(exported, off, rounds=rounds)
        bare = best_of_timed(off, untraced, rounds=rounds)
    return (on.ours / TASKS, on.base / TASKS), (bare.ours / TASKS, bare.base / TASKS)


def run() -> None:
    """Run the benchmark and print its table."""
    report = Report(f"tracing: the runner with spans exported, off, and without tracing ({TASKS} tasks, replay LLM)")
    with tempfile.TemporaryDirectory(prefix="marsrag-tracing-") as folder, _collector() as endpoint:
        (on, off), (idle, bare) = _runs(Path(folder), endpoint)
    report.add("per task: exporter on (OTLP/HTTP, batch) vs off", f"{on * 1e3:.2f} ms", f"{off * 1e3:.2f} ms",
               on / off, "<= 1.05x", on / off <= 1.05)  # fmt: skip
    report.add("per task: off vs no tracing code", f"{idle * 1e3:.2f} ms", f"{bare * 1e3:.2f} ms",
               idle / bare, "<= 1.02x", idle / bare <= 1.02)  # fmt: skip
    report.note("each task: a task span, a retrieval span, an LLM call span, its loop events as span events; the "
                "collector is another process on loopback answering 200")  # fmt: skip
    report.print()


if __name__ == "__main__":
    run()
