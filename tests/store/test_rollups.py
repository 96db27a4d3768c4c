"""The metrics' rollups equal the raw rows' recount: generated histories, concurrent writers, the migration's backfill.

Every history is written through the real store API (the calls the runner, the operator actions, follows and
feedback make) on both backends; the rollup reads are then compared with the reference SQL (``from_rows=True``)
for all history and for windows with partial days, per workflow, per day and per experiment arm, and again after
a rebuild.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import column as sa_column
from sqlalchemy import delete, insert, select
from sqlalchemy import table as sa_table

from marsrag.metrics.verify import GROUPINGS, verify
from marsrag.state import (
    SUPPORT_LEVELS,
    AttemptRecord,
    LoopEvent,
    LoopFields,
    Retrieval,
    Routing,
    RunRecord,
    Support,
    TaskState,
    TransitionRecord,
    Validation,
)
from marsrag.store import LoopCounts, RunStore, open_store
from marsrag.store._metrics_sql import Span
from marsrag.store._rollup_reads import Days, Edge, split
from marsrag.store._rollups import ALL_TIME
from marsrag.store.schema import attempts, events, rollups, runs, task_states, transitions
from marsrag.store.sql import SqlRunStore
from tests.store.migrations import at_revision

T0 = datetime(2026, 11, 1, tzinfo=UTC)
WORKFLOWS = ("support", "review", "onboard")
TASKS = ("t1", "t2", "t3")
STATUSES = ("valid", "partial", "failed", "skipped")
MODES = ("direct", "repair", "fallback")
#: The (experiment, arm) a generated run may be in (None: outside any); two experiments share an arm name.
ARMS = (("hard_vs_soft", "hard"), ("hard_vs_soft", "soft"), ("agents", "hard"))
EXPERIMENTS = ("hard_vs_soft", "agents")
TARGETS = ("answer", "next_action")
TABLES = (attempts, transitions, events, task_states, runs, rollups)


# -- operations, as the runner and the operator actions call the store ------------------------------------------


@dataclass(frozen=True)
class NewRun:
    session: int
    workflow: str
    minutes: int  # after T0: spread over about four days
    status: str
    follows: int | None  # the index of an earlier run whose next action this one follows
    arm: int | None = None  # its (experiment, arm) in ARMS; None: outside any experiment
    edited: bool | None = None  # its follow's kind: edited, suggested, or (None) an event with no detail


@dataclass(frozen=True)
class SaveTask:
    run: int
    task: int
    status: str
    first_valid: bool
    repaired: bool
    routes_to: str | None
    handoff: str | None  # the mode of the transition stored with it, if any
    operator: str | None  # an operator action's attempt kind appended after the task's own attempts
    support: str | None = None  # its retrieval's support level; None: not assessed (as before migration 0015)


@dataclass(frozen=True)
class SaveTransition:
    run: int
    task: int
    mode: str


@dataclass(frozen=True)
class SetStatus:
    run: int
    status: str


@dataclass(frozen=True)
class Followed:
    run: int
    edited: bool | None = None  # as NewRun.edited


@dataclass(frozen=True)
class Rated:
    """A reader's thumbs up or down on a run's answer or next action (a later one replaces it)."""

    run: int
    on: str
    up: bool


Operation = NewRun | SaveTask | SaveTransition | SetStatus | Followed | Rated

new_runs = st.builds(
    NewRun,
    session=st.integers(0, 2),
    workflow=st.sampled_from(WORKFLOWS),
    # A few fixed moments: runs of one session created at the same time (which one is first: by run id).
    minutes=st.integers(0, 4 * 24 * 60) | st.sampled_from((60, 25 * 60)),
    status=st.sampled_from(("pending", "running", "completed")),
    follows=st.none() | st.integers(0, 30),
    arm=st.none() | st.integers(0, len(ARMS) - 1),
    edited=st.none() | st.booleans(),
)
later_ops = st.one_of(
    st.builds(
        SaveTask,
        run=st.integers(0, 30),
        task=st.integers(0, 2),
        status=st.sampled_from(STATUSES),
        first_valid=st.booleans(),
        repaired=st.booleans(),
        routes_to=st.none() | st.sampled_from(WORKFLOWS),
        handoff=st.none() | st.sampled_from(MODES),
        operator=st.none() | st.sampled_from(("operator_repair", "regenerate")),
        support=st.none() | st.sampled_from(SUPPORT_LEVELS),
    ),
    st.builds(SaveTransition, run=st.integers(0, 30), task=st.integers(0, 2), mode=st.sampled_from(MODES)),
    st.builds(SetStatus, run=st.integers(0, 30), status=st.sampled_from(("completed", "running", "failed"))),
    st.builds(Followed, run=st.integers(0, 30), edited=st.none() | st.booleans()),
    st.builds(Rated, run=st.integers(0, 30), on=st.sampled_from(TARGETS), up=st.booleans()),
)
histories = st.lists(st.one_of(new_runs, later_ops, later_ops), min_size=1, max_size=30)
windows = st.tuples(st.none() | st.integers(-60, 5 * 24 * 60), st.none() | st.integers(-60, 5 * 24 * 60), st.booleans())


def apply(store: RunStore, history: list[Operation]) -> None:
    """Apply the operations in order (an operation on a run that does not exist yet is skipped)."""
    made: list[RunRecord] = []
    followed: set[int] = set()
    for step in history:
        if isinstance(step, NewRun):
            at = T0 + timedelta(minutes=step.minutes)
            experiment, arm = ARMS[step.arm] if step.arm is not None else (None, None)
            run = RunRecord(
                run_id=f"r{len(made)}", session_id=f"s{step.session}", goal="goal", workflow=step.workflow,
                loop_mode="hard", status=step.status, created_at=at, updated_at=at,  # type: ignore[arg-type]
                experiment=experiment, arm=arm,
            )  # fmt: skip
            found: list[LoopEvent] = []
            if step.follows is not None and step.follows < len(made) and step.follows not in followed:
                followed.add(step.follows)
                prior = made[step.follows]
                run = run.model_copy(update={"followed_from": prior.run_id, "session_id": prior.session_id})
                found = [follow(prior.run_id, step.edited)]
            store.create_run(run, found)
            made.append(run)
        elif step.run < len(made):
            _later(store, made[step.run], step)


def _later(store: RunStore, run: RunRecord, step: Operation) -> None:
    if isinstance(step, SaveTask):
        store.save_task(_task(store, run, step), transition=_handoff(run, step.task, step.handoff))
    elif isinstance(step, SaveTransition):
        store.save_transition(_handoff(run, step.task, step.mode))  # type: ignore[arg-type]
    elif isinstance(step, SetStatus):
        store.set_run_status(run.run_id, step.status)  # type: ignore[arg-type]
    elif isinstance(step, Followed):
        store.add_events([follow(run.run_id, step.edited)])
    elif isinstance(step, Rated):
        store.add_events([rating(run.run_id, step.on, step.up)])


def follow(run_id: str, edited: bool | None) -> LoopEvent:
    """A follow's event: of kind edited or suggested, or (None) as stored before follows had a kind."""
    detail = None if edited is None else {"follow_kind": "edited" if edited else "suggested"}
    return LoopEvent(name="loop.action.followed", run_id=run_id, detail=detail)


