"""The UI view model mapper (spec section 8): runtime state in, section cards, badge and next action out.

Pure functions over stored records, with no web framework: the web pages and the terminal printer render
what these return, and the tests check the mapping on its own. Section cards come in the contract's fixed
order with their exact titles; the badge shows the stored ``validation.status`` in words (never by colour
alone); a task that is not valid gets a fallback message and the operator action the spec names for its
status; a task whose retrieved passages support it weakly or not at all gets a support badge beside it (the
terminal and the page share its words, :func:`support_badge`); the run's header says how its tasks ended.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from marsrag.chain.citations import MARKER
from marsrag.chain.planner import REPEATED, asked_before, plan_next_action
from marsrag.contract import FIELDS
from marsrag.liveness import is_stale
from marsrag.state import (
    FALLBACK_HOOK,
    AttemptRecord,
    Citation,
    FeedbackTarget,
    LoopEvent,
    RunRecord,
    Support,
    TaskState,
    TransitionRecord,
)
from marsrag.store.base import RunStore
from marsrag.views.feedback import FeedbackView, feedback_views
from marsrag.views.outcome import RunHeader, outcome_text, run_header, task_outcome
from marsrag.views.summary import SOURCES_LINE

#: Card titles, in the contract's fixed order.
SECTION_TITLES: tuple[str, ...] = tuple(name.title() for name in FIELDS)
NEXT_ACTION_HEADING = "Next recommended question/action"

ActionKind = Literal["regenerate", "repair"]

_BADGES = {
    "valid": ("Valid", "✓", "All five sections pass the contract."),
    "partial": ("Partial", "◐", "Some sections failed the contract; at least three passed."),
    "failed": ("Failed", "✗", "The output failed the contract: fewer than three sections passed."),
    "skipped": ("No contract", "–", "This step runs machine-first (loop_mode none): its output is shown as is."),
}
#: A support level's badge: label and sentence. A strongly supported task has none (nothing to flag).
_SUPPORT_BADGES = {
    "none": (
        "not in the knowledge base",
        "No retrieved passage supports what this step was asked: its answer does not rest on the knowledge base.",
    ),
    "weak": ("weakly supported", "The retrieved passages cover only part of what this step was asked."),
}
_ACTIONS: dict[str, tuple[ActionKind, str]] = {
    "partial": ("regenerate", "Regenerate section"),
    "failed": ("repair", "Run repair task"),
}
#: A summary line quoting a task's payoff ends with the task's id in brackets: ``- Pre-warm caches. (plan)``.
_SUMMARY_PAYOFF = re.compile(r"^- (?P<text>.*) \((?P<task_id>[^()]+)\)$")
#: A line of the summary's source list: ``[3] kb/runbooks/cache.md#Restarts``.
_SUMMARY_SOURCE = re.compile(r"^(?P<marker>\[(?P<ref>\d+)\]) \S")
_SUMMARY_EVIDENCE = "Evidence: "
_SUMMARY_NEXT = "Next: "

_ATTEMPT_KINDS = {
    "answer": "answer",
    "repair": "repair (in the run)",
    "operator_repair": "operator repair",
    "regenerate": "regenerated sections",
}


@dataclass(frozen=True)
class TextPart:
    """A piece of a text as it is shown: plain text, or a citation marker that links to its source.

    ``anchor`` is the id of the source it links to (``src-<task id>-<ref>``) when ``ref`` is a known
    citation; a marker naming no citation stays plain text (``ref`` and ``anchor`` None). Templates print
    ``text`` escaped and wrap a cited part in a link: markup never comes from the text itself.
    """

    text: str
    ref: str | None = None
    anchor: str | None = None


@dataclass(frozen=True)
class SectionCard:
    """One contract section: its title, its text (None when missing) and, when it failed, why.

    ``parts`` is the text split at its citation markers (:class:`TextPart`), empty when there is no text.
    """

    field: str
    title: str
    text: str | None
    problem: str | None
    parts: tuple[TextPart, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the section passed."""
        return self.problem is None and self.text is not None


@dataclass(frozen=True)
class StatusBadge:
    """The validation status as text: the stored status, a label, a symbol and a sentence."""

    status: str
    label: str
    symbol: str
    description: str


