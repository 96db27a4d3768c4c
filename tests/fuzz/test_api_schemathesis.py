"""Schemathesis over the app's own OpenAPI document: no request it generates gets a 5xx.

Each documented operation gets bounded, derandomized cases: schema-valid ones (positive), and schema-invalid
ones (negative) where the operation has a query or body to break. A 2xx must match its documented schema; an
error under ``/api`` must be ``{"error", "detail"}`` JSON; a refused request must store no run. Mutating
requests carry the server's own ``Origin`` (the same-origin rule of marsrag.web.guards), as its pages do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import schemathesis
from hypothesis import given
from hypothesis import strategies as st
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
)

from tests.fuzz.conftest import Site, fuzz
from tests.web.conftest import answer

pytestmark = pytest.mark.crewai

#: Every operation of the OpenAPI document; a new one must be added here (and so gets fuzzed).
OPERATIONS = [
    ("GET", "/health"),
    ("GET", "/api/runs"),
    ("POST", "/api/runs"),
    ("GET", "/api/runs/{run_id}"),
    ("GET", "/api/runs/{run_id}/stream"),
    ("POST", "/api/runs/{run_id}/follow"),
    ("POST", "/api/runs/{run_id}/feedback"),
    ("POST", "/api/runs/{run_id}/tasks/{task_id}/repair"),
    ("POST", "/api/runs/{run_id}/tasks/{task_id}/regenerate"),
    ("GET", "/metrics"),
    ("GET", "/api/metrics"),
    ("GET", "/api/metrics/daily"),
    ("GET", "/api/metrics/failures"),
    ("GET", "/api/knowledge"),
]
#: Operations with a query string or a body, which negative generation can break (path strings cannot be).
BREAKABLE = [
    ("GET", "/api/runs"),
    ("POST", "/api/runs"),
    ("POST", "/api/runs/{run_id}/feedback"),
    *[op for op in OPERATIONS if op[1].startswith("/api/metrics")],
]
EXAMPLES = 40
SAME_ORIGIN = {"Origin": "http://testserver"}


def load_schema(site: Site) -> Any:
    """The app's OpenAPI document, loaded by schemathesis over ASGI (the app itself, no server)."""
    return schemathesis.openapi.from_asgi("/openapi.json", site.client.app)


def stored_runs(site: Site) -> int:
    return len(site.backend.store.list_runs(limit=100_000))


def test_every_documented_operation_is_fuzzed(site_factory: Callable[..., Site]) -> None:
    """The list above is the document's operations, so an endpoint added later cannot escape the fuzzing."""
    schema = load_schema(site_factory([]))
    documented = {(result.ok().method.upper(), result.ok().path) for result in schema.get_all_operations()}
    assert documented == set(OPERATIONS)


@pytest.mark.parametrize(
    ("method", "path", "mode"),
    [(*op, "positive") for op in OPERATIONS] + [(*op, "negative") for op in BREAKABLE],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_no_generated_request_gets_a_server_error(
    site_factory: Callable[..., Site], record_property: Callable[[str, object], None], method: str, path: str, mode: str
) -> None:
    """Up to 40 generated requests: never a 5xx; 2xx bodies and /api refusals match the document."""
    site = site_factory([])
    operation = load_schema(site)[path][method]
    statuses: Counter[int] = Counter()

    @fuzz(EXAMPLES)
    @given(case=operation.as_strategy(generation_mode=GenerationMode(mode)))
    def request(case: Any) -> None:
        before = stored_runs(site) if method == "POST" else 0
        response = case.call(headers=SAME_ORIGIN if method == "POST" else None)
        statuses[response.status_code] += 1
        assert response.status_code < 500, (case.as_curl_command(), response.text)
        if response.status_code < 300:
            case.validate_response(response, checks=[response_schema_conformance, content_type_conformance])
        elif path.startswith("/api"):
            body = response.json()
            assert isinstance(body["error"], str) and isinstance(body["detail"], str), body
            # Refusals are documented too (ErrorBody under each status): the body must match the document.
            case.validate_response(response, checks=[response_schema_conformance])
            if method == "POST":
                assert stored_runs(site) == before
        if mode == "negative" and response.status_code != 413:
            # Schema-invalid input is refused (schemathesis knows which mutations, like unknown query keys, may pass).
            # 413 is a refusal too, one schemathesis does not count: a goal just over 100,000 characters that
            # its encoder escapes (\u00c1: 6 bytes a character) is over the 512 KiB body limit.
            case.validate_response(response, checks=[negative_data_rejection])

    request()
    site.wait()
    record_property("cases", statuses.total())
    record_property("statuses", dict(statuses))
    print(f"{method} {path} {mode}: {statuses.total()} cases, statuses {dict(sorted(statuses.items()))}")
    assert statuses.total() > 0


#: Operations on one run: fuzzed again with the path pointing at a real, stored run.
RUN_SCOPED = [op for op in OPERATIONS if "{run_id}" in op[1]]
TASK_IDS = st.sampled_from(["diagnose", "recommend", "plan"]) | st.text(max_size=40)


@pytest.mark.parametrize(("method", "path"), RUN_SCOPED, ids=lambda value: value)
def test_operations_on_a_real_run_get_no_server_error(
    site_factory: Callable[..., Site], record_property: Callable[[str, object], None], method: str, path: str
) -> None:
    """Generated requests aimed at a stored run (its id, its task ids or junk): never a 5xx, every answer documented.

    The run's first task failed, so repairs and regenerations really run (their LLM has few answers left: the
    failures are recorded as failed attempts, still 200); follows start runs.
    """
    site = site_factory(["No idea.", "No idea.", answer(), answer(), answer(loop="A repaired loop?")])
    run_id = site.start()
    operation = load_schema(site)[path][method]
    statuses: Counter[int] = Counter()

    @fuzz(EXAMPLES // 2)
    @given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE), task_id=TASK_IDS)
    def request(case: Any, task_id: str) -> None:
        case.path_parameters = {**(case.path_parameters or {}), "run_id": run_id}
        if "{task_id}" in path:
            case.path_parameters["task_id"] = task_id
        response = case.call(headers=SAME_ORIGIN if method == "POST" else None)
        statuses[response.status_code] += 1
        assert response.status_code < 500, (case.as_curl_command(), response.text)
        case.validate_response(response, checks=[response_schema_conformance, content_type_conformance])

    request()
    site.wait()
    record_property("cases", statuses.total())
    print(f"{method} {path} on a real run: {statuses.total()} cases, statuses {dict(sorted(statuses.items()))}")
    assert statuses[200] + statuses[201] + statuses[202] > 0  # the real run was reached, not only 404s
