"""What servers answer when they refuse a structured-output request, and errors that are not refusals.

Each body is what the server sends (status and JSON text), as seen from its logs and issue reports.
"""

from __future__ import annotations

import json
from typing import Any

#: Per provider family: the HTTP status and the body of its refusal.
REFUSALS: dict[str, tuple[int, str]] = {
    # llama-cpp-python's server: response_format.type is a Literal["text", "json_object"]; FastAPI's
    # validation error is turned into a 500 by its error handler.
    "llama-cpp-python": (
        500,
        json.dumps(
            {
                "error": {
                    "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
                    "'ctx': {'expected': \"'text' or 'json_object'\"}}]",
                    "type": "internal_server_error",
                    "param": None,
                    "code": None,
                }
            }
        ),
    ),
    "lm-studio": (400, json.dumps({"error": "'response_format.type' must be 'json_schema' or 'text'"})),
    "openai": (
        400,
        json.dumps(
            {
                "error": {
                    "message": "Invalid schema for response_format 'LoopOutput': In context=('properties', 'hook'), "
                    "'minLength' is not permitted.",
                    "type": "invalid_request_error",
                    "param": "response_format",
                    "code": "invalid_json_schema",
                }
            }
        ),
    ),
    "vllm": (
        400,
        json.dumps(
            {
                "object": "error",
                "message": "guided_json is not supported by the xgrammar backend: the JSON schema uses "
                "unsupported keywords ['maxLength', 'minLength']",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        ),
    ),
    "ollama-compatible (grammar)": (
        400,
        json.dumps(
            {
                "error": {
                    "message": "Unrecognized request argument supplied: grammar",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            }
        ),
    ),
}

#: HTTP errors that are not refusals, whatever their body says.
NOT_REFUSALS: dict[str, tuple[int, str]] = {
    "401 invalid key": (
        401,
        json.dumps(
            {
                "error": {
                    "message": "Incorrect API key provided: sk-test. You can find your API key in your account.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            }
        ),
    ),
    "404 model not found": (
        404,
        json.dumps(
            {
                "error": {
                    "message": "The model `gpt-4o-mini-2` does not exist or you do not have access to it.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "model_not_found",
                }
            }
        ),
    ),
    "429 naming response_format": (
        429,
        json.dumps(
            {
                "error": {
                    "message": "Rate limit reached for requests with response_format json_schema: "
                    "limit 3 per minute. Please try again in 20s.",
                    "type": "requests",
                    "param": None,
                    "code": "rate_limit_exceeded",
                }
            }
        ),
    ),
    "500 unrelated": (
        500,
        json.dumps({"error": {"message": "CUDA error: out of memory", "type": "internal_server_error"}}),
    ),
    "400 context too long": (
        400,
        json.dumps(
            {
                "error": {
                    "message": "This model's maximum context length is 4096 tokens; your messages resulted in "
                    "5120 tokens.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            }
        ),
    ),
}


def error_step(status: int, body: str) -> dict[str, Any]:
    """A replay script step playing the server's error."""
    return {"error": {"status": status, "body": body}}
