"""The web app through the ASGI client, on a real SQLite store with the replay LLM: pages, API, guards."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

from marsrag.errors import InputError
from marsrag.state import FALLBACK_HOOK
from tests.contract.samples import CONTENT
from tests.web.conftest import Site, answer, csrf_of

pytestmark = pytest.mark.crewai

FIXED_LOOP = "Which region should get the pre-warmed cache first?"
TITLES = ["Hook", "Grip", "Payoff", "Reinforce", "Loop"]
#: A bearer token of the length an off-loopback server requires.
TOKEN = "s3cret-token-" + "x" * 24


def card_titles(html: str) -> list[str]:
    return re.findall(r'<article class="card section-card[^"]*" data-field="\w+">\s*<h3>(\w+)</h3>', html)


def badges(html: str) -> list[str]:
    return re.findall(r'<span class="badge badge-\w+" data-status="(\w+)"', html)


# -- health, API shapes -------------------------------------------------------------------------------------


def test_health_answers_ok(site: Site) -> None:
    """The trivial endpoint the benchmark compares against."""
    response = site.client.get("/health")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_post_runs_returns_the_id_at_once_and_the_run_completes_in_the_background(site: Site) -> None:
    """202 with the run id (pending); the run finishes on the executor; the API shows the CLI's documents."""
    from marsrag.compose import list_runs, show_run
    from marsrag.settings import resolve_settings

    response = site.client.post("/api/runs", json={"goal": "Checkout latency breached its SLO"})
    assert response.status_code == 202
    started = response.json()
    assert started["status"] == "pending" and response.headers["location"] == f"/api/runs/{started['run_id']}"
    site.wait()
    document = site.client.get(f"/api/runs/{started['run_id']}").json()
    assert document == show_run(resolve_settings(db=site.db), started["run_id"])
    assert document["status"] == "completed" and [t["task_id"] for t in document["tasks"]] == [
        "diagnose",
        "recommend",
        "plan",
    ]
    assert site.client.get("/api/runs").json() == list_runs(resolve_settings(db=site.db))


def test_api_runs_list_pages_and_filters_by_session(site: Site) -> None:
    """limit/offset page the list; session_id keeps one session's runs."""
    first = site.start("first goal")
    second = site.start("second goal", session_id="s-1")
    assert [r["run_id"] for r in site.client.get("/api/runs?limit=1").json()] == [second]
    assert [r["run_id"] for r in site.client.get("/api/runs?limit=1&offset=1").json()] == [first]
    assert [r["run_id"] for r in site.client.get("/api/runs?session_id=s-1").json()] == [second]
    assert site.client.get("/api/runs?limit=0").status_code == 422


def test_openapi_documents_the_api(site: Site) -> None:
    """Every API route is in the OpenAPI document; the pages are not."""
    paths = site.client.get("/openapi.json").json()["paths"]
    assert set(paths) >= {
        "/api/runs",
        "/api/runs/{run_id}",
        "/api/runs/{run_id}/follow",
        "/api/runs/{run_id}/tasks/{task_id}/repair",
        "/api/runs/{run_id}/tasks/{task_id}/regenerate",
        "/health",
    }
    assert "/ask" not in paths and "/runs/{run_id}" not in paths


# -- bad input -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/api/runs/nope", "get"),
        ("/api/runs/nope/follow", "post"),
        ("/api/runs/nope/tasks/diagnose/repair", "post"),
        ("/api/runs/nope/tasks/diagnose/regenerate", "post"),
    ],
)
def test_unknown_runs_are_404_with_a_json_reason(site: Site, path: str, method: str) -> None:
    """Unknown ids: 404 and a reason naming the id."""
    response = getattr(site.client, method)(path)
    assert response.status_code == 404
    assert response.json()["error"] == "not_found" and "'nope'" in response.json()["detail"]


