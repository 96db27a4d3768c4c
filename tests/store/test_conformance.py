"""The RunStore conformance suite: every backend (SQLite file, PostgreSQL) must pass every test here."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text

from marsrag.errors import IncompatibleRecordError, RunNotFoundError, StoreError
from marsrag.events.model import LoopEvent
from marsrag.state import LoopFields, Retrieval, Routing, Validation
from marsrag.store import RunStore, open_store
from marsrag.store._migrate import HEAD
from marsrag.store.schema import VERSION_TABLE, include_name, metadata
from marsrag.store.sql import SqlRunStore
from tests.store.records import T0, attempt, aware_utc, event, run, task, transition


def sql(store: RunStore, statement: str, **params: Any) -> list[Any]:
    """Run raw SQL on the store's database in its own transaction; the rows, if any."""
    assert isinstance(store, SqlRunStore)
    with store.engine.begin() as connection:
        result = connection.execute(text(statement), params)
        return list(result.all()) if result.returns_rows else []


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


# Runs


def test_create_and_get_run_round_trips_every_field(store: RunStore) -> None:
    """A created run reads back equal, field for field."""
    created = run(status_reason="queued behind run-0", summary="nothing yet")
    store.create_run(created)
    assert store.get_run("run-1") == created


def test_creating_a_run_twice_raises_store_error(store: RunStore) -> None:
    """A second run with the same id is refused, naming the run."""
    store.create_run(run())
    with pytest.raises(StoreError, match="run-1"):
        store.create_run(run(goal="another"))
    assert store.get_run("run-1").goal == run().goal


def test_list_runs_returns_newest_first(store: RunStore) -> None:
    """Runs list by creation time, newest first, whatever the insertion order; limit keeps the newest."""
    for run_id, minutes in (("b", 5), ("a", 1), ("c", 9)):
        store.create_run(run(run_id, created_at=T0 + timedelta(minutes=minutes)))
    assert [r.run_id for r in store.list_runs()] == ["c", "b", "a"]
    assert [r.run_id for r in store.list_runs(limit=2)] == ["c", "b"]
    assert store.list_runs(limit=0) == []


def test_list_runs_pages_with_an_offset(store: RunStore) -> None:
    """offset skips the newest runs; with limit it gives one page; past the end it gives none."""
    for run_id, minutes in (("b", 5), ("a", 1), ("c", 9), ("d", 12)):
        store.create_run(run(run_id, created_at=T0 + timedelta(minutes=minutes)))
    assert [r.run_id for r in store.list_runs(offset=1)] == ["c", "b", "a"]
    assert [r.run_id for r in store.list_runs(limit=2, offset=1)] == ["c", "b"]
    assert [r.run_id for r in store.list_runs(limit=2, offset=2)] == ["b", "a"]
    assert store.list_runs(offset=4) == []
    with pytest.raises(ValueError, match="offset"):
        store.list_runs(offset=-1)


def test_list_runs_filters_by_session(store: RunStore) -> None:
    """Only the named session's runs are listed, still newest first."""
    store.create_run(run("a1", session_id="a", created_at=T0))
    store.create_run(run("b1", session_id="b", created_at=T0 + timedelta(seconds=1)))
    store.create_run(run("a2", session_id="a", created_at=T0 + timedelta(seconds=2)))
    assert [r.run_id for r in store.list_runs(session_id="a")] == ["a2", "a1"]
    assert [r.run_id for r in store.list_runs(session_id="b")] == ["b1"]
    assert store.list_runs(session_id="nobody") == []


def test_list_runs_filters_by_status(store: RunStore) -> None:
    """Only runs in the given statuses are listed (how a starting server finds runs left unfinished)."""
    for run_id, minutes in (("p", 1), ("r", 2), ("c", 3)):
        store.create_run(run(run_id, created_at=T0 + timedelta(minutes=minutes)))
    store.set_run_status("r", "running", owner="host:1")
    store.set_run_status("c", "completed", summary="done")
    assert [r.run_id for r in store.list_runs(statuses=("pending", "running"))] == ["r", "p"]
    assert [r.run_id for r in store.list_runs(statuses=("completed",))] == ["c"]
    assert store.list_runs(statuses=()) == []


