"""The RunStore conformance suite as a base class: subclass it, give it a ``store`` fixture, and pytest runs it.

Every test takes a fresh, empty, open store from the subclass's ``store`` fixture and uses only the
:class:`marsrag.store.RunStore` interface (and the :class:`marsrag.store.KnowledgeStore` it hands out), so any
implementation can run it. Hooks let a backend add checks of its own storage without the kit knowing it:
:meth:`RunStoreConformance.check_attempt_rows` (the SQL backends count the ``attempts`` rows).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, date, timedelta
from typing import Any

import pytest

from marsrag.errors import AlreadyFollowedError, AmbiguousRunIdError, HolderLostError, RunNotFoundError, StoreError
from marsrag.liveness import EXECUTOR_SILENT_AFTER, is_stale, owner_id
from marsrag.state import LoopEvent, LoopFields, Retrieval, Routing, TaskProgress, Validation
from marsrag.store.base import LEGACY_COLLECTION, RunStore
from marsrag.store.conformance.drops import DroppedConnectionConformance
from marsrag.store.conformance.knowledge import KnowledgeConformance
from marsrag.store.conformance.records import CALL, T0, attempt, aware_utc, bare_task, event, run, task, transition
from marsrag.store.conformance.vectors import VectorConformance
from marsrag.store.queries import (
    ChunkText,
    DocumentChange,
    DocumentVersion,
    Holder,
    LoopCounts,
    OutcomeCount,
    TaskFailure,
)

__all__ = ["RunStoreConformance", "in_threads"]


def in_threads(count: int, work: Callable[[int], None]) -> list[BaseException]:
    """Run ``work(i)`` for i in range(count) in that many threads started together; the errors raised."""
    barrier, errors = threading.Barrier(count), []

    def body(index: int) -> None:
        barrier.wait()
        try:
            work(index)
        except BaseException as error:  # noqa: B036 - reported to the test, which fails on any
            errors.append(error)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def dead_pid() -> int:
    """The pid of a process that has exited (a claim or run held by it is abandoned)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


