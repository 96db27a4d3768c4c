"""The JSON API: the pages' data and actions for scripts (OpenAPI docs at ``/docs``).

Mutating endpoints need ``Authorization: Bearer $MARSRAG_TOKEN`` when the server binds off loopback, and
refuse requests a browser sent from another origin.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Request, Response, status
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from marsrag.errors import ConfigError, InputError
from marsrag.goals import SESSION_ID_PATTERN, Goal, SessionId
from marsrag.runtime.feedback import MAX_COMMENT_CHARS
from marsrag.state import FeedbackRating, FeedbackTarget, LoopEvent, RunStatus, TaskState, TransitionRecord
from marsrag.views.live import Cursor
from marsrag.web.backend import Backend
from marsrag.web.errors_doc import ERROR_RESPONSES
from marsrag.web.events_stream import event_stream
from marsrag.web.guards import InvalidField, backend_of, require_api_writer
from marsrag.web.schemas import Health

router = APIRouter(prefix="/api", tags=["runs"], responses=ERROR_RESPONSES)
#: Longest collection name a request may give: a default collection is a resolved folder, as long as a path.
MAX_COLLECTION_NAME = 4096
health_router = APIRouter(tags=["health"])
knowledge_router = APIRouter(prefix="/api", tags=["knowledge"], responses=ERROR_RESPONSES)


class RunRequest(BaseModel):
    """A goal to run: `goal` required, `workflow` and `session_id` optional (the rules of marsrag.goals)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    goal: Goal = Field(
        description="What the user wants answered or done: non-blank, at most 100,000 characters, no control "
        "characters but newline and tab."
    )
    workflow: str | None = Field(default=None, max_length=200, description="Default: the config's first user-facing.")
    session_id: SessionId | None = Field(
        default=None,
        description="Default: a new session. 1-128 letters, digits and - _ . :, starting with a letter or digit.",
    )
    collections: list[Annotated[str, StringConstraints(min_length=1, max_length=MAX_COLLECTION_NAME)]] | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="Knowledge base collections the run retrieves from (as `GET /api/knowledge` names them); "
        "default: the workflow's `collections:`, else all. An unknown one is refused (422) and nothing is "
        "stored.",
        examples=[["handbook"]],
    )


class FollowRequest(BaseModel):
    """An optional body of a follow: ``goal``, the user's edit of the next action (an ``edited`` follow)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    goal: Goal | None = Field(
        default=None,
        description="Asked instead of the next action; the follow is `edited` unless it is the next action "
        "itself (then `suggested`, as without it). The goal rules apply.",
    )


class FeedbackRequest(BaseModel):
    """A rating of a finished run's answer or next action, with an optional comment."""

    model_config = ConfigDict(extra="forbid")

    on: FeedbackTarget = Field(description="What is rated: the run's `answer` or its `next_action`.")
    rating: FeedbackRating = Field(description="`up` (helpful) or `down` (not helpful).")
    comment: str | None = Field(
        default=None,
        description=f"Why, in words: trimmed, at most {MAX_COMMENT_CHARS:,} characters, no control characters but "
        "newline and tab; blank is none.",
    )


class FeedbackDetail(BaseModel):
    """What a rating says: the part rated, how, and why."""

    on: FeedbackTarget = Field(examples=["answer"])
    rating: FeedbackRating = Field(examples=["up"])
    comment: str | None = Field(description="Null when none was given.", examples=["Found the root cause"])


class FeedbackEvent(BaseModel):
    """The stored ``loop.feedback.recorded`` event (as `runs show` lists it)."""

    name: Literal["loop.feedback.recorded"]
    run_id: str
    task_id: str | None = Field(description="The run's last task under the contract (null when none ran under it).")
    loop_contract_version: str | None
    loop_mode: str | None
    validation_status: str | None
    transition_mode: str | None
    timestamp: str
    detail: FeedbackDetail


class Started(BaseModel):
    """A run started in the background."""

    run_id: str
    session_id: str
    status: Literal["pending"] = "pending"


class Followed(BaseModel):
    """The run that follows a run's next action: started now (202), or already (200, ``already_followed``)."""

    run_id: str
    session_id: str
    status: RunStatus
    already_followed: bool = False


class Outcome(BaseModel):
    """How a run's tasks ended: the number of tasks in each validation status (``skipped``: no contract)."""

    valid: int = Field(ge=0)
    partial: int = Field(ge=0)
    failed: int = Field(ge=0)
    skipped: int = Field(ge=0)


class RunRow(BaseModel):
    """One run of the runs list (a `marsrag runs list --format json` row)."""

    run_id: str
    session_id: str
    goal: str
    workflow: str
    status: RunStatus = Field(description="Whether the run finished; how its tasks ended is in `outcome`.")
    created_at: str
    experiment: str | None = Field(description="The experiment the run's session takes part in; null outside one.")
    arm: str | None = Field(description="The experiment arm the run's session was assigned; null outside one.")
    stale: bool = Field(description="Left pending or running by a process that is gone.")
    outcome: Outcome
    short_id: str = Field(description="The run id's shortest unique prefix (8+ characters), accepted for the id.")


