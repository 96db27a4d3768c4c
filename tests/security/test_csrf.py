"""CSRF: every form post needs the double-submit token and this server's origin, every API write refuses other
origins and bodies a cross-site page could send without a preflight, and no GET changes anything stored.

Routes are enumerated from ``app.routes``, so a form or endpoint added later is covered at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import MetaData, select

from tests.security._routes import Endpoint, endpoints, mutating, reading
from tests.web.conftest import Site, answer, csrf_of

pytestmark = pytest.mark.crewai

EVIL = "http://evil.example"
#: Browser headers of a request some other site made (the CSRF token itself is valid in every case).
CROSS_SITE = {
    "evil Origin": {"Origin": EVIL},
    "evil Origin on our port": {"Origin": "http://evil.example:80"},
    "null Origin (sandboxed frame, data: URL)": {"Origin": "null"},
    "Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": "cross-site"},
    "Sec-Fetch-Site same-site (a sibling subdomain)": {"Sec-Fetch-Site": "same-site"},
    "evil Referer without Origin": {"Referer": f"{EVIL}/attack.html"},
}


def site_with_a_run(site_factory: Callable[..., Site]) -> tuple[Site, dict[str, str]]:
    """A loopback server (no token needed) with one completed run; the values for the route paths."""
    site = site_factory([answer()] * 40)
    run_id = site.start(session_id="s-1")
    return site, {"run_id": run_id, "task_id": "diagnose", "session_id": "s-1", "action": "repair"}


def form_posts(site: Site, values: dict[str, str]) -> list[Endpoint]:
    """The pages' form endpoints (every non-GET route outside the JSON API)."""
    found = [e for e in mutating(endpoints(site.client.app, values)) if not e.is_api]  # type: ignore[arg-type]
    assert {e.template for e in found} >= {"/ask", "/login", "/runs/{run_id}/follow"}, found
    return found


def api_writes(site: Site, values: dict[str, str]) -> list[Endpoint]:
    """The JSON API's mutating endpoints."""
    found = [e for e in mutating(endpoints(site.client.app, values)) if e.is_api]  # type: ignore[arg-type]
    assert len(found) >= 4, found
    return found


def database(site: Site) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the store, ordered (to compare before and after)."""
    engine = site.backend.store.engine
    metadata = MetaData()
    metadata.reflect(engine)
    with engine.connect() as connection:
        return {
            name: sorted(
                (tuple(row) for row in connection.execute(select(table))),
                key=repr,
            )
            for name, table in metadata.tables.items()
        }


def post_form(client: TestClient, endpoint: Endpoint, data: dict[str, str], headers: dict[str, str]) -> Any:
    body = {"goal": "forged goal", "token": "x", "next": "/", **data}
    return client.post(endpoint.path, data=body, headers=headers, follow_redirects=False)


def test_forms_refuse_a_missing_or_mismatched_token(site_factory: Callable[..., Site]) -> None:
    """No token, another token, a token without its cookie, an empty pair: 403 and nothing stored."""
    site, values = site_with_a_run(site_factory)
    token = csrf_of(site.client)
    before = database(site)
    for endpoint in form_posts(site, values):
        assert post_form(site.client, endpoint, {}, {}).status_code == 403, f"{endpoint}: no token"
        other = token[::-1] if token[::-1] != token else token + "x"
        assert post_form(site.client, endpoint, {"csrf_token": other}, {}).status_code == 403, f"{endpoint}: other"
        assert post_form(site.client, endpoint, {"csrf_token": ""}, {}).status_code == 403, f"{endpoint}: empty"
        bare = TestClient(site.client.app)  # the attacker's page: the token copied, but not the victim's cookie
        assert post_form(bare, endpoint, {"csrf_token": token}, {}).status_code == 403, f"{endpoint}: no cookie"
        bare.cookies.set("marsrag_csrf", "")
        assert post_form(bare, endpoint, {"csrf_token": ""}, {}).status_code == 403, f"{endpoint}: empty pair"
    site.wait()
    assert database(site) == before


@pytest.mark.parametrize("case", sorted(CROSS_SITE))
def test_forms_refuse_other_origins_even_with_a_valid_token(case: str, site_factory: Callable[..., Site]) -> None:
    """A form posted by another site is 403 whatever its token; the login sets no cookie."""
    site, values = site_with_a_run(site_factory)
    token = csrf_of(site.client)
    before = database(site)
    for endpoint in form_posts(site, values):
        response = post_form(site.client, endpoint, {"csrf_token": token}, CROSS_SITE[case])
        assert response.status_code == 403, (str(endpoint), case, response.status_code)
        assert "marsrag_token" not in response.headers.get("set-cookie", "")
    site.wait()
    assert database(site) == before


def test_forms_pass_with_the_token_from_this_origin(site_factory: Callable[..., Site]) -> None:
    """The control: the same posts from the server's own page get through the guard."""
    site, values = site_with_a_run(site_factory)
    token = csrf_of(site.client)
    own = {
        "Origin": "http://testserver",
        "Sec-Fetch-Site": "same-origin",
        "Referer": f"http://testserver/runs/{values['run_id']}",
    }
    for endpoint in form_posts(site, values):
        response = post_form(site.client, endpoint, {"csrf_token": token}, own)
        # 401: /login with a wrong token; 409: repairing a valid task. Both got past the CSRF guard.
        assert response.status_code in (303, 401, 409), (str(endpoint), response.status_code)
        site.wait()


