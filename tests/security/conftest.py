"""Security fixtures: the web tests' real app (``site_factory``) and Chromium (``browser``), shared as they are."""

from __future__ import annotations

from tests.web.conftest import browser, site_factory

__all__ = ["browser", "site_factory"]
