"""Narrative tasks against a local OpenAI-compatible server that enforces the response schema strictly.

Real providers with native structured output validate the answer against the ``json_schema`` response format
inside the call: a reply that does not conform never comes back. The server here behaves the same way
(scripted replies, checked with ``jsonschema`` against the schema each request carries, HTTP 400 when they
do not conform). It shows why a narrative task sends the lenient ``LoopOutputDraft`` as ``response_model``:
a near-miss (``"payoff": ""``) comes back, reaches the contract guardrail and is repaired once; with the
strict ``LoopOutput`` as ``response_model`` the provider rejects it and the guardrail never sees it.

What CrewAI 1.15.30's OpenAI provider does (llms/providers/openai/completion.py, ``_handle_completion``): with a
``response_model`` it calls ``client.beta.chat.completions.with_raw_response.parse(response_format=<model>)``,
so the OpenAI SDK sends ``{"type": "json_schema", "json_schema": {"name", "strict": true, "schema"}}`` with the
model's pydantic schema made strict (``additionalProperties: false``, every property required, constraints
such as ``minLength`` kept) and parses the reply with the same model. A 400 is raised as
``openai.BadRequestError`` (the SDK does not retry a 400); the agent then re-runs the task with the same prompt
up to ``max_retry_limit`` (2) more times and raises the error.

These tests kick off crews on a bare ``crewai.LLM``: CrewAI's own behaviour, the controls. At MarsRAG's LLM
boundary (``marsrag.llm.boundary``) the task's response model never reaches the provider; the structure is
asked for in the request and every reply reaches the guardrail as text (test_structured_near_miss.py).
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jsonschema
import pytest

from marsrag.contract import LoopOutput
from marsrag.tasks import ProjectConfig
from tests._net import serving
from tests.contract.samples import CONTENT, FIELDS

pytestmark = pytest.mark.crewai

VALID = json.dumps(CONTENT)
NEAR_MISS = json.dumps({**CONTENT, "payoff": ""})
GOAL = {"goal": "API latency SLO breaches"}
#: Agents are built with max_retry_limit=0 (MarsRAG's call policy retries transport errors): one run of a task.
AGENT_RUNS = 1


@dataclass(frozen=True)
class Exchange:
    """One request the server received and how it answered it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    status: int
    error: str | None

    @property
    def response_format(self) -> dict[str, Any]:
        return self.body["response_format"]  # type: ignore[no-any-return]

    @property
    def schema(self) -> dict[str, Any]:
        return self.response_format["json_schema"]["schema"]  # type: ignore[no-any-return]