class RunDocument(BaseModel):
    """A run (the `marsrag runs show --format json` document): tasks with attempts, transitions, events."""

    run_id: str
    session_id: str
    goal: str
    workflow: str
    loop_mode: str
    experiment: str | None = Field(description="The experiment the run's session takes part in; null outside one.")
    arm: str | None = Field(description="The experiment arm the run's session was assigned; null outside one.")
    collections: list[str] | None = Field(
        description="The knowledge base collections its retrieval kept to; null: all of them."
    )
    status: RunStatus = Field(description="Whether the run finished; how its tasks ended is in `outcome`.")
    status_reason: str | None
    summary: str
    created_at: str
    outcome: Outcome
    tasks: list[TaskState] = Field(description="The tasks in workflow order, each with its attempts.")
    transitions: list[TransitionRecord] = Field(description="The handoffs between the tasks, in order.")
    events: list[LoopEvent] = Field(description="The run's loop events, oldest first (`detail` only when one has it).")


class KnowledgeCollection(BaseModel):
    """A collection of the knowledge base (a `marsrag kb list --format json` collection)."""

    name: str = Field(description="The name given to ingest (`--collection`), else the resolved folder ingested.")
    documents: int = Field(ge=0, description="Documents it holds.")
    chunks: int = Field(ge=0, description="Chunks of those documents (what retrieval searches).")
    ingested_at: str = Field(description="When its most recently ingested document was (ISO 8601, UTC).")

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"name": "handbook", "documents": 2, "chunks": 9, "ingested_at": "2026-12-05T12:06:07+00:00"}]
        }
    )


class KnowledgeDocument(BaseModel):
    """A document of the knowledge base (a `marsrag kb list --format json` document)."""

    collection: str
    path: str = Field(description="The path its citations show (`kb/doc.md#Heading` cites a section of it).")
    chunks: int = Field(ge=0)
    size: int = Field(ge=0, description="Bytes of the content ingested.")
    source: str | None = Field(description="The resolved file it was read from; null for documents ingested before.")
    ingested_at: str = Field(description="When this version was ingested (ISO 8601, UTC).")

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "collection": "handbook",
                    "path": "kb/runbook.md",
                    "chunks": 5,
                    "size": 2048,
                    "source": "/srv/docs/kb/runbook.md",
                    "ingested_at": "2026-12-05T12:06:07+00:00",
                }
            ]
        }
    )


class KnowledgeEmbedding(BaseModel):
    """An embedder whose vectors the knowledge base holds (a `marsrag kb list --format json` embedding)."""

    embedder: str = Field(description="Its identity, as configured (`wordllama/l2_supercat-256`, `ollama/MODEL`).")
    dimension: int = Field(ge=0, description="Its vectors' dimension.")
    chunks: int = Field(ge=0, description="Chunks with a vector of it (all of them once an ingest embedded them).")

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"embedder": "wordllama/l2_supercat-256", "dimension": 256, "chunks": 216}]}
    )


class KnowledgeListing(BaseModel):
    """What the knowledge base holds: its collections by name, then its documents by collection and path, and
    the embedders its chunks' vectors were made by (the vector half of hybrid search)."""

    collections: list[KnowledgeCollection]
    documents: list[KnowledgeDocument]
    embeddings: list[KnowledgeEmbedding] = Field(default_factory=list)


BackendDep = Annotated[Backend, Depends(backend_of)]


@health_router.get("/health", response_model=Health, summary="Liveness: answers without touching the store")
def health() -> Health:
    """``{"status": "ok"}``."""
    return Health(status="ok")


@router.get(
    "/runs", response_model=list[RunRow], summary="List runs, newest first (the `marsrag runs list --format json` rows)"
)
def list_runs(
    backend: BackendDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
    session_id: Annotated[str | None, Query(pattern=SESSION_ID_PATTERN)] = None,
) -> list[dict[str, Any]]:
    """Runs, newest first."""
    return backend.run_rows(limit=limit, offset=offset, session_id=session_id)


@router.post(
    "/runs",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=Started,
    dependencies=[Depends(require_api_writer)],
    summary="Start a run; it executes in the background",
)
def start_run(body: RunRequest, backend: BackendDep, response: Response) -> Started:
    """Record a pending run for ``goal`` and return its id at once."""
    try:
        run = backend.start_run(
            body.goal, workflow=body.workflow, session_id=body.session_id, collections=body.collections
        )
    except ConfigError as error:
        raise InvalidField("workflow", str(error)) from error
    except InputError as error:  # the goal and session were checked with the body: the collections are left
        raise InvalidField("collections", str(error)) from error
    response.headers["Location"] = f"/api/runs/{run.run_id}"
    return Started(run_id=run.run_id, session_id=run.session_id)


@router.get(
    "/runs/{run_id}",
    response_model=RunDocument,
    # What the document leaves out stays out (an event without detail has no `detail` key), as in the CLI's.
    response_model_exclude_unset=True,
    summary="One run (the `marsrag runs show --format json` document)",
)
def show_run(run_id: str, backend: BackendDep) -> dict[str, Any]:
    """The run document: tasks with attempts, transitions, events."""
    return backend.run_document(run_id)


