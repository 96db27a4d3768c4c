"""``/favicon.ico``: a small icon, open without the token like the static files, cacheable, linked by the pages."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.web.conftest import Site

pytestmark = pytest.mark.crewai

TOKEN = "t" * 40


def test_favicon_answers_an_icon_anyone_may_cache(site_factory: Callable[..., Site]) -> None:
    """Off loopback and without the token: 200, an ICO file, cacheable for a day."""
    site = site_factory([], host="0.0.0.0", token=TOKEN)
    response = site.client.get("/favicon.ico")
    assert response.status_code == 200 and response.headers["content-type"] == "image/x-icon"
    assert response.content[:4] == b"\x00\x00\x01\x00" and len(response.content) < 8192
    assert response.headers["cache-control"] == "public, max-age=86400"
    assert site.client.get("/static/favicon.svg").headers["content-type"].startswith("image/svg+xml")


@pytest.mark.parametrize("path", ["/", "/ask", "/login", "/docs", "/redoc"])
def test_every_page_links_the_icon_in_its_head(site: Site, path: str) -> None:
    """The <head> of the pages and of the API docs names the icon."""
    head = site.client.get(path).text.partition("</head>")[0]
    assert '<link rel="icon" href="/favicon.ico"' in head and 'href="/static/favicon.svg"' in head
