"""The LLM boundary: every call an LLM makes for MarsRAG, under the call policy, structure negotiated, recorded.

:func:`make_resilient` changes the class of an LLM object to a subclass whose ``call``/``acall``:

1. time-limit each attempt and retry transport failures (:mod:`marsrag.llm.resilient`);
2. ask for structure as the ``structured_output`` setting says (:mod:`marsrag.llm.structured`), stepping
   down when the server refuses: a refusal is not a transport error (never retried with backoff) and not an
   answer (never an attempt of the task, never a repair), only the next rung of the ladder;
3. never hand CrewAI's provider a ``response_model``: it would parse the structured response itself and
   raise on a near-miss (a fence, a missing field, a cut answer) before the contract guardrail sees it, so
   the structure is asked for in the request and whatever comes back reaches the contract as text;
4. leave the prompt's worked example out of a request whose decoder is held to the contract's form
   (:func:`~marsrag.llm.structured.framed`: small models copy the example, and the decoder writes the form it shows);
5. send no structure in a step of a tool loop, tools in the request or in the prompt
   (:func:`~marsrag.llm.structured.asks_for_structure`: vLLM and Ollama skip tools when a response format is set);
6. pass each streamed chunk of the answer, with its task, to :data:`~marsrag.integrations.streams.STREAMS`
   (and say when a request starts, so a listener drops the text of an answer that was not kept);
7. record the call (model, endpoint host, mode, refusals, latency, tokens, finish reason) in the
   :data:`~marsrag.integrations.calls.JOURNAL` under its task, for the attempt it produces;
8. trace it: a ``chat`` span under its task's span (:mod:`marsrag.tracing.spans`), when traces are exported.

The object is not wrapped: CrewAI keys per-call state by the LLM's identity (``call_stop_override`` stores
the stop words under ``id(llm)``), checks ``isinstance(llm, BaseLLM)`` and sets fields such as ``stop`` on
it, so anything but the same object would silently drop the stop words.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar

from marsrag.integrations.calls import JOURNAL, CallRecord, Capture, close_capture, endpoint_of, open_capture, report
from marsrag.integrations.streams import STREAMS
from marsrag.llm.framing import framed
from marsrag.llm.resilient import (
    CallPolicy,
    acall_with_policy,
    call_with_policy,
    clean_text,
    is_transport_error,
)
from marsrag.llm.structured import (
    AUTO,
    NEGOTIATOR,
    PROMPT,
    Offer,
    Request,
    asks_for_structure,
    begin_request,
    end_request,
    is_refusal,
    ladder,
    take_offer,
)
from marsrag.tracing import semconv, spans

_T = TypeVar("_T")


class _Exchange:
    """One call of an LLM for a task: the offers made, the refusals met, and the record of the answer."""

    def __init__(self, llm: Any, *, structured: bool, task: Any, messages: Any) -> None:
        self.llm = llm
        self.task = task
        self.model = str(getattr(llm, "model", "llm"))
        self.endpoint = endpoint_of(llm)
        offers = bool(getattr(llm, "boundary_offers", False))
        self.setting = llm.structured_output if structured and offers else "prompt"
        self.key = (self.endpoint or type(llm).__name__, self.model)
        self.refused: list[str] = []
        self.stepped = False
        self.started = time.monotonic()
        self.recorded: CallRecord | None = None
        local = bool(getattr(llm, "boundary_local", False))
        provider = getattr(llm, "provider", None)
        self.span = spans.start_call(
            spans.TASKS.get(JOURNAL.owner(task) if task is not None else None),
            model=self.model,
            provider="marsrag" if local or not isinstance(provider, str) or not provider else provider,
            endpoint=self.endpoint,
            local=local,
            messages=messages,
        )

    def answered(self, answer: Any) -> Any:
        """End the call's span with what its answer's record says; the answer."""
        record = self.recorded
        spans.end_call(
            self.span,
            model=self.model,
            mode=record.structured_output if record else None,
            refused=self.refused,
            input_tokens=record.prompt_tokens if record else None,
            output_tokens=record.completion_tokens if record else None,
            finish_reason=record.finish_reason if record else None,
            answer=answer,
        )
        return answer

    def failed(self, error: BaseException) -> None:
        """End the call's span as failed (the error propagates to the task)."""
        self.span.set({semconv.STRUCTURED_OUTPUT_REFUSED: list(self.refused) or None})
        self.span.fail(error)
        self.span.end()

    def first(self) -> Offer:
        return NEGOTIATOR.current(self.key, self.setting)

    def send(self, request: Callable[[], _T]) -> _T:
        """Send one request (a first one, a retry, the next offer): a streamed answer starts over with it."""
        STREAMS.call_started(self.task)
        answer = request()
        STREAMS.call_ended(self.task)
        return answer

    def retryable(self, offer: Offer) -> Callable[[BaseException], bool]:
        """Transport failures, except a refusal of the offer (a 5xx naming response_format is an answer)."""
        return lambda error: is_transport_error(error) and not (offer.constrains and is_refusal(error))

    def step_down(self, offer: Offer, error: BaseException) -> Offer:
        """The offer to make after ``error`` when it was a refusal of ``offer``; else ``error`` is raised again."""
        if not (offer.constrains and is_refusal(error)):
            raise error
        if offer.mode not in self.refused:
            self.refused.append(offer.mode)
        self.stepped = True
        return NEGOTIATOR.refused(self.key, self.setting, offer) or PROMPT

    @contextmanager
    def sending(self, offer: Offer) -> Iterator[None]:
        """One request with ``offer``: what it reports is captured, and recorded when it answers."""
        request, request_token = begin_request(offer)
        capture, capture_token = open_capture()
        self.stepped = False
        try:
            yield
        finally:
            close_capture(capture_token)
            end_request(request_token)
        # Reached when the block ended without an error: an answer, or a refusal stepped down (no record).
        if not self.stepped:
            self.record(request, capture)

    def record(self, request: Request, capture: Capture) -> None:
        self.recorded = CallRecord(
            model=self.model,
            endpoint=self.endpoint,
            structured_output=request.mode,
            structured_output_refused=tuple(self.refused),
            latency_ms=round((time.monotonic() - self.started) * 1000),
            prompt_tokens=capture.prompt_tokens,
            completion_tokens=capture.completion_tokens,
            finish_reason=capture.finish_reason,
        )
        JOURNAL.add(self.task, self.recorded)


