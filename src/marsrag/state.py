"""The records every layer shares: runs, task states (spec section 4), attempts, transitions, loop events.

They sit below the planner (``chain``), the events and the store, which all read and write them, and above
only the contract, whose issue and status types they reuse. Structured fields are stored separately from
rendered prose; every record carries the contract version it was made under, so a reader can tell an
incompatible record from a broken one.
"""

from __future__ import annotations

from dataclasses import is_dataclass
from datetime import UTC, datetime
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, model_validator

from marsrag.contract import LOOP_CONTRACT_VERSION, ContractIssue, Status, render_sections
from marsrag.text import has_unstorable, storable_value

#: A task's status: the contract's verdict, or ``skipped`` for a task that ran without the contract.
ValidationStatus = Literal[Status, "skipped"]
#: Every task status, in the order outcomes are counted and shown.
VALIDATION_STATUSES: tuple[ValidationStatus, ...] = ("valid", "partial", "failed", "skipped")
TransitionMode = Literal["direct", "repair", "fallback"]
HookSource = Literal["goal", "direct", "repair", "fallback"]
RunStatus = Literal["pending", "running", "completed", "failed"]
#: Where an attempt came from: the task's answer, its in-run repair, or an operator action afterwards.
AttemptKind = Literal["answer", "repair", "operator_repair", "regenerate"]

#: The hook a task gets when the prior loop is unusable (spec section 3), word for word.
FALLBACK_HOOK = "What is the single most important next step to resolve the current uncertainty?"


class Record(BaseModel):
    """The base of the records: text in them is storable, and each model's validator is built on first use.

    Every record is validated through :func:`marsrag.text.storable_value`, so whatever text a record is made
    of (an API body, a command-line argument, a file name, a setting, model output, an event's detail, or a row
    stored before this rule) holds no lone surrogate or NUL: the store, the sinks and every response can encode
    it. This is the choke point of that rule; the store's own guard is only the last line behind it.
    """

    # Building the ten models' validators is most of importing this module (about 30 ms), and a read-only
    # command (metrics, runs list) uses one or two of them, if any.
    model_config = ConfigDict(defer_build=True)

    @model_validator(mode="after")
    def _storable_text(self) -> Record:
        # After validation, over the fields of this record that can hold text: a nested record has cleaned its
        # own, and numbers, times and literals hold none (walking the whole input cost a task state four times
        # its validation).
        fields = self.__dict__
        for name in _text_fields(type(self)):
            value = fields[name]
            if value is None or (type(value) is str and not has_unstorable(value)):
                continue
            cleaned = storable_value(value)
            if cleaned is not value:
                fields[name] = cleaned  # in place: a frozen record (an event) is still being built
        return self


_TEXT_FIELDS: dict[type[Record], tuple[str, ...]] = {}


def _text_fields(model: type[Record]) -> tuple[str, ...]:
    """The fields of ``model`` whose values can hold text of their own (derived once from its annotations)."""
    found = _TEXT_FIELDS.get(model)
    if found is None:
        fields = model.model_fields.items()
        found = _TEXT_FIELDS[model] = tuple(name for name, info in fields if _may_hold_text(info.annotation))
    return found


def _may_hold_text(annotation: Any) -> bool:
    if annotation in (int, float, bool, datetime, type(None)) or get_origin(annotation) is Literal:
        return False
    if isinstance(annotation, type) and (issubclass(annotation, BaseModel) or is_dataclass(annotation)):
        # A record cleans its own text; a contract issue is made by MarsRAG from text already storable.
        return False
    if get_origin(annotation) in (Union, UnionType, list):
        return any(_may_hold_text(argument) for argument in get_args(annotation))
    return True  # str, dict, Any...


def utcnow() -> datetime:
    """Now, timezone-aware (UTC)."""
    return datetime.now(UTC)


class Validation(Record):
    """``validation`` of spec section 4: the status and errors of the task's final attempt."""

    status: ValidationStatus
    errors: list[ContractIssue] = Field(default_factory=list)


class LoopFields(Record):
    """``loop_output`` of spec section 4: the five fields, None where the final attempt had none."""

    hook: str | None = None
    grip: str | None = None
    payoff: str | None = None
    reinforce: str | None = None
    loop: str | None = None

    def render(self) -> str:
        """The fields as labelled prose (what the rendered-text column holds)."""
        return render_sections(self.model_dump())


class Routing(Record):
    """``routing`` of spec section 4: where the loop points next."""

    next_agent: str | None = None
    next_tool: str | None = None
    next_workflow: str | None = None


