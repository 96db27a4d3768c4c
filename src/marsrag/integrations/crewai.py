"""The binding to CrewAI: contract-bound tasks, a local converter and the lenient transport model.

Importing this module imports CrewAI (seconds), after :func:`prepare_crewai_environment` has made it
offline. Only code that runs crews imports it; ``validate``, ``schema`` and ``lint`` never do.

How a narrative task is bound (see CREWAI_NOTES for the CrewAI behaviour each choice answers):

- ``output_pydantic=LoopOutput``: the task's typed output.
- ``response_model=LoopOutputDraft``: what the agent asks the provider for. It has the five string fields
  and no constraints, so providers with native structured output return a near-miss instead of rejecting
  it inside the call, and our guardrail gets to repair it.
- ``converter_cls=LocalConverter``: CrewAI's conversion step parses with :func:`validate_output` and never
  calls the LLM (CrewAI's own converter spends up to three blind calls on text it could have parsed).
- ``guardrail=ContractGuardrail`` with ``guardrail_max_retries=1``: exactly one repair attempt, with the
  validation errors fed back; after it the task completes and its failed status is recorded instead.
"""

from __future__ import annotations

import logging
import os
import weakref
from typing import Any

from marsrag.integrations.crewai_env import prepare_crewai_environment

prepare_crewai_environment()

import crewai  # noqa: E402 - must follow the environment set-up above
from crewai.context import get_current_task_id  # noqa: E402
from crewai.events import event_context as _event_context  # noqa: E402
from crewai.utilities.converter import Converter, ConverterError  # noqa: E402
from pydantic import BaseModel, Field, model_validator  # noqa: E402

from marsrag.contract import LoopOutput, validate_output  # noqa: E402
from marsrag.errors import InputError  # noqa: E402
from marsrag.integrations.calls import JOURNAL  # noqa: E402

# CrewAI prints event-scope warnings to stdout ("[CrewAIEventsBus] Warning: Event pairing mismatch"), e.g.
# when a call the LLM boundary retried or stepped down emitted its failure; stdout is the user's (JSON).
_event_context._default_config.mismatch_behavior = _event_context.MismatchBehavior.SILENT
_event_context._default_config.empty_pop_behavior = _event_context.MismatchBehavior.SILENT

_CREWAI_DIR = os.path.dirname(crewai.__file__) + os.sep


