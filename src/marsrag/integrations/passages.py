"""The passages each task was shown, numbered as one list: its briefing's first, then those its tools found.

The runner gives a task its retrieved passages as ``[1]``, ``[2]`` ... (:mod:`marsrag.chain.briefing`) and
says so here (:meth:`PassageJournal.given`) before the task runs. An agent tool searching the knowledge base
for that task (:mod:`marsrag.integrations.knowledge_tool`) numbers what it finds after them
(:meth:`PassageJournal.found`): a passage the task was already shown keeps its number, a new one takes the
next. When the task is done the runner drains the new ones (:meth:`PassageJournal.drain`) and stores them
after its own retrieval results, so a marker in the answer names the same passage on the stored task as it
did in the prompt, and citations resolve against both. Passages numbered by the run (``ref``,
:mod:`marsrag.chain.numbering`) keep their numbers, and a passage a tool finds takes its source's number in
the run (``numbering``): a chunk of a section the run was given already is cited as that section.

Tasks are known by CrewAI's task id (``str(task.id)``), the one CrewAI puts in context while a task runs.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

#: Tasks whose passages are kept (oldest forgotten first): a task nobody drains must not grow the journal.
MAX_TASKS: Final = 4096


def passage_key(passage: Mapping[str, Any]) -> tuple[Any, ...]:
    """What makes two hits one passage: the chunk id when there is one, else its source and a digest of its text."""
    chunk = passage.get("chunk_id")
    if chunk is not None:
        return ("chunk", chunk)
    digest = hashlib.sha256(str(passage.get("text", "")).encode("utf-8", "surrogatepass")).hexdigest()
    return ("text", str(passage.get("source", "")), digest)


@dataclass
class _Shown:
    """One task's numbered passages: the numbers of all (by key), the passages tools added after the briefing's.

    The briefing's passages are kept as keys only: the runner has them, and a task that never ends (its LLM
    failed) should hold next to nothing here.
    """

    count: int = 0
    numbers: dict[tuple[Any, ...], int] = field(default_factory=dict)
    added: list[dict[str, Any]] = field(default_factory=list)
    #: The run's numbering of a new passage's source (None: the next number after the task's).
    numbering: Callable[[Mapping[str, Any]], int] | None = None

    @classmethod
    def of(
        cls, given: Sequence[Mapping[str, Any]], numbering: Callable[[Mapping[str, Any]], int] | None = None
    ) -> _Shown:
        """The briefing's passages as it numbers them: by ``ref``, else by position (a repeated one by its first)."""
        shown = cls(numbering=numbering)
        for position, passage in enumerate(given, start=1):
            ref = passage.get("ref")
            number = int(ref) if ref is not None and str(ref).isdigit() else position
            shown.numbers.setdefault(passage_key(passage), number)
            shown.count = max(shown.count, number)
        return shown

    def number(self, passage: Mapping[str, Any]) -> int:
        key = passage_key(passage)
        if key not in self.numbers:
            if self.numbering is not None:
                number = self.numbering(passage)
                self.added.append({**passage, "ref": str(number)})
            else:
                number = self.count + 1
                self.added.append(dict(passage))
            self.count = max(self.count, number)
            self.numbers[key] = number
        return self.numbers[key]


class PassageJournal:
    """The passages shown to each task (by CrewAI task id) until the runner drains the ones tools added."""

    def __init__(self, max_tasks: int = MAX_TASKS) -> None:
        self._tasks: OrderedDict[str, _Shown] = OrderedDict()
        self._max = max_tasks
        self._lock = threading.Lock()

    def _keep(self, task: str, shown: _Shown) -> _Shown:
        self._tasks[task] = shown
        self._tasks.move_to_end(task)
        while len(self._tasks) > self._max:
            self._tasks.popitem(last=False)
        return shown

    def given(
        self,
        task: str,
        passages: Sequence[Mapping[str, Any]],
        numbering: Callable[[Mapping[str, Any]], int] | None = None,
    ) -> None:
        """The passages task ``task``'s briefing numbered (replacing any given before).

        ``numbering``: the run's (:meth:`~marsrag.chain.numbering.SourceNumbers.assign`), which numbers the
        passages its tools find; without it they take the numbers after the task's.
        """
        shown = _Shown.of(passages, numbering)
        with self._lock:
            self._keep(task, shown)

    def found(self, task: str | None, passages: Sequence[Mapping[str, Any]]) -> list[int]:
        """Number passages a tool found for ``task``: a passage shown before keeps its number, a new one the next.

        Without a task (a tool used outside a task CrewAI runs) they are numbered from 1 and not kept.
        """
        if task is None:
            return list(range(1, len(passages) + 1))
        with self._lock:
            shown = self._keep(task, self._tasks.get(task) or _Shown())
            return [shown.number(passage) for passage in passages]

    def drain(self, task: str) -> list[dict[str, Any]]:
        """The passages tools added for ``task`` (after its briefing's), in number order; the task is forgotten."""
        with self._lock:
            shown = self._tasks.pop(task, None)
        return shown.added if shown is not None else []


#: The process's journal.
PASSAGES: Final = PassageJournal()


__all__ = ["MAX_TASKS", "PASSAGES", "PassageJournal", "passage_key"]
