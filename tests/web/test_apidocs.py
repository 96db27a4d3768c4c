"""The API documentation pages through the app: local assets only, their own policy, FastAPI's CDN pages gone."""

from __future__ import annotations

import re

import pytest

from tests.web.conftest import Site

pytestmark = pytest.mark.crewai

URL = re.compile(r"""(?:src|href)=["']([^"']+)["']""")


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_the_docs_pages_reference_only_this_servers_files(site: Site, path: str) -> None:
    """Every script, style and icon a docs page names is this server's; no CDN, no web font, no inline script."""
    response = site.client.get(path)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    page = response.text
    assets = URL.findall(page)
    assert assets and all(asset.startswith("/static/") or asset == "/favicon.ico" for asset in assets), assets
    assert "fonts.googleapis" not in page and "cdn." not in page
    assert re.search(r"<script>\s*\S", page) is None  # every script is a file
    for asset in assets:
        assert site.client.get(asset).status_code == 200, asset


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_the_docs_pages_allow_scripts_from_this_server_only(site: Site, path: str) -> None:
    """The docs pages' policy: no default source, scripts and fetches from this server, no framing."""
    policy = {
        directive.split()[0]: directive.split()[1:]
        for directive in site.client.get(path).headers["content-security-policy"].split(";")
        if directive.strip()
    }
    assert policy["default-src"] == ["'none'"] and policy["script-src"] == ["'self'"]
    assert policy["connect-src"] == ["'self'"] and policy["frame-ancestors"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]
    assert not any(value.startswith(("http", "*")) for values in policy.values() for value in values), policy


def test_fastapis_cdn_pages_are_off(site: Site) -> None:
    """FastAPI's own docs routes (Swagger UI and ReDoc from a CDN, the OAuth redirect) are not served."""
    assert site.client.get("/docs/oauth2-redirect").status_code == 404
    assert site.client.app.docs_url is None and site.client.app.redoc_url is None  # type: ignore[attr-defined]
    assert "/static/vendor/swagger-ui/" in site.client.get("/docs").text
