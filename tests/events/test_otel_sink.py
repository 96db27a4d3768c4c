"""The OpenTelemetry sink: loop events as OTel log records on the real SDK, verdicts as GenAI evaluation events."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor, ReadableLogRecord, ReadWriteLogRecord
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    InMemoryLogRecordExporter,
    LogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)

from marsrag.events import EVENT_NAMES, JsonlSink, LoopEvent, OtelSink, dispatch, otel_sink_from_env
from marsrag.events.otel import EVALUATION_EVENT
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT
from tests.runtime import conftest as runtime_fixtures
from tests.runtime.conftest import project_with

pytestmark = pytest.mark.crewai

# Fixtures in a conftest are seen only below its directory; binding them here shares the runner tests' real
# SQLite store and sample project instead of copying them.
store = runtime_fixtures.store
sample = runtime_fixtures.sample

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")
T0 = datetime(2025, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
T0_NS = 1_741_064_767_123_456_000


def event(name: str, **fields: Any) -> LoopEvent:
    return LoopEvent(name=name, run_id="run-1", timestamp=T0, **fields)  # type: ignore[arg-type]


EVENTS = [
    event(
        "loop.contract.validated",
        task_id="diagnose",
        loop_contract_version="1.0.0",
        loop_mode="hard",
        validation_status="valid",
    ),
    event(
        "loop.contract.failed",
        task_id="recommend",
        loop_contract_version="1.0.0",
        loop_mode="hard",
        validation_status="partial",
    ),
    event(
        "loop.contract.failed",
        task_id="recommend",
        loop_contract_version="1.0.0",
        loop_mode="hard",
        validation_status="failed",
    ),
    event("loop.transition.planned", task_id="plan", loop_mode="soft", transition_mode="repair"),
    event("loop.transition.fallback_used", task_id="plan", loop_mode="soft", transition_mode="fallback"),
    event("loop.ui.rendered"),
    event("loop.action.followed", task_id="plan"),
    event("loop.feedback.recorded", task_id="plan").model_copy(
        update={"detail": {"on": "answer", "rating": "down", "comment": "missed the root cause"}}
    ),
    event("loop.experiment.assigned").model_copy(
        update={"detail": {"experiment": "hard_vs_soft", "arm": "soft", "session_id": "s-1"}}
    ),
]


def sdk_provider(monkeypatch: pytest.MonkeyPatch, processor: LogRecordProcessor) -> LoggerProvider:
    """A real SDK logger provider with one processor."""
    with monkeypatch.context() as patch:
        # The test session disables the OTel SDK (tests/conftest.py) and a provider reads that once, when built.
        patch.delenv("OTEL_SDK_DISABLED", raising=False)
        provider = LoggerProvider(shutdown_on_exit=False)
    provider.add_log_record_processor(processor)
    return provider


@pytest.fixture
def exporter() -> InMemoryLogRecordExporter:
    return InMemoryLogRecordExporter()


@pytest.fixture
def sink(monkeypatch: pytest.MonkeyPatch, exporter: InMemoryLogRecordExporter) -> Iterator[OtelSink]:
    """An OtelSink exporting synchronously to memory."""
    otel = OtelSink(sdk_provider(monkeypatch, SimpleLogRecordProcessor(exporter)))
    yield otel
    otel.shutdown()


def split(records: Sequence[ReadableLogRecord]) -> tuple[list[ReadableLogRecord], list[ReadableLogRecord]]:
    """The loop event records and the GenAI evaluation records."""
    loop = [r for r in records if r.log_record.event_name != EVALUATION_EVENT]
    return loop, [r for r in records if r.log_record.event_name == EVALUATION_EVENT]


def expected_attributes(loop_event: LoopEvent) -> dict[str, Any]:
    fields = ("run_id", "task_id", "loop_contract_version", "loop_mode", "validation_status", "transition_mode")
    found = {f"marsrag.{name}": getattr(loop_event, name) for name in fields if getattr(loop_event, name) is not None}
    detail = {f"marsrag.detail.{key}": value for key, value in (loop_event.detail or {}).items() if value is not None}
    return {**found, **detail}


# -- records ---------------------------------------------------------------------------------------------------------


def test_every_event_becomes_a_log_record_with_its_fields(sink: OtelSink, exporter: InMemoryLogRecordExporter) -> None:
    """Each event is one record: event name and body = the name, fields as marsrag.* attributes, its timestamp."""
    assert sorted({e.name for e in EVENTS}) == sorted(EVENT_NAMES)
    sink(EVENTS)
    loop, _ = split(exporter.get_finished_logs())
    assert [r.log_record.event_name for r in loop] == [e.name for e in EVENTS]
    for record, loop_event in zip(loop, EVENTS, strict=True):
        assert record.log_record.body == loop_event.name
        assert dict(record.log_record.attributes or {}) == expected_attributes(loop_event)
        assert record.log_record.timestamp == T0_NS
        assert record.log_record.severity_number == SeverityNumber.INFO
        assert record.instrumentation_scope is not None and record.instrumentation_scope.name == "marsrag.events"
    assert dict(loop[0].log_record.attributes or {}) == {
        "marsrag.run_id": "run-1",
        "marsrag.task_id": "diagnose",
        "marsrag.loop_contract_version": "1.0.0",
        "marsrag.loop_mode": "hard",
        "marsrag.validation_status": "valid",
    }


def test_a_naive_timestamp_is_taken_as_utc(sink: OtelSink, exporter: InMemoryLogRecordExporter) -> None:
    """A timestamp without a zone (as a store round trip may give) is read as UTC, to the microsecond."""
    sink([event("loop.ui.rendered").model_copy(update={"timestamp": T0.replace(tzinfo=None)})])
    assert exporter.get_finished_logs()[0].log_record.timestamp == T0_NS


def test_verdicts_also_produce_genai_evaluation_events(sink: OtelSink, exporter: InMemoryLogRecordExporter) -> None:
    """validated/failed are followed by gen_ai.evaluation.result: label = status, score 1.0 only when valid."""
    sink(EVENTS)
    records = exporter.get_finished_logs()
    names = [r.log_record.event_name for r in records]
    assert names[:6] == [
        "loop.contract.validated",
        EVALUATION_EVENT,
        "loop.contract.failed",
        EVALUATION_EVENT,
        "loop.contract.failed",
        EVALUATION_EVENT,
    ]
    assert EVALUATION_EVENT not in names[6:10]
    evaluations = [dict(r.log_record.attributes or {}) for r in split(records)[1]][:3]
    assert [(a["gen_ai.evaluation.score.label"], a["gen_ai.evaluation.score.value"]) for a in evaluations] == [
        ("valid", 1.0),
        ("partial", 0.0),
        ("failed", 0.0),
    ]
    assert all(a["gen_ai.evaluation.name"] == "loop_contract" for a in evaluations)
    assert "gen_ai.evaluation.explanation" not in evaluations[0]
    assert "partial" in str(evaluations[1]["gen_ai.evaluation.explanation"])
    # the evaluation carries the event's own attributes, so a backend can join it to its run and task
    assert evaluations[1]["marsrag.run_id"] == "run-1" and evaluations[1]["marsrag.task_id"] == "recommend"
    assert all(r.log_record.timestamp == T0_NS for r in split(records)[1])


def test_feedback_and_assignments_also_produce_genai_evaluation_events(
    sink: OtelSink, exporter: InMemoryLogRecordExporter
) -> None:
    """A rating follows its record as loop_feedback.<part> (up 1.0, down 0.0, the comment); an arm as its label."""
    sink(EVENTS)
    records = exporter.get_finished_logs()
    names = [r.log_record.event_name for r in records]
    assert names[-4:] == ["loop.feedback.recorded", EVALUATION_EVENT, "loop.experiment.assigned", EVALUATION_EVENT]
    feedback, assignment = (dict(r.log_record.attributes or {}) for r in (records[-3], records[-1]))
    assert {key: value for key, value in feedback.items() if key.startswith("gen_ai.")} == {
        "gen_ai.evaluation.name": "loop_feedback.answer",
        "gen_ai.evaluation.score.label": "down",
        "gen_ai.evaluation.score.value": 0.0,
        "gen_ai.evaluation.explanation": "missed the root cause",
    }
    assert {key: value for key, value in assignment.items() if key.startswith("gen_ai.")} == {
        "gen_ai.evaluation.name": "loop_experiment.arm",
        "gen_ai.evaluation.score.label": "soft",
        "gen_ai.evaluation.explanation": "hard_vs_soft",
    }
    # joined to their run like the verdicts, with the event's detail beside
    assert feedback["marsrag.run_id"] == assignment["marsrag.run_id"] == "run-1"
    assert assignment["marsrag.detail.session_id"] == "s-1"


def test_an_up_rating_without_a_comment_scores_one_and_explains_nothing(
    sink: OtelSink, exporter: InMemoryLogRecordExporter
) -> None:
    """Up is 1.0 on the next action; a null comment leaves the explanation (and its detail attribute) out."""
    rated = event("loop.feedback.recorded", task_id="plan").model_copy(
        update={"detail": {"on": "next_action", "rating": "up", "comment": None}}
    )
    sink([rated])
    record, evaluation = exporter.get_finished_logs()
    assert "marsrag.detail.comment" not in dict(record.log_record.attributes or {})
    attributes = dict(evaluation.log_record.attributes or {})
    assert evaluation.log_record.event_name == EVALUATION_EVENT
    assert attributes["gen_ai.evaluation.name"] == "loop_feedback.next_action"
    assert (attributes["gen_ai.evaluation.score.label"], attributes["gen_ai.evaluation.score.value"]) == ("up", 1.0)
    assert "gen_ai.evaluation.explanation" not in attributes


def test_a_feedback_event_without_a_rating_is_exported_without_an_evaluation(
    sink: OtelSink, exporter: InMemoryLogRecordExporter
) -> None:
    """Nothing to evaluate (a detail lacking its rating, an assignment without an arm): only the loop record."""
    sink([event("loop.feedback.recorded"), event("loop.experiment.assigned").model_copy(update={"detail": {}})])
    assert [r.log_record.event_name for r in exporter.get_finished_logs()] == [
        "loop.feedback.recorded",
        "loop.experiment.assigned",
    ]


def test_attribute_names_are_the_genai_semantic_conventions() -> None:
    """The spelled-out gen_ai.* keys equal the semantic-conventions package's, while it still ships them."""
    semconv = pytest.importorskip("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")
    from marsrag.events import otel

    for name in ("NAME", "SCORE_LABEL", "SCORE_VALUE", "EXPLANATION"):
        assert getattr(otel, f"GEN_AI_EVALUATION_{name}") == getattr(semconv, f"GEN_AI_EVALUATION_{name}")