@dataclass(frozen=True)
class SupportBadge:
    """How well a task's retrieved passages support it, as text: the stored level, a label and a sentence (with
    the asked words the best passage lacks)."""

    level: str
    label: str
    description: str


@dataclass(frozen=True)
class OperatorAction:
    """The fix an operator can start for a task: ``regenerate`` (partial) or ``repair`` (failed)."""

    kind: ActionKind
    label: str


@dataclass(frozen=True)
class NextActionCard:
    """The next recommended question/action and how it was obtained (``direct``, ``repair``, ``fallback``)."""

    heading: str
    text: str
    mode: str
    note: str | None
    source_task_id: str


@dataclass(frozen=True)
class TransitionView:
    """A handoff between tasks as a person reads it."""

    source_task_id: str
    target_task_id: str
    mode: str
    reason: str
    hook: str
    superseded: bool


@dataclass(frozen=True)
class AttemptView:
    """One attempt: number, where it came from, verdict (and its badge), problems, raw text and its LLM call."""

    number: int
    kind: str
    status: str
    problems: tuple[str, ...]
    raw: str
    #: What was asked, of whom, and what it cost (:func:`attempt_call_line`); "" when nothing is known.
    call: str = ""
    #: The verdict in words, as the task's badge shows it (None only for views built by hand).
    badge: StatusBadge | None = None


@dataclass(frozen=True)
class SourceView:
    """A numbered passage given to a task (its ``[ref]`` marker), as its sources panel lists it.

    ``source`` is the citation key (``path#Heading > Sub``); ``title`` the document's path and ``heading``
    the section's heading path, split from it when the result has no ``heading``. ``cited`` says whether
    the task's text cites it; ``anchor`` is the id its markers link to.
    """

    source: str
    text: str
    ref: str = ""
    title: str = ""
    heading: str = ""
    score: float | None = None
    cited: bool = False
    anchor: str = ""
    #: Which retrievers found it and its rank in each, for people: ``keyword #2 · vector #1`` ("" when unknown).
    found_by: str = ""


@dataclass(frozen=True)
class TaskView:
    """One task block: badge, five cards (or the machine output), provenance, and what to do if it failed."""

    task_id: str
    position: int
    agent: str | None
    loop_mode: str
    loop_contract_version: str
    badge: StatusBadge
    cards: tuple[SectionCard, ...]
    machine_output: str | None
    problems: tuple[str, ...]
    hook_source: str
    transition_in: TransitionView | None
    fallback_message: str | None
    action: OperatorAction | None
    attempts: tuple[AttemptView, ...]
    retrieval_query: str | None
    sources: tuple[SourceView, ...]
    #: Problems with the task's markers (one naming no passage given to it), shown as a note.
    citation_warnings: tuple[str, ...] = ()
    #: The machine output split at its citation markers (empty for a contract task).
    machine_parts: tuple[TextPart, ...] = ()
    #: How well its retrieved passages support it, when weakly or not at all (None: strong, or not assessed).
    support: SupportBadge | None = None
    #: Why its retrieval was keyword search alone (the vector search was skipped), for a note; None: it was not.
    retrieval_skipped: str | None = None


@dataclass(frozen=True)
class SummaryLine:
    """One line of the run's summary: a payoff (with the task it is from), the evidence, the next step or text.

    ``parts`` link the line's markers to the sources of ``task_id``, the task the line quotes (None when no
    task can be named: its markers stay text).
    """

    kind: Literal["payoff", "evidence", "next", "text", "sources", "source"]
    parts: tuple[TextPart, ...]
    task_id: str | None = None
    #: A ``source`` line's run-wide number (its ``[n]`` links to the first task given that source).
    ref: str | None = None


