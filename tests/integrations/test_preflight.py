"""`marsrag run` checks its LLM before anything is stored, and keeps CrewAI's noise off a stepped-down run.

Real processes on real SQLite files; the OpenAI-compatible server is the local stub of
tests/integrations/test_structured_output.py, here refusing ``json_schema`` as llama-cpp-python's server does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._net import free_port
from tests.contract.samples import CONTENT
from tests.integrations.test_structured_output import StrictChatServer, server  # noqa: F401 - fixture
from tests.llm.refusals import REFUSALS

pytestmark = pytest.mark.crewai


def marsrag(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a process, with no LLM settings inherited, its home and settings under ``tmp_path``."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "MARSRAG_LLM", "MARSRAG_BASE_URL", "MARSRAG_STRUCTURED"))
    }
    # An empty settings file: nothing from the machine's own (a named file that does not exist is an error).
    settings = tmp_path / "no-settings.toml"
    settings.touch()
    clean.update(
        MARSRAG_HOME=str(tmp_path / "home"),
        MARSRAG_CONFIG=str(settings),
        NO_COLOR="1",
        COLUMNS="200",
        **env,
    )
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", *args], capture_output=True, env=clean, check=False, timeout=300
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def stored_runs(tmp_path: Path, db: str) -> list[dict[str, Any]]:
    listed = marsrag(tmp_path, "runs", "list", "--db", db, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    runs: list[dict[str, Any]] = json.loads(listed.stdout)
    return runs


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    for needle in needles:
        assert needle in lines[0]


def test_a_missing_api_key_is_one_line_before_anything_is_stored(tmp_path: Path) -> None:
    """openai/gpt-4o-mini without OPENAI_API_KEY or a base URL: exit 2, one line naming the variable, no run."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    proc = marsrag(tmp_path, "run", "API latency SLO breaches", "--llm", "openai/gpt-4o-mini", "--db", db)
    assert_one_line_error(proc, "OPENAI_API_KEY", "openai/gpt-4o-mini")
    assert stored_runs(tmp_path, db) == []


def test_a_provider_that_is_not_installed_is_one_line(tmp_path: Path) -> None:
    """anthropic/... without crewai[anthropic]: exit 2, one line saying what to install, no run."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    proc = marsrag(tmp_path, "run", "goal", "--llm", "anthropic/claude-3-5-haiku-latest", "--db", db)
    assert_one_line_error(proc, "anthropic/claude-3-5-haiku-latest", "crewai[anthropic]")
    assert stored_runs(tmp_path, db) == []


def test_an_unknown_structured_output_setting_is_one_line(tmp_path: Path) -> None:
    """--structured-output strict: exit 2, one line listing the allowed values."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    proc = marsrag(tmp_path, "run", "goal", "--structured-output", "strict", "--db", db)
    assert_one_line_error(proc, "strict", "auto, json_schema, json_object, grammar, prompt")
    assert stored_runs(tmp_path, db) == []


def test_with_a_base_url_no_key_is_needed_and_an_unreachable_server_fails_the_run(tmp_path: Path) -> None:
    """--base-url passes the preflight without a key; nothing listens, so the run is stored failed, exit 1."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = marsrag(
        tmp_path, "run", "goal", "--llm", "openai/x", "--base-url", url, "--db", db, "--format", "json",
        MARSRAG_LLM_RETRIES="0",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "OPENAI_API_KEY" not in proc.stderr
    document = json.loads(proc.stdout)
    assert document["status"] == "failed"
    assert document["status_reason"].startswith("LLMCallError: the LLM call to 'x' failed after 1 attempt(s)")
    assert [(r["run_id"], r["status"]) for r in stored_runs(tmp_path, db)] == [(document["run_id"], "failed")]


def refuse_json_schema(body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """llama-cpp-python's server: response_format type json_schema is a 500 naming the parameter."""
    if (body.get("response_format") or {}).get("type") == "json_schema":
        status, text = REFUSALS["llama-cpp-python"]
        return status, json.loads(text)
    return None


def test_a_stepped_down_refusal_is_quiet_and_recorded(tmp_path: Path, server: StrictChatServer) -> None:  # noqa: F811
    """json_schema refused once: no CrewAI log or event-bus warning on stdout/stderr; runs show records it."""
    server.script[:] = [json.dumps({**CONTENT, "loop": f"Question {i}?"}) for i in range(3)]
    server.refuse = refuse_json_schema
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    proc = marsrag(
        tmp_path, "run", "API latency SLO breaches", "--llm", "openai/stub", "--base-url", server.base_url,
        "--db", db, "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    for stream in (proc.stdout, proc.stderr):
        assert "[CrewAIEventsBus]" not in stream and "ERROR:root" not in stream and "Traceback" not in stream
    # One refusal, then every request asks json_object with the contract's schema (remembered).
    formats = [(x.status, (x.body.get("response_format") or {}).get("type")) for x in server.exchanges]
    assert formats == [(500, "json_schema"), (200, "json_object"), (200, "json_object"), (200, "json_object")]
    assert server.exchanges[1].body["response_format"]["schema"]["required"] == list(CONTENT)

    run_id = json.loads(proc.stdout)["run_id"]
    shown = marsrag(tmp_path, "runs", "show", run_id, "--db", db, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    tasks = json.loads(shown.stdout)["tasks"]
    calls = [
        [(a["number"], a["structured_output"], a["structured_output_refused"], a["endpoint"]) for a in t["attempts"]]
        for t in tasks
    ]
    endpoint = "{}:{}".format(*server.address)
    assert calls == [
        [(1, "json_object", ["json_schema"], endpoint)],
        [(1, "json_object", [], endpoint)],
        [(1, "json_object", [], endpoint)],
    ]
    assert [t["validation"]["status"] for t in tasks] == ["valid"] * 3