class StrictChatServer(ThreadingHTTPServer):
    """An OpenAI chat-completions server on loopback that answers scripted contents in order.

    Like a provider with constrained decoding it never returns a reply that breaks the requested
    ``json_schema``: such a reply is answered with HTTP 400 (it still uses up its place in the script).
    """

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[str] = []
        self.exchanges: list[Exchange] = []
        #: Plays a server that refuses some structured-output requests: given a request body, the status and
        #: JSON body of its refusal, or None to answer it (a refused request uses up no place in the script).
        self.refuse: Callable[[dict[str, Any]], tuple[int, dict[str, Any]] | None] | None = None
        self._lock = threading.Lock()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.server_address[:2]
        return str(host), int(port)

    @property
    def base_url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}/v1"

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and JSON body for one request, recorded in :attr:`exchanges`."""
        with self._lock:
            status, payload, error = self._decide(path, body)
            self.exchanges.append(Exchange(path, headers, body, status, error))
        return status, payload

    def _decide(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], str | None]:
        if path != "/v1/chat/completions":
            return _error(404, f"no route for {path}")
        refusal = self.refuse(body) if self.refuse is not None else None
        if refusal is not None:
            return refusal[0], refusal[1], json.dumps(refusal[1])
        if not self.script:
            return _error(400, "the test script has no reply left")
        content = self.script.pop(0)
        response_format = body.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            problem = _schema_violation(response_format["json_schema"]["schema"], content)
            if problem is not None:
                return _error(400, f"response does not match json_schema: {problem}")
        completion = {
            "id": f"chatcmpl-{len(self.exchanges) + 1}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }
        return 200, completion, None


def _error(status: int, message: str) -> tuple[int, dict[str, Any], str]:
    return status, {"error": {"message": message, "type": "invalid_request_error"}}, message


def _schema_violation(schema: dict[str, Any], content: str) -> str | None:
    """Why ``content`` breaks ``schema`` (None when it conforms), checked as JSON Schema 2020-12."""
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"invalid schema: {exc.message}"
    try:
        instance = json.loads(content)
    except json.JSONDecodeError:
        return "the reply is not JSON"
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(instance), key=lambda e: list(e.path))
    if not errors:
        return None
    return "; ".join(f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors)


class _Handler(BaseHTTPRequestHandler):
    server: StrictChatServer

    def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches to
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        body = json.loads(raw or b"{}")
        status, payload = self.server.answer(self.path, headers, body)
        if status == 200 and body.get("stream"):
            self._stream(payload)
            return
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, completion: dict[str, Any]) -> None:
        """Send a completion as OpenAI-compatible servers stream one: server-sent chunks of a few characters."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        choice = completion["choices"][0]
        content = choice["message"]["content"]
        head = {key: completion[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
        pieces = [content[start : start + 7] for start in range(0, len(content), 7)]
        deltas = [{"role": "assistant", "content": ""}, *({"content": piece} for piece in pieces)]
        for number, delta in enumerate(deltas, start=1):
            finish = choice["finish_reason"] if number == len(deltas) else None
            self._event(head | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        self._event(head | {"choices": [], "usage": completion["usage"]})
        self.wfile.write(b"data: [DONE]\n\n")

    def _event(self, data: dict[str, Any]) -> None:
        self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        """Keep the test output quiet."""


@pytest.fixture
def server() -> Iterator[StrictChatServer]:
    """The strict chat-completions server on 127.0.0.1, an OS-chosen port; shut down after the test."""
    with serving(StrictChatServer(), "strict-chat-server") as httpd:
        yield httpd


def _is_loopback(host: object) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(str(host)).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def network(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, object]]:
    """Every name lookup and connection made during the test; anything off loopback is refused."""
    seen: list[tuple[str, object]] = []
    real_connect, real_connect_ex, real_getaddrinfo = (
        socket.socket.connect,
        socket.socket.connect_ex,
        socket.getaddrinfo,
    )

    def check(kind: str, address: object) -> None:
        seen.append((kind, address))
        if isinstance(address, tuple) and not _is_loopback(address[0]):
            raise OSError(f"the test refused a connection off loopback: {address!r}")

    def connect(sock: socket.socket, address: Any) -> None:
        check("connect", address)
        real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        check("connect", address)
        return real_connect_ex(sock, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(("getaddrinfo", host))
        if not _is_loopback(host):
            raise socket.gaierror(f"the test refused a name lookup off loopback: {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return seen


@dataclass
class Run:
    """A one-task crew kicked off against the server: the built task, the error it raised, the LLM calls."""

    item: Any
    error: BaseException | None
    llm_calls: int


def _crewai() -> tuple[Any, Any, Any]:
    """CrewAI, its event bus and the LLM-call-started event; import only after MarsRAG's binding."""
    import crewai
    from crewai.events.event_bus import crewai_event_bus
    from crewai.events.types.llm_events import LLMCallStartedEvent

    return crewai, crewai_event_bus, LLMCallStartedEvent


def kickoff(project: ProjectConfig, server: StrictChatServer, response_model: type | None = None) -> Run:
    """Build the project's only workflow on a real CrewAI LLM pointed at ``server`` and kick it off.

    ``response_model`` replaces the task's provider-facing model (the control); everything else is as built.
    """
    from marsrag.integrations.crewai_builders import build_crew  # sets CrewAI's offline environment first

    crewai, crewai_event_bus, llm_call_started = _crewai()
    llm = crewai.LLM(model="openai/test-model", base_url=server.base_url, api_key="test-key")
    built = build_crew(project, None, llm)
    item = built.tasks[0]
    if response_model is not None:
        item.task.response_model = response_model
    started: list[object] = []
    error: BaseException | None = None
    with crewai_event_bus.scoped_handlers():

        @crewai_event_bus.on(llm_call_started)
        def count(source: object, event: object) -> None:
            started.append(event)

        try:
            built.kickoff(GOAL)
        except Exception as exc:  # the control expects the provider's rejection to surface
            error = exc
        crewai_event_bus.flush(timeout=None)  # handlers run on a pool; wait for all, without a deadline
    return Run(item, error, len(started))


def _messages(exchange: Exchange) -> str:
    return json.dumps(exchange.body["messages"])


def test_near_miss_passes_the_lenient_schema_and_the_guardrail_repairs_it(
    single_task_project: Callable[..., ProjectConfig], server: StrictChatServer
) -> None:
    """The draft schema has no constraints, so the provider returns the near-miss and the guardrail repairs it."""
    server.script[:] = [NEAR_MISS, VALID]
    run = kickoff(single_task_project("diagnose"), server)

    assert run.error is None
    assert [(x.path, x.status) for x in server.exchanges] == [("/v1/chat/completions", 200)] * 2
    for exchange in server.exchanges:
        # The OpenAI SDK's structured-output helper, with the draft as a strict json_schema response format.
        assert exchange.headers.get("x-stainless-helper-method") == "chat.completions.parse"
        assert exchange.body["model"] == "test-model"
        assert exchange.response_format["type"] == "json_schema"
        assert exchange.response_format["json_schema"]["name"] == "LoopOutputDraft"
        assert exchange.response_format["json_schema"]["strict"] is True
        schema = exchange.schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert schema["required"] == list(FIELDS)
        assert list(schema["properties"]) == list(FIELDS)
        for prop in schema["properties"].values():
            assert prop["type"] == "string"
            assert not {"minLength", "maxLength", "pattern"} & set(prop)
        assert _schema_violation(schema, NEAR_MISS) is None  # so the server had to return it

    item = run.item
    assert [a.result.status for a in item.guardrail.attempts] == ["partial", "valid"]
    assert json.loads(item.guardrail.attempts[0].raw)["payoff"] == ""  # the near-miss itself reached the guardrail
    repair = _messages(server.exchanges[1])
    assert "Previous attempt failed validation" in repair and "payoff" in repair
    assert isinstance(item.task.output.pydantic, LoopOutput)
    assert item.task.output.pydantic == LoopOutput(**CONTENT)


def test_with_the_strict_model_the_provider_rejects_the_near_miss_before_the_guardrail(
    single_task_project: Callable[..., ProjectConfig], server: StrictChatServer
) -> None:
    """Control: LoopOutput as response_model sends minLength 1; each near-miss is a 400 and the task raises."""
    import openai

    server.script[:] = [NEAR_MISS] * AGENT_RUNS
    run = kickoff(single_task_project("diagnose"), server, response_model=LoopOutput)

    assert isinstance(run.error, openai.BadRequestError)
    assert [x.status for x in server.exchanges] == [400] * AGENT_RUNS
    for exchange in server.exchanges:
        assert exchange.response_format["json_schema"]["name"] == "LoopOutput"
        payoff = exchange.schema["properties"]["payoff"]
        assert payoff["minLength"] == 1 and payoff["maxLength"] == 800
        assert exchange.error is not None and exchange.error.startswith("response does not match json_schema: payoff:")
    # The rejection is never fed back: every run sends the same prompt, and the guardrail saw nothing.
    assert len({_messages(x) for x in server.exchanges}) == 1
    assert run.item.guardrail.attempts == []
    assert run.item.task.output is None


def test_with_the_strict_model_a_near_miss_fails_the_task_before_the_guardrail_sees_it(
    single_task_project: Callable[..., ProjectConfig], server: StrictChatServer
) -> None:
    """Control: with the strict model the near-miss is a 400, an error (not an answer): no repair can follow.

    Agents are built with max_retry_limit=0, so CrewAI does not re-run the task blindly either: the reason
    the binding asks for the lenient draft, whose near-miss the guardrail repairs with feedback.
    """
    server.script[:] = [NEAR_MISS, VALID]
    run = kickoff(single_task_project("diagnose"), server, response_model=LoopOutput)

    assert run.error is not None and "400" in str(run.error)
    assert [x.status for x in server.exchanges] == [400]
    assert run.item.guardrail.attempts == []


@pytest.mark.parametrize(
    ("response_model", "script"),
    [(None, [NEAR_MISS, VALID]), (LoopOutput, [NEAR_MISS] * AGENT_RUNS)],
    ids=["lenient draft, repaired", "strict model, rejected"],
)
def test_every_llm_call_reaches_the_local_server_and_nothing_leaves_loopback(
    single_task_project: Callable[..., ProjectConfig],
    server: StrictChatServer,
    network: list[tuple[str, object]],
    response_model: type | None,
    script: list[str],
) -> None:
    """Each LLM call CrewAI starts is one request the server saw; every lookup and connection is loopback."""
    server.script[:] = script
    run = kickoff(single_task_project("diagnose"), server, response_model=response_model)

    assert run.llm_calls == len(script)
    assert len(server.exchanges) == run.llm_calls
    assert server.script == []
    connections = [address for kind, address in network if kind == "connect"]
    assert connections and {tuple(address) for address in connections} == {server.address}  # type: ignore[arg-type]
    assert {host for kind, host in network if kind == "getaddrinfo"} <= {server.address[0]}