def rating(run_id: str, on: str, up: bool) -> LoopEvent:
    """A reader's rating of a run's answer or next action."""
    detail = {"on": on, "rating": "up" if up else "down", "comment": None}
    return LoopEvent(name="loop.feedback.recorded", run_id=run_id, detail=detail)


def _task(store: RunStore, run: RunRecord, step: SaveTask) -> TaskState:
    first = "valid" if step.first_valid else "failed"
    tried = [AttemptRecord(number=1, raw="answer", status=first)]  # type: ignore[arg-type]
    if step.repaired:
        tried.append(AttemptRecord(number=2, raw="repair", status=step.status, kind="repair"))  # type: ignore[arg-type]
    if step.operator:
        # An operator action keeps the attempts stored before it and adds its own.
        stored = {t.task_id: t for t in store.get_tasks(run.run_id)}.get(TASKS[step.task])
        tried = list(stored.attempts) if stored else tried
        tried.append(AttemptRecord(number=len(tried) + 1, raw="again", status=step.status, kind=step.operator))  # type: ignore[arg-type]
    return TaskState(
        run_id=run.run_id, task_id=TASKS[step.task], position=step.task, agent="agent", loop_mode="hard",
        validation=Validation(status=step.status), loop_output=LoopFields(hook="h", grip="g", payoff="p"),  # type: ignore[arg-type]
        attempts=tried, hook_source="goal", rendered="text", routing=Routing(next_workflow=step.routes_to),
        retrieval=Retrieval(query="q", support=Support(level=step.support, score=0.5) if step.support else None),  # type: ignore[arg-type]
    )  # fmt: skip


