"""Entry points for the CLI and the runner: ingest paths into a database, open the knowledge base for a run.

Importing this module stays cheap; SQLAlchemy loads when a knowledge base is opened.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from marsrag.rag.embedders.base import Embedder
from marsrag.rag.identity import check_collection
from marsrag.rag.knowledge import KnowledgeBase
from marsrag.rag.report import IngestReport
from marsrag.rag.support import SimilarityScale

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["PROGRESS_MIN_FILES", "ingest_paths", "knowledge_base"]

#: A progress bar appears only for ingests of more files than this: small ones finish before it would help.
PROGRESS_MIN_FILES = 20


def ingest_paths(
    paths: Iterable[str | Path],
    *,
    db: str | None = None,
    progress: bool = True,
    collection: str | None = None,
    embedder: Embedder | None = None,
) -> IngestReport:
    """Ingest files and folders into the knowledge base at ``db`` (default: the run store's database).

    The documents go into ``collection``, else each path's default one (see :meth:`KnowledgeBase.ingest`).
    With ``progress``, a bar on stderr (when it is a terminal) follows ingests of more than
    :data:`PROGRESS_MIN_FILES` files.

    Raises:
        InputError: a path does not exist, or ``collection`` cannot name a collection.
        StoreError: a bad URL, or the database cannot be reached, migrated or written.
    """
    if collection is not None:
        check_collection(collection)  # before the database is opened (and maybe created) for nothing
    bar = _ProgressBar() if progress else None
    try:
        with knowledge_base(db, embedder=embedder) as kb:
            return kb.ingest(paths, progress=bar, collection=collection)
    finally:
        if bar is not None:
            bar.close()


@contextmanager
def knowledge_base(
    db: str | None = None, *, embedder: Embedder | None = None, scale: SimilarityScale | None = None
) -> Iterator[KnowledgeBase]:
    """The knowledge base at ``db`` (default: the run store's database), closed on exit: a ``Retriever``.

    ``scale``: the embedder's similarity scale as calibrated by the user (see :class:`KnowledgeBase`).

    Raises:
        StoreError: a bad URL, or a database that cannot be reached or migrated.
    """
    kb = KnowledgeBase.open(db, embedder=embedder, scale=scale)
    try:
        yield kb
    finally:
        kb.close()


class _ProgressBar:
    """A Rich progress bar on stderr, started on the first file of an ingest big enough to need one."""

    def __init__(self) -> None:
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._wanted = True

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            if not self._wanted or total <= PROGRESS_MIN_FILES:
                return
            from rich.console import Console  # lazy: Rich, only when a terminal may show a progress bar
            from rich.progress import Progress  # lazy: Rich

            console = Console(stderr=True)
            # Only people watching a terminal need it; in a pipe or a log it would only add noise.
            self._wanted = console.is_terminal
            if not self._wanted:
                return
            self._bar = Progress(console=console, transient=True)
            self._task = self._bar.add_task("Ingesting", total=total)
            self._bar.start()
        assert self._task is not None
        self._bar.update(self._task, completed=done)

    def close(self) -> None:
        """Stop the bar, if it started."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