def test_list_runs_refuses_a_negative_limit(store: RunStore) -> None:
    """A negative limit is a caller error, not 'no limit' (the backends disagree on its meaning)."""
    with pytest.raises(ValueError, match="limit"):
        store.list_runs(limit=-1)


def test_set_run_status_updates_status_reason_summary_and_updated_at(store: RunStore) -> None:
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


def test_set_run_status_keeps_reason_and_summary_when_not_given(store: RunStore) -> None:
    """Only the given fields change."""
    store.create_run(run(status_reason="waiting", summary="half done"))
    store.set_run_status("run-1", "completed")
    stored = store.get_run("run-1")
    assert (stored.status, stored.status_reason, stored.summary) == ("completed", "waiting", "half done")


def test_unknown_run_raises_run_not_found(store: RunStore) -> None:
    """Reading, updating or adding state to a missing run raises RunNotFoundError naming it."""
    with pytest.raises(RunNotFoundError, match="nope"):
        store.get_run("nope")
    with pytest.raises(RunNotFoundError, match="nope"):
        store.set_run_status("nope", "completed")
    with pytest.raises(RunNotFoundError, match="nope"):
        store.save_task(task("nope"))
    with pytest.raises(RunNotFoundError, match="nope"):
        store.save_transition(transition("nope"))


def test_unknown_run_has_no_tasks_transitions_or_events(store: RunStore) -> None:
    """Listing a missing run's children gives empty lists."""
    assert store.get_tasks("nope") == []
    assert store.get_transitions("nope") == []
    assert store.get_events("nope") == []


# Task states


def test_save_task_round_trips_every_field(store: RunStore) -> None:
    """A task state reads back equal: loop fields, rendered text, attempts, routing, retrieval, errors."""
    store.create_run(run())
    saved = task()
    store.save_task(saved)
    (loaded,) = store.get_tasks("run-1")
    assert loaded == saved


def test_loop_fields_and_rendered_text_are_separate_columns(store: RunStore) -> None:
    """The five loop fields sit in five columns and the rendered prose in its own."""
    store.create_run(run())
    store.save_task(task())
    rows = sql(store, "SELECT hook, grip, payoff, reinforce, loop, rendered FROM task_states")
    fields = task().loop_output
    assert rows == [(fields.hook, fields.grip, fields.payoff, fields.reinforce, fields.loop, task().rendered)]


def test_task_with_empty_fields_and_no_retrieval_round_trips(store: RunStore) -> None:
    """None loop fields, no routing, no retrieval, no attempts and no agent come back as they went in."""
    store.create_run(run())
    bare = task(
        agent=None,
        loop_output=LoopFields(hook="Only a hook"),
        routing=Routing(),
        retrieval=None,
        attempts=[],
        validation=Validation(status="failed"),
        rendered="",
        hook_source="goal",
    )
    store.save_task(bare)
    assert store.get_tasks("run-1") == [bare]
    assert sql(store, "SELECT retrieval_query, retrieval_results FROM task_states") == [(None, None)]


def test_retrieval_with_no_results_stays_distinct_from_no_retrieval(store: RunStore) -> None:
    """A retrieval that found nothing is still a retrieval."""
    store.create_run(run())
    store.save_task(task(retrieval=Retrieval(query="nothing matches")))
    (loaded,) = store.get_tasks("run-1")
    assert loaded.retrieval == Retrieval(query="nothing matches", results=[])


def test_tasks_come_back_in_workflow_order(store: RunStore) -> None:
    """get_tasks orders by position, not by insertion or id."""
    store.create_run(run())
    for task_id, position in (("z", 1), ("y", 2), ("x", 0)):
        store.save_task(task(task_id=task_id, position=position))
    assert [t.task_id for t in store.get_tasks("run-1")] == ["x", "z", "y"]


