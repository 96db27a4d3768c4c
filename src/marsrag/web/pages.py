"""The pages: runs list, ask, run page, session chain, sign-in; and the forms behind the operator buttons.

Every post answers with a redirect to the page showing its result (post/redirect/get), so reloading a
page never repeats an action.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, BackgroundTasks, Depends, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from marsrag.errors import ConfigError, InputError, RunNotFoundError
from marsrag.goals import MAX_GOAL_CHARS, MAX_SESSION_ID_CHARS, goal_problem, session_id_problem
from marsrag.runtime.actions import Action
from marsrag.runtime.feedback import MAX_COMMENT_CHARS
from marsrag.views.outcome import outcome_text, run_header
from marsrag.web.backend import Backend
from marsrag.web.csrf import CSRF_FIELD, csrf_ok
from marsrag.web.guards import backend_of, require_form_writer, same_origin
from marsrag.web.render import render
from marsrag.web.security import TOKEN_COOKIE

router = APIRouter(include_in_schema=False)

PAGE_SIZE = 50
#: The icon browsers ask for at /favicon.ico whatever a page links (the pages link it, and its SVG twin).
FAVICON = Path(__file__).parent / "static" / "favicon.ico"
#: A day: a changed icon reaches browsers by the next day, and a tab does not ask again on every page.
FAVICON_MAX_AGE = 86_400
BackendDep = Annotated[Backend, Depends(backend_of)]
FormDep = Annotated[dict[str, Any], Depends(require_form_writer)]


@router.get("/", response_class=HTMLResponse)
def runs_page(request: Request, backend: BackendDep, page: Annotated[int, Query(ge=1, le=100_000)] = 1) -> Response:
    """The runs list, newest first, a page at a time."""
    rows = backend.run_rows(limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE)
    shown = [
        {**row, "header": run_header(row["status"], row["outcome"]), "outcome_text": outcome_text(row["outcome"])}
        for row in rows[:PAGE_SIZE]
    ]
    return render(request, "runs.html", {"rows": shown, "page": page, "has_next": len(rows) > PAGE_SIZE})


@router.get("/ask", response_class=HTMLResponse)
def ask_page(request: Request, backend: BackendDep, session_id: str | None = None) -> Response:
    """The ask form: goal, workflow (each with its description), session; and which LLM will answer."""
    return _ask(request, backend, goal="", workflow=None, session_id=session_id or "", problem=None)


@router.post("/ask")
def ask(request: Request, backend: BackendDep, form: FormDep) -> Response:
    """Start a run for the form's goal and show its page (which follows its progress)."""
    given = str(form.get("goal", ""))
    goal = given.strip()
    workflow = str(form.get("workflow", "")).strip() or None
    session_id = str(form.get("session_id", "")).strip() or None
    # The rules of marsrag.goals, as the CLI and the API apply them; said on the form, as a sentence.
    problem = goal_problem(given) or (session_id_problem(session_id) if session_id is not None else None)
    if problem is None:
        try:
            run = backend.start_run(goal, workflow=workflow, session_id=session_id)
        except (ConfigError, InputError) as error:
            problem = str(error)
        else:
            return RedirectResponse(f"/runs/{quote(run.run_id, safe='')}", status_code=303)
    shown = problem[:1].upper() + problem[1:] + ("" if problem.endswith(".") else ".")
    return _ask(request, backend, goal=goal, workflow=workflow, session_id=session_id or "", problem=shown)


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: str, backend: BackendDep, tasks: BackgroundTasks) -> Response:
    """A run, answer first: goal, outcome, summary and next-action card, then one block per task.

    Refreshes itself while it runs.
    """
    view = backend.run_view(run_id)
    # Recorded after the response is sent: the page does not wait for the event write.
    tasks.add_task(backend.record_rendered, view)
    return render(request, "run.html", {"run": view, "max_goal": MAX_GOAL_CHARS, "max_comment": MAX_COMMENT_CHARS})


