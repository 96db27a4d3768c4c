"""The UI view model mapper, kept importable here (the docs name ``marsrag.web.viewmodel``).

It lives in :mod:`marsrag.views.viewmodel`, shared by the web pages and the terminal printer; this module
re-exports its public names unchanged.
"""

from __future__ import annotations

from marsrag.views import viewmodel as _viewmodel
from marsrag.views.viewmodel import *  # noqa: F403 - the whole public interface, re-exported

__all__ = list(_viewmodel.__all__)
