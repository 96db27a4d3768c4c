"""The error body every JSON endpoint answers with, as the OpenAPI document describes it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorBody(BaseModel):
    """Why a request was refused: a stable code, a sentence for people, and the field at fault if any."""

    error: str = Field(description="A stable code: not_found, conflict, invalid_input, invalid_request, ...")
    detail: str = Field(description="What went wrong, in one sentence.")
    field: str | None = Field(default=None, description="The request field at fault, when there is one.")


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


#: The refusals any JSON endpoint may answer with (documented once per router).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _error("A malformed request (e.g. a body that is not UTF-8 JSON), or a Host this server does not serve."),
    401: _error("Off loopback: no valid bearer token."),
    403: _error("A write sent by a browser from another origin."),
    404: _error("No such run, task or session."),
    409: _error("The action does not apply to the run or task as it is now."),
    413: _error("The body is larger than the server accepts."),
    415: _error("A body that is not `Content-Type: application/json`."),
    422: _error("A request field is invalid (named in `field`)."),
    503: _error("The store or the job queue is unreachable."),
}
