"""One number per source across a run: its tasks, its Summary and every view name a source by the same ``[n]``.

A source is a section of a document: its ``source`` (``path#Heading > Sub``, what citations show). The run's
:class:`SourceNumbers` gives each source the next number the first time any task of the run is given it, and
the same number ever after; a task's passages carry it as ``ref``, the briefing shows it, the answer cites it
and :func:`marsrag.chain.citations.resolve` reads it back. Nothing else is stored: the numbers are rebuilt
from the stored task states (:meth:`SourceNumbers.of`), so a resumed run, an operator action and a Flow's
resumed steps keep them.

A section retrieved as several chunks is one source and one passage: :func:`merge_sections` joins its chunks
(in document order) before the task sees them.

A task stored before this numbering has passages without ``ref``: its markers keep numbering its own passages
by position (:func:`numbered`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from marsrag.state import TaskState

#: Between two chunks of one section that are not next to each other in the document.
GAP: Final = "\n\n…\n\n"


def source_key(item: Mapping[str, Any]) -> str:
    """What makes two passages one source: their document and section, as ``source`` names them."""
    return str(item.get("source") or "")


def numbered(state: TaskState) -> bool:
    """Whether ``state``'s passages carry run-wide numbers (a task stored before them numbers its own)."""
    results = state.retrieval.results if state.retrieval is not None else []
    return any("ref" in item for item in results)


def merge_sections(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``results`` with the chunks of one section joined into one passage, at the rank of its best chunk.

    The joined passage keeps the best chunk's fields and score; its text is its chunks' in document order
    (chunk id order), with :data:`GAP` where chunks between them were not retrieved; ``chunk_ids`` lists them.
    A result without a ``source`` is a passage of its own.
    """
    groups: dict[str, list[Mapping[str, Any]]] = {}
    order: list[str | int] = []
    for position, item in enumerate(results):
        key = source_key(item)
        if not key:
            order.append(position)
            continue
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append(item)
    merged: list[dict[str, Any]] = []
    for entry in order:
        if isinstance(entry, int):
            merged.append(dict(results[entry]))
            continue
        chunks = groups[entry]
        if len(chunks) == 1:
            merged.append(dict(chunks[0]))
            continue
        merged.append(_joined(chunks))
    return merged


def _joined(chunks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    ids = [chunk.get("chunk_id") for chunk in chunks]
    in_order = list(chunks)
    if all(isinstance(chunk_id, int) for chunk_id in ids):
        in_order = sorted(chunks, key=lambda chunk: int(chunk["chunk_id"]))
    text = ""
    previous: Any = None
    for chunk in in_order:
        part = str(chunk.get("text", "")).strip()
        current = chunk.get("chunk_id")
        adjacent = isinstance(previous, int) and isinstance(current, int) and current == previous + 1
        if text and part:
            text += "\n\n" + part if adjacent else GAP + part
        elif part:
            text = part
        previous = current
    best = dict(chunks[0])
    best["text"] = text
    best["chunk_id"] = in_order[0].get("chunk_id")
    best["chunk_ids"] = [chunk.get("chunk_id") for chunk in in_order]
    return best


class SourceNumbers:
    """A run's sources by number: each document section numbered once, the first time a task is given it."""

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}
        self._sources: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()

    @classmethod
    def of(cls, states: Iterable[TaskState]) -> SourceNumbers:
        """The numbers a run's stored tasks hold (rebuilt from their passages' ``ref``), to number on from."""
        numbers = cls()
        for state in sorted(states, key=lambda state: state.position):
            for item in state.retrieval.results if state.retrieval is not None else []:
                ref = item.get("ref")
                if ref is not None and str(ref).isdigit():
                    numbers._keep(source_key(item), int(ref), item)
        return numbers

    def _keep(self, key: str, number: int, item: Mapping[str, Any]) -> None:
        if key:
            self._numbers.setdefault(key, number)
        self._sources.setdefault(number, {"source": item.get("source", ""), "chunk_id": item.get("chunk_id")})

    def assign(self, item: Mapping[str, Any]) -> int:
        """The run's number of ``item``'s source: the one it has, else the next (a passage without source: new)."""
        key = source_key(item)
        with self._lock:
            number = self._numbers.get(key) if key else None
            if number is None:
                number = max(self._sources, default=0) + 1
                self._keep(key, number, item)
            return number

    def number(self, results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """``results`` as a task is given them: sections merged (:func:`merge_sections`), each with its ``ref``."""
        return [{**item, "ref": str(self.assign(item))} for item in merge_sections(results)]

    def sources(self) -> dict[str, dict[str, Any]]:
        """Every source numbered so far, by ref: its ``source`` and first ``chunk_id``."""
        with self._lock:
            return {str(number): dict(item) for number, item in sorted(self._sources.items())}


__all__ = ["GAP", "SourceNumbers", "merge_sections", "numbered", "source_key"]