class BoundaryCalls:
    """Mixin placed before an LLM's own class: its calls go through the LLM boundary (see the module)."""

    call_policy: ClassVar[CallPolicy] = CallPolicy()
    #: The structured-output setting: auto, json_schema, json_object, grammar or prompt.
    structured_output: ClassVar[str] = AUTO

    def _exchange(
        self,
        messages: Any,
        tools: Any,
        callbacks: Any,
        available_functions: Any,
        from_task: Any,
        from_agent: Any,
        response_model: Any,
    ) -> tuple[_Exchange, dict[str, Any]]:
        """The exchange of one call and the keyword arguments the LLM's own call gets."""
        kwargs = {
            "tools": tools,
            "callbacks": callbacks,
            "available_functions": available_functions,
            "from_task": from_task,
            "from_agent": from_agent,
        }
        # In-process LLMs (replay, composer) get the response model as asked: they only record it.
        if getattr(self, "boundary_local", False):
            kwargs["response_model"] = response_model
        structured = asks_for_structure(response_model, tools, agent=from_agent, task=from_task)
        return _Exchange(self, structured=structured, task=from_task, messages=messages), kwargs

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        """The LLM's own call at the boundary: time-limited, retried, structure negotiated, recorded."""
        parent = super()
        exchange, kwargs = self._exchange(
            messages, tools, callbacks, available_functions, from_task, from_agent, response_model
        )
        try:
            offer = exchange.first()
            while True:
                with exchange.sending(offer):
                    try:
                        answer = call_with_policy(
                            lambda: exchange.send(lambda: parent.call(messages, **kwargs)),  # type: ignore[attr-defined]
                            self.call_policy,
                            model=exchange.model,
                            retryable=exchange.retryable(offer),
                        )
                    except Exception as error:
                        offer = exchange.step_down(offer, error)
                        continue
                return exchange.answered(clean_text(answer))
        except BaseException as error:
            exchange.failed(error)
            raise

    async def acall(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        """The async :meth:`call`."""
        parent = super()
        exchange, kwargs = self._exchange(
            messages, tools, callbacks, available_functions, from_task, from_agent, response_model
        )
        try:
            offer = exchange.first()
            while True:
                with exchange.sending(offer):
                    operation: Callable[[], Awaitable[Any]] = lambda: exchange.send(  # noqa: E731
                        lambda: parent.acall(messages, **kwargs)  # type: ignore[attr-defined]
                    )
                    try:
                        answer = await acall_with_policy(
                            operation, self.call_policy, model=exchange.model, retryable=exchange.retryable(offer)
                        )
                    except Exception as error:
                        offer = exchange.step_down(offer, error)
                        continue
                return exchange.answered(clean_text(answer))
        except BaseException as error:
            exchange.failed(error)
            raise

    # -- what CrewAI's providers report, captured for the call being made --------------------------------

    def _track_token_usage_internal(self, usage_data: Any) -> None:
        super()._track_token_usage_internal(usage_data)  # type: ignore[misc]
        if isinstance(usage_data, dict) and usage_data:
            # lazy: CrewAI, its usage normalizer knows every provider's key names
            from crewai.types.usage_metrics import UsageMetrics

            metrics = UsageMetrics.from_provider_dict(usage_data)
            if metrics is not None:
                report(prompt_tokens=metrics.prompt_tokens, completion_tokens=metrics.completion_tokens)

    def _emit_stream_chunk_event(self, chunk: str, from_task: Any = None, *args: Any, **kwargs: Any) -> None:
        # A chunk of a tool call's arguments is not the answer's text.
        if kwargs.get("tool_call", args[1] if len(args) > 1 else None) is None:
            STREAMS.chunk(from_task, chunk)
        super()._emit_stream_chunk_event(chunk, from_task, *args, **kwargs)  # type: ignore[misc]

    def _emit_call_completed_event(self, *args: Any, **kwargs: Any) -> None:
        finish = kwargs.get("finish_reason", args[6] if len(args) > 6 else None)
        report(finish_reason=finish if isinstance(finish, str) else None)
        super()._emit_call_completed_event(*args, **kwargs)  # type: ignore[misc]


# CrewAI's BaseLLM wraps every ``call`` a subclass defines in its 429 retry; ours is the policy instead.
BoundaryCalls.call._crewai_rate_limit_wrapped = True  # type: ignore[attr-defined]
BoundaryCalls.acall._crewai_rate_limit_wrapped = True  # type: ignore[attr-defined]


class OpenAIChatOffers:
    """For CrewAI's OpenAI chat-completions providers (OpenAI and compatible servers): offers go in the request."""

    boundary_offers: ClassVar[bool] = True

    def _prepare_completion_params(self, messages: Any, tools: Any = None, *args: Any, **kwargs: Any) -> Any:
        params = super()._prepare_completion_params(messages, tools, *args, **kwargs)  # type: ignore[misc]
        offer = take_offer(params.get("tools"))
        if offer is not None:
            offer.apply(params)
            params["messages"] = framed(params.get("messages"), offer)
        return params


_classes: dict[tuple[type[Any], CallPolicy, str], type[Any]] = {}
_classes_lock = threading.Lock()


def _openai_chat(base: type[Any]) -> bool:
    # lazy: CrewAI, loads only when an LLM or a crew is built
    from crewai.llms.providers.openai.completion import OpenAICompletion

    return issubclass(base, OpenAICompletion)


def _boundary_class(base: type[Any], policy: CallPolicy, setting: str) -> type[Any]:
    if issubclass(base, BoundaryCalls):  # given a new policy: replace the old one, never stack them
        base = next(k for k in base.__mro__ if not issubclass(k, BoundaryCalls) and k is not OpenAIChatOffers)
    with _classes_lock:
        made = _classes.get((base, policy, setting))
        if made is None:
            namespace = {
                "__module__": base.__module__,
                "__qualname__": base.__qualname__,
                "__annotations__": {"call_policy": ClassVar[CallPolicy], "structured_output": ClassVar[str]},
                "call_policy": policy,
                "structured_output": setting,
            }
            mixins = (BoundaryCalls, OpenAIChatOffers) if _openai_chat(base) else (BoundaryCalls,)
            made = type(base.__name__, (*mixins, base), namespace)
            _classes[(base, policy, setting)] = made
        return made


def make_resilient(llm: _T, policy: CallPolicy | None = None, *, structured_output: str = AUTO) -> _T:
    """Put a ``crewai.BaseLLM`` object at the LLM boundary with ``policy`` (default: from the environment), in place.

    The object keeps its identity, fields, private state and ``isinstance`` relations; only its calls change.

    Raises:
        TypeError: ``llm`` is not a ``crewai.BaseLLM``.
        ValueError: ``structured_output`` is not a known setting.
        InputError: the environment's settings are unusable.
    """
    # lazy: CrewAI, loads only when an LLM or a crew is built
    from marsrag.integrations.crewai import BaseLLM

    if not isinstance(llm, BaseLLM):
        raise TypeError(f"expected a crewai.BaseLLM, got {type(llm).__name__}")
    ladder(structured_output)  # checks the setting
    chosen = policy or CallPolicy.from_env()
    # The same layout (pydantic's slots, no new fields): assigning __class__ is safe and keeps the object.
    object.__setattr__(llm, "__class__", _boundary_class(type(llm), chosen, structured_output))
    return llm


def supports_async(llm: Any) -> bool:
    """Whether an LLM object answers ``acall`` itself (CrewAI's ``BaseLLM.acall`` only raises NotImplementedError).

    CrewAI's LLM and provider classes implement it, and so do MarsRAG's composer and replay LLM; a user's
    ``BaseLLM`` subclass may define ``call`` only. The LLM boundary's own ``acall`` does not count: it awaits
    the class's.
    """
    # lazy: CrewAI, loads only when an LLM or a crew is built
    from marsrag.integrations.crewai import BaseLLM

    for klass in type(llm).__mro__:
        if "acall" in vars(klass) and klass is not BoundaryCalls:
            return klass is not BaseLLM
    return False


__all__ = ["BoundaryCalls", "OpenAIChatOffers", "make_resilient", "supports_async"]
