"""OpenTelemetry sink: every loop event as an OTel log record; verdicts, feedback and experiment assignments also
as GenAI evaluation events (``gen_ai.evaluation.result``), so they show in Langfuse, Phoenix or any OTel backend.

The evaluations, by ``gen_ai.evaluation.name``:

- ``loop_contract``: a contract verdict; label the validation status, score 1 when valid else 0, the
  explanation the first error's message (or what a non-valid status means);
- ``loop_feedback.answer`` / ``loop_feedback.next_action``: a reader's rating; label ``up`` or ``down``, score
  1 or 0, the explanation the comment (none without one);
- ``loop_experiment.arm``: a session's assignment to an arm; label the arm, no score (it has no number), the
  explanation the experiment's name.

OpenTelemetry is imported inside the functions, so ``import marsrag.events`` stays light; the SDK is loaded only
when a sink is built.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from marsrag._version import __version__
from marsrag.state import LoopEvent
from marsrag.tracing import config
from marsrag.tracing.loop_events import event_attributes, nanoseconds

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import LogRecordExporter
    from opentelemetry.util.types import AttributeValue

log = logging.getLogger("marsrag.events")

SCOPE = "marsrag.events"
VERDICTS = frozenset({"loop.contract.validated", "loop.contract.failed"})
#: The events that are also exported as ``gen_ai.evaluation.result``.
EVALUATED = VERDICTS | {"loop.feedback.recorded", "loop.experiment.assigned"}

# GenAI semantic conventions. Spelled out rather than imported: opentelemetry-semantic-conventions keeps them in a
# private ``_incubating`` module, marked as moved to the separate GenAI conventions repository.
EVALUATION_EVENT = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
EVALUATION_NAME = "loop_contract"
FEEDBACK_EVALUATION = "loop_feedback"
EXPERIMENT_EVALUATION = "loop_experiment.arm"


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
            timestamp = nanoseconds(event.timestamp)
            attributes = event_attributes(event)
            self._logger.emit(
                timestamp=timestamp,
                severity_number=SeverityNumber.INFO,
                severity_text="INFO",
                body=event.name,
                attributes=attributes,
                event_name=event.name,
            )
            evaluation = evaluation_attributes(event) if event.name in EVALUATED else None
            if evaluation is not None:
                self._logger.emit(
                    timestamp=timestamp,
                    severity_number=SeverityNumber.INFO,
                    severity_text="INFO",
                    attributes={**attributes, **evaluation},
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


def evaluation_attributes(event: LoopEvent) -> dict[str, AttributeValue] | None:
    """The GenAI evaluation attributes of a verdict, a rating or an arm assignment (see the module); else None.

    None too for a feedback or assignment event whose ``detail`` lacks what it needs (nothing to evaluate).
    """
    if event.name == "loop.feedback.recorded":
        return _feedback_evaluation(event.detail or {})
    if event.name == "loop.experiment.assigned":
        return _assignment_evaluation(event.detail or {})
    if event.name in VERDICTS:
        return _verdict_evaluation(event)
    return None


def _feedback_evaluation(detail: dict[str, object]) -> dict[str, AttributeValue] | None:
    on, rating, comment = detail.get("on"), detail.get("rating"), detail.get("comment")
    if not isinstance(on, str) or rating not in ("up", "down"):
        return None
    attributes: dict[str, AttributeValue] = {
        GEN_AI_EVALUATION_NAME: f"{FEEDBACK_EVALUATION}.{on}",
        GEN_AI_EVALUATION_SCORE_LABEL: str(rating),
        GEN_AI_EVALUATION_SCORE_VALUE: 1.0 if rating == "up" else 0.0,
    }
    if isinstance(comment, str) and comment:
        attributes[GEN_AI_EVALUATION_EXPLANATION] = comment
    return attributes


def _assignment_evaluation(detail: dict[str, object]) -> dict[str, AttributeValue] | None:
    experiment, arm = detail.get("experiment"), detail.get("arm")
    if not isinstance(arm, str) or not arm:
        return None
    # An arm is a category, not a measurement: no score value (the convention asks for one only "if applicable").
    attributes: dict[str, AttributeValue] = {
        GEN_AI_EVALUATION_NAME: EXPERIMENT_EVALUATION,
        GEN_AI_EVALUATION_SCORE_LABEL: arm,
    }
    if isinstance(experiment, str) and experiment:
        attributes[GEN_AI_EVALUATION_EXPLANATION] = experiment
    return attributes


def _verdict_evaluation(event: LoopEvent) -> dict[str, AttributeValue]:
    """A contract verdict: label = validation status, score 1.0 iff valid."""
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
    """An OTLP sink (HTTP, or gRPC when the environment says so) when the standard OTEL_* variables configure one
    (:func:`marsrag.tracing.config.exported`), else None; never raises.
    """
    if not config.exported("logs"):
        return None
    try:
        # lazy: OpenTelemetry, loads only when an exporter is configured
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        # The processor first: it validates the OTEL_BLRP_* settings, and a provider built before it fails would
        # linger in atexit for nothing.
        processor = BatchLogRecordProcessor(_exporter())
        provider = LoggerProvider(resource=config.resource())
        provider.add_log_record_processor(processor)
        return OtelSink(provider)
    except Exception:  # noqa: BLE001 - a bad telemetry setting must not stop a run
        log.exception("OpenTelemetry export is configured but could not be set up; events are not exported")
        return None


def _exporter() -> LogRecordExporter:
    if config.protocol("logs") == "grpc":
        # lazy: OpenTelemetry's gRPC exporter (and grpcio), only for a user who asked for gRPC
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcExporter

        return GrpcExporter()
    # lazy: OpenTelemetry, loads only when an exporter is configured
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpExporter

    return HttpExporter()