def _handoff(run: RunRecord, task: int, mode: str | None) -> TransitionRecord | None:
    if mode is None:
        return None
    return TransitionRecord(
        run_id=run.run_id, transition_source_task_id=TASKS[task], transition_target_task_id="next",
        transition_mode=mode, transition_reason="planned", hook="hook",  # type: ignore[arg-type]
    )  # fmt: skip


# -- comparing ----------------------------------------------------------------------------------------------------


def _moment(minutes: int | None, aligned: bool) -> datetime | None:
    if minutes is None:
        return None
    moment = T0 + timedelta(minutes=minutes)
    return moment.replace(hour=0, minute=0) if aligned else moment


def assert_rollups_match(store: RunStore, window: tuple[int | None, int | None, bool] = (None, None, False)) -> None:
    """Every figure of the rollups equals the raw rows' recount: all history (verify), and the window."""
    verdict = verify(store)
    assert verdict.ok, [d.line() for d in verdict.differences]
    since, until = _moment(window[0], window[2]), _moment(window[1], window[2])
    if since is not None and until is not None and since >= until:
        since, until = until - timedelta(minutes=1), since
    span: dict[str, Any] = {"since": since, "until": until}
    for by in GROUPINGS:
        assert store.loop_counts(by=by, **span) == store.loop_counts(by=by, from_rows=True, **span), by
    for workflow in WORKFLOWS:
        kept = store.loop_counts(workflow=workflow, by=("day",), **span)
        assert kept == store.loop_counts(workflow=workflow, by=("day",), from_rows=True, **span), workflow
        assert store.session_depths(workflow=workflow, **span) == store.session_depths(
            workflow=workflow, from_rows=True, **span
        )
    assert store.session_depths(**span) == store.session_depths(from_rows=True, **span)
    for experiment in EXPERIMENTS:
        for by in (("arm",), ("day", "arm"), ("workflow", "arm"), ()):
            kept = store.loop_counts(experiment=experiment, by=by, **span)
            assert kept == store.loop_counts(experiment=experiment, by=by, from_rows=True, **span), (experiment, by)
        assert store.session_depths(experiment=experiment, **span) == store.session_depths(
            experiment=experiment, from_rows=True, **span
        )
        for workflow in WORKFLOWS:
            kept = store.loop_counts(workflow=workflow, experiment=experiment, by=("arm",), **span)
            counted = store.loop_counts(workflow=workflow, experiment=experiment, by=("arm",), from_rows=True, **span)
            assert kept == counted, (workflow, experiment)
            assert store.session_depths(workflow=workflow, experiment=experiment, **span) == store.session_depths(
                workflow=workflow, experiment=experiment, from_rows=True, **span
            )
    for read in (store.repair_rankings, store.fallback_rankings):
        mine, theirs = read(**span), read(from_rows=True, **span)
        assert [sorted(map(repr, level)) for level in mine] == [sorted(map(repr, level)) for level in theirs]
    assert store.partial_counts(**span) == store.partial_counts(from_rows=True, **span)


def _empty(store: RunStore) -> None:
    assert isinstance(store, SqlRunStore)
    with store.engine.begin() as connection:
        for table in TABLES:
            connection.execute(delete(table))