def test_an_unknown_task_is_404_and_pages_show_an_html_404(site: Site) -> None:
    """A task id the run lacks: 404 JSON; unknown run and session pages: an HTML 404 page."""
    run_id = site.start()
    response = site.client.post(f"/api/runs/{run_id}/tasks/nope/repair")
    assert response.status_code == 404 and "no task 'nope'" in response.json()["detail"]
    for page in ("/runs/nope", "/sessions/nope"):
        html = site.client.get(page)
        assert html.status_code == 404 and html.headers["content-type"].startswith("text/html")
        assert "nope" in html.text


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "goal"),
        ({"goal": ""}, "goal"),
        ({"goal": "   "}, "goal"),
        ({"goal": 42}, "goal"),
        ({"goal": "ok", "workflow": "nope"}, "workflow"),
        ({"goal": "ok", "session_id": "has spaces/and slashes"}, "session_id"),
        ({"goal": "ok", "colour": "red"}, "colour"),
    ],
)
def test_malformed_bodies_are_422_naming_the_field_and_store_nothing(site: Site, body: object, field: str) -> None:
    """Each bad body: 422, the field named in the reason, no run stored."""
    response = site.client.post("/api/runs", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field and field in response.json()["detail"]
    assert site.client.get("/api/runs").json() == []


def test_a_body_that_is_not_json_is_422(site: Site) -> None:
    """Broken JSON: 422 with a reason."""
    response = site.client.post("/api/runs", content=b'{"goal": ', headers={"content-type": "application/json"})
    assert response.status_code == 422 and response.json()["error"] == "invalid_request"


def test_oversized_bodies_are_413_whether_declared_or_streamed(site_factory: Callable[..., Site]) -> None:
    """Over the limit by Content-Length or while streaming (chunked): 413 with a JSON reason, nothing stored."""
    site = site_factory([], max_body_bytes=1000)
    big = b'{"goal": "' + b"a" * 2000 + b'"}'
    declared = site.client.post("/api/runs", content=big, headers={"content-type": "application/json"})
    assert declared.status_code == 413 and declared.json()["error"] == "too_large"

    def chunks() -> Iterator[bytes]:
        yield big[:600]
        yield big[600:]

    streamed = site.client.post("/api/runs", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413
    assert site.client.get("/api/runs").json() == []


def test_model_text_is_escaped_everywhere(site_factory: Callable[..., Site]) -> None:
    """A <script> in the goal and in every section renders as text on the run, runs and session pages."""
    evil = "<script>alert(1)</script>"
    outputs = [answer(**{name: f"{value} {evil}" for name, value in CONTENT.items()})] * 3
    site = site_factory(outputs)
    run_id = site.start(f"Why {evil} latency?")
    session = site.client.get(f"/api/runs/{run_id}").json()["session_id"]
    for page in (f"/runs/{run_id}", "/", f"/sessions/{session}"):
        html = site.client.get(page).text
        assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html, page


# -- pages and the view model ----------------------------------------------------------------------------------


def test_the_run_page_shows_each_tasks_cards_badge_and_the_next_action(site: Site) -> None:
    """Five cards per task in the fixed order, the badge in words, the summary and the next-action card."""
    run_id = site.start()
    html = site.client.get(f"/runs/{run_id}").text
    assert card_titles(html) == TITLES * 3
    assert badges(html) == ["valid"] * 3 and html.count("</span> Valid</span>") == 3
    assert "Next recommended question/action" in html and CONTENT["loop"] in html
    assert 'id="follow-form"' in html and "Summary" in html
    assert 'http-equiv="refresh"' not in html  # finished: no self-refresh


def test_serving_a_run_page_records_loop_ui_rendered(site: Site) -> None:
    """Each served run page records loop.ui.rendered for every contract task shown."""
    run_id = site.start()
    site.client.get(f"/runs/{run_id}")
    site.client.get(f"/runs/{run_id}")
    rendered = [e for e in site.client.get(f"/api/runs/{run_id}").json()["events"] if e["name"] == "loop.ui.rendered"]
    assert [(e["task_id"], e["validation_status"]) for e in rendered] == [
        ("diagnose", "valid"),
        ("recommend", "valid"),
        ("plan", "valid"),
    ] * 2
    assert all(e["loop_contract_version"] == "1.0.0" and e["loop_mode"] == "hard" for e in rendered)


def test_a_machine_first_task_shows_its_output_instead_of_cards(site_factory: Callable[..., Site]) -> None:
    """fact_extraction runs without the contract: its output as is, the No contract badge, no next action."""
    site = site_factory(["- cache nodes restarted at 02:00"])
    run_id = site.start(workflow="fact_extraction")
    html = site.client.get(f"/runs/{run_id}").text
    assert card_titles(html) == [] and badges(html) == ["skipped"]
    assert "- cache nodes restarted at 02:00" in html and "No contract" in html
    assert 'id="next-action"' not in html


def test_runs_list_session_and_ask_pages_render(site: Site) -> None:
    """The runs list links each run; the session page chains them; the ask page offers user-facing workflows first."""
    first = site.start("first goal", session_id="s-9")
    second = site.start("second goal", session_id="s-9")
    listing = site.client.get("/").text
    assert listing.index(second) < listing.index(first)
    chain = site.client.get("/sessions/s-9").text
    assert chain.index(first) < chain.index(second) and "Next:" in chain
    ask = site.client.get("/ask?session_id=s-9").text
    assert re.findall(r'<option value="(\w+)"', ask)[0] == "support_answer" and 'value="s-9"' in ask


def test_an_empty_store_shows_an_empty_runs_list(site: Site) -> None:
    """The server starts on an empty database."""
    response = site.client.get("/")
    assert response.status_code == 200 and "No runs yet" in response.text


# -- forms: CSRF, ask, follow, operator actions --------------------------------------------------------------


def test_forms_without_a_matching_csrf_token_are_refused_and_store_nothing(site: Site) -> None:
    """No token, or a token that is not the cookie's: 403, no run."""
    assert site.client.post("/ask", data={"goal": "g"}).status_code == 403
    csrf_of(site.client)
    assert site.client.post("/ask", data={"goal": "g", "csrf_token": "forged" * 8}).status_code == 403
    assert site.client.get("/api/runs").json() == []


def test_asking_through_the_form_starts_a_run_and_shows_its_page(site: Site) -> None:
    """The ask form redirects to the new run's page, which follows its progress."""
    token = csrf_of(site.client)
    response = site.client.post(
        "/ask", data={"goal": "latency", "workflow": "support_answer", "csrf_token": token}, follow_redirects=False
    )
    assert response.status_code == 303 and response.headers["location"].startswith("/runs/")
    site.wait()
    page = site.client.get(response.headers["location"])
    assert 'data-run-status="completed"' in page.text


def test_the_ask_form_reports_bad_input_in_the_page(site: Site) -> None:
    """An empty goal or unknown workflow: the form again, with the problem, status 422, nothing stored."""
    token = csrf_of(site.client)
    empty = site.client.post("/ask", data={"goal": " ", "csrf_token": token})
    assert empty.status_code == 422 and "The goal is blank (only whitespace): say what the assistant" in empty.text
    unknown = site.client.post("/ask", data={"goal": "g", "workflow": "nope", "csrf_token": token})
    assert unknown.status_code == 422 and "unknown workflow" in unknown.text
    assert site.client.get("/api/runs").json() == []


def test_following_the_next_action_starts_the_next_run_of_the_session(site: Site) -> None:
    """The follow button records loop.action.followed and shows the new run, whose goal is the loop."""
    run_id = site.start()
    token = csrf_of(site.client, f"/runs/{run_id}")
    response = site.client.post(f"/runs/{run_id}/follow", data={"csrf_token": token}, follow_redirects=False)
    assert response.status_code == 303
    site.wait()
    new_id = response.headers["location"].rsplit("/", 1)[1]
    old, new = (site.client.get(f"/api/runs/{i}").json() for i in (run_id, new_id))
    assert (new["session_id"], new["goal"]) == (old["session_id"], CONTENT["loop"])
    assert [e["name"] for e in old["events"]].count("loop.action.followed") == 1


def test_api_follow_returns_the_new_run_at_once(site: Site) -> None:
    """POST /api/runs/{id}/follow: 202 with the next run's id, in the same session."""
    run_id = site.start()
    response = site.client.post(f"/api/runs/{run_id}/follow")
    assert response.status_code == 202
    site.wait()
    assert site.client.get(f"/api/runs/{response.json()['run_id']}").json()["status"] == "completed"


def test_repairing_a_failed_task_changes_its_badge_and_supersedes_the_fallback(
    site_factory: Callable[..., Site],
) -> None:
    """failed -> Run repair task -> valid: attempts kept, old transition superseded, page updated."""
    site = site_factory(["No idea.", "No idea.", answer(), answer(), answer(loop=FIXED_LOOP)])
    run_id = site.start()
    page = site.client.get(f"/runs/{run_id}").text
    assert badges(page) == ["failed", "valid", "valid"] and "Run repair task" in page
    assert FALLBACK_HOOK in page
    token = csrf_of(site.client, f"/runs/{run_id}")
    response = site.client.post(
        f"/runs/{run_id}/tasks/diagnose/repair", data={"csrf_token": token}, follow_redirects=False
    )
    assert response.status_code == 303 and response.headers["location"] == f"/runs/{run_id}#task-diagnose"
    page = site.client.get(f"/runs/{run_id}").text
    assert badges(page) == ["valid"] * 3 and "Run repair task" not in page
    document = site.client.get(f"/api/runs/{run_id}").json()
    assert [a["kind"] for a in document["tasks"][0]["attempts"]] == ["answer", "repair", "operator_repair"]
    assert [(t["transition_mode"], t["superseded"]) for t in document["transitions"][:1]] == [("fallback", True)]
    assert "Superseded transitions (1)" in page


def test_api_regenerate_merges_the_failing_sections(site_factory: Callable[..., Site]) -> None:
    """A partial task regenerated through the API comes back valid with the passing sections unchanged."""
    broken = answer(grip="", payoff="")
    site = site_factory([broken, broken, answer(), answer(), "GRIP: Cold caches cause it.\nPAYOFF: Pre-warm them."])
    run_id = site.start()
    response = site.client.post(f"/api/runs/{run_id}/tasks/diagnose/regenerate")
    assert response.status_code == 200, response.text
    task = response.json()
    assert task["validation"]["status"] == "valid" and task["loop_output"]["grip"] == "Cold caches cause it."
    assert task["loop_output"]["reinforce"] == CONTENT["reinforce"]


def test_actions_that_do_not_apply_are_409(site: Site) -> None:
    """Repairing a valid task: 409 with the reason; nothing recorded."""
    run_id = site.start()
    events = site.client.get(f"/api/runs/{run_id}").json()["events"]
    response = site.client.post(f"/api/runs/{run_id}/tasks/diagnose/repair")
    assert response.status_code == 409 and "already valid" in response.json()["detail"]
    assert site.client.get(f"/api/runs/{run_id}").json()["events"] == events


# -- off loopback: the bearer token ------------------------------------------------------------------------------


def test_serving_off_loopback_without_a_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """No MARSRAG_TOKEN on a public address: a clear error before anything opens."""
    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings

    monkeypatch.delenv("MARSRAG_TOKEN", raising=False)
    with pytest.raises(InputError, match="MARSRAG_TOKEN"):
        create_app(WebSettings(host="0.0.0.0"))


def test_off_loopback_everything_but_health_and_login_needs_the_token(site_factory: Callable[..., Site]) -> None:
    """API calls need Authorization: Bearer (else 401 JSON); pages send to /login; signed in, forms work."""
    site = site_factory([answer()] * 6, host="0.0.0.0", token=TOKEN)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert site.client.get("/health").status_code == 200
    read = site.client.get("/api/runs")
    assert read.status_code == 401 and read.json()["error"] == "unauthorized"
    page = site.client.get("/runs/abc?x=1", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/login?next=%2Fruns%2Fabc%3Fx%3D1"
    refused = site.client.post("/api/runs", json={"goal": "g"})
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    wrong = site.client.post("/api/runs", json={"goal": "g"}, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert site.client.get("/api/runs", headers=bearer).json() == []
    ok = site.client.post("/api/runs", json={"goal": "g"}, headers=bearer)
    assert ok.status_code == 202
    site.wait()
    token = csrf_of(site.client, "/login")
    assert site.client.post("/ask", data={"goal": "g", "csrf_token": token}).status_code == 401
    bad = site.client.post("/login", data={"token": "nope", "csrf_token": token, "next": "/ask"})
    assert bad.status_code == 401
    signed = site.client.post(
        "/login", data={"token": TOKEN, "csrf_token": token, "next": "/ask"}, follow_redirects=False
    )
    assert signed.status_code == 303 and signed.headers["location"] == "/ask"
    asked = site.client.post("/ask", data={"goal": "g", "csrf_token": token}, follow_redirects=False)
    assert asked.status_code == 303


def test_on_loopback_the_api_needs_no_token(site: Site) -> None:
    """127.0.0.1: API posts work without Authorization."""
    assert site.client.post("/api/runs", json={"goal": "g"}).status_code == 202
    site.wait()


def test_browser_requests_from_another_origin_cannot_change_anything(site: Site) -> None:
    """An Origin other than the server's: 403 for API and forms alike."""
    evil = {"Origin": "http://evil.example"}
    assert site.client.post("/api/runs", json={"goal": "g"}, headers=evil).status_code == 403
    token = csrf_of(site.client)
    assert site.client.post("/ask", data={"goal": "g", "csrf_token": token}, headers=evil).status_code == 403
    same = {"Origin": "http://testserver"}
    assert site.client.post("/api/runs", json={"goal": "g"}, headers=same).status_code == 202
    site.wait()


def test_login_redirects_only_to_local_paths(site_factory: Callable[..., Site]) -> None:
    """next= pointing off the server is replaced by / (no open redirect)."""
    site = site_factory([], host="0.0.0.0", token=TOKEN)
    token = csrf_of(site.client)
    response = site.client.post(
        "/login", data={"token": TOKEN, "csrf_token": token, "next": "//evil.example/x"}, follow_redirects=False
    )
    assert response.headers["location"] == "/"