class RunStoreConformance(DroppedConnectionConformance, KnowledgeConformance, VectorConformance):
    """What every :class:`RunStore` must do. Subclass it (named ``Test...``) and override :meth:`store`.

    Example::

        class TestMyStore(RunStoreConformance):
            @pytest.fixture
            def store(self, tmp_path: Path) -> Iterator[RunStore]:
                with MyStore(tmp_path) as opened:
                    yield opened
    """

    @pytest.fixture
    def store(self) -> Iterator[RunStore]:
        """A fresh, empty, open store (closed afterwards): the subclass provides it."""
        raise NotImplementedError("override the store fixture: yield a fresh, empty, open RunStore")
        yield  # pragma: no cover - makes this a generator fixture like the overrides

    def check_attempt_rows(self, store: RunStore, expected: int) -> None:
        """Hook: check that the backend keeps exactly ``expected`` attempts in all (nothing to check by default)."""

    # Runs

    def test_create_and_get_run_round_trips_every_field(self, store: RunStore) -> None:
        """A created run reads back equal, field for field."""
        created = run(status_reason="queued behind run-0", summary="nothing yet", experiment="e", arm="soft")
        store.create_run(created)
        assert store.get_run("run-1") == created

    def test_creating_a_run_twice_raises_store_error(self, store: RunStore) -> None:
        """A second run with the same id is refused, naming the run."""
        store.create_run(run())
        with pytest.raises(StoreError, match="run-1"):
            store.create_run(run(goal="another"))
        assert store.get_run("run-1").goal == run().goal

    def test_a_unique_prefix_resolves_to_its_run(self, store: RunStore) -> None:
        """A whole id or a unique prefix gives the run's id; an ambiguous or unknown one is refused, named."""
        for run_id in ("3f2a9c01aa", "3f2a9c02bb", "3f2a9d", "a%_b"):
            store.create_run(run(run_id))
        assert store.resolve_run_id("3f2a9c01aa") == "3f2a9c01aa"
        assert store.resolve_run_id("3f2a9c01") == "3f2a9c01aa"
        assert store.resolve_run_id("3f2a9d") == "3f2a9d"
        assert store.resolve_run_id("a%") == "a%_b"  # wildcards in a prefix are characters
        with pytest.raises(AmbiguousRunIdError, match=r"'3f2a9c'.*3f2a9c01aa, 3f2a9c02bb"):
            store.resolve_run_id("3f2a9c")
        for unknown in ("3F2A9C01", "%", "_f2a", "3f2a9c01aa0", ""):  # exact case, no wildcard, no longer id
            with pytest.raises(RunNotFoundError, match="no run") as caught:
                store.resolve_run_id(unknown)
            assert not isinstance(caught.value, AmbiguousRunIdError)

    def test_short_run_ids_are_the_shortest_unique_prefixes(self, store: RunStore) -> None:
        """At least ``min_length`` characters, longer only as far as another stored run shares the prefix."""
        for run_id in ("3f2a9c01aa77", "3f2a9c01ab00", "3f2a9c02bb00", "ffff0000"):
            store.create_run(run(run_id))
        # The rival of the first is not among those asked about: every stored run counts.
        assert store.short_run_ids(["3f2a9c01aa77", "3f2a9c02bb00", "ffff0000"], min_length=6) == {
            "3f2a9c01aa77": "3f2a9c01aa",
            "3f2a9c02bb00": "3f2a9c02",
            "ffff0000": "ffff00",
        }
        assert store.short_run_ids([]) == {}
        assert store.short_run_ids(["ffff0000"]) == {"ffff0000": "ffff0000"}

    def test_list_runs_returns_newest_first(self, store: RunStore) -> None:
        """Runs list by creation time, newest first, whatever the insertion order; limit keeps the newest."""
        for run_id, minutes in (("b", 5), ("a", 1), ("c", 9)):
            store.create_run(run(run_id, created_at=T0 + timedelta(minutes=minutes)))
        assert [r.run_id for r in store.list_runs()] == ["c", "b", "a"]
        assert [r.run_id for r in store.list_runs(limit=2)] == ["c", "b"]
        assert store.list_runs(limit=0) == []

    def test_list_runs_pages_with_an_offset(self, store: RunStore) -> None:
        """offset skips the newest runs; with limit it gives one page; past the end it gives none."""
        for run_id, minutes in (("b", 5), ("a", 1), ("c", 9), ("d", 12)):
            store.create_run(run(run_id, created_at=T0 + timedelta(minutes=minutes)))
        assert [r.run_id for r in store.list_runs(offset=1)] == ["c", "b", "a"]
        assert [r.run_id for r in store.list_runs(limit=2, offset=1)] == ["c", "b"]
        assert [r.run_id for r in store.list_runs(limit=2, offset=2)] == ["b", "a"]
        assert store.list_runs(offset=4) == []
        with pytest.raises(ValueError, match="offset"):
            store.list_runs(offset=-1)

    def test_list_runs_filters_by_session(self, store: RunStore) -> None:
        """Only the named session's runs are listed, still newest first."""
        store.create_run(run("a1", session_id="a", created_at=T0))
        store.create_run(run("b1", session_id="b", created_at=T0 + timedelta(seconds=1)))
        store.create_run(run("a2", session_id="a", created_at=T0 + timedelta(seconds=2)))
        assert [r.run_id for r in store.list_runs(session_id="a")] == ["a2", "a1"]
        assert [r.run_id for r in store.list_runs(session_id="b")] == ["b1"]
        assert store.list_runs(session_id="nobody") == []

    def test_list_runs_filters_by_status(self, store: RunStore) -> None:
        """Only runs in the given statuses are listed (how a starting server finds runs left unfinished)."""
        for run_id, minutes in (("p", 1), ("r", 2), ("c", 3)):
            store.create_run(run(run_id, created_at=T0 + timedelta(minutes=minutes)))
        store.set_run_status("r", "running", owner="host:1")
        store.set_run_status("c", "completed", summary="done")
        assert [r.run_id for r in store.list_runs(statuses=("pending", "running"))] == ["r", "p"]
        assert [r.run_id for r in store.list_runs(statuses=("completed",))] == ["c"]
        assert store.list_runs(statuses=()) == []

    def test_list_runs_refuses_a_negative_limit(self, store: RunStore) -> None:
        """A negative limit is a caller error, not 'no limit' (the backends disagree on its meaning)."""
        with pytest.raises(ValueError, match="limit"):
            store.list_runs(limit=-1)

    def test_set_run_status_updates_status_reason_summary_and_updated_at(self, store: RunStore) -> None:
        """Status, reason and summary change; updated_at moves forward; created_at stays."""
        store.create_run(run())
        store.set_run_status("run-1", "failed", reason="task t2 failed twice", summary="Two of three tasks valid.")
        stored = store.get_run("run-1")
        assert (stored.status, stored.status_reason, stored.summary) == (
            "failed",
            "task t2 failed twice",
            "Two of three tasks valid.",
        )
        assert stored.created_at == T0
        assert stored.updated_at > T0

    def test_set_run_status_keeps_reason_and_summary_when_not_given(self, store: RunStore) -> None:
        """Only the given fields change; ``completed`` alone clears the reason (no stale failure on a finished run)."""
        store.create_run(run(status_reason="waiting", summary="half done"))
        store.set_run_status("run-1", "pending")
        stored = store.get_run("run-1")
        assert (stored.status, stored.status_reason, stored.summary) == ("pending", "waiting", "half done")
        store.set_run_status("run-1", "completed")
        stored = store.get_run("run-1")
        assert (stored.status, stored.status_reason, stored.summary) == ("completed", None, "half done")

    def test_unknown_run_raises_run_not_found(self, store: RunStore) -> None:
        """Reading, updating or adding state to a missing run raises RunNotFoundError naming it."""
        with pytest.raises(RunNotFoundError, match="nope"):
            store.get_run("nope")
        with pytest.raises(RunNotFoundError, match="nope"):
            store.set_run_status("nope", "completed")
        with pytest.raises(RunNotFoundError, match="nope"):
            store.save_task(task("nope"))
        with pytest.raises(RunNotFoundError, match="nope"):
            store.save_transition(transition("nope"))

    def test_unknown_run_has_no_tasks_transitions_or_events(self, store: RunStore) -> None:
        """Listing a missing run's children gives empty lists."""
        assert store.get_tasks("nope") == []
        assert store.get_transitions("nope") == []
        assert store.get_events("nope") == []

    # Task states

    def test_save_task_round_trips_every_field(self, store: RunStore) -> None:
        """A task state reads back equal: loop fields, rendered text, attempts, routing, retrieval, errors."""
        store.create_run(run())
        saved = task()
        store.save_task(saved)
        (loaded,) = store.get_tasks("run-1")
        assert loaded == saved

    def test_task_with_empty_fields_and_no_retrieval_round_trips(self, store: RunStore) -> None:
        """None loop fields, no routing, no retrieval, no attempts and no agent come back as they went in."""
        store.create_run(run())
        bare = bare_task()
        store.save_task(bare)
        assert store.get_tasks("run-1") == [bare]

    def test_retrieval_with_no_results_stays_distinct_from_no_retrieval(self, store: RunStore) -> None:
        """A retrieval that found nothing is still a retrieval."""
        store.create_run(run())
        store.save_task(task(retrieval=Retrieval(query="nothing matches")))
        (loaded,) = store.get_tasks("run-1")
        assert loaded.retrieval == Retrieval(query="nothing matches", results=[])

    def test_tasks_come_back_in_workflow_order(self, store: RunStore) -> None:
        """get_tasks orders by position, not by insertion or id."""
        store.create_run(run())
        for task_id, position in (("z", 1), ("y", 2), ("x", 0)):
            store.save_task(task(task_id=task_id, position=position))
        assert [t.task_id for t in store.get_tasks("run-1")] == ["x", "z", "y"]

    def test_attempts_come_back_in_number_order(self, store: RunStore) -> None:
        """Attempts read back ordered by number, each with its own raw text, status and errors."""
        store.create_run(run())
        store.save_task(task(attempts=[attempt(2, minutes=5), attempt(1, status="failed")]))
        (loaded,) = store.get_tasks("run-1")
        assert loaded.attempts == [attempt(1, status="failed"), attempt(2, minutes=5)]

    def test_tasks_of_other_runs_stay_apart(self, store: RunStore) -> None:
        """Tasks with the same id in two runs are two records."""
        store.create_run(run("r1"))
        store.create_run(run("r2"))
        store.save_task(task("r1", rendered="one"))
        store.save_task(task("r2", rendered="two", attempts=[attempt(1)]))
        assert [t.rendered for t in store.get_tasks("r1")] == ["one"]
        assert [len(t.attempts) for t in store.get_tasks("r2")] == [1]

    def test_save_task_replaces_the_task_and_its_attempts(self, store: RunStore) -> None:
        """Saving the same (run, task) again replaces its row and all its attempts; events accumulate."""
        store.create_run(run())
        store.save_task(task(), [event()])
        replacement = task(
            loop_output=LoopFields(hook="New hook"), attempts=[attempt(1, minutes=9)], rendered="new", position=3
        )
        store.save_task(replacement, [event("loop.contract.failed", validation_status="failed")])
        assert store.get_tasks("run-1") == [replacement]
        self.check_attempt_rows(store, 1)
        assert [e.name for e in store.get_events("run-1")] == ["loop.contract.validated", "loop.contract.failed"]

    # Transitions and events

    def test_transitions_come_back_in_order_with_superseded_marked(self, store: RunStore) -> None:
        """Transitions read back in insertion order, every field intact, superseded ones included."""
        store.create_run(run())
        saved = [
            transition(source="t1", target="t2", superseded=True),
            transition(source="t1", target="t2", transition_mode="repair", transition_reason="loop repaired"),
            transition(source="t2", target="t3", transition_mode="fallback", hook="What is the next step?"),
        ]
        for item in saved:
            store.save_transition(item)
        assert store.get_transitions("run-1") == saved
        assert [t.superseded for t in store.get_transitions("run-1")] == [True, False, False]

    def test_read_run_is_the_run_its_tasks_and_transitions_in_one_read(self, store: RunStore) -> None:
        """read_run returns what get_run, get_tasks and get_transitions return; an unknown id raises."""
        store.create_run(run())
        store.save_task(task(), [event()], transition=transition())
        store.save_task(task(task_id="t2", position=1))
        assert store.read_run("run-1") == (
            store.get_run("run-1"),
            store.get_tasks("run-1"),
            store.get_transitions("run-1"),
        )
        with pytest.raises(RunNotFoundError):
            store.read_run("nope")

    def test_claim_task_lets_one_owner_in_until_released_or_saved(self, store: RunStore) -> None:
        """One claim at a time, only on the given statuses; release by its owner only; saving the task frees it."""
        store.create_run(run(status="failed"))
        store.save_task(task())  # status partial
        seen = store.get_run("run-1")
        refused = store.claim_task("run-1", "t1", "a", statuses=("failed",), seen=seen)
        assert (refused.ok, refused.refusal) == (False, "status")
        assert store.claim_task("run-1", "t1", "a", statuses=("partial", "failed"), seen=seen)
        busy = store.claim_task("run-1", "t1", "b", statuses=("partial", "failed"), seen=seen)
        assert (busy.ok, busy.refusal, busy.holder) == (False, "busy", "a")
        store.release_task("run-1", "t1", "b")  # not b's: stays a's
        assert not store.claim_task("run-1", "t1", "b", statuses=("partial", "failed"), seen=seen)
        store.release_task("run-1", "t1", "a")
        assert store.claim_task("run-1", "t1", "b", statuses=("partial", "failed"), seen=seen)
        store.save_task(task())  # the action's commit replaces the row: the claim goes with it
        assert store.claim_task("run-1", "t1", "c", statuses=("partial", "failed"), seen=seen)
        assert store.claim_task("run-1", "nope", "c", statuses=("partial",), seen=seen).refusal == "missing"

    def test_claim_task_is_refused_once_the_run_changed(self, store: RunStore) -> None:
        """A claim made on a stale read of the run (a resume took it since) is refused as ``changed``."""
        store.create_run(run(status="failed"))
        store.save_task(task())
        seen = store.get_run("run-1")
        assert store.claim_run("run-1", "host:1", seen=seen)
        refused = store.claim_task("run-1", "t1", "a", statuses=("partial",), seen=seen)
        assert (refused.ok, refused.refusal, refused.holder) == (False, "changed", "host:1")

    def test_claim_run_is_refused_while_an_action_holds_a_task(self, store: RunStore) -> None:
        """Resume and recovery respect an operator action's claim: ``busy``, naming the task and its holder."""
        store.create_run(run(status="failed"))
        store.save_task(task())
        seen = store.get_run("run-1")
        holder = f"{owner_id()}:action"
        assert store.claim_task("run-1", "t1", holder, statuses=("partial",), seen=seen)
        refused = store.claim_run("run-1", "host:1", seen=seen)
        assert (refused.ok, refused.refusal, refused.task_id, refused.holder) == (False, "busy", "t1", holder)
        store.release_task("run-1", "t1", holder)
        assert store.claim_run("run-1", "host:1", seen=seen)

    def test_a_claim_whose_holder_died_is_taken_over(self, store: RunStore) -> None:
        """A claim held by a dead process on this host frees its task at once, for actions and resume alike."""
        store.create_run(run(status="failed"))
        store.save_task(task())
        seen = store.get_run("run-1")
        dead = f"{socket.gethostname()}:{dead_pid()}:action"
        assert store.claim_task("run-1", "t1", dead, statuses=("partial",), seen=seen)
        assert store.claim_task("run-1", "t1", f"{owner_id()}:next", statuses=("partial",), seen=seen)
        store.release_task("run-1", "t1", f"{owner_id()}:next")
        assert store.claim_task("run-1", "t1", dead, statuses=("partial",), seen=seen)
        assert store.claim_run("run-1", "host:1", seen=seen)

    def test_a_claim_gives_a_run_its_trace_only_when_it_has_none(self, store: RunStore) -> None:
        """The first traced execution's context stays the run's: a later claim (a resume) does not replace it."""
        first = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        later = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        store.create_run(run())
        assert store.claim_run("run-1", "host:1", seen=store.get_run("run-1"), trace=first)
        assert store.get_run("run-1").trace == first
        store.set_run_status("run-1", "failed", seen=store.get_run("run-1"), reason="boom")
        assert store.claim_run("run-1", "host:2", seen=store.get_run("run-1"), trace=later)
        assert store.get_run("run-1").trace == first
        store.create_run(run("run-2", trace=later))
        assert store.claim_run("run-2", "host:1", seen=store.get_run("run-2"))  # no trace given: kept
        assert store.get_run("run-2").trace == later

    def test_claim_run_lets_exactly_one_of_the_racers_in(self, store: RunStore) -> None:
        """claim_run compare-and-sets (status, owner): the first caller wins, a later one with that view loses."""
        store.create_run(run())
        seen = store.get_run("run-1")
        assert store.claim_run("run-1", "host:1", seen=seen)
        assert not store.claim_run("run-1", "host:2", seen=seen)  # read the same pending run: lost the race
        taken = store.get_run("run-1")
        assert (taken.status, taken.owner) == ("running", "host:1")
        # An abandoned running run is taken over from its last owner, once.
        assert store.claim_run("run-1", "host:3", seen=taken)
        assert not store.claim_run("run-1", "host:4", seen=taken)
        assert store.get_run("run-1").owner == "host:3"
        assert store.claim_run("nope", "host:5", seen=taken).refusal == "missing"

    def test_a_heartbeat_bumps_only_the_runs_running_under_its_owner(self, store: RunStore) -> None:
        """heartbeat_runs moves ``updated_at`` of the given runs held by the owner, and changes nothing else."""
        for run_id, status, owner in [
            ("mine-1", "running", "host:1"),
            ("mine-2", "running", "host:1"),
            ("theirs", "running", "host:2"),
            ("handed-back", "pending", "host:1"),
            ("done", "completed", "host:1"),
        ]:
            store.create_run(run(run_id, status=status, owner=owner, status_reason="kept", summary="kept"))
        before = {r.run_id: r for r in store.list_runs()}
        given = ["mine-1", "mine-2", "theirs", "handed-back", "done", "unknown", "mine-1"]
        assert store.heartbeat_runs(given, "host:1") == {"mine-1", "mine-2"}
        after = {r.run_id: r for r in store.list_runs()}
        for run_id, record in after.items():
            beaten = run_id in ("mine-1", "mine-2")
            assert (record.updated_at > T0) is beaten, run_id
            # Status, owner, reason, summary and every other field stay as they were.
            assert record.model_dump(exclude={"updated_at"}) == before[run_id].model_dump(exclude={"updated_at"})
        assert store.heartbeat_runs([], "host:1") == set()
        # A heartbeat is a sign of life: the run's executor, silent elsewhere for minutes, is alive again.
        assert not is_stale(after["mine-1"], now=after["mine-1"].updated_at + timedelta(seconds=1))
        assert is_stale(after["mine-1"], now=after["mine-1"].updated_at + EXECUTOR_SILENT_AFTER * 2)

    def test_a_heartbeat_keeps_nothing_of_a_run_taken_over(self, store: RunStore) -> None:
        """After a takeover the old executor's beat changes nothing: the new holder's liveness is its own."""
        store.create_run(run(status="pending", owner=None))
        assert store.claim_run("run-1", "host:1", seen=store.get_run("run-1"))
        assert store.set_run_status("run-1", "pending", owner="host:9", seen=store.get_run("run-1"))  # handed back
        handed = store.get_run("run-1")
        assert store.heartbeat_runs(["run-1"], "host:1") == set()
        assert store.get_run("run-1") == handed
        assert store.claim_run("run-1", "host:2", seen=handed)
        assert store.heartbeat_runs(["run-1"], "host:2") == {"run-1"}
        assert store.get_run("run-1").owner == "host:2"

    def test_set_run_status_with_seen_is_a_compare_and_set(self, store: RunStore) -> None:
        """A writer that read the run before another wrote it changes nothing (no lost update)."""
        store.create_run(run(status="failed", status_reason="task t1 failed"))
        read_by_action = store.get_run("run-1")
        assert store.claim_run("run-1", "host:1", seen=read_by_action)  # a resume takes the run
        running = store.get_run("run-1")
        assert store.set_run_status("run-1", "completed", summary="3 of 3 valid", seen=running)
        assert not store.set_run_status("run-1", "failed", summary="stale", seen=read_by_action)
        stored = store.get_run("run-1")
        assert (stored.status, stored.status_reason, stored.summary) == ("completed", None, "3 of 3 valid")
        with pytest.raises(RunNotFoundError):
            store.set_run_status("nope", "completed", seen=running)

    # -- progress ----------------------------------------------------------------------------------------------

    def test_progress_round_trips_and_is_replaced_per_task_position(self, store: RunStore) -> None:
        """Each write gets the run's next number; a position's row is replaced; a reader asks after a number."""
        store.create_run(run())
        started = T0 + timedelta(seconds=1)
        first = TaskProgress(
            run_id="run-1", task_id="t1", position=0, call=2, sections={"hook": "Checkout is sl"}, writing="hook",
            chunks=4, chars=14, started_at=started, updated_at=started + timedelta(seconds=1),
        )  # fmt: skip
        assert store.save_progress(first) == 1
        [back] = store.progress_since("run-1")
        assert back == first.model_copy(update={"seq": 1})
        assert aware_utc(back.started_at) and aware_utc(back.updated_at)
        grown = first.model_copy(update={"sections": {"hook": "Checkout is slow.", "grip": "C"}, "writing": "grip"})
        assert store.save_progress(grown) == 2
        assert store.save_progress(TaskProgress(run_id="run-1", task_id="t2", position=1)) == 3
        assert [(p.position, p.seq) for p in store.progress_since("run-1")] == [(0, 2), (1, 3)]
        assert [p.sections for p in store.progress_since("run-1", 2)] == [{}]
        assert store.progress_since("run-1", 3) == []

    def test_progress_of_runs_stays_apart_and_needs_its_run(self, store: RunStore) -> None:
        """Numbers are per run; a write for a run that does not exist stores nothing; no run, no progress."""
        store.create_run(run("run-1", session_id="s-1"))
        store.create_run(run("run-2", session_id="s-2"))
        assert store.save_progress(TaskProgress(run_id="run-1", task_id="t1", position=0)) == 1
        assert store.save_progress(TaskProgress(run_id="run-2", task_id="t1", position=0)) == 1
        assert store.save_progress(TaskProgress(run_id="nope", task_id="t1", position=0)) == 0
        assert store.progress_since("nope") == []
        assert [p.run_id for p in store.progress_since("run-2")] == ["run-2"]

    def test_progress_text_that_cannot_be_encoded_is_stored_readable(self, store: RunStore) -> None:
        """Model output is any text: a lone surrogate or a NUL in a streamed section never breaks a later read."""
        store.create_run(run())
        store.save_progress(TaskProgress(run_id="run-1", task_id="t1", position=0, sections={"hook": "a\ud800b\x00c"}))
        [back] = store.progress_since("run-1")
        back.sections["hook"].encode("utf-8")
        assert "\x00" not in back.sections["hook"]

    def test_a_save_by_a_holder_that_lost_the_run_writes_nothing(self, store: RunStore) -> None:
        """An executor whose run was taken over (found stale) cannot overwrite the new executor's tasks."""
        store.create_run(run())
        assert store.claim_run("run-1", "host:1", seen=store.get_run("run-1"))
        store.save_task(task(), holder=Holder(run_owner="host:1"))
        assert store.claim_run("run-1", "host:2", seen=store.get_run("run-1"))  # taken over
        with pytest.raises(HolderLostError, match="run-1"):
            store.save_task(task(loop_output=LoopFields(hook="late")), holder=Holder(run_owner="host:1"))
        with pytest.raises(HolderLostError):
            store.save_transition(transition(), holder=Holder(run_owner="host:1"))
        assert store.get_tasks("run-1")[0].loop_output.hook != "late"
        assert store.get_transitions("run-1") == []

    def test_a_save_by_an_action_that_lost_its_claim_writes_nothing(self, store: RunStore) -> None:
        """An action's commit lands only while its claim holds the task."""
        store.create_run(run(status="failed"))
        store.save_task(task())
        seen = store.get_run("run-1")
        assert store.claim_task("run-1", "t1", "a", statuses=("partial",), seen=seen)
        store.save_task(task(loop_output=LoopFields(hook="by a")), holder=Holder(task_claim="a"))
        with pytest.raises(HolderLostError, match="t1"):
            store.save_task(task(loop_output=LoopFields(hook="by a again")), holder=Holder(task_claim="a"))
        assert store.get_tasks("run-1")[0].loop_output.hook == "by a"

    def test_a_run_is_followed_at_most_once(self, store: RunStore) -> None:
        """Racing follows of one run store one run and its event; the others learn which run it is."""
        store.create_run(run(status="completed"))
        stored: list[str] = []
        refused: list[str] = []

        def follow(index: int) -> None:
            follower = run(f"next-{index}", followed_from="run-1")
            try:
                store.create_run(follower, [event(run_id="run-1", name="loop.action.followed")])
                stored.append(follower.run_id)
            except AlreadyFollowedError as error:
                refused.append(error.run_id)

        assert in_threads(8, follow) == []
        assert len(stored) == 1
        assert refused == stored * 7
        assert [e.name for e in store.get_events("run-1")] == ["loop.action.followed"]
        assert store.get_run(stored[0]).followed_from == "run-1"
        store.create_run(run("unrelated"))  # runs that follow nothing are not constrained
        store.create_run(run("another"))

    def test_racing_claims_from_threads_let_exactly_one_in(self, store: RunStore) -> None:
        """Eight threads claim the same task at once: exactly one succeeds."""
        store.create_run(run())
        store.save_task(task())
        won: list[int] = []
        seen = store.get_run("run-1")

        def claim(index: int) -> None:
            if store.claim_task("run-1", "t1", f"owner-{index}", statuses=("partial",), seen=seen):
                won.append(index)

        assert in_threads(8, claim) == []
        assert len(won) == 1

    def test_a_new_transition_supersedes_the_current_one_from_its_source(self, store: RunStore) -> None:
        """A task has one current outgoing transition: storing another marks the earlier row superseded, kept."""
        store.create_run(run())
        store.save_transition(transition(source="t1", target="t2", transition_mode="fallback"))
        store.save_transition(transition(source="t2", target="t3"))
        store.save_task(task(), transition=transition(source="t1", target="t2", transition_mode="repair"))
        stored = store.get_transitions("run-1")
        assert [(t.transition_source_task_id, t.transition_mode, t.superseded) for t in stored] == [
            ("t1", "fallback", True),
            ("t2", "direct", False),
            ("t1", "repair", False),
        ]

    def test_a_task_saved_with_the_transition_into_it_stores_and_counts_it_as_save_transition(
        self, store: RunStore
    ) -> None:
        """The handoff into a task (from the stored one before it) saved with the task: the source's current
        transition is superseded, and the new one is counted under the source's verdict (t1 is partial)."""
        store.create_run(run(status="completed"))
        store.save_task(task())
        store.save_transition(transition(source="t1", target="t2"))
        valid = Validation(status="valid")
        store.save_task(
            task(task_id="t2", position=1, validation=valid),
            transition=transition(source="t1", target="t2", transition_mode="fallback"),
        )
        stored = store.get_transitions("run-1")
        assert [(t.transition_source_task_id, t.transition_mode, t.superseded) for t in stored] == [
            ("t1", "direct", True),
            ("t1", "fallback", False),
        ]
        assert store.partial_counts() == {"diagnose": {"partial": 1, "fallbacks_after_partial": 1}}
        assert store.partial_counts() == store.partial_counts(from_rows=True)
        assert store.loop_counts() == store.loop_counts(from_rows=True)

    def test_storing_a_superseded_transition_leaves_the_current_one(self, store: RunStore) -> None:
        """A row stored already superseded (history being copied) does not demote the current transition."""
        store.create_run(run())
        store.save_transition(transition(source="t1"))
        store.save_transition(transition(source="t1", transition_mode="fallback", superseded=True))
        assert [t.superseded for t in store.get_transitions("run-1")] == [False, True]

    def test_attempt_kinds_round_trip(self, store: RunStore) -> None:
        """Each attempt keeps where it came from: answer, repair, operator repair, regenerate."""
        store.create_run(run())
        kinds = ["answer", "repair", "operator_repair", "regenerate"]
        attempts = [attempt(n + 1, minutes=n).model_copy(update={"kind": kind}) for n, kind in enumerate(kinds)]
        store.save_task(task(attempts=attempts))
        assert [a.kind for a in store.get_tasks("run-1")[0].attempts] == kinds

    def test_attempt_calls_round_trip_every_field(self, store: RunStore) -> None:
        """Each attempt keeps its LLM call: model, endpoint, structured output used and refused, cost, finish."""
        store.create_run(run())
        length = {**CALL, "structured_output": "prompt", "completion_tokens": 0, "finish_reason": "length"}
        saved = task(attempts=[attempt(1, status="failed", **CALL), attempt(2, minutes=1, **length)])
        store.save_task(saved)
        loaded = store.get_tasks("run-1")[0]
        assert loaded.attempts == saved.attempts
        assert [a.model_dump(include=set(CALL)) for a in loaded.attempts] == [CALL, length]

    def test_an_attempt_without_call_metadata_reads_back_unknown(self, store: RunStore) -> None:
        """An attempt saved without its LLM call reads back None in each field and no refused modes ([])."""
        store.create_run(run())
        store.save_task(task(attempts=[attempt(1, **CALL), attempt(2, minutes=1)]))
        bare = store.get_tasks("run-1")[0].attempts[1]
        assert bare.structured_output_refused == []
        assert [getattr(bare, name) for name in CALL if name != "structured_output_refused"] == [None] * 7

    def test_events_come_back_in_stored_order_with_every_field(self, store: RunStore) -> None:
        """Events from every write method read back in order, equal, and only for their run."""
        store.create_run(run())
        store.create_run(run("other"))
        first = event("loop.contract.validated")
        second = event("loop.transition.planned", task_id=None, validation_status=None)
        third = event("loop.ui.rendered", loop_contract_version=None, loop_mode=None, transition_mode=None)
        later = event("loop.action.followed", timestamp=T0 - timedelta(days=1))
        rated = event("loop.feedback.recorded").model_copy(
            update={"detail": {"on": "answer", "rating": "up", "comment": "clear — ünïcödé"}}
        )
        store.save_task(task(), [first])
        store.add_events([event(run_id="other")])
        store.save_transition(transition(), [second])
        store.add_events([third, later, rated])
        store.add_events([])
        assert store.get_events("run-1") == [first, second, third, later, rated]
        assert [e.run_id for e in store.get_events("other")] == ["other"]

    # Atomicity

    def test_a_failing_event_leaves_no_task_state(self, store: RunStore) -> None:
        """A task state, its attempts and its events are one transaction: a bad event stores none of them."""
        store.create_run(run())
        broken = LoopEvent.model_construct(**{**event().__dict__, "name": None})  # violates events.name NOT NULL
        with pytest.raises(StoreError, match="t1"):
            store.save_task(task(), [event(), broken])
        assert store.get_tasks("run-1") == []
        assert store.get_events("run-1") == []
        self.check_attempt_rows(store, 0)

    def test_a_failing_replacement_keeps_the_previous_task_state(self, store: RunStore) -> None:
        """A replacement that fails midway leaves the earlier version of the task untouched."""
        store.create_run(run())
        store.save_task(task())
        broken = LoopEvent.model_construct(**{**event().__dict__, "name": None})
        with pytest.raises(StoreError):
            store.save_task(task(rendered="replacement", attempts=[attempt(1)]), [broken])
        assert store.get_tasks("run-1") == [task()]

    def test_a_failing_event_leaves_no_transition(self, store: RunStore) -> None:
        """A transition and its events are one transaction too."""
        store.create_run(run())
        broken = LoopEvent.model_construct(**{**event().__dict__, "run_id": None})
        with pytest.raises(StoreError):
            store.save_transition(transition(), [broken])
        assert store.get_transitions("run-1") == []
        assert store.get_events("run-1") == []

    # Contract versions and time

    def test_datetimes_come_back_timezone_aware_in_utc(self, store: RunStore) -> None:
        """Every stored datetime reads back aware, in UTC, as the same instant (written at +02:00)."""
        store.create_run(run())
        store.set_run_status("run-1", "running")
        store.save_task(task(), [event()])
        store.save_transition(transition())
        stored_run, (stored_task,) = store.get_run("run-1"), store.get_tasks("run-1")
        moments = [
            stored_run.created_at,
            stored_run.updated_at,
            stored_task.created_at,
            *(a.created_at for a in stored_task.attempts),
            store.get_transitions("run-1")[0].created_at,
            store.get_events("run-1")[0].timestamp,
        ]
        assert all(aware_utc(moment) for moment in moments), moments
        assert stored_run.created_at == T0 and stored_task.created_at == task().created_at

    # Schema and migrations

    # Concurrency

    def test_concurrent_writes_from_threads_all_land(self, store: RunStore) -> None:
        """Eight threads each writing a run's tasks, transitions and events through one store lose nothing."""
        per_thread = 6

        def work(index: int) -> None:
            run_id = f"run-{index}"
            store.create_run(run(run_id))
            for position in range(per_thread):
                store.save_task(task(run_id, f"t{position}", position), [event(run_id=run_id, task_id=f"t{position}")])
                store.save_transition(transition(run_id, f"t{position}", f"t{position + 1}"))
            store.set_run_status(run_id, "completed")

        assert in_threads(8, work) == []
        for index in range(8):
            run_id = f"run-{index}"
            assert store.get_run(run_id).status == "completed"
            assert [t.task_id for t in store.get_tasks(run_id)] == [f"t{p}" for p in range(per_thread)]
            assert len(store.get_transitions(run_id)) == per_thread
            assert len(store.get_events(run_id)) == per_thread

    def test_concurrent_replacements_of_one_task_leave_one_consistent_version(self, store: RunStore) -> None:
        """Threads replacing the same task queue up; the task ends as exactly one writer's version."""
        store.create_run(run())

        def work(index: int) -> None:
            attempts = [attempt(n, minutes=index) for n in range(1, index % 3 + 2)]
            store.save_task(task(rendered=f"version {index}", attempts=attempts))

        assert in_threads(8, work) == []
        (final,) = store.get_tasks("run-1")
        index = int(final.rendered.removeprefix("version "))
        assert [a.created_at for a in final.attempts] == [T0 + timedelta(minutes=index)] * (index % 3 + 1)
        self.check_attempt_rows(store, index % 3 + 1)

    # Task outcomes

    def test_task_outcomes_counts_each_runs_tasks_by_status_in_one_call(self, store: RunStore) -> None:
        """Per run id asked: every status counted (zero when none); unknown or task-less runs are all zero."""
        for run_id in ("run-a", "run-b", "run-c"):
            store.create_run(run(run_id))
        statuses = {"run-a": ["valid", "failed", "partial", "failed"], "run-b": ["skipped", "valid"]}
        for run_id, listed in statuses.items():
            for position, status in enumerate(listed):
                validation = Validation(status=status)  # type: ignore[arg-type]
                store.save_task(task(run_id, f"t{position}", position, validation=validation))
        zero = {"valid": 0, "partial": 0, "failed": 0, "skipped": 0}
        assert store.task_outcomes(["run-a", "run-b", "run-c", "no-such-run"]) == {
            "run-a": {**zero, "valid": 1, "partial": 1, "failed": 2},
            "run-b": {**zero, "valid": 1, "skipped": 1},
            "run-c": zero,
            "no-such-run": zero,
        }
        assert store.task_outcomes(["run-b"]) == {"run-b": {**zero, "valid": 1, "skipped": 1}}
        assert store.task_outcomes([]) == {}

    def test_task_outcomes_of_more_runs_than_one_batch_of_ids(self, store: RunStore) -> None:
        """A long list of ids (the unbounded runs list) is counted whole, past any bound-parameter limit."""
        ids = [f"run-{i:04d}" for i in range(1201)]
        for run_id in ids[::400]:
            store.create_run(run(run_id))
            store.save_task(task(run_id, "t1", 0, validation=Validation(status="failed")))
        outcomes = store.task_outcomes(ids)
        assert len(outcomes) == len(ids)
        assert [run_id for run_id, counts in outcomes.items() if counts["failed"] == 1] == ids[::400]
        assert sum(sum(counts.values()) for counts in outcomes.values()) == len(ids[::400])

    # Read models: what metrics, the dashboard, Prometheus and retrieval ask of the store

    def history(self, store: RunStore) -> None:
        """Four runs of two workflows in three sessions over three days (the figures below are by hand).

        r1 (w1, s1, completed, day 0): t1 valid at once, routed to w2; t2 partial after an in-run repair. Its
        transitions: t1->t2 direct (and an older superseded fallback), t2->t3 fallback.
        r2 (w2, s1, completed, day 1): t1 skipped (no contract); transition t1->t2 fallback.
        r3 (w1, s2, failed, day 1): t1 failed, its error only on its attempt.
        r4 (w1, s3, completed, day 2): t1 valid at once; its next action was followed.
        """
        day = timedelta(days=1)
        store.create_run(run("r1", session_id="s1", workflow="w1", status="completed", created_at=T0))
        store.create_run(run("r2", session_id="s1", workflow="w2", status="completed", created_at=T0 + day))
        r3_at = T0 + day + timedelta(hours=1)
        store.create_run(run("r3", session_id="s2", workflow="w1", status="failed", created_at=r3_at))
        store.create_run(run("r4", session_id="s3", workflow="w1", status="completed", created_at=T0 + 2 * day))
        valid = Validation(status="valid")
        store.save_task(
            task(
                "r1",
                "t1",
                0,
                validation=valid,
                attempts=[attempt(1)],
                routing=Routing(next_workflow="w2"),
                created_at=T0 + timedelta(minutes=1),
            ),
            [event(run_id="r1")],
        )
        repaired = attempt(2, status="partial", minutes=1).model_copy(update={"kind": "repair"})
        store.save_task(
            task("r1", "t2", 1, attempts=[attempt(1, status="failed"), repaired], routing=Routing()),
            [event("loop.contract.failed", run_id="r1", task_id="t2", validation_status="partial")],
        )
        store.save_transition(transition("r1", "t1", "t2", transition_mode="fallback"))
        store.save_transition(transition("r1", "t1", "t2"))
        store.save_transition(transition("r1", "t2", "t3", transition_mode="fallback"))
        skipped = task(
            "r2",
            "t1",
            0,
            validation=Validation(status="skipped"),
            loop_output=LoopFields(),
            attempts=[],
            routing=Routing(),
        )
        store.save_task(skipped, transition=transition("r2", "t1", "t2", transition_mode="fallback"))
        store.save_task(
            task(
                "r3",
                "t1",
                0,
                validation=Validation(status="failed"),
                attempts=[attempt(1, status="failed")],
                routing=Routing(),
                created_at=r3_at + timedelta(minutes=1),
            )
        )
        store.save_task(task("r4", "t1", 0, validation=valid, attempts=[attempt(1)], routing=Routing()))
        store.add_events([event("loop.action.followed", run_id="r4")])

    def test_loop_counts_are_the_metrics_numerators_and_denominators(self, store: RunStore) -> None:
        """All history: executions, first-attempt passes, repairs, transitions, fallbacks, runs and sessions."""
        self.history(store)
        assert store.loop_counts() == {
            (): LoopCounts(
                executions=4,
                first_valid=2,
                repaired=1,
                transitions=3,
                fallbacks=2,
                completed=3,
                offering=2,
                followed=1,
                downstream=2,  # r4 followed; r1 routed to w2, which a later run of its session ran
                depths={1: 2, 2: 1},
            )
        }

    def test_loop_counts_group_by_workflow_and_day_and_filter(self, store: RunStore) -> None:
        """Per workflow (a session counts once in each), per UTC day, and within a window and a workflow."""
        self.history(store)
        assert store.loop_counts(by=("workflow",)) == {
            ("w1",): LoopCounts(4, 2, 1, 2, 1, 2, 2, 1, 2, {1: 3}),
            ("w2",): LoopCounts(0, 0, 0, 1, 1, 1, 0, 0, 0, {1: 1}),
        }
        by_day = store.loop_counts(by=("day",))
        first = T0.astimezone(UTC).date()
        assert {key: counts.executions for key, counts in by_day.items()} == {
            (first,): 2,
            (first + timedelta(days=1),): 1,
            (first + timedelta(days=2),): 1,
        }
        assert all(isinstance(key[0], date) for key in by_day)
        later = store.loop_counts(since=T0 + timedelta(hours=12), workflow="w1")
        assert later == {(): LoopCounts(2, 1, 0, 0, 0, 1, 1, 1, 1, {1: 2})}
        assert store.loop_counts(until=T0 - timedelta(days=1)) == {(): LoopCounts()}  # no runs: zeros
        assert store.loop_counts(until=T0 - timedelta(days=1), by=("workflow",)) == {}

    def test_session_depths_pool_the_workflows(self, store: RunStore) -> None:
        """Runs per session -> sessions: s1 spans two workflows and counts once, with depth 2."""
        self.history(store)
        assert store.session_depths() == {1: 2, 2: 1}
        assert store.session_depths(workflow="w1") == {1: 3}
        # A window holds the sessions that started in it, with all their runs: s1 started on day 0, so from
        # day 0.5 on only s2 and s3 (one run each) count, though s1's second run falls in the window.
        assert store.session_depths(since=T0 + timedelta(hours=12)) == {1: 2}
        assert store.session_depths(until=T0 + timedelta(hours=12)) == {2: 1}

    def test_the_counts_equal_the_raw_rows_recount(self, store: RunStore) -> None:
        """Every read model the metrics use gives what ``from_rows=True`` recounts, also after a rebuild."""
        self.history(store)
        windows: list[dict[str, Any]] = [
            {},
            {"since": T0 + timedelta(hours=12)},
            {"until": T0 + timedelta(days=1, hours=2)},
        ]
        for rebuilt in (False, True):
            if rebuilt:
                store.rebuild_rollups()
            for window in windows:
                for by in ((), ("workflow",), ("day",), ("workflow", "day")):
                    assert store.loop_counts(by=by, **window) == store.loop_counts(by=by, from_rows=True, **window)
                assert store.session_depths(**window) == store.session_depths(from_rows=True, **window)
                assert store.partial_counts(**window) == store.partial_counts(from_rows=True, **window)
                for read in (store.repair_rankings, store.fallback_rankings):
                    kept, counted = read(**window), read(from_rows=True, **window)
                    assert [sorted(map(repr, level)) for level in kept] == [
                        sorted(map(repr, level)) for level in counted
                    ]
            assert store.event_counts() == store.event_counts(from_rows=True)

    def test_metric_totals_are_the_all_history_reads_at_once(self, store: RunStore) -> None:
        """One read of what a scrape exports: the counts per workflow, the pooled depths and the events."""
        self.history(store)
        for from_rows in (False, True):
            totals = store.metric_totals(from_rows=from_rows)
            assert totals.per_workflow == store.loop_counts(by=("workflow",), from_rows=True)
            assert totals.depths == store.session_depths(from_rows=True) == {1: 2, 2: 1}
            assert totals.events == store.event_counts(from_rows=True)
            assert sum(totals.events.values()) == 3

    def test_event_counts_are_per_name(self, store: RunStore) -> None:
        """Stored events per name, names with none absent."""
        self.history(store)
        assert store.event_counts() == {
            "loop.contract.validated": 1,
            "loop.contract.failed": 1,
            "loop.action.followed": 1,
        }

    def test_task_failures_are_the_failed_and_partial_tasks_newest_first(self, store: RunStore) -> None:
        """Final status failed or partial, with the run's workflow, goal and status and the first error message."""
        self.history(store)
        found = store.task_failures()
        assert [(f.run_id, f.task_id, f.status, f.run_status) for f in found] == [
            ("r3", "t1", "failed", "failed"),
            ("r1", "t2", "partial", "completed"),
        ]
        newest = found[0]
        assert newest == TaskFailure(
            "r3",
            "t1",
            0,
            "failed",
            "w1",
            run().goal,
            "failed",
            T0 + timedelta(days=1, hours=1, minutes=1),
            "grip is missing",
        )
        assert aware_utc(newest.created_at)
        assert found[1].message == "answer exceeds the limit"  # the validation's own error comes first
        assert [f.run_id for f in store.task_failures(limit=1)] == ["r3"]
        assert store.task_failures(limit=0) == [] and store.task_failures(workflow="w2") == []
        assert [f.run_id for f in store.task_failures(until=T0 + timedelta(hours=12))] == ["r1"]

    def test_repair_and_fallback_rankings_count_per_workflow_and_task(self, store: RunStore) -> None:
        """In-run repairs out of contract executions; fallbacks out of current transitions (by source task)."""
        self.history(store)
        by_workflow, by_task = store.repair_rankings()
        assert sorted(by_workflow, key=_order) == [OutcomeCount("w1", None, 1, 4)]
        assert sorted(by_task, key=_order) == [OutcomeCount("w1", "t1", 0, 3), OutcomeCount("w1", "t2", 1, 1)]
        by_workflow, by_task = store.fallback_rankings()
        assert sorted(by_workflow, key=_order) == [OutcomeCount("w1", None, 1, 2), OutcomeCount("w2", None, 1, 1)]
        assert sorted(by_task, key=_order) == [
            OutcomeCount("w1", "t1", 0, 1),
            OutcomeCount("w1", "t2", 1, 1),
            OutcomeCount("w2", "t1", 1, 1),
        ]
        assert store.repair_rankings(since=T0 + timedelta(hours=12))[0] == [OutcomeCount("w1", None, 0, 2)]

    def test_partial_counts_are_per_workflow(self, store: RunStore) -> None:
        """Partial final executions, and current fallbacks out of a partial task (r2's is out of a skipped one)."""
        self.history(store)
        assert store.partial_counts() == {"w1": {"partial": 1, "fallbacks_after_partial": 1}}
        assert store.partial_counts(since=T0 + timedelta(hours=12)) == {}

    def test_workflow_names_are_those_of_the_stored_runs(self, store: RunStore) -> None:
        """Each workflow with a stored run, once."""
        assert store.workflow_names() == set()
        self.history(store)
        assert store.workflow_names() == {"w1", "w2"}

    def test_the_knowledge_store_replaces_documents_and_searches_their_chunks(self, store: RunStore) -> None:
        """Added, unchanged (same hash: nothing written), updated (old chunks gone from search); any word matches."""
        knowledge = store.knowledge()
        assert knowledge.known_hashes() == {}
        chunks = [ChunkText(0, "Scrubber > Steps", "Restart the scrubber heater"), ChunkText(1, "Scrubber", "Oxygen")]
        assert knowledge.replace_document(_version("h1"), chunks) == DocumentChange("added")
        assert knowledge.replace_document(_version("h1"), []) == DocumentChange("unchanged", "/srv/one/docs/a.md")
        (hit,) = knowledge.search_chunks(["heater"], 5)
        assert (hit.document_path, hit.heading, hit.text) == ("docs/a.md", "Scrubber > Steps", chunks[0].text)
        assert isinstance(hit.chunk_id, int) and hit.score > 0
        assert len(knowledge.search_chunks(["heater", "oxygen"], 5)) == 2
        assert len(knowledge.search_chunks(["heater", "oxygen"], 1)) == 1
        assert knowledge.search_chunks(["heater"], 0) == [] and knowledge.search_chunks([], 5) == []
        updated = knowledge.replace_document(_version("h2"), [ChunkText(0, "Filters", "Filters clog")])
        assert updated == DocumentChange("updated", "/srv/one/docs/a.md")
        assert knowledge.search_chunks(["heater"], 5) == []
        assert [h.text for h in knowledge.search_chunks(["clog"], 5)] == ["Filters clog"]
        assert knowledge.known_hashes() == {("/srv/one", "docs/a.md"): "h2"}

    def test_one_path_in_two_collections_is_two_documents(self, store: RunStore) -> None:
        """Same path, other collection: added beside the first, both found; replacing one leaves the other."""
        knowledge = store.knowledge()
        assert knowledge.replace_document(_version("h1"), [ChunkText(0, "One", "Heater one")]).outcome == "added"
        two = _version("h2", collection="/srv/two")
        assert knowledge.replace_document(two, [ChunkText(0, "Two", "Heater two")]).outcome == "added"
        assert sorted(hit.text for hit in knowledge.search_chunks(["heater"], 5)) == ["Heater one", "Heater two"]
        assert {hit.document_path for hit in knowledge.search_chunks(["heater"], 5)} == {"docs/a.md"}
        assert knowledge.known_hashes() == {("/srv/one", "docs/a.md"): "h1", ("/srv/two", "docs/a.md"): "h2"}
        changed = _version("h3", collection="/srv/two")
        assert knowledge.replace_document(changed, [ChunkText(0, "Two", "Heater three")]).outcome == "updated"
        assert sorted(hit.text for hit in knowledge.search_chunks(["heater"], 5)) == ["Heater one", "Heater three"]

    def test_a_replacement_names_the_source_of_the_version_it_replaced(self, store: RunStore) -> None:
        """Another file in the same collection and path replaces the stored one; the change names the old file."""
        knowledge = store.knowledge()
        knowledge.replace_document(_version("h1", collection="handbook"), [])
        moved = _version("h2", collection="handbook", source="/srv/two/docs/a.md")
        assert knowledge.replace_document(moved, []) == DocumentChange("updated", "/srv/one/docs/a.md")
        again = _version("h2", collection="handbook", source="/srv/two/docs/a.md")
        assert knowledge.replace_document(again, []) == DocumentChange("unchanged", "/srv/two/docs/a.md")

    def test_a_document_is_adopted_from_another_collection_once(self, store: RunStore) -> None:
        """A legacy document is moved into the first collection storing its path (chunk ids kept); then it is gone."""
        knowledge = store.knowledge()
        legacy = _version("h1", collection=LEGACY_COLLECTION, source=None)
        knowledge.replace_document(legacy, [ChunkText(0, "Scrubber", "Restart the heater")])
        (before,) = knowledge.search_chunks(["heater"], 5)
        adopted = knowledge.replace_document(_version("h1"), [], adopt_from=LEGACY_COLLECTION)
        assert adopted == DocumentChange("unchanged", None, adopted=True)
        assert knowledge.known_hashes() == {("/srv/one", "docs/a.md"): "h1"}
        assert knowledge.search_chunks(["heater"], 5) == [before]
        # Adopted once: another collection's document of that path is its own.
        other = _version("h1", collection="/srv/two", source="/srv/two/docs/a.md")
        assert knowledge.replace_document(other, [], adopt_from=LEGACY_COLLECTION) == DocumentChange("added")
        # Adopted with new content: updated, its old chunks gone.
        knowledge.replace_document(_version("h1", path="docs/b.md", collection=LEGACY_COLLECTION, source=None), [])
        changed = _version("h2", path="docs/b.md")
        pieces = [ChunkText(0, "Filters", "Filters clog")]
        assert knowledge.replace_document(changed, pieces, adopt_from=LEGACY_COLLECTION) == DocumentChange(
            "updated", None, adopted=True
        )
        assert (LEGACY_COLLECTION, "docs/b.md") not in knowledge.known_hashes()
        # Without adopt_from, nothing is taken over.
        knowledge.replace_document(_version("h1", path="docs/c.md", collection=LEGACY_COLLECTION, source=None), [])
        assert knowledge.replace_document(_version("h1", path="docs/c.md"), []) == DocumentChange("added")


def _version(
    sha256: str, *, collection: str = "/srv/one", path: str = "docs/a.md", source: str | None = "/srv/one/docs/a.md"
) -> DocumentVersion:
    return DocumentVersion(collection, path, sha256, len(sha256), source)


def _order(count: OutcomeCount) -> tuple[str, str]:
    return count.workflow, count.task_id or ""