@router.post("/runs/{run_id}/follow")
def follow(run_id: str, backend: BackendDep, form: FormDep) -> Response:
    """Follow the run's next action and show the new run (the one already following it, on a repeat).

    The form's ``goal`` box holds the next action; edited, the new run asks the edit (a blank box: the action).
    """
    goal = str(form.get("goal", "")).strip() or None
    run, _ = backend.follow(run_id, goal=goal)
    return RedirectResponse(f"/runs/{quote(run.run_id, safe='')}", status_code=303)


@router.post("/runs/{run_id}/feedback")
def feedback(run_id: str, backend: BackendDep, form: FormDep) -> Response:
    """Record a thumbs up or down on the run's answer or next action and show the page again, at that part."""
    on = str(form.get("on", ""))
    comment = str(form.get("comment", "")) or None
    backend.rate(run_id, on=on, rating=str(form.get("rating", "")), comment=comment)
    anchor = "next-action" if on == "next_action" else "summary"
    return RedirectResponse(f"/runs/{quote(run_id, safe='')}#{anchor}", status_code=303)


@router.post("/runs/{run_id}/tasks/{task_id}/{action}")
def act(run_id: str, task_id: str, action: str, backend: BackendDep, _form: FormDep) -> Response:
    """Run an operator action (``repair`` or ``regenerate``) on a task and show the task again."""
    if action not in ("repair", "regenerate"):
        raise HTTPException(404, f"no action {action!r}: use repair or regenerate")
    chosen: Action = "repair" if action == "repair" else "regenerate"
    backend.act(chosen, run_id, task_id)
    return RedirectResponse(f"/runs/{quote(run_id, safe='')}#task-{quote(task_id, safe='')}", status_code=303)


@router.get("/sessions/{session_id:path}", response_class=HTMLResponse)
def session_page(request: Request, session_id: str, backend: BackendDep) -> Response:
    """A session: its runs as a chain, oldest first, each with its status and next action."""
    views = backend.session_views(session_id)
    if not views:
        raise RunNotFoundError(f"no session {session_id!r}")
    return render(request, "session.html", {"session_id": session_id, "runs": views})


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> Response:  # noqa: A002 - the conventional parameter name
    """Sign in with the server's token (needed to use the buttons when the server is not on loopback)."""
    return render(request, "login.html", {"next": _local_path(next), "problem": None})


@router.post("/login")
async def login(request: Request) -> Response:
    """Check the token and keep it in an HttpOnly cookie for the forms."""
    form = dict(await request.form())
    settings = request.app.state.settings
    target = _local_path(str(form.get("next", "/")))
    if not same_origin(request) or not csrf_ok(request, form.get(CSRF_FIELD)):
        return render(request, "login.html", {"next": target, "problem": "The form expired: try again."}, 403)
    token = str(form.get("token", ""))
    if not settings.token or not secrets.compare_digest(token.encode(), settings.token.encode()):
        return render(request, "login.html", {"next": target, "problem": "That is not the server's token."}, 401)
    response = RedirectResponse(target, status_code=303)
    secure = request.url.scheme == "https"
    response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict", secure=secure, path="/")
    return response


@router.get("/favicon.ico")
def favicon() -> FileResponse:
    """The site's icon (open to anyone, as the static files are; cacheable for a day)."""
    return FileResponse(
        FAVICON, media_type="image/x-icon", headers={"Cache-Control": f"public, max-age={FAVICON_MAX_AGE}"}
    )


def _ask(
    request: Request, backend: Backend, *, goal: str, workflow: str | None, session_id: str, problem: str | None
) -> Response:
    choices = backend.workflow_choices()
    context = {
        "goal": goal,
        "workflows": choices,
        "workflow": workflow or (choices[0].name if choices else ""),
        "llm": backend.answering_llm(),
        "session_id": session_id,
        "problem": problem,
        "max_goal": MAX_GOAL_CHARS,
        "max_session_id": MAX_SESSION_ID_CHARS,
    }
    return render(request, "ask.html", context, status=422 if problem else 200)


def _local_path(target: str) -> str:
    """``target`` when it is a path on this server, else ``/`` (no open redirect)."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"