@dataclass(frozen=True)
class RunView:
    """A run page: the run, its header, its task blocks in order, its summary and its next-action card."""

    run_id: str
    session_id: str
    goal: str
    workflow: str
    loop_mode: str
    status: str
    status_reason: str | None
    summary: str
    created_at: str
    stale: bool
    tasks: tuple[TaskView, ...]
    next_action: NextActionCard | None
    superseded: tuple[TransitionView, ...]
    #: How its tasks ended: ``{"valid": n, "partial": n, "failed": n, "skipped": n}``.
    outcome: dict[str, int]
    #: The status and every non-valid outcome, e.g. ``completed · 1 of 3 tasks failed``.
    header: RunHeader
    #: The summary, line by line, its markers linked to the sources of the task each line quotes.
    summary_lines: tuple[SummaryLine, ...] = ()
    #: The reader's current rating of the answer and of the next action, once the run has finished (empty
    #: while it runs: nothing can be rated yet).
    feedback: Mapping[FeedbackTarget, FeedbackView] = field(default_factory=dict)

    @property
    def outcome_text(self) -> str:
        """How its tasks ended, in words: ``3 valid``, ``2 valid, 1 partial``."""
        return outcome_text(self.outcome)

    @property
    def in_progress(self) -> bool:
        """Whether the run is still executing (the page refreshes itself until it is not)."""
        return self.status in ("pending", "running") and not self.stale

    @property
    def badge_counts(self) -> dict[str, int]:
        """How many tasks have each status (for the runs list and the session chain)."""
        counts: dict[str, int] = {}
        for task in self.tasks:
            counts[task.badge.status] = counts.get(task.badge.status, 0) + 1
        return counts


def status_badge(status: str) -> StatusBadge:
    """The badge for a stored validation status."""
    label, symbol, description = _BADGES.get(status, (status.title(), "?", f"Status {status}."))
    return StatusBadge(status, label, symbol, description)


def support_badge(support: Support | None) -> SupportBadge | None:
    """The badge of a task's support: "not in the knowledge base" (none), "weakly supported" (weak); None for a
    strongly supported task and one stored before support was assessed."""
    if support is None or support.level not in _SUPPORT_BADGES:
        return None
    label, description = _SUPPORT_BADGES[support.level]
    missing = support.missing[:6]
    if missing:
        description += f" Not found: {', '.join(missing)}."
    return SupportBadge(support.level, label, description)


def operator_action(status: str) -> OperatorAction | None:
    """The operator action for a status: Regenerate section (partial), Run repair task (failed), else None."""
    action = _ACTIONS.get(status)
    return OperatorAction(*action) if action else None


def section_cards(state: TaskState) -> tuple[SectionCard, ...]:
    """The five cards of a task, in the fixed order, each with its text and the first problem found with it."""
    known = citation_anchors(state)
    problems: dict[str, str] = {}
    for issue in state.validation.errors:
        if issue.field in FIELDS and issue.field not in problems:
            problems[issue.field] = issue.message
    cards = []
    for name, title in zip(FIELDS, SECTION_TITLES, strict=True):
        text = getattr(state.loop_output, name)
        problem = problems.get(name) or (None if text else f"{name} is missing")
        shown_problem = problem if state.validation.status != "valid" else None
        cards.append(SectionCard(name, title, text, shown_problem, cited_parts(text or "", known)))
    return tuple(cards)


def transition_view(transition: TransitionRecord) -> TransitionView:
    """A transition as a person reads it."""
    return TransitionView(
        transition.transition_source_task_id,
        transition.transition_target_task_id,
        transition.transition_mode,
        transition.transition_reason,
        transition.hook,
        transition.superseded,
    )


def task_view(
    state: TaskState,
    *,
    transition_in: TransitionRecord | None = None,
    transition_out: TransitionRecord | None = None,
    is_last: bool = False,
) -> TaskView:
    """Map one stored task state (and the current transitions into and out of it) to its block."""
    status = state.validation.status
    skipped = status == "skipped"
    problems = tuple(_problem(issue.field, issue.message) for issue in state.validation.errors)
    return TaskView(
        task_id=state.task_id,
        position=state.position,
        agent=state.agent,
        loop_mode=state.loop_mode,
        loop_contract_version=state.loop_contract_version,
        badge=status_badge(status),
        cards=() if skipped else section_cards(state),
        machine_output=_machine_output(state) if skipped else None,
        problems=problems,
        hook_source=state.hook_source,
        transition_in=transition_view(transition_in) if transition_in else None,
        fallback_message=_fallback_message(state, transition_out, is_last),
        action=operator_action(status),
        attempts=tuple(_attempt_view(attempt) for attempt in state.attempts),
        retrieval_query=state.retrieval.query if state.retrieval else None,
        sources=source_views(state),
        citation_warnings=tuple(state.citation_warnings),
        machine_parts=cited_parts(_machine_output(state), citation_anchors(state)) if skipped else (),
        support=support_badge(state.retrieval.support if state.retrieval else None),
        retrieval_skipped=state.retrieval.skipped if state.retrieval else None,
    )


