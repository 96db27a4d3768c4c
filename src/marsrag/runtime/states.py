"""A finished CrewAI task's state, as the runner and a Flow step store it: its attempts settled under the contract.

One function for both, so a task of a YAML workflow and a step of a :mod:`marsrag.flows` flow read the same on
the run page, in the metrics and in the UI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from marsrag.chain.numbering import GAP
from marsrag.contract import LOOP_CONTRACT_VERSION, render_sections
from marsrag.integrations.calls import JOURNAL, AttemptCalls
from marsrag.integrations.crewai_builders import BuiltTask
from marsrag.integrations.passages import PASSAGES
from marsrag.runtime.commit import Outcome, settle
from marsrag.runtime.routing import Candidate, Router
from marsrag.state import AttemptRecord, HookSource, LoopFields, Retrieval, TaskState, Validation


def with_found(retrieval: Retrieval | None, task: Any) -> Retrieval | None:
    """``retrieval`` (what the task was briefed with) then the passages its agent's tools found, as they numbered them.

    The runner, a Flow step and an operator action all store a task's retrieval this way, so citations of a
    tool's passages resolve on the run page like the briefing's.
    """
    found = PASSAGES.drain(str(task.id))
    if not found:
        return retrieval
    if retrieval is None:
        return Retrieval(query="", results=_by_ref([], found))
    return retrieval.model_copy(update={"results": _by_ref(retrieval.results, found)})


def _by_ref(results: Sequence[dict[str, Any]], found: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``results`` then ``found``; a found chunk of a source listed already (the same run number) joins its text."""
    merged = [dict(item) for item in results]
    at = {str(item["ref"]): index for index, item in enumerate(merged) if "ref" in item}
    for item in found:
        ref = str(item["ref"]) if "ref" in item else None
        if ref is None or ref not in at:
            if ref is not None:
                at[ref] = len(merged)
            merged.append(dict(item))
            continue
        kept = merged[at[ref]]
        text = str(item.get("text", "")).strip()
        if text and text not in str(kept.get("text", "")):
            kept["text"] = f"{str(kept.get('text', '')).rstrip()}{GAP}{text}"
            kept["chunk_ids"] = [*kept.get("chunk_ids", [kept.get("chunk_id")]), item.get("chunk_id")]
    return merged


def task_state(
    run_id: str,
    position: int,
    item: BuiltTask,
    output: Any,
    *,
    agent: str | None,
    loop_mode: str,
    hook: str | None,
    source: HookSource,
    retrieval: Retrieval | None,
    router: Router,
    candidates: Sequence[Candidate],
    known: Mapping[str, Mapping[str, Any]] | None = None,
) -> TaskState:
    """The state of task ``item`` after CrewAI finished it with ``output``: its attempts, verdict, loop and routing.

    A task with the contract is settled from its guardrail's attempts (:func:`settle`); one without it stores
    its raw output, ``skipped``. ``hook`` and ``source`` are what the task was handed (``goal`` for the first);
    ``loop_mode`` is the run's (a task without the contract is stored under ``none``); ``retrieval`` is what the
    task was briefed with, to which the passages its agent's tools found are added (:func:`with_found`);
    ``known``: the run's sources by number (markers may cite one the task was not given).
    """
    raw = output.raw if isinstance(getattr(output, "raw", None), str) else str(output)
    base = TaskState(
        run_id=run_id,
        task_id=item.config.name,
        position=position,
        agent=agent,
        loop_mode=loop_mode if item.config.narrative else "none",
        hook_source=source,
        retrieval=with_found(retrieval, item.task),
        loop_contract_version=LOOP_CONTRACT_VERSION,
        validation=Validation(status="skipped"),
        # The stored hook of a chained task is the derived one (spec section 3): settle keeps it.
        loop_output=LoopFields(hook=hook),
    )
    if item.guardrail is None or not item.guardrail.attempts:
        calls = AttemptCalls.of(JOURNAL.drain(item.task))
        attempts = [AttemptRecord(number=1, raw=raw, status="skipped", **calls.fields())]
        return base.model_copy(update={"loop_output": LoopFields(), "attempts": attempts, "rendered": raw})
    attempts = [
        attempt.record(attempt.number, "repair" if attempt.is_repair else "answer")
        for attempt in item.guardrail.attempts
    ]
    outcomes = [Outcome.of(attempt.result) for attempt in item.guardrail.attempts]
    base.loop_contract_version = item.task.loop_contract_version or LOOP_CONTRACT_VERSION
    return settle(base, attempts, outcomes, router=router, candidates=candidates, known=known)


#: What a contract task none of whose sections passed hands on: never an empty context (CrewAI takes a run whose
#: every task handed on "" for one without output, and fails it).
NOTHING_HANDED_ON = "(The previous step's answer did not pass the Loop Contract; nothing of it is handed on.)"


def handed_on(state: TaskState) -> str | None:
    """What a task hands the tasks after it as CrewAI's context: its sections that passed, labelled.

    Structure is what chains (spec section 3), so a contract task hands on its contract sections, not the
    model's raw text: a section that failed (an echoed template line, a placeholder, a bare reference) is left
    out, and a task with none that passed hands on :data:`NOTHING_HANDED_ON`. Small models copy what they are
    given: Qwen2.5-Coder-0.5B copied a failed answer handed on raw into the next task's fields (issue 38). None
    for a task without the contract (``skipped``): its raw output is its context.
    """
    if state.validation.status == "skipped":
        return None
    failing = {issue.field for issue in state.validation.errors}
    values = state.loop_output.model_dump()
    return render_sections({name: value for name, value in values.items() if name not in failing}) or NOTHING_HANDED_ON