class AttemptRecord(Record):
    """One answer of a task (1 = first, 2 = in-run repair, 3+ = operator actions): its raw text and verdict.

    The verdict of a ``regenerate`` attempt is that of the merged output (its raw text holds only the
    re-asked sections).
    """

    number: int
    raw: str
    status: ValidationStatus
    errors: list[ContractIssue] = Field(default_factory=list)
    kind: AttemptKind = "answer"
    created_at: datetime = Field(default_factory=utcnow)
    # The LLM call behind the attempt, filled in at the LLM boundary; None (or []) when unknown, as for
    # attempts stored before migration 0006.
    #: The model name asked ("smollm2", "gpt-4o-mini", "replay", "offline-composer").
    model: str | None = None
    #: ``host[:port]`` of the endpoint only: never a key, a path or a query.
    endpoint: str | None = None
    #: The structured-output mode used: "json_schema", "json_object", "grammar" or "prompt".
    structured_output: str | None = None
    #: The modes the endpoint refused before this attempt, in the order tried (e.g. ``["json_schema"]``).
    structured_output_refused: list[str] = Field(default_factory=list)
    latency_ms: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    #: Why the model stopped ("stop", "length").
    finish_reason: str | None = None


#: How well a task's retrieved passages support what it was asked (see :mod:`marsrag.rag.support`).
SupportLevel = Literal["strong", "weak", "none"]
SUPPORT_LEVELS: tuple[SupportLevel, ...] = ("strong", "weak", "none")


class SupportTerm(Record):
    """One term of what a task was asked, and where the retrieved passages have it."""

    #: The term's stem (:func:`marsrag.tokens.stems`) and a word of the question it came from.
    term: str
    word: str
    #: Where it was asked: the run's goal, the hook handed to the task, or both.
    asked_in: Literal["goal", "hook", "both"]
    #: How many of the knowledge base's chunks contain it.
    chunks: int
    #: Its weight: the rarer in the knowledge base, the more it says what the question is about.
    weight: float
    #: The retrieved passages (1-based positions in the task's results) that contain it.
    found_in: list[int] = Field(default_factory=list)


class Support(Record):
    """How well a task's retrieved passages support what it was asked, and the evidence the level rests on.

    ``score`` is the best single passage's: the mean of the share of the asked terms' weight it contains
    (``coverage``) and the share of the question's neighbouring term pairs it has near each other
    (``proximity``), or its similarity to the query on the same scale when that is higher (a paraphrase shares
    few words with what answers it). The level follows from the score's thresholds (see
    :mod:`marsrag.rag.support`).
    """

    level: SupportLevel
    score: float
    coverage: float = 0.0
    proximity: float = 0.0
    #: The position (1-based) in the task's results of the passage that supports it best; None without one.
    best: int | None = None
    #: The knowledge base's size when it was assessed, in chunks.
    chunks: int = 0
    #: The best passage's cosine similarity to the query, when an embedder with a calibrated scale found it
    #: (its score is then the larger of the term evidence and this similarity on the same scale); else None.
    similarity: float | None = None
    terms: list[SupportTerm] = Field(default_factory=list)
    #: How it was measured, so that levels of later methods can be told apart.
    method: str = "terms"

    @property
    def missing(self) -> list[str]:
        """The words asked about that the best passage does not have: the goal's, then the hook's, heaviest first."""
        absent = [term for term in self.terms if self.best is None or self.best not in term.found_in]
        return [term.word for term in sorted(absent, key=lambda term: (term.asked_in == "hook", -term.weight))]


class Retrieval(Record):
    """The retrieval step of a task: the hook-derived query, what came back and how well it supports the task."""

    query: str
    results: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The passages retrieved, best first: chunk, source, heading, text, score and citation number.",
        examples=[
            [
                {
                    "chunk_id": 86,
                    "source": "knowledge_base/incidents/cache-restarts.md#INC-2025-041 > Timeline",
                    "heading": "INC-2025-041 > Timeline",
                    "text": "09:02 the first cache node restarted; p95 checkout latency rose to 2.4 s.",
                    "score": 13.8,
                    "ref": "1",
                }
            ]
        ],
    )
    #: None for a task stored before support was assessed.
    support: Support | None = None
    retrievers: list[str] = Field(
        default_factory=list,
        description="The retrievers whose lists were fused into the results: keyword, then vector (empty for a "
        "task stored before hybrid retrieval, or a retriever of the user's own).",
    )
    skipped: str | None = Field(
        default=None,
        description="Why the vector search did not answer (the embedder failed, or no vector of it is stored): "
        "the results are the keyword search's alone. None when every retriever answered.",
    )


class Citation(Record):
    """A numbered source marker (``[1]``) in a task's text, resolved to the passage it names.

    ``source`` and ``chunk_id`` are those of the passage's entry in the task's ``retrieval.results``;
    ``fields`` are the contract fields whose text carries the marker, in the contract's order.
    """

    ref: str
    source: str
    chunk_id: int | str | None = None
    fields: list[str] = Field(default_factory=list)