@pytest.fixture(scope="module", params=("sqlite", "postgresql"))
def shared_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunStore]:
    """One store per backend for every generated history (emptied before each)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('rollups')}/rollups.db"
        with open_store(url) as opened:
            yield opened
        return
    admin = request.getfixturevalue("postgres_admin")
    schema = "marsrag_test_rollups_" + threading.get_native_id().__str__()
    with admin.begin() as connection:
        connection.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE; CREATE SCHEMA "{schema}"')
    from tests.store.conftest import POSTGRES_URL

    separator = "&" if "?" in POSTGRES_URL else "?"
    try:
        with open_store(f"{POSTGRES_URL}{separator}options=-csearch_path%3D{schema}") as opened:
            yield opened
    finally:
        with admin.begin() as connection:
            connection.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, window=windows)
def test_generated_histories_match_the_raw_rows(
    shared_store: RunStore, history: list[Operation], window: tuple[int | None, int | None, bool]
) -> None:
    """Runs in and out of experiment arms, repairs, fallbacks, follows (edited, suggested), superseded transitions,
    operator actions, ratings and re-votes, first tasks' support (strong, weak, none, unassessed, changed by a
    re-save): rollups == raw rows."""
    _empty(shared_store)
    apply(shared_store, history)
    assert_rollups_match(shared_store, window)
    before = {by: shared_store.loop_counts(by=by) for by in GROUPINGS}
    shared_store.rebuild_rollups()
    assert {by: shared_store.loop_counts(by=by) for by in GROUPINGS} == before
    assert_rollups_match(shared_store, window)


# A history with every kind of change, for the tests below: sessions over two days and two workflows, a routed
# workflow run later, a follow, an operator repair, superseded transitions, a partial task and its fallback.
HISTORY: list[Operation] = [
    NewRun(0, "support", 60, "running", None),
    SaveTask(0, 0, "valid", True, False, "review", "direct", None, "none"),
    SaveTask(0, 1, "partial", False, True, None, "fallback", None, "none"),
    SetStatus(0, "completed"),
    NewRun(0, "review", 26 * 60, "running", None),
    SaveTask(1, 0, "skipped", False, False, None, None, None, "weak"),
    SetStatus(1, "completed"),
    NewRun(1, "support", 27 * 60, "completed", None),
    SaveTask(2, 0, "failed", False, True, None, "fallback", None, "none"),
    SaveTask(2, 0, "valid", False, True, None, None, "operator_repair", "strong"),
    SaveTransition(2, 0, "direct"),
    Followed(2),
]


def test_the_scripted_history_matches_and_counts_what_it_should(store: RunStore) -> None:
    """The hand-checked figures of HISTORY, from the rollups, and the raw rows agree."""
    apply(store, HISTORY)
    assert_rollups_match(store, (30, 27 * 60 + 5, False))
    counts = store.loop_counts()[()]
    assert (counts.executions, counts.first_valid, counts.repaired) == (3, 1, 2)
    assert (counts.transitions, counts.fallbacks) == (3, 1)
    # Completed: r0 (routes to review, which r1 runs later in its session), r1 (no contract task, so it offers
    # nothing; nothing acted on it), r2 (followed; an operator repair).
    assert (counts.completed, counts.offering, counts.followed, counts.downstream) == (3, 2, 1, 2)
    assert counts.depths == {2: 1, 1: 1}
    # First tasks' support: r0 none (its second task's none is not a first task's), r1 weak (a task without the
    # contract is assessed too), r2 none then strong after the operator's re-save.
    assert (counts.assessed, counts.unsupported) == (3, 1)


@pytest.mark.parametrize("shards", [1, 8])
def test_concurrent_writers_lose_no_increment(db_url: str, shards: int) -> None:
    """8 writers (threads, one store each) on shared sessions, days and arms, voting on shared runs: the rollups
    equal the recount after."""
    writers, per_writer = 8, 6
    stores = [SqlRunStore.from_url(db_url, rollup_shards=shards) for _ in range(writers)]
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []
    voted = [f"v{n}" for n in range(3)]
    for run_id in voted:
        stores[0].create_run(
            RunRecord(run_id=run_id, session_id=run_id, goal="g", workflow="support", loop_mode="hard")
        )

    def write(number: int, store: RunStore) -> None:
        try:
            barrier.wait()
            for index in range(per_writer):
                run_id = f"w{number}-{index}"
                at = T0 + timedelta(hours=index * 7)
                # Two writers share each session: their runs race for the session's depth.
                experiment, arm = ARMS[number // 2 % 2]
                run = RunRecord(
                    run_id=run_id, session_id=f"s{number // 2}-{index // 2}", goal="g", loop_mode="hard",
                    workflow=WORKFLOWS[index % 2], status="running", created_at=at, updated_at=at,
                    experiment=experiment, arm=arm,
                )  # fmt: skip
                store.create_run(run)
                for position, status in enumerate(("valid", "partial")):
                    step = SaveTask(0, position, status, position == 0, position == 1, WORKFLOWS[1], "fallback", None)
                    store.save_task(_task(store, run, step), transition=_handoff(run, position, step.handoff))
                store.set_run_status(run_id, "completed")
                if index:
                    store.add_events([follow(f"w{number}-{index - 1}", edited=index % 2 == 0)])
                # Every writer votes on the same runs, down then up: each run's latest rating is up (the
                # last vote of whichever writer votes last), whatever the order the votes land in.
                for up in (False, True):
                    store.add_events([rating(f"v{index % len(voted)}", TARGETS[index % 2], up)])
        except BaseException as error:  # reported below: a thread's exception would be lost
            errors.append(error)

    threads = [threading.Thread(target=write, args=(n, s)) for n, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert not errors, errors
        counts = stores[0].loop_counts()[()]
        assert counts.executions == writers * per_writer * 2
        assert counts.completed == writers * per_writer
        # Two writers x two of their runs per session, every run counted: 12 sessions of 4 runs (and the voted).
        assert counts.depths == {4: writers // 2 * per_writer // 2, 1: len(voted)}
        # Each of v0, v1, v2 rated on its answer and on its next action by every writer: counted once, up.
        assert counts.answer_up == counts.answer_votes == len(voted)
        assert counts.next_action_up == counts.next_action_votes == len(voted)
        assert counts.followed_edited == writers * 2  # the follows of runs 1 and 3 of each writer
        arms = stores[0].loop_counts(experiment="hard_vs_soft", by=("arm",))
        assert {key: c.completed for key, c in arms.items()} == {("hard",): 24, ("soft",): 24}
        assert_rollups_match(stores[0])
    finally:
        for store in stores:
            store.close()


#: HISTORY with runs in experiment arms, edited and suggested follows and ratings (re-votes among them).
IN_ARMS: list[Operation] = [
    NewRun(0, "support", 60, "running", None, arm=0),
    SaveTask(0, 0, "valid", True, False, None, "direct", None),
    SetStatus(0, "completed"),
    NewRun(0, "support", 120, "completed", 0, arm=0, edited=True),
    NewRun(1, "support", 26 * 60, "completed", None, arm=1),
    SaveTask(2, 0, "valid", False, True, None, None, None),
    NewRun(1, "review", 27 * 60, "completed", 2, arm=1, edited=False),
    SaveTask(3, 0, "valid", True, False, None, None, None),
    NewRun(2, "support", 28 * 60, "completed", None),
    Rated(0, "answer", False),
    Rated(0, "answer", True),  # a re-vote replaces the first
    Rated(0, "next_action", True),
    Rated(2, "answer", False),
    Rated(3, "next_action", False),
    Rated(4, "answer", True),
]


def test_experiment_arms_feedback_and_edited_follows_count_what_they_should(store: RunStore) -> None:
    """The hand-checked figures of IN_ARMS per arm, from the rollups, and the raw rows agree."""
    apply(store, IN_ARMS)
    assert_rollups_match(store, (30, 27 * 60 + 5, False))
    arms = store.loop_counts(experiment="hard_vs_soft", by=("arm",))
    hard, soft = arms[("hard",)], arms[("soft",)]
    assert set(arms) == {("hard",), ("soft",)}
    # r0 (hard, offers, followed by r1 with an edited goal); r2 (soft, offers, followed as suggested).
    assert (hard.completed, hard.offering, hard.followed, hard.followed_edited) == (2, 1, 1, 1)
    assert (soft.completed, soft.offering, soft.followed, soft.followed_edited) == (2, 2, 1, 0)
    # r0's answer: down then up, counted once as up; its next action up. r2's answer down, r3's next action down.
    assert (hard.answer_up, hard.answer_votes, hard.next_action_up, hard.next_action_votes) == (1, 1, 1, 1)
    assert (soft.answer_up, soft.answer_votes, soft.next_action_up, soft.next_action_votes) == (0, 1, 0, 1)
    assert hard.depths == {2: 1} and soft.depths == {2: 1}
    # Outside the experiment: r4, rated up; every figure sums over the arms when not grouped by arm.
    assert store.loop_counts(by=("arm",))[(None,)].answer_up == 1
    total = store.loop_counts()[()]
    assert (total.answer_up, total.answer_votes, total.followed_edited, total.completed) == (2, 3, 1, 5)
    assert store.session_depths(experiment="hard_vs_soft") == {2: 2}
    assert store.loop_counts(experiment="agents") == {(): LoopCounts()}


def test_ratings_stored_before_their_run_count_once_it_is(store: RunStore) -> None:
    """A rating of a run not stored yet counts from the run's creation on, as the raw rows do; a re-vote moves it."""
    store.add_events([rating("later", "answer", False), rating("later", "answer", True)])
    assert store.loop_counts()[()].answer_votes == 0
    at = T0 + timedelta(hours=3)
    store.create_run(
        RunRecord(
            run_id="later",
            session_id="s",
            goal="g",
            workflow="support",
            loop_mode="hard",
            created_at=at,
            updated_at=at,
            experiment="hard_vs_soft",
            arm="soft",
        )  # fmt: skip
    )
    counts = store.loop_counts(experiment="hard_vs_soft", by=("arm",))[("soft",)]
    assert (counts.answer_up, counts.answer_votes) == (1, 1)
    store.add_events([rating("later", "answer", False)])
    counts = store.loop_counts(experiment="hard_vs_soft", by=("arm",))[("soft",)]
    assert (counts.answer_up, counts.answer_votes) == (0, 1)
    assert_rollups_match(store)


