"""The offline composer: MarsRAG's embedded default "LLM", which is not a language model.

It is a deterministic ``crewai.BaseLLM`` that writes a valid LoopOutput for each task from what the prompt
gives it: the goal, the hook handed over by the previous step, and the passages retrieved for the step. It
quotes the most relevant evidence, recommends the most action-like sentence it found, cites its sources as
``[path#Heading]``, and asks a next question drawn from a retrieved passage it has not used yet, so each task
of a run answers differently and the chain visibly moves. It exists so the whole system runs and is testable
with no API key and no network; use ``--llm`` with a real model for real answers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from marsrag.integrations.calls import report
from marsrag.llm._local import LocalLLM
from marsrag.tokens import tokens

_HOOK = re.compile(r'open your HOOK with it: "(?P<hook>.+?)"\s*$', re.MULTILINE)
_GOAL = re.compile(r'The user\'s goal: "(?P<goal>.+?)"\s*$', re.MULTILINE)
_SOURCE_LINE = re.compile(r"^\[(?P<source>[^\]\n]+)\] (?P<text>.+)$", re.MULTILINE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
# A recommendation reads as an instruction ("Pre-warm each node...") or says what one should do.
_IMPERATIVES = frozenset(
    "add alert avoid cap check deploy disable drain enable fail keep limit lower move page pin pre-warm prewarm "
    "promote raise reduce restart revert roll rotate route run scale set shed split stagger start stop throttle "
    "use warm".split()
)
_MODAL = re.compile(r"\b(should|must|recommend(?:ed)?|needs? to|make sure)\b", re.IGNORECASE)
_LIMIT = 780


@dataclass(frozen=True)
class _Passage:
    source: str
    text: str


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if len(s.strip()) > 20]


def _clip(text: str, limit: int = _LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _overlap(sentence: str, focus: set[str]) -> int:
    return len(set(tokens(sentence)) & focus)


def _is_action(sentence: str) -> bool:
    first = sentence.split(" ", 1)[0].lower().strip(",.:;\"'")
    return first in _IMPERATIVES or bool(_MODAL.search(sentence))


def _heading(source: str) -> str:
    return source.split("#", 1)[1] if "#" in source else source


class OfflineComposer(LocalLLM):
    """Composes grounded, valid Loop Contract answers offline (deterministic; not an LLM)."""

    model: str = "offline-composer"

    def call(
        self,
        messages: Any,
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: type[Any] | None = None,
    ) -> str:
        """Compose this task's answer as LoopOutput JSON."""
        prompt = messages if isinstance(messages, str) else "\n".join(str(m.get("content", "")) for m in messages)
        task = str(getattr(from_task, "marsrag_task", None) or getattr(from_task, "name", None) or "step")
        answer = json.dumps(compose(prompt, task))
        report(finish_reason="stop")  # it always finishes its answer; it counts no tokens
        return answer


def compose(prompt: str, task: str) -> dict[str, str]:
    """The five sections for one task, from its prompt (goal, handed-over hook, retrieved passages)."""
    goal_match, hook_match = _GOAL.search(prompt), _HOOK.search(prompt)
    goal = goal_match["goal"] if goal_match else "the problem at hand"
    handed = hook_match["hook"] if hook_match else None
    passages = [_Passage(m["source"], m["text"]) for m in _SOURCE_LINE.finditer(prompt)]
    focus = set(tokens(f"{handed or ''} {goal}"))
    hook = handed or f"{goal.rstrip('.?!')}: what is really going on, and what should we do about it?"
    if not passages:
        return {
            "hook": _clip(hook),
            "grip": _clip(
                f"No sources in the knowledge base matched this {task} step, so this answer rests on the "
                f"goal alone: {goal}."
            ),
            "payoff": _clip(
                f"Gather the facts this {task} step needs first: when it started, what changed just "
                "before, and which users or regions are affected."
            ),
            "reinforce": "No sources were found to cite; run `marsrag ingest PATH` to ground the answers.",
            "loop": _clip(f"After the {task} step, which evidence about {goal.rstrip('.?!')} should we collect first?"),
        }
    ranked = sorted(
        ((sentence, passage) for passage in passages for sentence in _sentences(passage.text)),
        key=lambda pair: -_overlap(pair[0], focus),
    ) or [(passages[0].text, passages[0])]
    actions = [pair for pair in ranked if _is_action(pair[0])]
    payoff_sentence, payoff_passage = actions[0] if actions else ranked[min(1, len(ranked) - 1)]
    explanations = [pair for pair in ranked if pair[0] != payoff_sentence and not _is_action(pair[0])]
    grip_sentence, grip_passage = (explanations or [pair for pair in ranked if pair[0] != payoff_sentence] or ranked)[0]
    cited = list(dict.fromkeys(p.source for p in (grip_passage, payoff_passage)))
    unused = [p for p in passages if p.source not in cited]
    support = next((s for s, p in ranked if p.source not in cited), None)
    reinforce = f"This rests on {', '.join(f'[{s}]' for s in cited)}"
    reinforce += f"; [{unused[0].source}] adds: {support}" if unused and support else "."
    if unused:
        loop = f'Next, what does "{_heading(unused[0].source)}" [{unused[0].source}] change for {task}\'s answer?'
    else:
        loop = f"What would confirm that this works before we act on it: {_clip(payoff_sentence, 200).rstrip('.')}?"
    return {
        "hook": _clip(hook),
        "grip": _clip(grip_sentence),
        "payoff": _clip(f"Recommended for the {task} step: {payoff_sentence}"),
        "reinforce": _clip(reinforce),
        "loop": _clip(loop),
    }