@pytest.mark.parametrize("case", sorted(CROSS_SITE))
def test_api_writes_refuse_other_origins(case: str, site_factory: Callable[..., Site]) -> None:
    """Every API write sent by a browser from another origin: 403, nothing stored."""
    site, values = site_with_a_run(site_factory)
    before = database(site)
    for endpoint in api_writes(site, values):
        response = site.client.request(endpoint.method, endpoint.path, json={"goal": "g"}, headers=CROSS_SITE[case])
        assert response.status_code == 403, (str(endpoint), case, response.status_code)
    site.wait()
    assert database(site) == before


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]
)
def test_api_writes_refuse_bodies_a_cross_site_form_can_send(
    content_type: str, site_factory: Callable[..., Site]
) -> None:
    """A "simple" request (no CORS preflight) carrying JSON text does not start a run."""
    site, _ = site_with_a_run(site_factory)
    before = database(site)
    body = '{"goal": "forged goal"}'
    response = site.client.post("/api/runs", content=body, headers={"Content-Type": content_type})
    assert response.status_code in (415, 422), response.status_code
    site.wait()
    assert database(site) == before


def test_the_api_grants_no_cors(site_factory: Callable[..., Site]) -> None:
    """A preflight from another origin gets no Access-Control-Allow-Origin: the browser never sends the write."""
    site, _ = site_with_a_run(site_factory)
    preflight = site.client.options(
        "/api/runs",
        headers={
            "Origin": EVIL,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert "access-control-allow-origin" not in preflight.headers
    read = site.client.get("/api/runs", headers={"Origin": EVIL})
    assert "access-control-allow-origin" not in read.headers


def test_api_writes_pass_from_this_origin(site_factory: Callable[..., Site]) -> None:
    """The control: the same requests without browser headers, or from the server's own pages, get through."""
    site, values = site_with_a_run(site_factory)
    for headers in ({}, {"Origin": "http://testserver"}, {"Sec-Fetch-Site": "same-origin"}):
        for endpoint in api_writes(site, values):
            response = site.client.request(endpoint.method, endpoint.path, json={"goal": "g"}, headers=headers)
            assert response.status_code in (200, 202, 409), (str(endpoint), headers, response.status_code)
            site.wait()


def test_gets_change_nothing_stored(site_factory: Callable[..., Site]) -> None:
    """Every GET route, and GETs on the post-only paths with a goal in the query: no row changes.

    The one write a GET makes is by design: ``loop.ui.rendered`` events for a served run page (a metric input).
    """
    site, values = site_with_a_run(site_factory)
    before = database(site)
    found = endpoints(site.client.app, values)  # type: ignore[arg-type]
    query = "?goal=forged&csrf_token=x&token=x&workflow=support_answer"
    readable = {endpoint.template for endpoint in reading(found)}
    for endpoint in reading(found) + mutating(found):
        for suffix in ("", query):
            response = site.client.get(endpoint.path + suffix, follow_redirects=False)
            if endpoint.template not in readable:
                assert response.status_code == 405, (str(endpoint), response.status_code)
    site.wait()
    after = database(site)
    rendered = [row for row in after["events"] if "loop.ui.rendered" in row]
    assert rendered, "the run page records loop.ui.rendered (else this comparison proves less than it claims)"
    after["events"] = [row for row in after["events"] if "loop.ui.rendered" not in row]
    assert after == before


def test_a_rebound_host_cannot_write_on_loopback(site_factory: Callable[..., Site]) -> None:
    """A page of evil.example whose DNS now points at 127.0.0.1 is same-origin to itself: its Host is refused."""
    site, _ = site_with_a_run(site_factory)
    rebound = {"Host": "evil.example:8000", "Origin": "http://evil.example:8000"}
    assert site.client.post("/api/runs", json={"goal": "g"}, headers=rebound).status_code in (400, 403)