def test_attempts_come_back_in_number_order(store: RunStore) -> None:
    """Attempts read back ordered by number, each with its own raw text, status and errors."""
    store.create_run(run())
    store.save_task(task(attempts=[attempt(2, minutes=5), attempt(1, status="failed")]))
    (loaded,) = store.get_tasks("run-1")
    assert loaded.attempts == [attempt(1, status="failed"), attempt(2, minutes=5)]


def test_tasks_of_other_runs_stay_apart(store: RunStore) -> None:
    """Tasks with the same id in two runs are two records."""
    store.create_run(run("r1"))
    store.create_run(run("r2"))
    store.save_task(task("r1", rendered="one"))
    store.save_task(task("r2", rendered="two", attempts=[attempt(1)]))
    assert [t.rendered for t in store.get_tasks("r1")] == ["one"]
    assert [len(t.attempts) for t in store.get_tasks("r2")] == [1]


def test_save_task_replaces_the_task_and_its_attempts(store: RunStore) -> None:
    """Saving the same (run, task) again replaces its row and all its attempts; events accumulate."""
    store.create_run(run())
    store.save_task(task(), [event()])
    replacement = task(
        loop_output=LoopFields(hook="New hook"), attempts=[attempt(1, minutes=9)], rendered="new", position=3
    )
    store.save_task(replacement, [event("loop.contract.failed", validation_status="failed")])
    assert store.get_tasks("run-1") == [replacement]
    assert sql(store, "SELECT count(*) FROM attempts") == [(1,)]
    assert [e.name for e in store.get_events("run-1")] == ["loop.contract.validated", "loop.contract.failed"]


# Transitions and events


def test_transitions_come_back_in_order_with_superseded_marked(store: RunStore) -> None:
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


def test_read_run_is_the_run_its_tasks_and_transitions_in_one_read(store: RunStore) -> None:
    """read_run returns what get_run, get_tasks and get_transitions return; an unknown id raises."""
    store.create_run(run())
    store.save_task(task(), [event()], transition=transition())
    store.save_task(task(task_id="t2", position=1))
    assert store.read_run("run-1") == (store.get_run("run-1"), store.get_tasks("run-1"), store.get_transitions("run-1"))
    with pytest.raises(RunNotFoundError):
        store.read_run("nope")


def test_claim_task_lets_one_owner_in_until_released_or_saved(store: RunStore) -> None:
    """One claim at a time, only on the given statuses; release by its owner only; saving the task frees it."""
    from marsrag.state import utcnow

    store.create_run(run())
    store.save_task(task())  # status partial
    later = utcnow() - timedelta(minutes=10)
    assert not store.claim_task("run-1", "t1", "a", statuses=("failed",), stale_before=later)
    assert store.claim_task("run-1", "t1", "a", statuses=("partial", "failed"), stale_before=later)
    assert not store.claim_task("run-1", "t1", "b", statuses=("partial", "failed"), stale_before=later)
    store.release_task("run-1", "t1", "b")  # not b's: stays a's
    assert not store.claim_task("run-1", "t1", "b", statuses=("partial", "failed"), stale_before=later)
    store.release_task("run-1", "t1", "a")
    assert store.claim_task("run-1", "t1", "b", statuses=("partial", "failed"), stale_before=later)
    store.save_task(task())  # the action's commit replaces the row: the claim goes with it
    assert store.claim_task("run-1", "t1", "c", statuses=("partial", "failed"), stale_before=later)
    assert not store.claim_task("run-1", "nope", "c", statuses=("partial",), stale_before=later)


def test_claim_run_lets_exactly_one_of_the_racers_in(store: RunStore) -> None:
    """claim_run is a compare-and-set on (status, owner): the first caller wins, a later one with that view loses."""
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
    assert not store.claim_run("nope", "host:5", seen=taken)


