"""Off loopback, the bearer token guards every change: the server refuses to start without one, and compares it in
constant time; the sign-in cookie is HttpOnly and SameSite=Strict.

Routes are enumerated from ``app.routes``: a route added later is covered (or makes these tests fail) at once.
"""

from __future__ import annotations

import ast
import hmac
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Callable
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from marsrag.errors import InputError
from marsrag.web.settings import WebSettings, is_loopback
from tests.security._routes import OPEN_PATHS, Endpoint, endpoints, mutating, reading
from tests.web.conftest import Site, answer, csrf_of

pytestmark = pytest.mark.crewai

TOKEN = "tok-" + "Q" * 28 + "-end"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
WEB = Path(__file__).resolve().parents[2] / "src" / "marsrag" / "web"
#: Authorization headers that must not pass: other tokens, near misses at either end, other schemes, no scheme.
WRONG_AUTHORIZATIONS = [
    "Bearer wrong",
    f"Bearer {TOKEN[:-1]}",
    f"Bearer {TOKEN}x",
    f"Bearer x{TOKEN[1:]}",
    f"Bearer {TOKEN.upper()}",
    f"Basic {TOKEN}",
    TOKEN,
    "Bearer",
    "Bearer ",
]


def guarded_site(site_factory: Callable[..., Site]) -> tuple[Site, dict[str, str]]:
    """A server bound off loopback with a token, holding one completed run; the values for the route paths."""
    site = site_factory([answer()] * 40, host="0.0.0.0", token=TOKEN)
    started = site.client.post("/api/runs", json={"goal": "Checkout latency", "session_id": "s-1"}, headers=BEARER)
    assert started.status_code == 202, started.text
    site.wait()
    values = {"run_id": started.json()["run_id"], "task_id": "diagnose", "session_id": "s-1", "action": "repair"}
    return site, values


def stored(site: Site) -> tuple[Any, ...]:
    """Everything a change would show in: the runs, and each run's document (tasks, transitions, events)."""
    rows = site.backend.run_rows(limit=1000)
    return tuple(rows), tuple(str(site.backend.run_document(row["run_id"])) for row in rows)


def send(client: TestClient, endpoint: Endpoint, headers: dict[str, str], csrf: str | None = None) -> Any:
    """The endpoint's request: a JSON body for the API, a form (with ``csrf``) for the pages."""
    if endpoint.method == "GET":
        return client.get(endpoint.path, headers=headers, follow_redirects=False)
    if endpoint.is_api:
        return client.request(endpoint.method, endpoint.path, json=endpoint.json_body, headers=headers)
    data = {"goal": "g", "csrf_token": csrf or "", **endpoint.form_fields}
    return client.request(endpoint.method, endpoint.path, data=data, headers=headers, follow_redirects=False)