@pytest.mark.parametrize("revision", ["0009", "0010", "0012"])
def test_the_migration_backfills_a_store_from_before_it(db_url: str, tmp_path: Any, revision: str) -> None:
    """Rows stored at 0009 (no rollups yet), 0010 (day rows only) or 0012 (no arms, no feedback counts): opening
    the store migrates and recounts them."""
    source_url = f"sqlite:///{tmp_path}/source.db"
    with open_store(source_url) as source:
        apply(source, HISTORY + (IN_ARMS if revision == "0012" else []))
        # Support is from 0015 on: the rows copied to an older revision have none, so nothing counts as assessed.
        expected = {
            by: {key: replace(counts, assessed=0, unsupported=0) for key, counts in source.loop_counts(by=by).items()}
            for by in GROUPINGS
        }
        assert isinstance(source, SqlRunStore)
        with source.engine.connect() as connection:
            copied = {
                table.name: [dict(row) for row in connection.execute(select(table)).mappings()] for table in TABLES
            }
    # Only the columns the revision had (0012 added the experiment, the arm and the event detail; 0015 support;
    # 0016 the run's collections; 0018 its trace; 0019 the task's retrievers).
    dropped: tuple[str, ...] = ("id",) if revision == "0012" else ("id", "experiment", "arm", "detail")
    dropped += ("support_level", "support", "collections", "trace", "retrievers", "retrieval_skipped")
    dropped += () if revision >= "0010" else ("metrics_code",)
    kept = (runs, task_states, attempts, transitions, events) + ((rollups,) if revision >= "0010" else ())
    with at_revision(db_url, revision) as connection:
        for table in kept:
            rows = [
                {k: v for k, v in row.items() if k not in dropped}
                for row in copied[table.name]
                if table is not rollups or revision != "0010" or row["day"] != ALL_TIME  # 0010 kept no all-time rows
            ]
            if table is rollups:
                rows = _without_arms(rows)
            if rows:
                connection.execute(insert(_as_at(table, rows[0])), rows)
    with open_store(db_url) as migrated:
        assert {by: migrated.loop_counts(by=by) for by in GROUPINGS} == expected
        assert_rollups_match(migrated)


