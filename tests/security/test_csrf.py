"""CSRF: every form post needs the double-submit token and this server's origin, every API write refuses other
origins and bodies a cross-site page could send without a preflight, and no GET changes anything stored.

Routes are enumerated from ``app.routes``, so a form or endpoint added later is covered at once.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import MetaData, select

from tests.security._routes import Endpoint, endpoints, mutating, reading
from tests.web.conftest import CSRF, Site, answer, csrf_of

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
    body = {"goal": "forged goal", "token": "x", "next": "/", **endpoint.form_fields, **data}
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
        response = site.client.request(
            endpoint.method, endpoint.path, json=endpoint.json_body, headers=CROSS_SITE[case]
        )
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
    assert response.status_code == 415 and response.json()["error"] == "unsupported_media_type", response.text
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
            response = site.client.request(endpoint.method, endpoint.path, json=endpoint.json_body, headers=headers)
            assert response.status_code in (200, 201, 202, 409), (str(endpoint), headers, response.status_code)
            site.wait()


def test_gets_change_nothing_stored(site_factory: Callable[..., Site]) -> None:
    """Every GET route, and GETs on the post-only paths with a goal in the query: no row changes.

    The one write a GET makes is by design: ``loop.ui.rendered`` events for a served run page (a metric input),
    which the metric rollups count.
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
    after["rollups"] = [row for row in after["rollups"] if "event:loop.ui.rendered" not in row]
    before["rollups"] = [row for row in before["rollups"] if "event:loop.ui.rendered" not in row]
    assert after == before


def test_a_rebound_host_cannot_write_on_loopback(site_factory: Callable[..., Site]) -> None:
    """A page of evil.example whose DNS now points at 127.0.0.1 is same-origin to itself: its Host is refused."""
    site, _ = site_with_a_run(site_factory)
    rebound = {"Host": "evil.example:8000", "Origin": "http://evil.example:8000"}
    assert site.client.post("/api/runs", json={"goal": "g"}, headers=rebound).status_code in (400, 403)


# -- signed tokens ------------------------------------------------------------------------------------------------

TOKEN = "tok-" + "C" * 40


def test_a_cookie_the_client_chose_is_refused_even_when_it_matches(site_factory: Callable[..., Site]) -> None:
    """A made-up, short, unsigned or foreign-signed cookie copied into the form field: 403, nothing stored.

    Before signing, any cookie of 32+ characters (or any at all) passed when the form carried the same value.
    """
    from marsrag.web.csrf import issue

    site, values = site_with_a_run(site_factory)
    real = csrf_of(site.client)
    nonce = real.split(".")[0]
    forged = ["x", "A" * 43, "A" * 87, nonce, f"{nonce}.{'A' * 43}", f"{nonce}.", issue(b"another deployment's key")]
    before = database(site)
    for endpoint in form_posts(site, values):
        for value in forged:
            client = TestClient(site.client.app)
            client.cookies.set("marsrag_csrf", value)
            response = post_form(client, endpoint, {"csrf_token": value}, {})
            assert response.status_code == 403, (str(endpoint), value, response.status_code)
    site.wait()
    assert database(site) == before
    # A page given a forged cookie replaces it with a signed one.
    client = TestClient(site.client.app)
    client.cookies.set("marsrag_csrf", "A" * 43)
    page = client.get("/ask")
    fresh = CSRF.search(page.text)
    assert fresh is not None and fresh.group(1) != "A" * 43
    assert f"marsrag_csrf={fresh.group(1)}" in page.headers["set-cookie"]


def _signed_in_form(site: Site, token: str, csrf: str) -> int:
    """The status of the sign-in form posted to ``site`` with ``csrf`` as cookie and field."""
    client = TestClient(site.client.app)
    client.cookies.set("marsrag_csrf", csrf)
    data = {"token": TOKEN, "csrf_token": csrf, "next": "/"}
    status: int = client.post("/login", data=data, follow_redirects=False).status_code
    return status


def test_servers_sharing_the_token_accept_each_others_csrf_tokens(site_factory: Callable[..., Site]) -> None:
    """Off loopback the key derives from MARSRAG_TOKEN: a token one server issued passes another's form; a
    server of another deployment (another token) refuses it."""
    first = site_factory([], host="0.0.0.0", token=TOKEN)
    second = site_factory([], host="0.0.0.0", token=TOKEN)
    other = site_factory([], host="0.0.0.0", token="tok-" + "D" * 40)
    issued = csrf_of(first.client, "/login")
    assert _signed_in_form(second, TOKEN, issued) == 303
    assert _signed_in_form(other, TOKEN, issued) == 403


def test_loopback_servers_sharing_a_data_directory_accept_each_others_csrf_tokens(
    site_factory: Callable[..., Site], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a token the key is <data dir>/csrf.key (owner-only): same directory, same key; another, refused."""
    monkeypatch.setenv("MARSRAG_HOME", str(tmp_path / "shared"))
    first = site_factory([answer()] * 3)
    second = site_factory([answer()] * 3)
    monkeypatch.setenv("MARSRAG_HOME", str(tmp_path / "elsewhere"))
    other = site_factory([answer()] * 3)
    key = tmp_path / "shared" / "csrf.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert key.read_bytes() != (tmp_path / "elsewhere" / "csrf.key").read_bytes()
    issued = csrf_of(first.client)
    for site, expected in ((second, 303), (other, 403)):
        client = TestClient(site.client.app)
        client.cookies.set("marsrag_csrf", issued)
        response = client.post("/ask", data={"goal": "g", "csrf_token": issued}, follow_redirects=False)
        assert response.status_code == expected, response.text
        site.wait()
