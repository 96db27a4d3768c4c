"""Text an older MarsRAG stored unencodable: reads tolerate it, migration 0014 and ``--rebuild`` repair it.

Before the storable-text rule a feedback comment posted with a ``\\ud800`` escape was stored as such in
``events.detail``; on PostgreSQL every JSON operator on the row then failed (the windowed metrics, ``--verify``,
``--rebuild``). The rows are written here as that MarsRAG wrote them: raw JSON text with the escapes.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import text

from marsrag.metrics.verify import verify
from marsrag.runtime.feedback import record_feedback
from marsrag.store import open_store
from marsrag.store.schema import VERSION_TABLE
from tests.store.migrations import at_revision
from tests.store.records import T0, run, task

#: As json.dumps wrote it: a lone high and a lone low surrogate, and a NUL, escaped.
BAD_DETAIL = '{"on": "answer", "rating": "up", "comment": "x\\ud800y\\udcff\\u0000z"}'
BAD_ERRORS = '[{"field": "hook", "code": "too_short", "message": "m\\udfff"}]'
CLEAN_COMMENT = "x\ufffdy\ufffd\ufffdz"


def _corrupt(db_url: str, run_id: str) -> None:
    """Store the feedback's detail and the task's errors as an older MarsRAG did, escapes and all."""
    with open_store(db_url) as store, store.engine.begin() as connection:  # type: ignore[attr-defined]
        connection.execute(
            text("UPDATE events SET detail = :detail WHERE run_id = :run AND name = 'loop.feedback.recorded'"),
            {"detail": BAD_DETAIL, "run": run_id},
        )
        connection.execute(text("UPDATE task_states SET validation_errors = :errors"), {"errors": BAD_ERRORS})


def _raw(db_url: str) -> list[str]:
    with open_store(db_url) as store, store.engine.connect() as connection:  # type: ignore[attr-defined]
        details = connection.execute(text("SELECT CAST(detail AS TEXT) FROM events WHERE detail IS NOT NULL"))
        errors = connection.execute(text("SELECT CAST(validation_errors AS TEXT) FROM task_states"))
        return [*details.scalars(), *errors.scalars()]


def _rated_run(db_url: str) -> str:
    with open_store(db_url) as store:
        store.create_run(run("run-1", status="completed", created_at=T0, updated_at=T0))
        store.save_task(task("run-1", "t1"))
        record_feedback(store, "run-1", on="answer", rating="up", comment="fine")
    return "run-1"


def test_reads_tolerate_unencodable_rows_and_the_migration_repairs_them(db_url: str) -> None:
    run_id = _rated_run(db_url)
    _corrupt(db_url, run_id)
    with open_store(db_url) as store:
        # Read as records, the text is storable before any repair: no read breaks on it.
        [rating] = [e for e in store.get_events(run_id) if e.name == "loop.feedback.recorded"]
        assert rating.detail == {"on": "answer", "rating": "up", "comment": CLEAN_COMMENT}
        assert store.get_tasks(run_id)[0].validation.errors[0].message == "m\ufffd"
    # A database at revision 0013 holding such rows, as the older MarsRAG left it (0014 rewrote nothing yet).
    with at_revision(db_url, "0014", downgrade=True) as connection:
        connection.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = '0013'"))
    with open_store(db_url) as store:  # migrates to 0014: the rows are rewritten
        verdict = verify(store)
        assert verdict.ok, [d.line() for d in verdict.differences]
        window = store.loop_counts(since=T0 - timedelta(days=1), until=T0 + timedelta(days=1))
        assert sum(counts.executions for counts in window.values()) == 1
    assert all("\\ud" not in raw and "\\u0000" not in raw for raw in _raw(db_url)), _raw(db_url)
    assert CLEAN_COMMENT.encode("unicode_escape").decode() in "".join(_raw(db_url)).replace("\\\\", "\\")


def test_rebuild_repairs_rows_an_older_writer_stored_after_the_migration(db_url: str) -> None:
    run_id = _rated_run(db_url)
    _corrupt(db_url, run_id)
    with open_store(db_url) as store:
        store.rebuild_rollups()
        verdict = verify(store)
        assert verdict.ok, [d.line() for d in verdict.differences]
    assert all("\\ud" not in raw and "\\u0000" not in raw for raw in _raw(db_url)), _raw(db_url)
