"""The conformance kit's dropped-connection case: every store method survives its connection dying under it.

A backend that can cut its own connection on demand overrides :meth:`DroppedConnectionConformance.dropping`;
the kit then calls each read and write method of :class:`~marsrag.store.RunStore` (and of the knowledge base it
hands out) once per statement the method runs, the connection cut under that statement (the first try, then
the second...), and checks the method's result and the stored state are as if nothing had happened: nothing
lost, nothing written or counted twice (the rollups still equal a recount of the rows). Backends without the
hook (SQLite: a file, no connection to lose) skip it.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from marsrag.state import TaskProgress
from marsrag.store.base import RunStore
from marsrag.store.conformance.records import T0, event, run, task, transition
from marsrag.store.queries import ChunkText, ChunkVectors, DocumentVersion

__all__ = ["OPERATIONS", "DroppedConnectionConformance", "Operation"]

#: More statements than any store method runs: a method still dropping at this one is a loop, not a method.
_MAX_STATEMENTS = 40
_ids = itertools.count()


@dataclass(frozen=True)
class Operation:
    """A store method to call with its connection cut: ``prepare`` stores what it needs (returning its context),
    ``call`` calls it, ``check`` asserts its result and the stored state (as a clean call leaves them)."""

    name: str
    call: Callable[[RunStore, dict[str, Any]], Any]
    check: Callable[[RunStore, dict[str, Any], Any], None]
    prepare: Callable[[RunStore], dict[str, Any]] | None = None


def _fresh_run(store: RunStore, **changes: Any) -> dict[str, Any]:
    run_id = f"drop-{next(_ids)}"
    record = run(run_id, session_id=f"s-{run_id}", **changes)
    store.create_run(record)
    return {"run_id": run_id, "run": store.get_run(run_id)}


def _with_task(store: RunStore) -> dict[str, Any]:
    context = _fresh_run(store, status="running", owner="host:1")
    store.save_task(task(context["run_id"], "t1"), [event(run_id=context["run_id"])])
    store.save_transition(transition(context["run_id"]))
    context["run"] = store.get_run(context["run_id"])
    return context


def _progress(run_id: str) -> TaskProgress:
    return TaskProgress(run_id=run_id, task_id="t2", position=1, sections={"hook": "x"})


def _with_progress(store: RunStore) -> dict[str, Any]:
    context = _with_task(store)
    store.save_progress(_progress(context["run_id"]))
    return context


def _document(store: RunStore) -> dict[str, Any]:
    path = f"doc-{next(_ids)}.md"
    version = DocumentVersion("drops", path, sha256=path, size=10)
    store.knowledge().replace_document(version, [ChunkText(0, "Zebra", "zebra caches restart")])
    return {"path": path}


#: The embedder the vector operations store as (4 dimensions).
_EMBEDDER = "drops/axes-4"
_ZEBRA = struct.pack("<4f", 1.0, 0.0, 0.0, 0.0)


def _embedded(store: RunStore) -> dict[str, Any]:
    path = f"doc-{next(_ids)}.md"
    version = DocumentVersion("drops", path, sha256=path, size=10)
    vectors = ChunkVectors(_EMBEDDER, 4, [_ZEBRA])
    store.knowledge().replace_document(version, [ChunkText(0, "Zebra", "zebra caches restart")], vectors=vectors)
    return {"path": path}


def _unembedded(store: RunStore) -> dict[str, Any]:
    context = _document(store)
    context["chunks"] = [chunk.chunk_id for chunk in store.knowledge().unembedded(_EMBEDDER, 10_000)]
    return context


def _no_check(_store: RunStore, _context: dict[str, Any], _result: Any) -> None:
    pass


def _events(store: RunStore, run_id: str) -> list[str]:
    return [e.name for e in store.get_events(run_id)]


#: Every method of the RunStore and KnowledgeStore interfaces, with what a clean call leaves.
OPERATIONS: tuple[Operation, ...] = (
    # Writes: each must land exactly once.
    Operation(
        "create_run",
        lambda s, c: s.create_run(run(c["id"], session_id=c["id"]), [event(run_id=c["id"])]),
        lambda s, c, _: _expect(_events(s, c["id"]) == ["loop.contract.validated"], "one event"),
        lambda _s: {"id": f"drop-{next(_ids)}"},
    ),
    Operation(
        "set_run_status",
        lambda s, c: s.set_run_status(c["run_id"], "completed", seen=c["run"], summary="done"),
        lambda s, c, applied: _expect(applied and s.get_run(c["run_id"]).status == "completed", "completed"),
        lambda s: _fresh_run(s, status="running", owner="host:1"),
    ),
    Operation(
        "claim_run",
        lambda s, c: s.claim_run(c["run_id"], "host:2", seen=c["run"]),
        lambda s, c, claim: _expect(bool(claim) and s.get_run(c["run_id"]).owner == "host:2", "claimed"),
        lambda s: _fresh_run(s, status="pending", owner=None),
    ),
    Operation(
        "heartbeat_runs",
        lambda s, c: s.heartbeat_runs([c["run_id"]], "host:1"),
        lambda s, c, beaten: _expect(beaten == {c["run_id"]}, "the run's heartbeat"),
        lambda s: _fresh_run(s, status="running", owner="host:1"),
    ),
    Operation(
        "save_task",
        lambda s, c: s.save_task(task(c["run_id"], "t2", 1), [event(run_id=c["run_id"], task_id="t2")]),
        lambda s, c, _: _expect(
            [t.task_id for t in s.get_tasks(c["run_id"])] == ["t1", "t2"]
            and [len(t.attempts) for t in s.get_tasks(c["run_id"])] == [2, 2]
            and _events(s, c["run_id"]).count("loop.contract.validated") == 2,
            "the task and its event once",
        ),
        _with_task,
    ),
    Operation(
        "save_transition",
        lambda s, c: s.save_transition(transition(c["run_id"], "t1", "t3")),
        lambda s, c, _: _expect(
            [(t.transition_target_task_id, t.superseded) for t in s.get_transitions(c["run_id"])]
            == [("t2", True), ("t3", False)],
            "one new transition",
        ),
        _with_task,
    ),
    Operation(
        "claim_task",
        lambda s, c: s.claim_task(c["run_id"], "t1", "host:3", statuses=("valid", "partial", "failed"), seen=c["run"]),
        lambda _s, _c, claim: _expect(bool(claim), "claimed"),
        _with_task,
    ),
    Operation("release_task", lambda s, c: s.release_task(c["run_id"], "t1", "host:3"), _no_check, _with_task),
    Operation(
        "add_events",
        lambda s, c: s.add_events([event("loop.ui.rendered", run_id=c["run_id"], timestamp=T0 + timedelta(hours=1))]),
        lambda s, c, _: _expect(_events(s, c["run_id"]).count("loop.ui.rendered") == 1, "one event"),
        _with_task,
    ),
    Operation("rebuild_rollups", lambda s, _c: s.rebuild_rollups(), _no_check, _with_task),
    Operation(
        "knowledge.replace_document",
        lambda s, c: s.knowledge().replace_document(
            DocumentVersion("drops", c["path"], sha256="new", size=3), [ChunkText(0, "Okapi", "okapi herds")]
        ),
        lambda s, _c, change: _expect(
            change.outcome in ("updated", "unchanged") and bool(s.knowledge().search_chunks(["okapi"], 5)), "stored"
        ),
        _document,
    ),
    Operation(
        "knowledge.remove_documents",
        lambda s, c: s.knowledge().remove_documents([("drops", c["path"])]),
        lambda s, c, removal: _expect(
            removal.complete
            and [d.path for d in removal.documents] == [c["path"]]
            and ("drops", c["path"]) not in s.knowledge().known_hashes(),
            "removed once",
        ),
        _document,
    ),
    Operation(
        "knowledge.replace_document with vectors",
        lambda s, c: s.knowledge().replace_document(
            DocumentVersion("drops", c["path"], sha256="new", size=3),
            [ChunkText(0, "Okapi", "okapi herds")],
            vectors=ChunkVectors(_EMBEDDER, 4, [_ZEBRA]),
        ),
        lambda s, c, change: _expect(
            change.outcome in ("updated", "unchanged")
            and bool(s.knowledge().document_vectors(("drops", c["path"]), _EMBEDDER)),
            "stored with its vector",
        ),
        _document,
    ),
    Operation(
        "knowledge.set_vectors",
        lambda s, c: s.knowledge().set_vectors(_EMBEDDER, 4, dict.fromkeys(c["chunks"], _ZEBRA)),
        lambda s, c, stored: _expect(
            stored == len(c["chunks"]) and not s.knowledge().unembedded(_EMBEDDER, 10), "every vector once"
        ),
        _unembedded,
    ),
    # Reads: each must answer as a clean read does.
    Operation(
        "knowledge.document_vectors",
        lambda s, c: s.knowledge().document_vectors(("drops", c["path"]), _EMBEDDER),
        lambda _s, _c, r: _expect(r == {("Zebra", "zebra caches restart"): _ZEBRA}, "its vector"),
        _embedded,
    ),
    Operation(
        "knowledge.unembedded",
        lambda s, _c: s.knowledge().unembedded(_EMBEDDER, 10),
        lambda _s, _c, r: _expect(bool(r), "the chunk"),
        _document,
    ),
    Operation(
        "knowledge.embedders",
        lambda s, _c: s.knowledge().embedders(collections=["drops"]),
        lambda _s, _c, r: _expect(_EMBEDDER in r, "the embedder"),
        _embedded,
    ),
    Operation(
        "knowledge.search_vectors",
        lambda s, _c: s.knowledge().search_vectors(_ZEBRA, _EMBEDDER, 5, collections=["drops"]),
        lambda _s, _c, r: _expect(bool(r), "a hit"),
        _embedded,
    ),
    Operation(
        "get_run", lambda s, c: s.get_run(c["run_id"]), lambda _s, c, r: _expect(r == c["run"], "the run"), _with_task
    ),
    Operation(
        "read_run",
        lambda s, c: s.read_run(c["run_id"]),
        lambda _s, _c, r: _expect(len(r[1]) == 1 and len(r[2]) == 1, "a task and a transition"),
        _with_task,
    ),
    Operation(
        "list_runs",
        lambda s, c: s.list_runs(session_id=c["run"].session_id),
        lambda _s, _c, r: _expect(len(r) == 1, "one"),
        _with_task,
    ),
    Operation(
        "get_tasks", lambda s, c: s.get_tasks(c["run_id"]), lambda _s, _c, r: _expect(len(r) == 1, "one"), _with_task
    ),
    Operation(
        "get_transitions",
        lambda s, c: s.get_transitions(c["run_id"]),
        lambda _s, _c, r: _expect(len(r) == 1, "one"),
        _with_task,
    ),
    Operation(
        "get_events", lambda s, c: s.get_events(c["run_id"]), lambda _s, _c, r: _expect(len(r) == 1, "one"), _with_task
    ),
    Operation(
        "resolve_run_id",
        lambda s, c: s.resolve_run_id(c["run_id"]),
        lambda _s, c, r: _expect(r == c["run_id"], "it"),
        _with_task,
    ),
    Operation(
        "short_run_ids",
        lambda s, c: s.short_run_ids([c["run_id"]]),
        lambda _s, c, r: _expect(c["run_id"] in r, "it"),
        _with_task,
    ),
    Operation("loop_counts", lambda s, _c: s.loop_counts(), lambda _s, _c, r: _expect(bool(r), "counts"), _with_task),
    Operation(
        "loop_counts rows",
        lambda s, _c: s.loop_counts(from_rows=True),
        lambda _s, _c, r: _expect(bool(r), "counts"),
        _with_task,
    ),
    Operation("session_depths", lambda s, _c: s.session_depths(), _no_check, _with_task),
    Operation("event_counts", lambda s, _c: s.event_counts(), lambda _s, _c, r: _expect(bool(r), "counts"), _with_task),
    Operation("metric_totals", lambda s, _c: s.metric_totals(), _no_check, _with_task),
    Operation("task_failures", lambda s, _c: s.task_failures(), _no_check, _with_task),
    Operation("unsupported_goals", lambda s, _c: s.unsupported_goals(), _no_check, _with_task),
    Operation("repair_rankings", lambda s, _c: s.repair_rankings(), _no_check, _with_task),
    Operation("fallback_rankings", lambda s, _c: s.fallback_rankings(), _no_check, _with_task),
    Operation("partial_counts", lambda s, _c: s.partial_counts(), _no_check, _with_task),
    Operation(
        "workflow_names", lambda s, _c: s.workflow_names(), lambda _s, _c, r: _expect(bool(r), "names"), _with_task
    ),
    Operation(
        "task_outcomes",
        lambda s, c: s.task_outcomes([c["run_id"]]),
        lambda _s, c, r: _expect(c["run_id"] in r, "it"),
        _with_task,
    ),
    Operation(
        "save_progress",
        lambda s, c: s.save_progress(_progress(c["run_id"])),
        lambda s, c, seq: _expect(
            seq >= 1 and [(p.position, p.sections) for p in s.progress_since(c["run_id"])] == [(1, {"hook": "x"})],
            "one progress row",
        ),
        _with_task,
    ),
    Operation(
        "progress_since",
        lambda s, c: s.progress_since(c["run_id"]),
        lambda _s, _c, r: _expect([p.task_id for p in r] == ["t2"], "the progress"),
        _with_progress,
    ),
    Operation(
        "knowledge.known_hashes",
        lambda s, _c: s.knowledge().known_hashes(),
        lambda _s, c, r: _expect(("drops", c["path"]) in r, "the document"),
        _document,
    ),
    Operation(
        "knowledge.search_chunks",
        lambda s, _c: s.knowledge().search_chunks(["zebra"], 5),
        lambda _s, _c, r: _expect(bool(r), "a hit"),
        _document,
    ),
    Operation(
        "knowledge.search_chunks in collections",
        lambda s, _c: s.knowledge().search_chunks(["zebra"], 5, collections=["drops"]),
        lambda _s, _c, r: _expect(bool(r), "a hit"),
        _document,
    ),
    Operation(
        "knowledge.term_counts in collections",
        lambda s, _c: s.knowledge().term_counts(["zebra"], collections=["drops"]),
        lambda _s, _c, r: _expect(r.chunks >= 1, "its chunks"),
        _document,
    ),
    Operation(
        "knowledge.collections",
        lambda s, _c: s.knowledge().collections(),
        lambda _s, _c, r: _expect("drops" in [c.name for c in r], "the collection"),
        _document,
    ),
    Operation(
        "knowledge.documents",
        lambda s, _c: s.knowledge().documents(collections=["drops"]),
        lambda _s, c, r: _expect(c["path"] in [d.path for d in r], "the document"),
        _document,
    ),
)


def _expect(ok: bool, what: str) -> None:
    assert ok, f"expected {what}"


class DroppedConnectionConformance:
    """What every store must survive: its connection cut under any statement of any method (see the module)."""

    def dropping(self, store: RunStore, at: int) -> AbstractContextManager[list[int]]:
        """Hook: while active, cut the store's connection under its ``at``-th statement from now (1 = the next).

        Yields a list the hook appends ``at`` to once it has cut it (empty when the method ran fewer statements).
        The default skips: a backend without connections to lose has nothing to prove here.
        """
        pytest.skip("this backend cannot drop its connections on demand")

    @pytest.mark.parametrize("operation", OPERATIONS, ids=[operation.name for operation in OPERATIONS])
    def test_a_method_survives_its_connection_dropping_under_each_statement(
        self, store: RunStore, operation: Operation
    ) -> None:
        for at in range(1, _MAX_STATEMENTS + 1):
            context = operation.prepare(store) if operation.prepare else {}
            with self.dropping(store, at) as dropped:
                result = operation.call(store, context)
            operation.check(store, context, result)
            if not dropped:  # the method ran fewer statements than `at`: every one was cut once
                break
        else:
            pytest.fail(f"{operation.name} still ran a statement after {_MAX_STATEMENTS}")
        assert at > 1, f"{operation.name} ran no statement: the test proved nothing"
        # Nothing counted twice: the rollups the writes kept equal a recount of the rows.
        assert store.loop_counts(by=("workflow",)) == store.loop_counts(by=("workflow",), from_rows=True)
        assert store.event_counts() == store.event_counts(from_rows=True)