@pytest.mark.parametrize(
    ("since", "until", "days", "edges"),
    [
        # All history, whole days: no raw rows at all.
        (None, None, Days(None, None), []),
        ("2026-11-01T00:00", "2026-11-03T00:00", Days(date(2026, 11, 1), date(2026, 11, 3)), []),
        # Late in the day the part inside the window is the shorter: added.
        ("2026-11-01T20:00", None, Days(date(2026, 11, 2), None), [("2026-11-01T20:00", "2026-11-02T00:00", 1)]),
        # Early in the day the part before the window is: the whole day, less that part.
        ("2026-11-01T03:00", None, Days(date(2026, 11, 1), None), [("2026-11-01T00:00", "2026-11-01T03:00", -1)]),
        (None, "2026-11-05T02:00", Days(None, date(2026, 11, 5)), [("2026-11-05T00:00", "2026-11-05T02:00", 1)]),
        (None, "2026-11-05T22:00", Days(None, date(2026, 11, 6)), [("2026-11-05T22:00", "2026-11-06T00:00", -1)]),
        # Within one day (or nearly): the raw rows of the window.
        ("2026-11-01T02:00", "2026-11-01T04:00", None, [("2026-11-01T02:00", "2026-11-01T04:00", 1)]),
        ("2026-11-01T20:00", "2026-11-02T02:00", None, [("2026-11-01T20:00", "2026-11-02T02:00", 1)]),
        ("2026-11-01T04:00", "2026-11-01T04:00", None, []),
    ],
)
def test_a_window_is_whole_days_and_the_shorter_part_of_each_partial_day(
    since: str | None, until: str | None, days: Days | None, edges: list[tuple[str, str, int]]
) -> None:
    """``split`` reads at most half a day of raw rows per edge, adding or taking it from the whole days."""
    found = split(Span(_utc(since), _utc(until)))
    assert found == (days, [Edge(Span(_utc(a), _utc(b)), sign) for a, b, sign in edges])