class _HandledHere(logging.Filter):
    """Demotes CrewAI's log records to DEBUG: the errors it logs (to the root logger) and then raises are
    handled and recorded by MarsRAG (a refusal stepped down, a failed attempt), and its per-call warnings
    ("approximate input token count") say nothing the user can act on. With DEBUG logging on, they show."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.pathname.startswith(_CREWAI_DIR) and record.levelno < logging.CRITICAL:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


_HANDLED_HERE = _HandledHere()


def quiet_crewai_logs() -> None:
    """Put the filter on the root logger and on every CrewAI logger created so far (idempotent)."""
    names = [name for name in logging.root.manager.loggerDict if name == "crewai" or name.startswith("crewai.")]
    for logger in [logging.getLogger(), *map(logging.getLogger, names)]:
        if _HANDLED_HERE not in logger.filters:
            logger.addFilter(_HANDLED_HERE)


quiet_crewai_logs()

Agent = crewai.Agent
Crew = crewai.Crew
Process = crewai.Process
BaseLLM = crewai.BaseLLM
TaskOutput = crewai.TaskOutput


class LoopOutputDraft(BaseModel):
    """The lenient transport shape: the five fields as plain strings, no constraints.

    Used as the provider-facing ``response_model`` so a near-miss reaches the contract guardrail.
    """

    hook: str = Field(description="HOOK: one clear tension or stakes statement anchored to the user goal.")
    grip: str = Field(description="GRIP: the key insight, mechanism, or diagnosis.")
    payoff: str = Field(description="PAYOFF: specific value, recommendation, or resolution.")
    reinforce: str = Field(description="REINFORCE: evidence, constraints, or practical framing.")
    loop: str = Field(description="LOOP: the best next question or action.")


class LocalConverter(Converter):
    """CrewAI converter that parses locally with the contract and never calls an LLM."""

    # Returning (not raising) ConverterError is deliberate: CrewAI then keeps the raw text and the guardrail
    # decides, whereas a raised error would fail the task before the guardrail sees the answer.
    def to_pydantic(self, current_attempt: int = 1) -> BaseModel | ConverterError:  # type: ignore[override]
        """The LoopOutput in the text, or a ConverterError (CrewAI then keeps the raw text)."""
        result = validate_output(self.text)
        if result.model is not None:
            return result.model
        return ConverterError(f"not a valid LoopOutput: {result.errors[0].message if result.errors else ''}")

    def to_json(self, current_attempt: int = 1) -> dict[str, Any] | ConverterError:  # type: ignore[override]
        """Like :meth:`to_pydantic`, as a dict."""
        model = self.to_pydantic(current_attempt)
        return model if isinstance(model, ConverterError) else model.model_dump()

    # On Crew.akickoff CrewAI converts with these; the base class's would call the LLM (acall) up to three times.
    async def ato_pydantic(self, current_attempt: int = 1) -> BaseModel | ConverterError:  # type: ignore[override]
        """The async :meth:`to_pydantic` (parsing is local: nothing is awaited)."""
        return self.to_pydantic(current_attempt)

    async def ato_json(self, current_attempt: int = 1) -> dict[str, Any] | ConverterError:
        """The async :meth:`to_json`."""
        return self.to_json(current_attempt)


class ContractTask(crewai.Task):
    """A CrewAI Task carrying MarsRAG's metadata as declared fields.

    CrewAI's Task drops unknown keyword arguments; declared fields survive ``Crew.copy()``, ``config=`` and
    ``model_dump``.
    """

    loop_contract_version: str | None = Field(default=None, description="Loop Contract version (None: no contract).")
    loop_mode: str = Field(default="hard", description="none | soft | hard")
    marsrag_task: str | None = Field(default=None, description="The MarsRAG task config this task was built from.")

    @model_validator(mode="after")
    def _register(self) -> ContractTask:
        _CONTRACT_TASKS[str(self.id)] = self
        return self


#: Contract tasks by CrewAI task id, while they exist: the journal's owner lookup below.
_CONTRACT_TASKS: weakref.WeakValueDictionary[str, ContractTask] = weakref.WeakValueDictionary()


def _delegating_task(task: object) -> object:
    """The contract task a call belongs to: its own task, or the one running when the call is for another task.

    A hierarchical manager's "Delegate work to coworker" runs the coworker on a plain CrewAI task inside the
    managed task's execution (CrewAI's current task id is still the managed task's): the coworker's calls are
    part of that task's attempt, its cost and latency.
    """
    if isinstance(task, ContractTask):
        return task
    return _CONTRACT_TASKS.get(get_current_task_id() or "", task)


JOURNAL.owner = _delegating_task


__all__ = [
    "Agent",
    "BaseLLM",
    "ContractTask",
    "Crew",
    "LocalConverter",
    "LoopOutput",
    "LoopOutputDraft",
    "Process",
    "TaskOutput",
    "crewai_llm",
]


#: The variable holding each provider's key, where it is not ``<PROVIDER>_API_KEY``.
_KEY_VARIABLES = {"gemini": "GEMINI_API_KEY", "google": "GEMINI_API_KEY", "claude": "ANTHROPIC_API_KEY"}


def crewai_llm(model: str, *, base_url: str | None = None, max_tokens: int | None = None, stream: bool = False) -> Any:
    """A CrewAI LLM for a model string (any provider CrewAI supports), optionally at ``base_url``.

    Checked before anything runs: a provider CrewAI cannot load, or one that needs a key none is set for, is
    an :class:`InputError` naming what to install or set. With ``base_url`` (a local OpenAI-compatible server)
    no key is needed: a placeholder is sent unless ``OPENAI_API_KEY`` is set. ``max_tokens`` caps each answer;
    ``stream`` asks for the answer in chunks (CrewAI's ``stream=True``: the LLM boundary hands them on).

    Raises:
        InputError: the provider is not installed or not known to CrewAI, or its key is not set.
    """
    options: dict[str, Any] = {"model": model}
    if max_tokens is not None:
        options["max_tokens"] = max_tokens
    if stream:
        options["stream"] = True
    if base_url:
        options["base_url"] = base_url
        options.setdefault("api_key", os.environ.get("OPENAI_API_KEY") or "not-needed")
    try:
        llm = crewai.LLM(**options)
    except (ImportError, ValueError) as error:
        first = next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)
        raise InputError(f"cannot use LLM {model!r}: {first}") from None
    quiet_crewai_logs()  # the provider's module loggers exist now
    if not base_url and "api_key" in getattr(type(llm), "model_fields", {}) and not getattr(llm, "api_key", None):
        provider = str(getattr(llm, "provider", None) or model.split("/", 1)[0])
        variable = _KEY_VARIABLES.get(provider, f"{provider.upper()}_API_KEY")
        raise InputError(
            f"LLM {model!r} needs an API key: set {variable} (or give --base-url for a local OpenAI-compatible server)"
        )
    return llm


def crewai_knows_model(model: str) -> bool:
    """Whether CrewAI routes ``model``, a name without a provider, to a model its provider tables know.

    CrewAI sends any bare name to OpenAI; it *knows* one that its provider's model list holds or that follows
    its provider's naming pattern (``gpt-4o-mini``, ``o3-mini``, ``claude-3-5-haiku-latest``, ``gemini-2.0-flash``,
    ``anthropic.claude-...`` on Bedrock). Read from ``crewai.LLM``'s own routing (pinned ``crewai<1.16``).
    """
    route = crewai.LLM
    provider = route._infer_provider_from_model(model)
    return bool(route._validate_model_in_constants(model, provider))