def source_anchor(task_id: str, ref: str) -> str:
    """The id of a task's source ``ref`` on the run page: ``src-<task id>-<ref>``."""
    return f"src-{task_id}-{ref}"


def citation_anchors(state: TaskState) -> dict[str, str]:
    """The task's known citations: each ``ref`` with the anchor of its source."""
    return {citation.ref: source_anchor(state.task_id, citation.ref) for citation in state.citations}


def cited_parts(text: str, anchors: Mapping[str, str]) -> tuple[TextPart, ...]:
    """``text`` split at its citation markers; a marker whose ref is in ``anchors`` links there, any other is text.

    Adjacent plain pieces are joined, so a text without known citations is one part (none when it is empty).
    """
    parts: list[TextPart] = []
    plain = ""
    at = 0
    for marker in MARKER.finditer(text):
        ref = marker.group(1)
        if ref not in anchors:
            continue
        plain += text[at : marker.start()]
        if plain:
            parts.append(TextPart(plain))
            plain = ""
        parts.append(TextPart(marker.group(0), ref, anchors[ref]))
        at = marker.end()
    plain += text[at:]
    if plain:
        parts.append(TextPart(plain))
    return tuple(parts)


def source_views(state: TaskState) -> tuple[SourceView, ...]:
    """The sources panel of a task: each retrieved passage by its number, then any cited source not among them.

    A result's marker is its run-wide ``ref`` (:mod:`marsrag.chain.numbering`); in a task stored before that,
    result ``i`` (from 0) is marker ``[i+1]``. A citation whose ref names no retrieved passage (a source an
    earlier task was given) still gets an entry (its source, no passage), so every marker that links has a target.
    """
    cited = {citation.ref: citation for citation in state.citations}
    results = state.retrieval.results if state.retrieval else []
    views = [
        _source(state.task_id, str(item.get("ref") or number), item, cited)
        for number, item in enumerate(results, start=1)
    ]
    listed = {view.ref for view in views}
    for citation in state.citations:
        if citation.ref not in listed:
            views.append(_source(state.task_id, citation.ref, _citation_item(citation), cited))
            listed.add(citation.ref)
    return tuple(views)


def summary_lines(summary: str, tasks: Sequence[TaskState]) -> tuple[SummaryLine, ...]:
    """The run's summary line by line, each line's markers linked to the sources of the task it quotes.

    A payoff line names its task (``- ... (plan)``); the evidence line is the reinforce of the last task
    whose reinforce says exactly that. Lines quoting no task keep their markers as text. After ``Sources:``
    each ``[n] path#Heading`` line is a ``source`` of the run, its marker linked to the first task that cites it.
    """
    by_id = {task.task_id: task for task in tasks}
    lines: list[SummaryLine] = []
    listing = False
    for line in summary.splitlines():
        if not line.strip():
            continue
        listed = _SUMMARY_SOURCE.match(line) if listing else None
        payoff = _SUMMARY_PAYOFF.match(line)
        # A payoff several tasks gave names them all (``(diagnose, plan)``): under the run's numbering its
        # markers name the same sources in each, so the first task's panel is linked.
        names = [payoff["task_id"], *payoff["task_id"].split(", ")] if payoff else []
        quoted = next((by_id[name] for name in names if name in by_id), None)
        if line == SOURCES_LINE:
            listing = True
            lines.append(SummaryLine("sources", (TextPart(line),)))
        elif listed:
            ref = listed["ref"]
            task = next((task for task in tasks if ref in citation_anchors(task)), None)
            anchor = source_anchor(task.task_id, ref) if task is not None else None
            parts = (TextPart(f"[{ref}]", ref if anchor else None, anchor), TextPart(line[listed.end("marker") :]))
            lines.append(SummaryLine("source", parts, task.task_id if task else None, ref))
        elif quoted is not None:
            lines.append(SummaryLine("payoff", cited_parts(line[2:], citation_anchors(quoted)), quoted.task_id))
        elif line.startswith(_SUMMARY_EVIDENCE):
            evidence = line[len(_SUMMARY_EVIDENCE) :]
            quoted = next((task for task in reversed(tasks) if task.loop_output.reinforce == evidence), None)
            anchors = citation_anchors(quoted) if quoted else {}
            lines.append(SummaryLine("evidence", cited_parts(line, anchors), quoted.task_id if quoted else None))
        elif line.startswith(_SUMMARY_NEXT):
            lines.append(SummaryLine("next", (TextPart(line),)))
        else:
            kind: Literal["payoff", "text"] = "payoff" if line.startswith("- ") else "text"
            lines.append(SummaryLine(kind, (TextPart(line[2:] if kind == "payoff" else line),)))
    return tuple(lines)