# -- starting -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_hosts_are_recognized(host: str) -> None:
    """Only addresses that accept this machine's connections alone count as loopback."""
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host",
    ["0.0.0.0", "::", "[::]", "10.0.0.7", "192.168.1.2", "example.com", "localhost.evil.example", "127.0.0.1.nip.io"],
)
def test_every_other_host_requires_the_token(host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any other address or a hostname (it may resolve anywhere) needs the token; no token, no app."""
    monkeypatch.delenv("MARSRAG_TOKEN", raising=False)
    settings = WebSettings(host=host)
    assert settings.requires_token
    with pytest.raises(InputError, match="MARSRAG_TOKEN"):
        from marsrag.web.app import create_app

        create_app(settings)


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
def test_a_blank_token_counts_as_none(blank: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """MARSRAG_TOKEN set to whitespace is no token (the header's value is stripped: it could never match)."""
    monkeypatch.setenv("MARSRAG_TOKEN", blank)
    assert WebSettings(host="0.0.0.0").token is None


def test_the_environment_token_is_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A token read from a file with its newline still matches ``Authorization: Bearer TOKEN``."""
    monkeypatch.setenv("MARSRAG_TOKEN", f"  {TOKEN}\n")
    assert WebSettings(host="0.0.0.0").token == TOKEN


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.parametrize("token_env", [None, "", "  "])
def test_serve_off_loopback_without_a_token_is_a_one_line_error(token_env: str | None, tmp_path: Path) -> None:
    """``marsrag serve --host 0.0.0.0`` without a (non-blank) token: exit 2, one line naming MARSRAG_TOKEN."""
    env = {**os.environ, "MARSRAG_HOME": str(tmp_path / "home"), "MARSRAG_DB": f"sqlite:///{tmp_path}/x.db"}
    env.pop("MARSRAG_TOKEN", None)
    if token_env is not None:
        env["MARSRAG_TOKEN"] = token_env
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "serve", "--host", "0.0.0.0", "--port", str(_free_port())],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "MARSRAG_TOKEN" in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "x.db").exists(), "the store was opened before the check"


@pytest.mark.parametrize("weak", ["x", "s3cret", "Q" * 31])
def test_a_weak_token_does_not_start_a_public_server(weak: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Off loopback a token under 32 characters is refused, saying how to make one; 32 is enough."""
    from marsrag.web.app import create_app

    monkeypatch.setenv("MARSRAG_TOKEN", weak)
    with pytest.raises(InputError, match=r"at least 32 characters, not \d+: .*secrets\.token_urlsafe\(32\)"):
        create_app(WebSettings(host="0.0.0.0"))
    app = create_app(WebSettings(host="0.0.0.0", token="Q" * 32))
    app.state.backend.close()


def test_serve_with_a_one_character_token_is_a_one_line_error(tmp_path: Path) -> None:
    """``MARSRAG_TOKEN=x marsrag serve --host 0.0.0.0`` started a public server: exit 2, one line, nothing opened."""
    env = {**os.environ, "MARSRAG_HOME": str(tmp_path / "home"), "MARSRAG_DB": f"sqlite:///{tmp_path}/x.db"}
    env["MARSRAG_TOKEN"] = "x"
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "serve", "--host", "0.0.0.0", "--port", str(_free_port())],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert "MARSRAG_TOKEN" in line and "at least 32" in line and "secrets.token_urlsafe(32)" in line
    assert not (tmp_path / "x.db").exists()


# -- every route ------------------------------------------------------------------------------------------------


def test_every_route_is_enumerated(site_factory: Callable[..., Site]) -> None:
    """The enumeration sees the pages, the forms, the API, the metrics and the dashboard (a sanity check)."""
    site, values = guarded_site(site_factory)
    names = {str(endpoint) for endpoint in endpoints(site.client.app, values)}  # type: ignore[arg-type]
    assert names >= {
        "GET /",
        "POST /ask",
        "GET /runs/{run_id}",
        "POST /runs/{run_id}/follow",
        "POST /runs/{run_id}/tasks/{task_id}/{action}",
        "POST /api/runs",
        "POST /api/runs/{run_id}/follow",
        "POST /api/runs/{run_id}/tasks/{task_id}/repair",
        "GET /api/metrics",
        "GET /metrics",
        "GET /dashboard",
        "GET /health",
        "POST /login",
    }


def test_every_mutating_route_refuses_requests_without_the_token(site_factory: Callable[..., Site]) -> None:
    """No token, a wrong one, or the token in another scheme: 401 on every non-GET route but /login; nothing stored."""
    site, values = guarded_site(site_factory)
    csrf = csrf_of(site.client)
    before = stored(site)
    checked = []
    for endpoint in mutating(endpoints(site.client.app, values)):  # type: ignore[arg-type]
        if endpoint.template in OPEN_PATHS:
            continue
        for authorization in [None, *WRONG_AUTHORIZATIONS]:
            headers = {} if authorization is None else {"Authorization": authorization}
            response = send(site.client, endpoint, headers, csrf)
            assert response.status_code == 401, (str(endpoint), authorization, response.status_code)
            if endpoint.is_api:
                assert response.headers["www-authenticate"] == "Bearer", str(endpoint)
        site.client.cookies.set("marsrag_token", TOKEN[:-1] + "X")
        assert send(site.client, endpoint, {}, csrf).status_code == 401, f"{endpoint} with a wrong sign-in cookie"
        site.client.cookies.delete("marsrag_token")
        checked.append(str(endpoint))
    site.wait()
    assert stored(site) == before
    assert len(checked) >= 6, checked


def test_every_mutating_route_accepts_the_bearer_token(site_factory: Callable[..., Site]) -> None:
    """With ``Authorization: Bearer TOKEN`` (any case of the scheme) every guarded route does its work."""
    site, values = guarded_site(site_factory)
    csrf = csrf_of(site.client)
    for endpoint in mutating(endpoints(site.client.app, values)):  # type: ignore[arg-type]
        if endpoint.template in OPEN_PATHS:
            continue
        for scheme in ("Bearer", "bearer"):
            response = send(site.client, endpoint, {"Authorization": f"{scheme} {TOKEN}"}, csrf)
            # 409: repairing a valid task; what matters is that the guard let the request through.
            assert response.status_code in (200, 201, 202, 303, 409), (
                str(endpoint),
                response.status_code,
                response.text,
            )
        site.wait()


def test_the_sign_in_cookie_opens_the_forms(site_factory: Callable[..., Site]) -> None:
    """After /login the forms work; the token never appears in the page or the redirect."""
    site, values = guarded_site(site_factory)
    csrf = csrf_of(site.client)
    signed = site.client.post(
        "/login", data={"token": TOKEN, "csrf_token": csrf, "next": "/ask"}, follow_redirects=False
    )
    assert signed.status_code == 303 and TOKEN not in signed.headers["location"]
    asked = site.client.post("/ask", data={"goal": "g", "csrf_token": csrf}, follow_redirects=False)
    assert asked.status_code == 303
    site.wait()
    assert TOKEN not in site.client.get("/ask").text


def test_every_read_route_but_health_and_login_needs_the_token(site_factory: Callable[..., Site]) -> None:
    """Off loopback, without the token: API reads and metrics answer 401 JSON, pages send to /login, nothing leaks."""
    site, values = guarded_site(site_factory)
    open_reads = []
    for endpoint in reading(endpoints(site.client.app, values)):  # type: ignore[arg-type]
        if endpoint.template in OPEN_PATHS:
            continue
        response = send(site.client, endpoint, {})
        refused = response.status_code == 401 and response.json()["error"] == "unauthorized"
        sent_to_login = response.status_code == 303 and response.headers["location"].startswith("/login?next=")
        if not (refused or sent_to_login):
            open_reads.append(f"{endpoint}: {response.status_code}")
    assert open_reads == []


def test_every_read_route_works_with_the_bearer_token(site_factory: Callable[..., Site]) -> None:
    """Off loopback, scripts reading with the token get every page and document."""
    site, values = guarded_site(site_factory)
    for endpoint in reading(endpoints(site.client.app, values)):  # type: ignore[arg-type]
        response = send(site.client, endpoint, BEARER)
        assert response.status_code == 200, (str(endpoint), response.status_code)


# -- how the token is kept and compared ---------------------------------------------------------------------------


def test_the_sign_in_cookie_is_httponly_samesite_strict_and_secure_over_https(
    site_factory: Callable[..., Site],
) -> None:
    """Scripts cannot read the token cookie, other sites cannot send it, and over HTTPS it never goes in clear."""
    site, _ = guarded_site(site_factory)
    for base, secure in (("http://testserver", False), ("https://testserver", True)):
        client = TestClient(site.client.app, base_url=base)
        csrf = csrf_of(client)
        response = client.post("/login", data={"token": TOKEN, "csrf_token": csrf, "next": "/"}, follow_redirects=False)
        assert response.status_code == 303
        cookies = [header for header in response.headers.get_list("set-cookie") if header.startswith("marsrag_token=")]
        assert len(cookies) == 1
        morsel = SimpleCookie(cookies[0])["marsrag_token"]
        assert morsel["httponly"] and morsel["samesite"].lower() == "strict" and morsel["path"] == "/"
        assert bool(morsel["secure"]) is secure
        assert not morsel["max-age"] and not morsel["expires"], "the token cookie outlives the browser session"


def test_a_wrong_token_at_login_sets_no_cookie(site_factory: Callable[..., Site]) -> None:
    """401 and no sign-in cookie for near misses."""
    site, _ = guarded_site(site_factory)
    csrf = csrf_of(site.client)
    for wrong in (TOKEN[:-1], TOKEN + "x", "", " " + TOKEN):
        response = site.client.post("/login", data={"token": wrong, "csrf_token": csrf, "next": "/"})
        assert response.status_code == 401 and "marsrag_token" not in response.headers.get("set-cookie", "")


def _functions(path: Path) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def _secret_comparisons(node: ast.AST, secrets_named: set[str]) -> list[str]:
    """``==``/``!=``/``in`` comparisons in ``node`` that involve one of the names (a timing leak)."""
    found = []
    for compare in ast.walk(node):
        if not isinstance(compare, ast.Compare):
            continue
        if not any(isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in compare.ops):
            continue
        operands = [compare.left, *compare.comparators]
        names = {
            ast.unparse(sub)
            for operand in operands
            for sub in ast.walk(operand)
            if isinstance(sub, ast.Name | ast.Attribute)
        }
        if names & secrets_named:
            found.append(ast.unparse(compare))
    return found


def _calls(node: ast.AST, name: str) -> list[ast.Call]:
    return [
        call
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute | ast.Name)
        and ast.unparse(call.func).endswith(name)
    ]


def test_tokens_are_compared_in_constant_time() -> None:
    """bearer_ok and /login compare with hmac.compare_digest, never with == (no early exit on the first wrong byte)."""
    assert secrets.compare_digest is hmac.compare_digest
    checks = {
        WEB / "security.py": ("bearer_ok", {"expected", "value", "cookie", "header"}),
        WEB / "pages.py": ("login", {"token", "settings.token"}),
    }
    for path, (function, names) in checks.items():
        body = _functions(path)[function]
        assert _secret_comparisons(body, names) == [], f"{path.name}:{function}"
        digests = _calls(body, "compare_digest")
        assert digests, f"{path.name}:{function} does not use compare_digest"
    # Nowhere in the web layer is the configured token compared with ==.
    for path in sorted(WEB.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert _secret_comparisons(tree, {"settings.token", "expected"}) == [], path.name


def test_the_comparison_check_would_catch_a_plain_equality() -> None:
    """The static check finds ``value == expected`` (it can fail)."""
    tree = ast.parse("def bearer_ok(value, expected):\n    return value.strip() == expected\n")
    assert _secret_comparisons(tree, {"expected"}) == ["value.strip() == expected"]
