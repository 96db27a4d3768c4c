"""Routing on the loop: rank the registered agents, tools and workflows against a task's ``loop``.

The default :class:`LexicalRouter` is deterministic: it scores word overlap between the loop and each
candidate's text (role and goal; tool description; workflow description), weighting rarer words higher
(inverse document frequency within each kind). Any object with a ``route`` method can replace it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from marsrag.state import Routing
from marsrag.tasks.config import ProjectConfig
from marsrag.tokens import tokens

CandidateKind = Literal["agent", "tool", "workflow"]


@dataclass(frozen=True)
class Candidate:
    """Something the loop can route to, with the text it is matched on."""

    kind: CandidateKind
    name: str
    text: str


class Router(Protocol):
    """Chooses the next agent, tool and workflow for a loop."""

    def route(self, loop: str, candidates: Sequence[Candidate]) -> Routing: ...


class LexicalRouter:
    """Deterministic lexical scoring; ties go to the candidate registered first; no overlap, no route."""

    def __init__(self) -> None:
        # Candidate texts are tokenized and weighted once per candidate list, not once per routed loop.
        self._indexes: dict[tuple[Candidate, ...], list[tuple[Candidate, dict[str, float]]]] = {}

    def _index(self, candidates: Sequence[Candidate]) -> list[tuple[Candidate, dict[str, float]]]:
        key = tuple(candidates)
        index = self._indexes.get(key)
        if index is None:
            index = []
            for kind in ("agent", "tool", "workflow"):
                group = [candidate for candidate in candidates if candidate.kind == kind]
                documents = [set(tokens(candidate.text)) for candidate in group]
                frequency = Counter(word for document in documents for word in document)
                for candidate, document in zip(group, documents, strict=True):
                    index.append((candidate, {word: math.log(1 + len(group) / frequency[word]) for word in document}))
            self._indexes[key] = index
        return index

    def scores(self, loop: str, candidates: Sequence[Candidate]) -> list[tuple[Candidate, float]]:
        """Every candidate with its score, grouped by kind, in registration order within a kind."""
        query = Counter(tokens(loop))
        return [
            (candidate, sum(count * weights[word] for word, count in query.items() if word in weights))
            for candidate, weights in self._index(candidates)
        ]

    def route(self, loop: str, candidates: Sequence[Candidate]) -> Routing:
        """The best-scoring candidate of each kind."""
        best: dict[str, tuple[float, str]] = {}
        for candidate, score in self.scores(loop, candidates):
            if score > 0 and (candidate.kind not in best or score > best[candidate.kind][0]):
                best[candidate.kind] = (score, candidate.name)
        return Routing(
            next_agent=best["agent"][1] if "agent" in best else None,
            next_tool=best["tool"][1] if "tool" in best else None,
            next_workflow=best["workflow"][1] if "workflow" in best else None,
        )


def candidates_of(
    agents: Iterable[tuple[str, str]], tools: Iterable[tuple[str, str]], workflows: Iterable[tuple[str, str]]
) -> list[Candidate]:
    """Candidates from ``(name, text)`` pairs of each kind."""
    return (
        [Candidate("agent", name, text) for name, text in agents]
        + [Candidate("tool", name, text) for name, text in tools]
        + [Candidate("workflow", name, text) for name, text in workflows]
    )


def project_candidates(project: ProjectConfig) -> list[Candidate]:
    """The registered agents (role, goal), tools (tools.yaml, and tool names agents list) and workflows."""
    tools = {name: f"{name.replace('_', ' ')} {tool.description}" for name, tool in project.tools.items()}
    for agent in project.agents.values():
        for name in agent.tools:
            tools.setdefault(name, name.replace("_", " "))
    return candidates_of(
        ((name, f"{agent.role} {agent.goal}") for name, agent in project.agents.items()),
        tools.items(),
        ((name, f"{name.replace('_', ' ')} {workflow.description}") for name, workflow in project.workflows.items()),
    )