def next_action_card(tasks: Sequence[TaskState], asked: Sequence[str] = ()) -> NextActionCard | None:
    """The run's next-action card: the planner's handoff out of its last contract task (None without one).

    ``asked``: what the session asked up to this run (:func:`~marsrag.chain.planner.asked_before`).
    """
    planned = plan_next_action(tasks, asked)
    if planned is None:
        return None
    last, action = planned
    note = None
    if action.reason == REPEATED:
        note = "The last step's loop repeats a question already asked in this session, so this is a fallback question."
    elif action.mode == "fallback":
        note = f"The last step's loop could not be used ({action.reason}), so this is the fallback question."
    return NextActionCard(NEXT_ACTION_HEADING, action.hook, action.mode, note, last.task_id)


def run_view(
    run: RunRecord,
    tasks: Sequence[TaskState],
    transitions: Sequence[TransitionRecord],
    *,
    now: Any = None,
    asked: Sequence[str] = (),
    events: Sequence[LoopEvent] = (),
) -> RunView:
    """Map a run, its task states and its transitions to the run page's view model.

    ``asked``: what the run's session asked up to it (for the next-action card; see :func:`read_run_view`);
    ``events``: the run's events, for its current feedback (:func:`~marsrag.views.feedback.feedback_views`).
    """
    finished = run.status not in ("pending", "running")
    current = [t for t in transitions if not t.superseded]
    into = {t.transition_target_task_id: t for t in current}
    out = {t.transition_source_task_id: t for t in current}
    contract = [task for task in tasks if task.validation.status != "skipped"]
    last_contract = contract[-1].task_id if contract else None
    views = tuple(
        task_view(
            task,
            transition_in=into.get(task.task_id),
            transition_out=out.get(task.task_id),
            is_last=task.task_id == last_contract and run.status not in ("pending", "running"),
        )
        for task in tasks
    )
    outcome = task_outcome(task.validation.status for task in tasks)
    return RunView(
        run_id=run.run_id,
        session_id=run.session_id,
        goal=run.goal,
        workflow=run.workflow,
        loop_mode=run.loop_mode,
        status=run.status,
        status_reason=run.status_reason,
        summary=run.summary,
        created_at=run.created_at.isoformat(timespec="seconds"),
        stale=is_stale(run, now) if now is not None else is_stale(run),
        tasks=views,
        next_action=next_action_card(tasks, asked) if run.status not in ("pending", "running") else None,
        superseded=tuple(transition_view(t) for t in transitions if t.superseded),
        outcome=outcome,
        header=run_header(run.status, outcome),
        summary_lines=summary_lines(run.summary, tasks),
        feedback=feedback_views(events) if finished else {},
    )


def read_run_view(store: RunStore, run_id: str) -> RunView:
    """The view model of a stored run, read in one snapshot.

    Raises:
        RunNotFoundError: no such run.
    """
    run, tasks, transitions = store.read_run(run_id)
    # Only a finished run shows a next action: a running one is not worth the read of its session.
    finished = run.status not in ("pending", "running")
    asked = asked_before(store.list_runs(session_id=run.session_id), run) if finished else []
    events = store.get_events(run_id) if finished else []
    return run_view(run, tasks, transitions, asked=asked, events=events)


def _problem(field: str | None, message: str) -> str:
    return f"{field.title()}: {message}" if field else message


def _machine_output(state: TaskState) -> str:
    if state.rendered:
        return state.rendered
    return state.attempts[-1].raw if state.attempts else ""