def test_an_abandoned_claim_can_be_taken_over(store: RunStore) -> None:
    """A claim older than stale_before no longer holds the task."""
    from marsrag.state import utcnow

    store.create_run(run())
    store.save_task(task())
    assert store.claim_task("run-1", "t1", "a", statuses=("partial",), stale_before=utcnow() - timedelta(minutes=10))
    assert store.claim_task("run-1", "t1", "b", statuses=("partial",), stale_before=utcnow() + timedelta(seconds=1))


def test_racing_claims_from_threads_let_exactly_one_in(store: RunStore) -> None:
    """Eight threads claim the same task at once: exactly one succeeds."""
    from marsrag.state import utcnow

    store.create_run(run())
    store.save_task(task())
    won: list[int] = []
    stale = utcnow() - timedelta(minutes=10)

    def claim(index: int) -> None:
        if store.claim_task("run-1", "t1", f"owner-{index}", statuses=("partial",), stale_before=stale):
            won.append(index)

    assert in_threads(8, claim) == []
    assert len(won) == 1


def test_a_new_transition_supersedes_the_current_one_from_its_source(store: RunStore) -> None:
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


def test_storing_a_superseded_transition_leaves_the_current_one(store: RunStore) -> None:
    """A row stored already superseded (history being copied) does not demote the current transition."""
    store.create_run(run())
    store.save_transition(transition(source="t1"))
    store.save_transition(transition(source="t1", transition_mode="fallback", superseded=True))
    assert [t.superseded for t in store.get_transitions("run-1")] == [False, True]


def test_attempt_kinds_round_trip(store: RunStore) -> None:
    """Each attempt keeps where it came from: answer, repair, operator repair, regenerate."""
    store.create_run(run())
    kinds = ["answer", "repair", "operator_repair", "regenerate"]
    attempts = [attempt(n + 1, minutes=n).model_copy(update={"kind": kind}) for n, kind in enumerate(kinds)]
    store.save_task(task(attempts=attempts))
    assert [a.kind for a in store.get_tasks("run-1")[0].attempts] == kinds


def test_events_come_back_in_stored_order_with_every_field(store: RunStore) -> None:
    """Events from every write method read back in order, equal, and only for their run."""
    store.create_run(run())
    store.create_run(run("other"))
    first = event("loop.contract.validated")
    second = event("loop.transition.planned", task_id=None, validation_status=None)
    third = event("loop.ui.rendered", loop_contract_version=None, loop_mode=None, transition_mode=None)
    later = event("loop.action.followed", timestamp=T0 - timedelta(days=1))
    store.save_task(task(), [first])
    store.add_events([event(run_id="other")])
    store.save_transition(transition(), [second])
    store.add_events([third, later])
    store.add_events([])
    assert store.get_events("run-1") == [first, second, third, later]
    assert [e.run_id for e in store.get_events("other")] == ["other"]


# Atomicity


def test_a_failing_event_leaves_no_task_state(store: RunStore) -> None:
    """A task state, its attempts and its events are one transaction: a bad event stores none of them."""
    store.create_run(run())
    broken = LoopEvent.model_construct(**{**event().__dict__, "name": None})  # violates events.name NOT NULL
    with pytest.raises(StoreError, match="t1"):
        store.save_task(task(), [event(), broken])
    assert store.get_tasks("run-1") == []
    assert store.get_events("run-1") == []
    assert sql(store, "SELECT count(*) FROM attempts") == [(0,)]


def test_a_failing_replacement_keeps_the_previous_task_state(store: RunStore) -> None:
    """A replacement that fails midway leaves the earlier version of the task untouched."""
    store.create_run(run())
    store.save_task(task())
    broken = LoopEvent.model_construct(**{**event().__dict__, "name": None})
    with pytest.raises(StoreError):
        store.save_task(task(rendered="replacement", attempts=[attempt(1)]), [broken])
    assert store.get_tasks("run-1") == [task()]


