"""Oversized and malformed requests: always a 4xx with a JSON reason under /api, and nothing stored changes.

tests/web/test_app.py covers a body over the limit by Content-Length and chunked, broken JSON and bad fields;
here: a Content-Length that lies, every mutating route, wrong content types, bodies that are not UTF-8, huge
query strings and run ids with odd characters.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.fuzz.conftest import Site

pytestmark = pytest.mark.crewai

LIMIT = 1000
JSON = {"content-type": "application/json"}
POSTS = ["/api/runs", "/api/runs/x/follow", "/api/runs/x/tasks/t/repair", "/api/runs/x/tasks/t/regenerate"]


@pytest.fixture
def small(site_factory: Callable[..., Site]) -> Site:
    """A site refusing bodies over 1,000 bytes, whose LLM is never reached."""
    return site_factory([], max_body_bytes=LIMIT)


def assert_json_reason(response: Any, status: int, error: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert isinstance(body["error"], str) and isinstance(body["detail"], str) and body["detail"]
    if error is not None:
        assert body["error"] == error
    return body


def stored(site: Site) -> list[Any]:
    return site.backend.store.list_runs(limit=1000)


def asgi_post(site: Site, path: str, headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> tuple[int, bytes]:
    """Post through the raw ASGI interface: the headers exactly as given (a lying Content-Length included)."""
    app = site.client.app
    messages = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1} for i, chunk in enumerate(chunks)
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 1234),
        "server": ("testserver", 80),
    }
    asyncio.run(app(scope, receive, send))  # type: ignore[arg-type]
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


# -- oversized ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [*POSTS, "/ask", "/login"])
def test_every_mutating_route_refuses_an_oversized_body_with_413(small: Site, path: str) -> None:
    """API routes and form posts alike: 413 with a JSON reason before any guard or parser runs."""
    response = small.client.post(path, content=b"x" * (LIMIT + 1), headers=JSON)
    assert_json_reason(response, 413, "too_large")
    assert stored(small) == []


@pytest.mark.parametrize(
    ("declared", "chunks"),
    [
        pytest.param(b"10", [b"{" + b" " * LIMIT + b'"goal": "g"}'], id="declared-small-sent-big"),
        pytest.param(b"999999999999999999999999", [b'{"goal": "g"}'], id="declared-absurd"),
        pytest.param(b"-5", [b"a" * 600, b"a" * 600], id="declared-negative-streamed-big"),
        pytest.param(b"abc", [b"a" * (LIMIT + 1)], id="declared-garbage"),
        pytest.param(None, [b"a" * 400] * 3, id="undeclared-streamed-big"),
        pytest.param(None, [b""] * 50 + [b"a" * (LIMIT + 1)], id="empty-chunks-then-big"),
    ],
)
def test_a_lying_or_missing_content_length_cannot_get_a_big_body_through(
    small: Site, declared: bytes | None, chunks: list[bytes]
) -> None:
    """The limit counts the bytes that arrive, whatever Content-Length says: 413 JSON, nothing stored."""
    headers = [(b"content-type", b"application/json")]
    if declared is not None:
        headers.append((b"content-length", declared))
    status, body = asgi_post(small, "/api/runs", headers, chunks)
    assert status == 413 and json.loads(body)["error"] == "too_large"
    assert stored(small) == []


def test_a_body_exactly_at_the_limit_is_read(small: Site) -> None:
    """The limit is inclusive: a body of exactly max_body_bytes reaches the app (here: 422, not 413)."""
    body = b'{"goal": ' + b'"' + b"g" * (LIMIT - 12) + b'"}'
    body += b" " * (LIMIT - len(body))
    assert len(body) == LIMIT
    response = small.client.post("/api/runs", content=body, headers={**JSON, "origin": "http://evil.example"})
    assert_json_reason(response, 403)  # the body got through the limit, and the origin guard refused it


# -- malformed bodies --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "image/png"],
)
def test_a_json_body_with_a_wrong_content_type_is_refused(site: Site, content_type: str | None) -> None:
    """The API reads JSON only: the same valid body under another content type, or none, is a 415 JSON reason."""
    headers = {"content-type": content_type} if content_type else {}
    for path in ("/api/runs", "/api/runs/nope/follow", "/api/runs/nope/tasks/t/repair"):
        response = site.client.post(path, content=json.dumps({"goal": "g"}).encode(), headers=headers)
        reply = assert_json_reason(response, 415, "unsupported_media_type")
        assert "application/json" in reply["detail"]
    assert stored(site) == []


def test_bodiless_posts_need_no_content_type(site: Site) -> None:
    """Follow, repair and regenerate carry no body: with no content type at all they are not refused as 415."""
    run_id = site.start()
    followed = site.client.post(f"/api/runs/{run_id}/follow")
    assert followed.status_code == 202, followed.text
    site.wait()
    for action in ("repair", "regenerate"):
        response = site.client.post(f"/api/runs/{run_id}/tasks/diagnose/{action}", headers={"content-type": ""})
        assert_json_reason(response, 409, "conflict")  # the task is valid: past the content-type check


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"goal": "\xff\xfe"}', id="invalid-utf8"),
        pytest.param(b'{"goal": "\xed\xa0\x80"}', id="utf8-encoded-surrogate"),
        pytest.param(b'{"goal": "a\x00b"}', id="raw-nul-in-a-string"),
        pytest.param(b"\x00\x01\x02", id="binary"),
        pytest.param(b"[" * 5000 + b"]" * 5000, id="deep-array"),
        pytest.param(b'{"goal": ' * 5000, id="deep-broken-object"),
        pytest.param(b'"just a string"', id="a-string"),
        pytest.param(b"null", id="null"),
        pytest.param(b'{"goal": "g", "goal": 5}', id="duplicate-key"),
        pytest.param(b'{"goal": NaN}', id="nan"),
    ],
)
def test_malformed_json_bodies_are_4xx_json_reasons(site_factory: Callable[..., Site], body: bytes) -> None:
    """Bodies no run request can be: 400 (unreadable) or 422 (invalid), a JSON reason, no field named by offset."""
    site = site_factory([], max_body_bytes=64 * 1024)
    response = site.client.post("/api/runs", content=body, headers=JSON)
    reply = assert_json_reason(response, 400 if response.status_code == 400 else 422, "invalid_request")
    assert reply.get("field") is None or not reply["field"].isdigit()
    assert stored(site) == []


@pytest.mark.parametrize(
    "body", [b"goal=\xff\xfe&csrf_token=x", b"\xff" * 50, b"goal=" + b"%" * 200, b"&&&==&=" * 100, b"a=" * 400]
)
def test_malformed_form_posts_are_refused_and_store_nothing(site: Site, body: bytes) -> None:
    """Form posts that are not UTF-8 or not forms at all: refused (the CSRF check cannot pass), nothing stored."""
    headers = {"content-type": "application/x-www-form-urlencoded"}
    for path in ("/ask", "/login"):
        response = site.client.post(path, content=body, headers=headers)
        assert 400 <= response.status_code < 500, response.text
    assert stored(site) == []


# -- query strings and ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "session_id=" + "a" * 60_000,
        "limit=" + "9" * 5000,
        "limit=-1",
        "offset=1e309",
        "&".join(f"x{i}=1" for i in range(5000)),
        "session_id=%00",
        "session_id=%ff%fe",
        "limit=%00",
        "offset=9223372036854775808",  # past SQLite's 64-bit integers: found by schemathesis, once a 500
    ],
    ids=[
        "long-session",
        "5000-digit-limit",
        "negative",
        "float-overflow",
        "5000-params",
        "nul",
        "not-utf8",
        "nul-limit",
        "offset-past-int64",
    ],
)
def test_huge_and_odd_query_strings_are_answered_without_5xx(site: Site, query: str) -> None:
    """Huge or malformed query strings: 200 (ignored keys) or a 422 JSON reason."""
    for path in ("/api/runs", "/api/metrics", "/api/metrics/daily", "/api/metrics/failures"):
        response = site.client.get(f"{path}?{query}")
        assert response.status_code in (200, 422), (path, response.text)
        if response.status_code == 422:
            assert_json_reason(response, 422)


ODD_IDS = [
    # Literal ".." segments are not here: the HTTP client normalizes them away before sending.
    "..%2f..%2fetc%2fpasswd", "..%2F", "%2e%2e%2f%2e%2e", "%2e%2e", "%00", "a%00b", "%ff", "%E2%80%AE", "~root", "%25",
    "'; DROP TABLE runs;--", "*", "%20", "a" * 60_000,
]  # fmt: skip


@pytest.mark.parametrize("run_id", ODD_IDS, ids=lambda value: value if len(value) < 40 else "60000-chars")
def test_odd_run_ids_are_404_json_reasons_and_change_nothing(site: Site, run_id: str) -> None:
    """Traversal, NUL, bad percent-encoding, SQL and 60,000-character ids: 404 JSON, every route, nothing stored."""
    existing = site.start()
    before = site.client.get(f"/api/runs/{existing}").json()
    for method, path in [
        ("get", f"/api/runs/{run_id}"),
        ("post", f"/api/runs/{run_id}/follow"),
        ("post", f"/api/runs/{run_id}/tasks/diagnose/repair"),
        ("post", f"/api/runs/{existing}/tasks/{run_id}/regenerate"),
    ]:
        response = getattr(site.client, method)(path)
        assert response.status_code in (404, 405), (path, response.text)
        assert_json_reason(response, response.status_code)
    assert [run.run_id for run in stored(site)] == [existing]
    assert site.client.get(f"/api/runs/{existing}").json() == before