def _fallback_message(state: TaskState, transition_out: TransitionRecord | None, is_last: bool) -> str | None:
    """What failed, and what the next step did about it (spec section 5: show a fallback message)."""
    status = state.validation.status
    if status in ("valid", "skipped"):
        return None
    fields = list(dict.fromkeys(issue.field for issue in state.validation.errors if issue.field in FIELDS))
    what = f"the {', '.join(fields)} section{'s' if len(fields) > 1 else ''}" if fields else "the output as a whole"
    if status == "partial":
        message = f"This step's output is partial: {what} failed the contract."
    else:
        message = f"This step's output failed the contract: {what} did not pass."
    if transition_out is not None:
        if transition_out.transition_mode == "fallback":
            message += (
                f" The next step ({transition_out.transition_target_task_id}) used the fallback question instead: "
                f"“{transition_out.hook}”"
            )
        else:
            message += f" Its loop passed, so the next step ({transition_out.transition_target_task_id}) used it."
    elif is_last:
        message += f" The run's next action falls back to: “{FALLBACK_HOOK}”"
    return message


def attempt_call_line(attempt: AttemptRecord) -> str:
    """An attempt's LLM call in one line, its unknown parts left out ("" when none is known).

    Example: ``smollm2 @ 127.0.0.1:8088 · json_object (json_schema refused) · 2,950 ms · 412+96 tokens · stop``.
    The run page and ``marsrag runs show`` both print this line, so they agree.
    """
    who = attempt.model or ""
    if attempt.endpoint:
        who = f"{who} @ {attempt.endpoint}".lstrip()
    mode = attempt.structured_output or ""
    if attempt.structured_output_refused:
        mode = f"{mode} ({', '.join(attempt.structured_output_refused)} refused)".lstrip()
    parts = [part for part in (who, mode) if part]
    if attempt.latency_ms is not None:
        parts.append(f"{attempt.latency_ms:,} ms")
    prompt, completion = attempt.prompt_tokens, attempt.completion_tokens
    if prompt is not None and completion is not None:
        parts.append(f"{prompt:,}+{completion:,} tokens")
    elif prompt is not None:
        parts.append(f"{prompt:,} prompt tokens")
    elif completion is not None:
        parts.append(f"{completion:,} completion tokens")
    if attempt.finish_reason:
        parts.append(attempt.finish_reason)
    return " · ".join(parts)


def _attempt_view(attempt: AttemptRecord) -> AttemptView:
    return AttemptView(
        number=attempt.number,
        kind=_ATTEMPT_KINDS.get(attempt.kind, attempt.kind),
        status=attempt.status,
        problems=tuple(_problem(issue.field, issue.message) for issue in attempt.errors),
        raw=attempt.raw,
        call=attempt_call_line(attempt),
        badge=status_badge(attempt.status),
    )


def _source(task_id: str, ref: str, item: Mapping[str, Any], cited: Mapping[str, Citation]) -> SourceView:
    source = str(item.get("source") or "?")
    path, _, tail = source.partition("#")
    score = item.get("score")
    return SourceView(
        source=source,
        text=str(item.get("text") or ""),
        ref=ref,
        title=path or source,
        heading=str(item.get("heading") or tail),
        score=float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None,
        cited=ref in cited,
        anchor=source_anchor(task_id, ref),
        found_by=found_by(item.get("retrievers")),
    )


def found_by(retrievers: object) -> str:
    """A result's ``retrievers`` (name -> rank) in words, ``keyword #2 · vector #1``; "" for anything else."""
    if not isinstance(retrievers, Mapping):
        return ""
    ranks = [
        f"{name} #{rank}"
        for name, rank in retrievers.items()
        if isinstance(name, str) and isinstance(rank, int) and not isinstance(rank, bool)
    ]
    return " · ".join(ranks)


def _citation_item(citation: Citation) -> dict[str, Any]:
    return {"source": citation.source, "chunk_id": citation.chunk_id}


__all__ = [
    "NEXT_ACTION_HEADING",
    "SECTION_TITLES",
    "AttemptView",
    "NextActionCard",
    "OperatorAction",
    "RunView",
    "SectionCard",
    "SourceView",
    "StatusBadge",
    "SummaryLine",
    "SupportBadge",
    "TaskView",
    "TextPart",
    "TransitionView",
    "attempt_call_line",
    "citation_anchors",
    "cited_parts",
    "next_action_card",
    "operator_action",
    "read_run_view",
    "run_view",
    "section_cards",
    "source_anchor",
    "source_views",
    "status_badge",
    "summary_lines",
    "support_badge",
    "task_view",
    "transition_view",
]