def test_a_failing_event_leaves_no_transition(store: RunStore) -> None:
    """A transition and its events are one transaction too."""
    store.create_run(run())
    broken = LoopEvent.model_construct(**{**event().__dict__, "run_id": None})
    with pytest.raises(StoreError):
        store.save_transition(transition(), [broken])
    assert store.get_transitions("run-1") == []
    assert store.get_events("run-1") == []


# Contract versions and time


def test_a_task_of_another_major_version_raises_incompatible_record(store: RunStore) -> None:
    """A task stored under contract 2.x is refused with a message naming run, task and both versions."""
    store.create_run(run())
    store.save_task(task())
    store.save_task(task(task_id="t2", position=1))
    sql(store, "UPDATE task_states SET loop_contract_version = '2.1.0' WHERE task_id = 't2'")
    with pytest.raises(IncompatibleRecordError) as raised:
        store.get_tasks("run-1")
    message = str(raised.value)
    assert all(part in message for part in ("run-1", "'t2'", "2.1.0", "1.0.0")), message
    assert "\n" not in message


def test_a_run_of_another_major_version_raises_incompatible_record(store: RunStore) -> None:
    """A run row inserted under contract 2.0.0 is refused by get_run and list_runs, naming the run."""
    store.create_run(run())
    sql(
        store,
        "INSERT INTO runs (run_id, session_id, goal, workflow, loop_mode, status, summary, loop_contract_version,"
        " created_at, updated_at) VALUES ('future', 's', 'g', 'w', 'strict', 'running', '', '2.0.0', :t, :t)",
        t=T0,
    )
    with pytest.raises(IncompatibleRecordError, match=r"'future'.*2\.0\.0.*1\.0\.0"):
        store.get_run("future")
    with pytest.raises(IncompatibleRecordError, match="future"):
        store.list_runs()
    assert store.get_run("run-1") == run()


def test_a_malformed_stored_version_raises_incompatible_record(store: RunStore) -> None:
    """A version that is not semver is reported, not crashed on."""
    store.create_run(run())
    sql(store, "UPDATE runs SET loop_contract_version = 'one'")
    with pytest.raises(IncompatibleRecordError, match="'one'"):
        store.get_run("run-1")


def test_a_newer_minor_version_reads_fine(store: RunStore) -> None:
    """Only the major version decides whether a record is readable."""
    store.create_run(run())
    store.save_task(task())
    sql(store, "UPDATE task_states SET loop_contract_version = '1.7.3'")
    assert store.get_tasks("run-1")[0].loop_contract_version == "1.7.3"


def test_an_invalid_stored_value_raises_store_error(store: RunStore) -> None:
    """A row that breaks the record's rules surfaces as StoreError naming the record, not a crash."""
    store.create_run(run())
    sql(store, "UPDATE runs SET status = 'exploded'")
    with pytest.raises(StoreError, match=r"run 'run-1'.*status"):
        store.get_run("run-1")


def test_datetimes_come_back_timezone_aware_in_utc(store: RunStore) -> None:
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


def test_migrated_schema_matches_the_metadata(store: RunStore) -> None:
    """The hand-written migrations build exactly the tables, columns, types and indexes of schema.py.

    The backend-specific full-text objects are left out (``include_name``); the knowledge base tests cover them.
    """
    assert isinstance(store, SqlRunStore)
    opts = {
        "version_table": VERSION_TABLE,
        "compare_type": True,
        "compare_server_default": True,
        "include_name": include_name,
    }
    with store.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts=opts)
        assert compare_metadata(context, metadata) == []


def test_opening_twice_migrates_once_and_keeps_data(db_url: str) -> None:
    """Opening an existing store again is a no-op for the schema; its data is still there."""
    with open_store(db_url) as first:
        first.create_run(run())
        first.save_task(task())
    with open_store(db_url) as second:
        assert second.get_tasks("run-1") == [task()]
        assert sql(second, f"SELECT version_num FROM {VERSION_TABLE}") == [(HEAD,)]


