"""Tracing fixtures: spans kept in memory by OpenTelemetry's own exporter, or sent to a real Phoenix over OTLP."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from marsrag.llm.structured import NEGOTIATOR
from marsrag.tracing import provider
from tests.queue.conftest import queue_env, spawn  # noqa: F401 - the worker fixtures
from tests.runtime.conftest import sample, store  # noqa: F401 - the runner fixtures
from tests.tracing import phoenix as receiver

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

#: The variables that configure OpenTelemetry: a test sets its own and leaves none behind.
OTEL_VARIABLES = (
    "OTEL_SDK_DISABLED",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_TRACES_EXPORTER",
    "OTEL_LOGS_EXPORTER",
    "MARSRAG_TRACE_CONTENT",
)


@pytest.fixture(autouse=True)
def fresh_negotiator() -> Iterator[None]:
    """No test sees what a server refused in another test (a refusal here would outlive it in the process)."""
    NEGOTIATOR.forget()
    yield
    NEGOTIATOR.forget()


@pytest.fixture
def untraced(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No OpenTelemetry configuration at all, and the process's tracer read afresh."""
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    provider.reset()
    yield
    provider.reset()


@pytest.fixture
def memory(untraced: None) -> Iterator[InMemorySpanExporter]:
    """Spans exported as they end to OpenTelemetry's in-memory exporter (through MarsRAG's tracer)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    traces = TracerProvider()
    traces.add_span_processor(SimpleSpanProcessor(exporter))
    provider.use(traces)
    yield exporter
    provider.reset()
    traces.shutdown()


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[receiver.Phoenix]:
    """A real Arize Phoenix for this test session (skipped outside CI when it is not installed)."""
    if not receiver.installed():
        if os.environ.get("CI") == "true":
            pytest.fail(f"Arize Phoenix is not installed in {receiver.VENV} (make phoenix)")
        pytest.skip(f"Arize Phoenix is not installed in {receiver.VENV} (make phoenix)")
    with receiver.running(tmp_path_factory.mktemp("phoenix")) as running:
        yield running


@pytest.fixture
def to_phoenix(untraced: None, monkeypatch: pytest.MonkeyPatch, phoenix: receiver.Phoenix) -> receiver.Phoenix:
    """This process (and the processes it starts) exports traces to Phoenix over OTLP/HTTP, the standard way."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.base)
    # Phoenix takes traces, not log records: the loop events' records stay off.
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    return phoenix
