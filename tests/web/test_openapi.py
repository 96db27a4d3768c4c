"""The OpenAPI document: every object it describes has properties or an example (no ReDoc ``property1``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.web.conftest import Site

pytestmark = pytest.mark.crewai


def bare_objects(schema: Any, where: str = "") -> Iterator[str]:
    """Where ``schema`` (any part of an OpenAPI document) has an object with neither properties nor an example."""
    if isinstance(schema, dict):
        if "example" in schema or "examples" in schema:
            return  # an example is what the docs show: below it, nothing is made up
        is_object = schema.get("type") == "object" or "additionalProperties" in schema
        if is_object and not schema.get("properties"):
            yield where or "/"
        for key, value in schema.items():
            yield from bare_objects(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for number, value in enumerate(schema):
            yield from bare_objects(value, f"{where}/{number}")


def test_every_object_in_the_openapi_document_has_properties_or_an_example(site: Site) -> None:
    """No route answers or takes a bare JSON object: ReDoc would show it as ``"property1": "string"``."""
    document = site.client.app.openapi()  # type: ignore[attr-defined]
    assert list(bare_objects(document["paths"])) == []
    assert list(bare_objects(document["components"])) == []


def test_the_walk_finds_a_bare_object() -> None:
    """A ``dict[str, Any]`` field (an object without properties) is found, with where it is."""
    found = bare_objects(
        {"schemas": {"Run": {"properties": {"detail": {"type": "object", "additionalProperties": True}}}}}
    )
    assert list(found) == ["/schemas/Run/properties/detail"]


def test_health_example_is_a_real_value(site: Site) -> None:
    """ReDoc's /health sample is ``{"status": "ok"}``, as the server answers."""
    document = site.client.app.openapi()  # type: ignore[attr-defined]
    schema = document["components"]["schemas"]["Health"]
    assert schema["properties"]["status"]["examples"] == ["ok"]
    assert site.client.get("/health").json() == {"status": "ok"}