def test_opening_a_new_database_from_several_threads_migrates_it_once(db_url: str) -> None:
    """Concurrent first opens of one database serialize on the migration lock; all succeed."""
    stores: list[RunStore] = []
    errors = in_threads(6, lambda _: stores.append(open_store(db_url)))
    try:
        assert errors == []
        assert sql(stores[0], f"SELECT version_num FROM {VERSION_TABLE}") == [(HEAD,)]
    finally:
        for opened in stores:
            opened.close()


def test_a_schema_revision_from_a_newer_marsrag_is_reported(db_url: str) -> None:
    """A database migrated past this MarsRAG's head is refused with a StoreError naming the revision."""
    with open_store(db_url) as opened:
        sql(opened, f"UPDATE {VERSION_TABLE} SET version_num = '0099'")
    with pytest.raises(StoreError, match="0099") as raised:
        open_store(db_url)
    assert "\n" not in str(raised.value)


# Concurrency


def test_migration_0003_names_the_kind_of_existing_attempts(db_url: str) -> None:
    """Attempts stored at revision 0002 (no kind) read back as answer (number 1) and repair (later)."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import insert

    from marsrag.store import _engine, _rows
    from marsrag.store._migrate import MIGRATIONS
    from marsrag.store.schema import runs, task_states

    engine = _engine.create(_engine.parse_url(db_url))
    stored = task(run_id="r")
    try:
        with engine.begin() as connection:
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS))
            config.attributes["connection"] = connection
            command.upgrade(config, "0002")
            connection.execute(insert(runs), [_rows.run_row(run("r"))])
            connection.execute(insert(task_states), [_rows.task_row(stored)])
            for row in _rows.attempt_rows(stored):
                del row["kind"]
                connection.execute(
                    text(
                        "INSERT INTO attempts (run_id, task_id, number, raw, status, errors, created_at)"
                        " VALUES (:run_id, :task_id, :number, :raw, :status, '[]', :created_at)"
                    ),
                    {key: value for key, value in row.items() if key != "errors"},
                )
    finally:
        engine.dispose()
    with open_store(db_url) as migrated:
        assert [(a.number, a.kind) for a in migrated.get_tasks("r")[0].attempts] == [(1, "answer"), (2, "repair")]


def test_concurrent_writes_from_threads_all_land(store: RunStore) -> None:
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


def test_concurrent_replacements_of_one_task_leave_one_consistent_version(store: RunStore) -> None:
    """Threads replacing the same task queue up; the task ends as exactly one writer's version."""
    store.create_run(run())

    def work(index: int) -> None:
        attempts = [attempt(n, minutes=index) for n in range(1, index % 3 + 2)]
        store.save_task(task(rendered=f"version {index}", attempts=attempts))

    assert in_threads(8, work) == []
    (final,) = store.get_tasks("run-1")
    index = int(final.rendered.removeprefix("version "))
    assert [a.created_at for a in final.attempts] == [T0 + timedelta(minutes=index)] * (index % 3 + 1)
    assert sql(store, "SELECT count(*) FROM attempts") == [(index % 3 + 1,)]


# Task outcomes


def test_task_outcomes_counts_each_runs_tasks_by_status_in_one_call(store: RunStore) -> None:
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


def test_task_outcomes_of_more_runs_than_one_batch_of_ids(store: RunStore) -> None:
    """A long list of ids (the unbounded runs list) is counted whole, past any bound-parameter limit."""
    ids = [f"run-{i:04d}" for i in range(1201)]
    for run_id in ids[::400]:
        store.create_run(run(run_id))
        store.save_task(task(run_id, "t1", 0, validation=Validation(status="failed")))
    outcomes = store.task_outcomes(ids)
    assert len(outcomes) == len(ids)
    assert [run_id for run_id, counts in outcomes.items() if counts["failed"] == 1] == ids[::400]
    assert sum(sum(counts.values()) for counts in outcomes.values()) == len(ids[::400])