def test_batched_records_are_exported_on_flush(
    monkeypatch: pytest.MonkeyPatch, exporter: InMemoryLogRecordExporter
) -> None:
    """With the batch processor, flush() exports what was emitted; after shutdown() events are dropped quietly."""
    # An hour's delay: nothing is exported unless flush() asks (the queue stays far below a batch).
    otel = OtelSink(sdk_provider(monkeypatch, BatchLogRecordProcessor(exporter, schedule_delay_millis=3_600_000)))
    otel(EVENTS[:2])
    assert exporter.get_finished_logs() == ()
    assert otel.flush() is True
    assert [r.log_record.event_name for r in exporter.get_finished_logs()] == [
        "loop.contract.validated",
        EVALUATION_EVENT,
        "loop.contract.failed",
        EVALUATION_EVENT,
    ]
    otel.shutdown()
    otel(EVENTS[2:])
    otel.shutdown()
    assert len(exporter.get_finished_logs()) == 4


# -- failures --------------------------------------------------------------------------------------------------------


class FailingExporter(LogRecordExporter):
    """An exporter whose collector is down."""

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        raise ConnectionError("collector down")

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class FailingProcessor(LogRecordProcessor):
    """A processor that fails on every call (the SDK lets such errors through to the emitter)."""

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        raise RuntimeError("processor broken")

    def shutdown(self) -> None:
        raise RuntimeError("processor broken")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        raise RuntimeError("processor broken")