class TaskState(Record):
    """One task's runtime state, exactly the shape of spec section 4 plus attempts, hook source, retrieval."""

    run_id: str
    task_id: str
    position: int
    agent: str | None = None
    loop_contract_version: str = LOOP_CONTRACT_VERSION
    loop_mode: str
    validation: Validation
    loop_output: LoopFields
    routing: Routing = Field(default_factory=Routing)
    attempts: list[AttemptRecord] = Field(default_factory=list)
    hook_source: HookSource = "goal"
    retrieval: Retrieval | None = None
    #: The markers in the task's text that resolve to a retrieved passage, in order of their number.
    citations: list[Citation] = Field(default_factory=list)
    #: Problems with the markers (one that names no passage given to the task); never a validation error.
    citation_warnings: list[str] = Field(default_factory=list)
    rendered: str = ""
    created_at: datetime = Field(default_factory=utcnow)

    def spec_view(self) -> dict[str, Any]:
        """The record exactly as spec section 4 shows it."""
        return self.model_dump(
            mode="json",
            include={"run_id", "task_id", "loop_contract_version", "loop_mode", "validation", "loop_output", "routing"},
        )


class TaskProgress(Record):
    """A task whose answer is being written: what a viewer may see of it before the task is validated and stored.

    Made while the model streams its answer (:mod:`marsrag.runtime.progress`) and replaced as the text grows;
    never what is validated or stored as the task's state (the final answer is). ``seq`` orders a run's
    progress writes: the store gives each write the next number of its run, so a reader asks for what changed
    after the last number it saw.
    """

    run_id: str
    task_id: str
    position: int
    #: The run's progress write this is (set by the store when it is saved; 0 before).
    seq: int = 0
    #: Which request for the task the text is from, from 1: a repair or a retried request starts the text again.
    call: int = 1
    #: The sections seen so far, in contract order (the last one possibly cut mid-sentence).
    sections: dict[str, str] = Field(default_factory=dict)
    #: The section the text ends in, or None before the first one.
    writing: str | None = None
    #: Chunks and characters of this call's text so far (a chunk is about a token for most servers).
    chunks: int = 0
    chars: int = 0
    started_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class TransitionRecord(Record):
    """A handoff between two tasks (spec section 3 transition metadata)."""

    run_id: str
    transition_source_task_id: str
    transition_target_task_id: str
    transition_mode: TransitionMode
    transition_reason: str
    hook: str
    superseded: bool = False
    created_at: datetime = Field(default_factory=utcnow)


class RunRecord(Record):
    """A run of a workflow for a goal, in a session."""

    run_id: str
    session_id: str
    goal: str
    workflow: str
    loop_mode: str
    status: RunStatus = "pending"
    status_reason: str | None = None
    summary: str = ""
    loop_contract_version: str = LOOP_CONTRACT_VERSION
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    #: "host:pid" of the process holding the run: its executor once running, before that the process that
    #: accepted it (None for runs stored before owners were recorded for pending runs).
    owner: str | None = None
    #: The run whose next action this run follows (a run's next action is followed at most once).
    followed_from: str | None = None
    #: The experiment the run's session takes part in and the arm it was assigned (None outside an experiment).
    experiment: str | None = None
    arm: str | None = None
    #: The knowledge base collections the run's retrieval keeps to (None: every collection), chosen when it
    #: started: its resumption, its operator actions and the runs following it keep to the same ones.
    collections: list[str] | None = None
    #: The W3C ``traceparent`` of the run's trace (see :mod:`marsrag.tracing.spans`): the span that submitted it,
    #: else its first execution's run span; None when no one traced it.
    trace: str | None = None


#: The loop events of spec section 8, then MarsRAG's own: a reader's rating of an answer or next action, and a
#: session's assignment to an experiment's arm (both carry ``detail``).
EventName = Literal[
    "loop.contract.validated",
    "loop.contract.failed",
    "loop.transition.planned",
    "loop.transition.fallback_used",
    "loop.ui.rendered",
    "loop.action.followed",
    "loop.feedback.recorded",
    "loop.experiment.assigned",
]
EVENT_NAMES: tuple[str, ...] = EventName.__args__  # type: ignore[attr-defined]

#: What a reader rates (``loop.feedback.recorded``'s ``detail["on"]``) and how (``detail["rating"]``).
FeedbackTarget = Literal["answer", "next_action"]
FeedbackRating = Literal["up", "down"]
#: How a follow took the next action (``loop.action.followed``'s ``detail["follow_kind"]``): as offered, or with
#: the user's own edited goal.
FollowKind = Literal["suggested", "edited"]


class LoopEvent(Record):
    """One event of spec section 8: flat, with the same fields for every name (null where not applicable)."""

    model_config = ConfigDict(frozen=True)

    name: EventName
    run_id: str
    task_id: str | None = None
    loop_contract_version: str | None = None
    loop_mode: str | None = None
    validation_status: str | None = None
    transition_mode: str | None = None
    timestamp: datetime = Field(default_factory=utcnow)
    #: What an event name carries beyond the spec's fields (a feedback's rating, a follow's kind, an experiment
    #: assignment's arm): flat, JSON-ready; None for the spec's own events.
    detail: dict[str, Any] | None = Field(
        default=None,
        description="What the event name carries beyond the flat fields; absent for the spec's own events.",
        examples=[{"on": "answer", "rating": "up", "comment": "Found the root cause"}],
    )

    def to_dict(self) -> dict[str, Any]:
        """The event as a flat JSON-ready record (``detail`` only when the event has one)."""
        return self.model_dump(mode="json", exclude={"detail"} if self.detail is None else None)