@router.get(
    "/runs/{run_id}/stream",
    response_class=StreamingResponse,
    summary="A run's task updates as server-sent events, until it ends",
    responses={
        200: {
            # Each event's data: a task (as in the run document; in progress: see below) or the run's end.
            "content": {
                "text/event-stream": {
                    # One server-sent event (OpenAPI 3.2's shape of an event-stream item).
                    "schema": {
                        "type": "object",
                        "properties": {
                            "event": {"enum": ["task", "end"]},
                            "data": {"type": "string", "contentMediaType": "application/json"},
                            "id": {"type": "string", "pattern": "^[0-9]+-[0-9]+$"},
                            "retry": {"type": "integer"},
                        },
                    }
                }
            },
            "description": "`event: task` per task update (data: the task's JSON as in `runs show`; a task being "
            "written has `validation.status` `in_progress`, its sections so far in `loop_output` and a `progress` "
            "object), then `event: end` (data: the run's status and outcome). Each event's `id` resumes the "
            "stream after it (`Last-Event-ID`). A finished run sends each task's final state, then `end`.",
        }
    },
)
async def stream_run(
    run_id: str,
    request: Request,
    backend: BackendDep,
    last_event_id: Annotated[
        str | None, Header(description="The id of the last event received: the stream resumes after it.")
    ] = None,
    after: Annotated[
        str | None,
        Query(
            max_length=40,
            description="An event id to start after when there is no `Last-Event-ID` (a page that shows some "
            "tasks already: `3-0` skips the first three).",
        ),
    ] = None,
) -> StreamingResponse:
    """Watch a run: every task update after `Last-Event-ID` (else `after`; else from the start), then its end."""
    backend.store.get_run(run_id)  # 404 before the stream starts
    return StreamingResponse(
        event_stream(request, backend.store, run_id, Cursor.parse(last_event_id or after)),
        media_type="text/event-stream",
        # No proxy may buffer or cache the stream.
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.post(
    "/runs/{run_id}/follow",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=Followed,
    dependencies=[Depends(require_api_writer)],
    responses={200: {"model": Followed, "description": "The run's next action was followed already: that run"}},
    summary="Follow the run's next action: the next run of its session, in the background (at most once)",
)
def follow_run(run_id: str, backend: BackendDep, response: Response, body: FollowRequest | None = None) -> Followed:
    """Record ``loop.action.followed`` and start the next run with the next action (or the body's `goal`) as goal.

    A run's next action is followed once: a repeated request (a double click) gets that run, with 200.
    """
    run, started = backend.follow(run_id, goal=body.goal if body is not None else None)
    response.headers["Location"] = f"/api/runs/{run.run_id}"
    if not started:
        response.status_code = status.HTTP_200_OK
    return Followed(run_id=run.run_id, session_id=run.session_id, status=run.status, already_followed=not started)


@router.post(
    "/runs/{run_id}/feedback",
    status_code=status.HTTP_201_CREATED,
    response_model=FeedbackEvent,
    dependencies=[Depends(require_api_writer)],
    summary="Rate a finished run's answer or next action (up or down, optional comment)",
)
def rate_run(run_id: str, body: FeedbackRequest, backend: BackendDep) -> dict[str, Any]:
    """Store a ``loop.feedback.recorded`` event; a later rating of the same part replaces this one in the metrics.

    409 while the run is pending or running, or for `next_action` on a run without one.
    """
    event = backend.rate(run_id, on=body.on, rating=body.rating, comment=body.comment)
    return event.to_dict()


@router.post(
    "/runs/{run_id}/tasks/{task_id}/repair",
    response_model=TaskState,
    dependencies=[Depends(require_api_writer)],
    summary="Run the task's repair again (for a failed or partial task)",
)
def repair_task(run_id: str, task_id: str, backend: BackendDep) -> TaskState:
    """Re-run the task with its errors fed back; returns its new state (earlier attempts kept)."""
    return backend.act("repair", run_id, task_id)


@router.post(
    "/runs/{run_id}/tasks/{task_id}/regenerate",
    response_model=TaskState,
    dependencies=[Depends(require_api_writer)],
    summary="Regenerate only the task's failing sections and merge them with the passing ones",
)
def regenerate_task(run_id: str, task_id: str, backend: BackendDep) -> TaskState:
    """Re-ask the failing sections; returns the task's new state (earlier attempts kept)."""
    return backend.act("regenerate", run_id, task_id)


@knowledge_router.get(
    "/knowledge",
    response_model=KnowledgeListing,
    summary="The knowledge base: collections, then documents (the `marsrag kb list --format json` document)",
)
def knowledge(
    backend: BackendDep,
    collection: Annotated[str | None, Query(min_length=1, max_length=MAX_COLLECTION_NAME)] = None,
) -> dict[str, Any]:
    """Collections with their documents and chunks, then each document with its chunks and ingest time.

    `collection` keeps to one collection (422 when it holds no document).
    """
    try:
        return backend.knowledge(collection=collection).to_dict()
    except InputError as error:
        raise InvalidField("collection", str(error)) from error