def test_an_exporter_error_is_contained_and_later_sinks_get_the_events(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An exporter that raises is logged by the OTel SDK's processor; the sink returns, the next sink still runs."""
    otel = OtelSink(sdk_provider(monkeypatch, SimpleLogRecordProcessor(FailingExporter())))
    path = tmp_path / "events.jsonl"
    with caplog.at_level(logging.ERROR):
        dispatch(EVENTS, [otel, JsonlSink(path)])
    assert [json.loads(line)["name"] for line in path.read_text().splitlines()] == [e.name for e in EVENTS]
    assert "Exception while exporting logs." in caplog.messages
    assert not [m for m in caplog.messages if "event sink" in m]


def test_a_raising_otel_sink_is_logged_by_dispatch_and_later_sinks_get_the_events(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An error that escapes the OTel pipeline is dispatch's to log; the JSON Lines sink after it gets every event."""
    otel = OtelSink(sdk_provider(monkeypatch, FailingProcessor()))
    path = tmp_path / "events.jsonl"
    with caplog.at_level(logging.WARNING, logger="marsrag.events"):
        dispatch(EVENTS, [otel, JsonlSink(path)])
    assert [json.loads(line)["name"] for line in path.read_text().splitlines()] == [e.name for e in EVENTS]
    failures = [r for r in caplog.records if r.name == "marsrag.events" and "event sink" in r.getMessage()]
    assert len(failures) == 1 and "OtelSink" in failures[0].getMessage()
    # One line naming the cause (the traceback is logged at DEBUG only).
    assert failures[0].exc_info is None and "RuntimeError: processor broken" in failures[0].getMessage()


def test_flush_and_shutdown_never_raise(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A pipeline failing at flush or shutdown is logged; flush() says False, shutdown() returns."""
    otel = OtelSink(sdk_provider(monkeypatch, FailingProcessor()))
    with caplog.at_level(logging.ERROR, logger="marsrag.events"):
        assert otel.flush() is False
        otel.shutdown()
    assert caplog.messages == ["flushing OpenTelemetry events failed", "shutting down OpenTelemetry events failed"]


# -- configuration from the environment ------------------------------------------------------------------------------


@pytest.fixture
def otel_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """An environment with no OpenTelemetry settings (the session's OTEL_SDK_DISABLED removed too)."""
    for name in [name for name in os.environ if name.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    return monkeypatch


def test_no_endpoint_means_no_sink(otel_env: pytest.MonkeyPatch) -> None:
    """Without an OTLP endpoint nothing is exported, and no sink is built."""
    assert otel_sink_from_env() is None
    otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
    assert otel_sink_from_env() is None


@pytest.mark.parametrize(
    "switch", [("OTEL_SDK_DISABLED", "true"), ("OTEL_SDK_DISABLED", " TRUE "), ("OTEL_LOGS_EXPORTER", "none")]
)
def test_a_disabled_sdk_or_logs_exporter_means_no_sink(otel_env: pytest.MonkeyPatch, switch: tuple[str, str]) -> None:
    """OTEL_SDK_DISABLED=true or OTEL_LOGS_EXPORTER=none wins over a configured endpoint."""
    otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    otel_env.setenv(*switch)
    assert otel_sink_from_env() is None


@pytest.mark.parametrize("variable", ENDPOINT_VARIABLES)
def test_an_endpoint_gives_an_otlp_sink(otel_env: pytest.MonkeyPatch, variable: str) -> None:
    """Either endpoint variable builds an OtelSink on a named resource; it is shut down without exporting."""
    otel_env.setenv(variable, "http://127.0.0.1:4318")
    otel = otel_sink_from_env()
    assert isinstance(otel, OtelSink)
    assert otel.provider.resource.attributes["service.name"] == "marsrag"
    otel.shutdown()  # nothing was emitted, so nothing is sent


def test_the_users_service_name_is_kept(otel_env: pytest.MonkeyPatch) -> None:
    """OTEL_SERVICE_NAME names the resource; marsrag is only the default."""
    otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    otel_env.setenv("OTEL_SERVICE_NAME", "support-bot")
    otel = otel_sink_from_env()
    assert otel is not None and otel.provider.resource.attributes["service.name"] == "support-bot"
    otel.shutdown()


def test_building_and_shutting_down_a_sink_sends_nothing(otel_env: pytest.MonkeyPatch) -> None:
    """No connection reaches the endpoint when no event was emitted."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        otel = otel_sink_from_env()
        assert otel is not None
        otel.shutdown()
        # shutdown() joins the exporting thread, so any connection would already wait in the listen backlog
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()


def test_a_broken_setting_is_logged_and_gives_no_sink(
    otel_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A setting the SDK rejects at setup is logged; the run goes on without the OTel sink."""
    otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    otel_env.setenv("OTEL_BLRP_SCHEDULE_DELAY", "-5")
    with caplog.at_level(logging.ERROR, logger="marsrag.events"):
        assert otel_sink_from_env() is None
    assert caplog.messages == ["OpenTelemetry export is configured but could not be set up; events are not exported"]


def test_importing_marsrag_events_does_not_import_opentelemetry() -> None:
    """OpenTelemetry is loaded only when a sink is built."""
    probe = "import sys, marsrag.events; print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


# -- real runs -------------------------------------------------------------------------------------------------------


def answer(**changes: Any) -> str:
    return json.dumps({k: v for k, v in {**CONTENT, **changes}.items() if v is not None})


def test_a_run_exports_the_stored_events(
    store: RunStore, sample: ProjectConfig, monkeypatch: pytest.MonkeyPatch, exporter: InMemoryLogRecordExporter
) -> None:
    """A real run (CrewAI, replay LLM, SQLite): the exported records are the stored events, in order."""
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    otel = OtelSink(sdk_provider(monkeypatch, SimpleLogRecordProcessor(exporter)))
    # diagnose fails twice (failed, partial), so recommend opens with the fallback hook and completes first time
    llm = ReplayLLM.from_outputs(["No idea.", answer(loop=None), answer()])
    runner = WorkflowRunner(store, project_with(sample, ["diagnose", "recommend"]), llm, sinks=[otel])
    run = runner.run("API latency SLO breaches", workflow="flow")
    otel.shutdown()
    assert run.status == "completed"

    stored = store.get_events(run.run_id)
    loop, evaluations = split(exporter.get_finished_logs())
    assert (
        [r.log_record.event_name for r in loop]
        == [e.name for e in stored]
        == [
            "loop.contract.failed",
            "loop.contract.failed",
            "loop.transition.planned",
            "loop.transition.fallback_used",
            "loop.contract.validated",
        ]
    )
    assert [dict(r.log_record.attributes or {}) for r in loop] == [expected_attributes(e) for e in stored]
    labels = [(a["gen_ai.evaluation.score.label"], a["gen_ai.evaluation.score.value"]) for a in attributes(evaluations)]
    assert labels == [("failed", 0.0), ("partial", 0.0), ("valid", 1.0)]


def attributes(records: Sequence[ReadableLogRecord]) -> list[dict[str, Any]]:
    return [dict(r.log_record.attributes or {}) for r in records]


class Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP collector on loopback: keeps each request's path and body, answers 200."""

    received: list[tuple[str, bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, body))  # before answering, so the client's return implies it is kept
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


def test_marsrag_run_exports_its_events_over_otlp_before_exiting(tmp_path: Path) -> None:
    """``marsrag run`` with an OTLP endpoint sends every event of the run, and its trace, before the process exits."""
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    script = tmp_path / "answers.jsonl"
    answers = [{**CONTENT, "loop": f"Question {i}?"} for i in range(3)]
    script.write_text("".join(json.dumps({"output": json.dumps(a)}) + "\n" for a in answers))
    received: list[tuple[str, bytes]] = []
    handler = type("Handler", (Collector,), {"received": received})
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{server.server_address[1]}"
        db = f"sqlite:///{tmp_path / 'runs.db'}"
        args = ["run", "API latency SLO breaches", "--llm", f"replay:{script}", "--db", db, "--format", "json"]
        proc = subprocess.run(
            [sys.executable, "-m", "marsrag", *args], capture_output=True, text=True, env=env, check=False
        )
        server.shutdown()
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    # The run's trace goes to the same endpoint (issue 42): one root, the run's, named by its id.
    assert {path for path, _ in received} == {"/v1/logs", "/v1/traces"}
    spans = [
        span
        for path, body in received
        if path == "/v1/traces"
        for resource_spans in ExportTraceServiceRequest.FromString(body).resource_spans
        for scope in resource_spans.scope_spans
        for span in scope.spans
    ]
    [root] = [span for span in spans if not span.parent_span_id]
    assert {a.key: a.value.string_value for a in root.attributes}["marsrag.run_id"] == document["run_id"]
    assert len({span.trace_id for span in spans}) == 1
    records = []
    for _, body in (item for item in received if item[0] == "/v1/logs"):
        request = ExportLogsServiceRequest.FromString(body)
        for resource_logs in request.resource_logs:
            service = {a.key: a.value.string_value for a in resource_logs.resource.attributes}["service.name"]
            assert service == "marsrag"
            records += [r for scope in resource_logs.scope_logs for r in scope.log_records]
    loop = [r for r in records if r.event_name != EVALUATION_EVENT]
    assert [r.event_name for r in loop] == [e["name"] for e in document["events"]]
    assert {a.key: a.value.string_value for a in loop[0].attributes}["marsrag.run_id"] == document["run_id"]
    assert sum(r.event_name == EVALUATION_EVENT for r in records) == 3
