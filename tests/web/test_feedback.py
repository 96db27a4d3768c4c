"""Feedback and follow kinds through the real app: the API, the run page's forms, the guards."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.contract.samples import CONTENT
from tests.web.conftest import Site, answer, csrf_of

pytestmark = pytest.mark.crewai

TOKEN = "s3cret-token-" + "x" * 24


def rated(site: Site, run_id: str) -> list[dict[str, Any]]:
    """The details of the run's stored loop.feedback.recorded events, in order."""
    events = site.client.get(f"/api/runs/{run_id}").json()["events"]
    return [event["detail"] for event in events if event["name"] == "loop.feedback.recorded"]


def follows(site: Site, run_id: str) -> list[dict[str, Any]]:
    events = site.client.get(f"/api/runs/{run_id}").json()["events"]
    return [event.get("detail") for event in events if event["name"] == "loop.action.followed"]


# -- POST /api/runs/{run_id}/feedback ----------------------------------------------------------------------------


def test_api_feedback_is_201_with_the_stored_event(site: Site) -> None:
    """A rating with a comment: 201, the event as stored (the comment trimmed), listed on the run."""
    run_id = site.start()
    response = site.client.post(
        f"/api/runs/{run_id}/feedback", json={"on": "answer", "rating": "down", "comment": "  Missed the cause. "}
    )
    assert response.status_code == 201, response.text
    event = response.json()
    assert (event["name"], event["run_id"], event["loop_mode"]) == ("loop.feedback.recorded", run_id, "hard")
    assert event["task_id"] is not None
    assert event["detail"] == {"on": "answer", "rating": "down", "comment": "Missed the cause."}
    assert rated(site, run_id) == [event["detail"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"on": "summary", "rating": "up"}, "on"),
        ({"on": "answer", "rating": "meh"}, "rating"),
        ({"on": "answer"}, "rating"),
        ({"on": "answer", "rating": "up", "stars": 5}, "stars"),
        ({"on": "answer", "rating": "up", "comment": "x" * 2001}, "comment"),
        ({"on": "answer", "rating": "up", "comment": "a\u0000b"}, "comment"),
    ],
)
def test_api_feedback_bad_input_is_422_naming_the_field_and_stores_nothing(
    site: Site, body: dict[str, Any], field: str
) -> None:
    """An unknown part or rating, a missing or unknown key, a comment too long or with a NUL: 422 with the field."""
    run_id = site.start()
    response = site.client.post(f"/api/runs/{run_id}/feedback", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field and response.json()["detail"]
    assert rated(site, run_id) == []


def test_api_feedback_on_an_unknown_run_is_404(site: Site) -> None:
    """404 with a JSON reason."""
    response = site.client.post("/api/runs/nope/feedback", json={"on": "answer", "rating": "up"})
    assert response.status_code == 404 and response.json()["error"] == "not_found"


def test_api_feedback_on_a_run_still_pending_is_409(site: Site) -> None:
    """A run this server holds, not finished: 409 (its answer is not final); nothing stored."""
    pending = site.backend.runner.start("Checkout latency breached its SLO")
    response = site.client.post(f"/api/runs/{pending.run_id}/feedback", json={"on": "next_action", "rating": "up"})
    assert response.status_code == 409 and response.json()["error"] == "conflict"
    assert "still pending" in response.json()["detail"]
    assert rated(site, pending.run_id) == []


def test_api_feedback_needs_the_token_off_loopback_and_the_same_origin(site_factory: Callable[..., Site]) -> None:
    """Off loopback: 401 without the bearer token, 201 with it; a browser post from another origin: 403."""
    site = site_factory([answer()] * 6, host="0.0.0.0", token=TOKEN)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    started = site.client.post("/api/runs", json={"goal": "Checkout latency"}, headers=bearer)
    site.wait()
    run_id = started.json()["run_id"]
    body = {"on": "answer", "rating": "up"}
    refused = site.client.post(f"/api/runs/{run_id}/feedback", json=body)
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
    evil = {**bearer, "Origin": "http://evil.example"}
    assert site.client.post(f"/api/runs/{run_id}/feedback", json=body, headers=evil).status_code == 403
    assert site.client.post(f"/api/runs/{run_id}/feedback", json=body, headers=bearer).status_code == 201
    events = site.client.get(f"/api/runs/{run_id}", headers=bearer).json()["events"]
    assert [e["detail"]["rating"] for e in events if e["name"] == "loop.feedback.recorded"] == ["up"]


def test_the_feedback_endpoint_is_in_the_openapi_document(site: Site) -> None:
    """Documented with its body (on, rating, comment) and its 201."""
    schema = site.client.get("/openapi.json").json()
    operation = schema["paths"]["/api/runs/{run_id}/feedback"]["post"]
    assert "201" in operation["responses"]
    assert set(schema["components"]["schemas"]["FeedbackRequest"]["properties"]) == {"on", "rating", "comment"}


# -- the run page's forms ----------------------------------------------------------------------------------------


def test_the_run_page_offers_thumbs_on_the_answer_and_the_next_action(site: Site) -> None:
    """Two forms posting to /feedback with the CSRF token, buttons in words, nothing pressed before a rating."""
    run_id = site.start()
    page = site.client.get(f"/runs/{run_id}").text
    forms = re.findall(r'<form class="feedback" method="post" action="/runs/[^"]+/feedback" data-on="(\w+)"', page)
    assert forms == ["answer", "next_action"]
    assert page.count('name="csrf_token"') >= 3  # follow + two feedback forms
    assert "Was this answer helpful?" in page and "Was this next action helpful?" in page
    assert 'aria-pressed="true"' not in page and "You rated this" not in page


def test_a_thumbs_up_on_the_answer_is_stored_and_shown(site: Site) -> None:
    """The form posts, redirects to the summary, and the page says the rating; a later thumbs down replaces it."""
    run_id = site.start()
    token = csrf_of(site.client, f"/runs/{run_id}")
    form = {"csrf_token": token, "on": "answer", "rating": "up", "comment": "Clear."}
    response = site.client.post(f"/runs/{run_id}/feedback", data=form, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == f"/runs/{run_id}#summary"
    assert rated(site, run_id) == [{"on": "answer", "rating": "up", "comment": "Clear."}]
    page = site.client.get(f"/runs/{run_id}").text
    assert 'data-on="answer" data-rating="up"' in page and "You rated this helpful." in page
    assert 'data-on="next_action" data-rating=""' in page
    site.client.post(f"/runs/{run_id}/feedback", data={**form, "rating": "down", "comment": ""})
    page = site.client.get(f"/runs/{run_id}").text
    assert 'data-on="answer" data-rating="down"' in page and "You rated this not helpful." in page


def test_the_feedback_form_needs_its_csrf_token(site: Site) -> None:
    """Without the token: 403, nothing stored."""
    run_id = site.start()
    csrf_of(site.client, f"/runs/{run_id}")
    response = site.client.post(f"/runs/{run_id}/feedback", data={"on": "answer", "rating": "up"})
    assert response.status_code == 403
    assert rated(site, run_id) == []


# -- follow kinds ------------------------------------------------------------------------------------------------


def test_the_follow_form_prefills_the_next_action_and_unchanged_it_is_suggested(site: Site) -> None:
    """The edit box holds the next action; submitted as is, the follow is suggested and asks it."""
    run_id = site.start()
    page = site.client.get(f"/runs/{run_id}").text
    box = re.search(r'<textarea id="follow-goal" name="goal"[^>]*>([^<]*)</textarea>', page)
    assert box and html.unescape(box.group(1)) == CONTENT["loop"]
    token = csrf_of(site.client, f"/runs/{run_id}")
    # A browser's textarea sends CRLF line ends; the goal is compared as stored.
    form = {"csrf_token": token, "goal": html.unescape(box.group(1)) + "\r\n"}
    response = site.client.post(f"/runs/{run_id}/follow", data=form, follow_redirects=False)
    assert response.status_code == 303
    site.wait()
    new_id = response.headers["location"].rsplit("/", 1)[-1]
    assert site.client.get(f"/api/runs/{new_id}").json()["goal"] == CONTENT["loop"]
    assert follows(site, run_id) == [{"follow_kind": "suggested"}]


def test_an_edited_follow_form_asks_the_edit(site: Site) -> None:
    """The user's own goal in the box: the new run asks it, the follow is edited."""
    run_id = site.start()
    token = csrf_of(site.client, f"/runs/{run_id}")
    mine = "Which caches should be pre-warmed first?"
    response = site.client.post(f"/runs/{run_id}/follow", data={"csrf_token": token, "goal": mine})
    site.wait()
    assert response.status_code == 200 and html.escape(mine, quote=False) in response.text
    assert follows(site, run_id) == [{"follow_kind": "edited"}]


def test_api_follow_with_a_goal_is_edited_and_a_blank_one_is_422(site: Site) -> None:
    """POST /api/runs/{id}/follow {"goal"}: edited; a blank goal is refused naming it, nothing followed."""
    run_id = site.start()
    blank = site.client.post(f"/api/runs/{run_id}/follow", json={"goal": "   "})
    assert blank.status_code == 422 and blank.json()["field"] == "goal"
    assert follows(site, run_id) == []
    mine = "Which caches should be pre-warmed first?"
    response = site.client.post(f"/api/runs/{run_id}/follow", json={"goal": mine})
    assert response.status_code == 202, response.text
    site.wait()
    assert site.client.get(f"/api/runs/{response.json()['run_id']}").json()["goal"] == mine
    assert follows(site, run_id) == [{"follow_kind": "edited"}]
