"""OpenTelemetry sink: every loop event as an OTel log record, contract verdicts also as GenAI evaluation events.

OpenTelemetry is imported inside the functions, so ``import marsrag.events`` stays light; the SDK is loaded only
when a sink is built.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from marsrag._version import __version__
from marsrag.state import LoopEvent

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.util.types import AttributeValue

log = logging.getLogger("marsrag.events")

SCOPE = "marsrag.events"
ATTRIBUTE_PREFIX = "marsrag."
# The event fields carried as attributes; the name is the record's event name, the timestamp its timestamp.
ATTRIBUTE_FIELDS = ("run_id", "task_id", "loop_contract_version", "loop_mode", "validation_status", "transition_mode")
VERDICTS = frozenset({"loop.contract.validated", "loop.contract.failed"})

# GenAI semantic conventions. Spelled out rather than imported: opentelemetry-semantic-conventions keeps them in a
# private ``_incubating`` module, marked as moved to the separate GenAI conventions repository.
EVALUATION_EVENT = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
EVALUATION_NAME = "loop_contract"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class OtelSink:
    """Emits each loop event as an OpenTelemetry log record; verdicts also as ``gen_ai.evaluation.result``.

    The records go to ``provider``'s processors (a ``BatchLogRecordProcessor`` in production, an in-memory exporter
    in tests). Call :meth:`flush` or :meth:`shutdown` before the process exits so batched records are sent.
    """

    def __init__(self, provider: LoggerProvider) -> None:
        self.provider = provider
        self._logger = provider.get_logger(SCOPE, version=__version__)

    def __call__(self, events: Sequence[LoopEvent]) -> None:
        # An emit error propagates: dispatch() is the boundary that logs a failing sink and lets the run go on.
        # lazy: OpenTelemetry, loads only when an exporter is configured
        from opentelemetry._logs import SeverityNumber

        for event in events:
            timestamp = _nanoseconds(event.timestamp)
            attributes = event_attributes(event)
            self._logger.emit(
                timestamp=timestamp,
                severity_number=SeverityNumber.INFO,
                severity_text="INFO",
                body=event.name,
                attributes=attributes,
                event_name=event.name,
            )
            if event.name in VERDICTS:
                self._logger.emit(
                    timestamp=timestamp,
                    severity_number=SeverityNumber.INFO,
                    severity_text="INFO",
                    attributes={**attributes, **evaluation_attributes(event)},
                    event_name=EVALUATION_EVENT,
                )

    def flush(self, timeout_millis: int = 30_000) -> bool:
        """Export the records emitted so far; False (logged, never raised) when that fails or times out."""
        try:
            return self.provider.force_flush(timeout_millis)
        except Exception:  # noqa: BLE001 - telemetry must never fail a run
            log.exception("flushing OpenTelemetry events failed")
            return False

    def shutdown(self) -> None:
        """Export what is left and release the exporter (never raises); the sink emits nothing afterwards."""
        try:
            self.provider.shutdown()
        except Exception:  # noqa: BLE001 - telemetry must never fail a run
            log.exception("shutting down OpenTelemetry events failed")


def event_attributes(event: LoopEvent) -> dict[str, AttributeValue]:
    """The event's fields as ``marsrag.``-prefixed attributes; null fields are left out (OTel has no null)."""
    values = {name: getattr(event, name) for name in ATTRIBUTE_FIELDS}
    return {ATTRIBUTE_PREFIX + name: value for name, value in values.items() if value is not None}


def evaluation_attributes(event: LoopEvent) -> dict[str, AttributeValue]:
    """The GenAI evaluation attributes of a contract verdict: label = validation status, score 1.0 iff valid."""
    label = event.validation_status or ("valid" if event.name == "loop.contract.validated" else "failed")
    attributes: dict[str, AttributeValue] = {
        GEN_AI_EVALUATION_NAME: EVALUATION_NAME,
        GEN_AI_EVALUATION_SCORE_LABEL: label,
        GEN_AI_EVALUATION_SCORE_VALUE: 1.0 if label == "valid" else 0.0,
    }
    if label != "valid":
        # The label alone does not say what a non-valid status means to someone reading a trace backend.
        version = event.loop_contract_version or "unknown"
        attributes[GEN_AI_EVALUATION_EXPLANATION] = (
            f"the task output is {label} against LoopOutput (loop contract {version}): not every required field passed"
        )
    return attributes


def otel_sink_from_env() -> OtelSink | None:
    """An OTLP/HTTP sink when the standard OTEL_* variables configure one, else None; never raises.

    A sink is built when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` is set, unless
    ``OTEL_SDK_DISABLED`` is ``true`` or ``OTEL_LOGS_EXPORTER`` is ``none``. The exporter reads the endpoint,
    headers, timeout, compression and certificates from the environment itself.
    """
    if _env("OTEL_SDK_DISABLED") == "true" or _env("OTEL_LOGS_EXPORTER") == "none":
        return None
    if not (_env("OTEL_EXPORTER_OTLP_ENDPOINT") or _env("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")):
        return None
    try:
        # lazy: OpenTelemetry, loads only when an exporter is configured
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        # The processor first: it validates the OTEL_BLRP_* settings, and a provider built before it fails would
        # linger in atexit for nothing.
        processor = BatchLogRecordProcessor(OTLPLogExporter())
        provider = LoggerProvider(resource=_resource())
        provider.add_log_record_processor(processor)
        return OtelSink(provider)
    except Exception:  # noqa: BLE001 - a bad telemetry setting must not stop a run
        log.exception("OpenTelemetry export is configured but could not be set up; events are not exported")
        return None


def _resource() -> Resource:
    """The SDK's resource from the environment, named ``marsrag`` unless the user named the service."""
    # lazy: OpenTelemetry, loads only when an exporter is configured
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "marsrag"}))
    return resource


def _env(name: str) -> str:
    return os.environ.get(name, "").strip().lower()


def _nanoseconds(moment: datetime) -> int:
    """Nanoseconds since the epoch, exactly (float seconds would lose the microseconds)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # MarsRAG timestamps are UTC; a naive one comes from a store round trip
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1_000