ARM_COLUMNS = ("experiment", "arm")


def _as_at(table: Any, row: dict[str, Any]) -> Any:
    """A table with only the columns an older revision had (those its rows carry): no column it lacked, not even
    one today's schema would fill with a default, is written."""
    return sa_table(table.name, *(sa_column(c.name, c.type) for c in table.columns if c.name in row))


def _without_arms(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rollup rows as 0012 kept them: summed over the arms (their counters the store recounts on opening)."""
    summed: dict[tuple[Any, ...], int] = {}
    for row in rows:
        key = tuple((k, v) for k, v in row.items() if k not in (*ARM_COLUMNS, "n"))
        summed[key] = summed.get(key, 0) + row["n"]
    return [{**dict(key), "n": n} for key, n in summed.items()]


def _utc(moment: str | None) -> datetime | None:
    return datetime.fromisoformat(moment).replace(tzinfo=UTC) if moment else None


def test_a_downgrade_to_0010_keeps_the_day_rows_only(db_url: str) -> None:
    """0010 reads all history as the sum of every row: its rollups are the day rows, the all-time ones gone."""
    with open_store(db_url) as store:
        apply(store, HISTORY)
        assert isinstance(store, SqlRunStore)
        old = _as_at(rollups, {c.name: None for c in rollups.columns if c.name not in ARM_COLUMNS})
        with store.engine.connect() as connection:
            rows = [tuple(row) for row in connection.execute(select(old))]
    days = sorted(row for row in rows if row[1] != ALL_TIME)
    assert days and len(days) < len(rows)
    with at_revision(db_url, "0010", downgrade=True) as connection:
        assert sorted(tuple(row) for row in connection.execute(select(old))) == days
    with open_store(db_url) as reopened:  # back at the head: recounted, all-time rows again
        assert_rollups_match(reopened)
