"""Structured output at the LLM boundary: what each mode asks the server for, and stepping down when refused.

Servers differ in how they constrain an answer's shape. The modes, richest first:

- ``json_schema``: OpenAI-style ``response_format`` carrying the contract's JSON Schema (OpenAI, vLLM, Ollama
  0.5+, llama.cpp's ``llama-server``, LM Studio);
- ``json_object``: ``{"type": "json_object", "schema": ...}`` (llama-cpp-python's server constrains decoding
  to the schema), and on refusal plain ``{"type": "json_object"}`` (OpenAI's JSON mode);
- ``grammar``: a GBNF grammar of the contract's JSON form in llama.cpp's ``grammar`` request field;
- ``prompt``: nothing but the template in the prompt; the contract parses whatever comes back.

``auto`` starts at ``json_schema`` and steps down (``json_object`` with its schema, then plain, then
``prompt``) once per refusal: an HTTP 4xx/5xx whose body names the structured-output parameter. An explicit
mode steps down to ``prompt`` when refused, never to a failed call. :class:`Negotiator` remembers the step per
endpoint and model for the life of the process, so only the first call to a server pays for a refusal.
``grammar`` is never tried by ``auto``: servers that do not know the field ignore it silently, so its
acceptance proves nothing.

Structure is asked for only where a final answer is all the call can give (:func:`asks_for_structure`): never
in a step of a tool loop, whether the tools go in the request (native function calling) or in the prompt (a
ReAct agent that has tools). vLLM and Ollama skip the tools when a response format is set (CrewAI issues
#5472, #4697), and a ReAct step cannot be told from the final answer before it is made: the contract parses
a tool-using agent's final answer locally instead.

The schema and grammar carry the contract's own limits (five required strings, ``minLength`` 1,
``maxLength`` 800), so a constrained answer passes or fails the contract for its content, never its shape.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from marsrag.contract.fields import FIELDS
from marsrag.contract.rules import MAX_FIELD_CHARS
from marsrag.settings import STRUCTURED_OUTPUTS as SETTINGS_VALUES

StructuredOutput = Literal["auto", "json_schema", "json_object", "grammar", "prompt"]
#: The structured-output modes a request can be sent with (``auto`` chooses among them).
Mode = Literal["json_schema", "json_object", "grammar", "prompt"]
#: The settings' values (one list: the settings check them, this module acts on them).
STRUCTURED_OUTPUTS: Final[tuple[str, ...]] = SETTINGS_VALUES
MODES: Final[tuple[str, ...]] = get_args(Mode)
AUTO: Final = "auto"

# A refusal names the structured-output parameter in its body; an unrelated 400 (a bad key, a missing
# model, a context overflow) does not, and is the transport policy's to judge.
_REFUSAL_MARKERS: Final = (
    "response_format",
    "json_schema",
    "json_object",
    "grammar",
    "guided_json",
    "guided_grammar",
    "structured output",
    "structured_output",
)
_REFUSAL_STATUSES: Final = frozenset(range(400, 600)) - {401, 403, 404, 408, 429}


def decoding_schema() -> dict[str, Any]:
    """The JSON Schema sent for constrained decoding: the five fields, required strings of 1-800 characters.

    No ``pattern`` and no descriptions: grammar converters anchor patterns (``\\S`` would allow one
    character), and small models copy descriptions into the answer.
    """
    return {
        "type": "object",
        "properties": {name: {"type": "string", "minLength": 1, "maxLength": MAX_FIELD_CHARS} for name in FIELDS},
        "required": list(FIELDS),
        "additionalProperties": False,
    }


def contract_grammar() -> str:
    """A GBNF grammar (llama.cpp) of the contract's JSON form: the five keys in order, strings of 1-800 characters.

    Each value starts with a non-space character, so it is non-empty after trimming, as the contract requires.
    """
    members = ' "," ws '.join(f'"\\"{name}\\"" ws ":" ws value' for name in FIELDS)
    return "\n".join(
        [
            f'root ::= "{{" ws {members} ws "}}"',
            f'value ::= "\\"" lead char{{0,{MAX_FIELD_CHARS - 1}}} "\\""',
            'lead ::= [^"\\\\\\x00-\\x20\\x7F] | escape',
            'char ::= [^"\\\\\\x00-\\x1F\\x7F] | escape',
            'escape ::= "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
            'ws ::= ("\\n" | " ")?',
        ]
    )


@dataclass(frozen=True)
class Offer:
    """One way of asking for structure: its mode and the request fields it adds.

    Attributes:
        mode: the mode recorded on the attempt it produces.
        fields: top-level request fields (``response_format``).
        extra_body: fields the OpenAI SDK does not know, sent in the JSON body as they are (``grammar``).
    """

    mode: Mode
    fields: Mapping[str, Any] = field(default_factory=dict)
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    @property
    def constrains(self) -> bool:
        """Whether the request asks the server for structure (every mode but ``prompt``)."""
        return self.mode != "prompt"

    @property
    def enforces_form(self) -> bool:
        """Whether the server is made to write the contract's form: the request carries its schema or grammar.

        Plain ``json_object`` (OpenAI's JSON mode) does not: the answer is JSON, its keys of the model's choosing.
        """
        response_format = self.fields.get("response_format") or {}
        return "grammar" in self.extra_body or "schema" in response_format or "json_schema" in response_format

    def apply(self, params: dict[str, Any]) -> None:
        """Put this offer into OpenAI chat-completion request ``params`` (replacing any response_format)."""
        params.pop("response_format", None)
        params.update(self.fields)
        if self.extra_body:
            params["extra_body"] = {**params.get("extra_body", {}), **self.extra_body}


PROMPT: Final = Offer("prompt")


def _offers() -> dict[str, tuple[Offer, ...]]:
    schema = decoding_schema()
    json_schema = Offer(
        "json_schema",
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "LoopOutput", "strict": True, "schema": schema},
            }
        },
    )
    with_schema = Offer("json_object", {"response_format": {"type": "json_object", "schema": schema}})
    plain = Offer("json_object", {"response_format": {"type": "json_object"}})
    grammar = Offer("grammar", extra_body={"grammar": contract_grammar()})
    return {
        AUTO: (json_schema, with_schema, plain, PROMPT),
        "json_schema": (json_schema, PROMPT),
        "json_object": (with_schema, plain, PROMPT),
        "grammar": (grammar, PROMPT),
        "prompt": (PROMPT,),
    }


_LADDERS: Final = _offers()


def ladder(setting: str) -> tuple[Offer, ...]:
    """The offers tried for a setting, in order (each refusal steps to the next; ``prompt`` is always last).

    Raises:
        ValueError: not one of auto, json_schema, json_object, grammar, prompt.
    """
    try:
        return _LADDERS[setting]
    except KeyError:
        raise ValueError(f"structured_output must be one of {', '.join(STRUCTURED_OUTPUTS)}, got {setting!r}") from None


def _texts(error: BaseException) -> Iterable[str]:
    yield str(error)
    body = getattr(error, "body", None)
    if body is not None:
        yield repr(body)
    response = getattr(error, "response", None)
    text = getattr(response, "text", None)
    if isinstance(text, str):
        yield text


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(getattr(error, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def is_refusal(error: BaseException) -> bool:
    """Whether an error is a server refusing the structured-output request (not a transport failure).

    An HTTP 4xx/5xx (but 401, 403, 404, 408 and 429, which mean other things) whose body names the
    parameter: ``response_format``, ``json_schema``, ``json_object``, ``grammar``... The error or one of its
    causes may carry it (CrewAI re-raises provider errors).
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        status = _status(current)
        if status is not None and status in _REFUSAL_STATUSES:
            text = " ".join(_texts(current)).casefold()
            if any(marker in text for marker in _REFUSAL_MARKERS):
                return True
        current = current.__cause__ or current.__context__
    return False


class Negotiator:
    """Remembers, per endpoint, model and setting, which offer the server accepts (for the process's life)."""

    def __init__(self) -> None:
        self._steps: dict[tuple[str, str, str], int] = {}
        self._lock = threading.Lock()

    def current(self, key: tuple[str, str], setting: str) -> Offer:
        """The offer to make now to the endpoint and model ``key`` under ``setting``."""
        offers = ladder(setting)
        with self._lock:
            return offers[min(self._steps.get((*key, setting), 0), len(offers) - 1)]

    def refused(self, key: tuple[str, str], setting: str, offer: Offer) -> Offer | None:
        """Record that ``offer`` was refused; the next offer to make, or None when ``prompt`` itself was refused."""
        offers = ladder(setting)
        with self._lock:
            index = offers.index(offer) + 1 if offer in offers else len(offers)
            if index >= len(offers):
                return None
            slot = (*key, setting)
            self._steps[slot] = max(self._steps.get(slot, 0), index)
            return offers[self._steps[slot]]

    def forget(self) -> None:
        """Forget every endpoint's answer (tests; a server that was upgraded in place)."""
        with self._lock:
            self._steps.clear()


#: The process's negotiator: every LLM object shares what servers have refused.
NEGOTIATOR: Final = Negotiator()


@dataclass
class Request:
    """The offer of the call being made, and whether the LLM put it into its request."""

    offer: Offer
    applied: bool = False

    @property
    def mode(self) -> Mode:
        """The mode the request was actually sent with (``prompt`` unless the offer was applied)."""
        return self.offer.mode if self.applied else "prompt"


def in_tool_loop(tools: Any = None, *, agent: Any = None, task: Any = None) -> bool:
    """Whether a call is a step of a tool loop: tools in the request, or made for an agent or task that has tools.

    An agent's or task's tools (CrewAI's ``tools`` field) are offered in the prompt when the LLM does not call
    functions natively (the ReAct format), so every call of that agent for that task may be a tool step.
    """
    return bool(tools) or bool(getattr(task, "tools", None)) or bool(getattr(agent, "tools", None))


def asks_for_structure(response_model: Any, tools: Any = None, *, agent: Any = None, task: Any = None) -> bool:
    """Whether a call asks the server for structure: it wants a typed answer and is no step of a tool loop."""
    return response_model is not None and not in_tool_loop(tools, agent=agent, task=task)


_REQUEST: contextvars.ContextVar[Request | None] = contextvars.ContextVar("marsrag_llm_request", default=None)


def begin_request(offer: Offer) -> tuple[Request, contextvars.Token[Request | None]]:
    """Make ``offer`` the one of the call about to be made (reset the token when it is done)."""
    request = Request(offer)
    return request, _REQUEST.set(request)


def end_request(token: contextvars.Token[Request | None]) -> None:
    """End the request begun with ``token``."""
    _REQUEST.reset(token)


def take_offer(tools: Any = None) -> Offer | None:
    """For an LLM building its request: the structure to ask for (None: none), marked as applied.

    ``tools``: the tools the request carries; with any, no structure is asked for (see :func:`in_tool_loop`).
    """
    request = _REQUEST.get()
    if request is None or not request.offer.constrains or in_tool_loop(tools):
        return None
    request.applied = True
    return request.offer


__all__ = [
    "AUTO",
    "MODES",
    "NEGOTIATOR",
    "PROMPT",
    "Request",
    "STRUCTURED_OUTPUTS",
    "Mode",
    "Negotiator",
    "Offer",
    "StructuredOutput",
    "asks_for_structure",
    "begin_request",
    "contract_grammar",
    "decoding_schema",
    "end_request",
    "in_tool_loop",
    "is_refusal",
    "ladder",
    "take_offer",
]
