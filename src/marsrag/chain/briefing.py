"""What a task is told besides its config: the goal, the hook handed over, and the sources retrieved.

One wording for the run and for operator actions, so a task re-run by an operator sees what it saw in the
run. The composer LLM reads these exact phrases back (``llm/composer.py``).

Small models use what comes last: the sources come first, then how well they cover the step, what was already
asked and the hook handed over, and the goal last (a contract task's expected output ends with it instead,
:data:`ANSWER_REQUEST`, right before the answer is asked for, so it is said once).

Sources are numbered in retrieval order, ``[1]`` first, each a header line (number, then ``path#Heading``)
and the whole passage below it, indented so that no line of a passage can read as another header; an
end line closes the list. Answers cite a passage by its number (:mod:`marsrag.chain.citations`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from marsrag.state import Support


def briefing(
    goal: str,
    hook: str | None,
    results: Sequence[dict[str, Any]],
    *,
    asked: Sequence[str] = (),
    extra: str | None = None,
    support: Support | None = None,
    goal_line: bool = True,
) -> str:
    """The text appended to a task's description: sources, support, asked, hook (when chained), ``extra``, goal.

    ``asked``: the questions and actions the session already asked (its runs' goals), so that the LOOP offers
    something new; the newest :data:`MAX_ASKED` are listed. ``support``: how well the sources support the step
    (:mod:`marsrag.rag.support`), stated with the rule for its level; None states nothing. ``goal_line``:
    False when the task's expected output already ends with the goal (:func:`asks_goal`).
    """
    parts = []
    if results:
        parts.append(sources(results))
    if support is not None:
        parts.append(support_rule(support))
    # The goal itself is said once, last; listing it as asked too would only repeat it.
    others = [item for item in asked if " ".join(item.split()) != " ".join(goal.split())]
    if others:
        listed = "\n".join(f"- {' '.join(item.split())}" for item in others[-MAX_ASKED:])
        parts.append(f"{ASKED_HEADING}\n{listed}")
    if hook is not None:
        parts.append(f'The previous step handed over this question or action; open your HOOK with it: "{hook}"')
    if extra:
        parts.append(extra)
    if goal_line:
        parts.append(f'{GOAL_PREFIX} "{goal}"')
    return "\n\n".join(parts)


#: Opens the goal's line; the offline composer reads the goal back from it.
GOAL_PREFIX = "The user's goal:"
#: The last words a contract task's expected output says to ask for the answer.
ANSWER_NOW = "Now write the JSON answer for this goal."
#: Ends a contract task's expected output: the goal (``{goal}``, filled in by CrewAI at kickoff), then the request.
ANSWER_REQUEST = f'{GOAL_PREFIX} "{{goal}}"\n{ANSWER_NOW}'


def asks_goal(expected_output: object) -> bool:
    """Whether a task's expected output ends with the goal and the request to answer it (:data:`ANSWER_REQUEST`)."""
    return isinstance(expected_output, str) and ANSWER_NOW in expected_output


SOURCES_HEADING = (
    "Sources for this step. Cite one by its number in brackets, like [1], right after the sentence it supports "
    "(in REINFORCE above all); cite only these numbers:"
)
SOURCES_END = "(end of sources)"
ASKED_HEADING = "Already asked in this session (offer a different next question or action in LOOP):"
MAX_ASKED = 10


#: Opens the support line; the offline composer reads the level (and the words after it) back.
SUPPORT_PREFIX = "How well the sources cover this step:"
#: Words missing from the sources named in the support line, at most.
MAX_MISSING = 4
_SUPPORT_RULES = {
    "strong": "they address it; ground each section in them.",
    "weak": (
        "they only touch it. Say what the closest source does say and that it does not settle the question; "
        "do not present it as the answer."
    ),
    "none": (
        "the knowledge base does not cover it. Say so plainly in GRIP and PAYOFF, recommend nothing from these "
        "sources, and in LOOP ask for the documents that would cover it or offer a nearby question they answer."
    ),
}


def support_rule(support: Support) -> str:
    """The support line: the level, the words the sources lack (for weak and none), and what to do about it."""
    missing = support.missing[:MAX_MISSING] if support.level != "strong" else []
    lacking = f" (nothing on: {', '.join(missing)})" if missing else ""
    return f"{SUPPORT_PREFIX} {support.level}{lacking}; {_SUPPORT_RULES[support.level]}"


def sources(results: Sequence[dict[str, Any]]) -> str:
    """The numbered sources block: ``[N] path#Heading`` then the whole passage, indented; then the end line.

    ``N`` is the passage's run-wide ``ref`` (:mod:`marsrag.chain.numbering`), else its position from 1.
    """
    entries = [passage(item.get("ref") or number, item) for number, item in enumerate(results, start=1)]
    return "\n\n".join([SOURCES_HEADING, *entries, SOURCES_END])


def passage(number: int | str, item: dict[str, Any]) -> str:
    """One numbered source: ``[N] path#Heading``, then the whole passage indented (the knowledge tool's too)."""
    text = "\n".join(f"    {line}" if line.strip() else "" for line in str(item.get("text", "")).strip().splitlines())
    return f"[{number}] {item.get('source', '?')}\n{text}"


def without_placeholders(text: str) -> str:
    """``text`` safe to add before kickoff: CrewAI would read ``{word}`` in it as an input to interpolate."""
    return text.replace("{", "(").replace("}", ")")
