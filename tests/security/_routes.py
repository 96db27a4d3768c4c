"""Every route of the real app as concrete requests, so a route added later is covered without editing a test."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import Mount, Route

#: Open to anyone off loopback: the health check, signing in, the stylesheet the sign-in page needs, the icon.
OPEN_PATHS = frozenset({"/health", "/login", "/static/{path}", "/favicon.ico"})
_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")
#: What a write needs in its body to be valid, by route, beside a goal (the runs and follows take one): a rating.
_FIELDS = {
    "/api/runs/{run_id}/feedback": {"on": "answer", "rating": "up"},
    "/runs/{run_id}/feedback": {"on": "answer", "rating": "up"},
}


@dataclass(frozen=True)
class Endpoint:
    """One method of one route with its path parameters filled in."""

    method: str
    template: str
    path: str

    @property
    def is_api(self) -> bool:
        """Whether the JSON API serves it (as opposed to a page or a form)."""
        return self.path.startswith("/api/") or self.path in ("/health", "/metrics", "/openapi.json")

    @property
    def json_body(self) -> dict[str, str]:
        """A JSON body the API write accepts: its own fields, else a goal (its models refuse unknown keys)."""
        return dict(_FIELDS.get(self.template, {"goal": "g"}))

    @property
    def form_fields(self) -> dict[str, str]:
        """The fields a form post needs beside a goal and its CSRF token (the pages ignore fields they do not read)."""
        return dict(_FIELDS.get(self.template, {}))

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


def endpoints(app: FastAPI, values: dict[str, str]) -> list[Endpoint]:
    """Every method of every route of ``app`` (HEAD aside), path parameters taken from ``values``.

    Raises:
        KeyError: a route has a parameter ``values`` does not name (add it, so the route is tested).
    """
    found: list[Endpoint] = []
    for route in _flat(app.routes):
        if isinstance(route, Mount):
            found.append(Endpoint("GET", f"{route.path}/{{path}}", f"{route.path}/marsrag.css"))
            continue
        template: str = route.path
        methods = getattr(route, "methods", None)
        assert isinstance(template, str) and methods, f"a route of an unexpected kind: {route!r}"
        path = _PARAM.sub(lambda match: values[match.group(1)], template)
        for method in sorted(methods):
            if method != "HEAD":
                found.append(Endpoint(method, template, path))
    assert len({(e.method, e.template) for e in found}) == len(found), "a route was listed twice"
    return found


def _flat(routes: Iterable[Any]) -> Iterator[Any]:
    """The app's routes with included routers opened (FastAPI >= 0.16x keeps them as one route per router)."""
    for route in routes:
        if isinstance(route, APIRoute | Route | Mount):
            yield route
        elif callable(getattr(route, "effective_candidates", None)):
            yield from _flat(route.effective_candidates())
        else:
            yield route


def mutating(found: list[Endpoint]) -> list[Endpoint]:
    """The endpoints that may change something (every method but GET)."""
    return [endpoint for endpoint in found if endpoint.method != "GET"]


def reading(found: list[Endpoint]) -> list[Endpoint]:
    """The GET endpoints."""
    return [endpoint for endpoint in found if endpoint.method == "GET"]
