"""Any text through every entry point, on both backends: nothing 5xx, nothing stored behind a refusal, every read
works afterwards (the run documents, the lists, the pages, the metrics windowed and verified, the sinks).

The text is what users, files and models can send: lone surrogates (a JSON ``\\ud800`` escape, an undecodable
byte in a command-line argument or a file name), NUL, control characters, RTL marks. The rule under test is
marsrag.text's: a lone surrogate becomes U+FFFD where text enters a record; a field's own rule refuses the rest
(a NUL in a goal or comment) with a 4xx / exit 2 naming the field.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.cli import main
from marsrag.metrics.verify import verify
from marsrag.paths import data_dir
from marsrag.store import open_store
from tests.fuzz.conftest import Site, fuzz, site_factory
from tests.store.conftest import db_url, postgres_admin, postgres_url
from tests.test_text import ANY_TEXT, SPECIAL
from tests.web.conftest import answer

__all__ = ["db_url", "postgres_admin", "postgres_url", "site_factory"]

pytestmark = pytest.mark.crewai

#: Short texts, mostly the troublesome characters, sometimes inside words (a short one runs fast).
TEXT = st.one_of(
    st.lists(st.sampled_from([*SPECIAL, "a", " ", "cache"]), min_size=1, max_size=6).map("".join),
    ANY_TEXT.filter(lambda t: len(t) < 40),
)


def _counts(site: Site) -> tuple[int, int]:
    """How many runs and events the store holds."""
    with open_store(site.db) as store:
        runs = store.list_runs(limit=10_000)
        return len(runs), sum(len(store.get_events(run.run_id)) for run in runs)


JSON = {"content-type": "application/json"}


def _post(site: Site, path: str, body: dict[str, Any]) -> Any:
    # json.dumps escapes a lone surrogate as \udXXX: exactly what a client library sends.
    return site.client.post(path, content=json.dumps(body), headers=JSON)


def _reads_back(site: Site, run_id: str) -> None:
    for page in (f"/api/runs/{run_id}", f"/runs/{run_id}", "/api/runs", "/", "/dashboard", "/metrics"):
        response = site.client.get(page)
        assert response.status_code == 200, (page, response.text[:300])
    since = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    assert site.client.get(f"/api/metrics?since={since}").status_code == 200


@pytest.fixture
def served(site_factory: Any, db_url: str) -> Site:
    """The app on each backend, the offline composer answering, one run finished already."""
    site: Site = site_factory(db=db_url, llm="composer")
    site.start("Cache restarts and checkout latency")
    return site


@pytest.mark.parametrize(
    ("path", "field", "rest"),
    [
        ("/api/runs", "goal", {}),
        ("/api/runs", "workflow", {"goal": "cache"}),
        ("/api/runs", "session_id", {"goal": "cache"}),
        ("feedback", "comment", {"on": "answer", "rating": "up"}),
        ("feedback", "on", {"rating": "up"}),
        ("feedback", "rating", {"on": "answer"}),
        ("follow", "goal", {}),
    ],
)
def test_api_body_text_is_stored_storable_or_refused_with_nothing_stored(
    served: Site, path: str, field: str, rest: dict[str, Any]
) -> None:
    run_id = served.client.get("/api/runs").json()[0]["run_id"]
    target = path if path.startswith("/") else f"/api/runs/{run_id}/{path}"

    @fuzz(12)
    @given(TEXT)
    def check(value: str) -> None:
        before = _counts(served)
        response = _post(served, target, {**rest, field: value})
        served.wait()
        assert response.status_code < 500, response.text
        response.json()  # the reason (or the record) is JSON a client can decode
        if response.status_code >= 400:
            assert _counts(served) == before, f"stored behind a {response.status_code}"

    check()
    _reads_back(served, run_id)
    with open_store(served.db) as store:
        verdict = verify(store)
    assert verdict.ok, [d.line() for d in verdict.differences]


def test_an_escaped_lone_surrogate_in_a_goal_is_kept_as_u_fffd(served: Site) -> None:
    """Not refused: the rest of the user's text is kept, as a lossy UTF-8 decode (and the CLI) would keep it."""
    response = served.client.post("/api/runs", content=b'{"goal": "cache \\ud800 restart"}', headers=JSON)
    assert response.status_code == 202, response.text
    served.wait()
    goal = served.client.get(f"/api/runs/{response.json()['run_id']}").json()["goal"]
    assert goal == "cache \ufffd restart"


def test_model_output_with_unencodable_text_is_stored_storable(site_factory: Any, db_url: str) -> None:
    """A model writing lone surrogates and NULs: the run completes, its documents read back, U+FFFD in place."""
    hook = "Checkout latency \ud800 breached its SLO \x00 in three regions after the cache restart."
    site = site_factory([answer(hook=hook)] * 4, db=db_url)
    run_id = site.start()
    document = site.client.get(f"/api/runs/{run_id}").json()
    hooks = [task["loop_output"]["hook"] for task in document["tasks"]]
    assert any("\ufffd" in (h or "") for h in hooks), hooks
    assert not any(0xD800 <= ord(c) <= 0xDFFF or c == "\x00" for h in hooks for c in h or "")
    _reads_back(site, run_id)


# -- the command line ---------------------------------------------------------------------------------------------


def _marsrag(*args: str | bytes, home: Path) -> subprocess.CompletedProcess[bytes]:
    # Bytes arguments reach the program as they are: an undecodable byte arrives as a lone surrogate.
    env = {**os.environ, "MARSRAG_HOME": str(home), "COLUMNS": "120", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "marsrag", *args], capture_output=True, check=False, env=env)


def test_cli_text_and_file_names_with_undecodable_bytes_store_storable(tmp_path: Path, db_url: str) -> None:
    """A goal, a comment and an ingested file's name with an undecodable byte: stored with U+FFFD, every read,
    ``metrics --verify``, ``--since`` and the events sink work afterwards; a NUL in a comment is refused."""
    home = tmp_path / "home"
    folder = tmp_path / "kb"
    folder.mkdir()
    # An undecodable byte in its name; an RTL override, an escape and a bell in its text.
    content = "# Zebra caches\n\nRestart the \u202ezebra\u202c caches \x1b[1m now\x07.\n".encode()
    (folder / os.fsdecode(b"n\xffame.md")).write_bytes(content)
    assert _marsrag("ingest", str(folder), "--db", db_url, home=home).returncode == 0
    ran = _marsrag("run", b"zebra caches \xff restart", "--db", db_url, "--format", "json", home=home)
    assert ran.returncode == 0, ran.stderr
    document = json.loads(ran.stdout.decode("utf-8"))
    assert document["goal"] == "zebra caches \ufffd restart"
    sources = {r["source"] for t in document["tasks"] for r in (t.get("retrieval") or {}).get("results", [])}
    assert "kb/n\ufffdame.md#Zebra caches" in sources, sources
    run_id = document["run_id"]

    rated = _marsrag("runs", "feedback", run_id, "--on", "answer", "--rating", "down", "--comment", b"bad \xff",
                     "--db", db_url, home=home)  # fmt: skip
    assert rated.returncode == 0, rated.stderr
    refused = _marsrag("runs", "feedback", run_id, "--on", "answer", "--rating", "up", "--comment", "a\x01b",
                       "--db", db_url, home=home)  # fmt: skip
    assert refused.returncode == 2 and len(refused.stderr.decode().strip().splitlines()) == 1, refused.stderr

    shown = _marsrag("runs", "show", run_id, "--db", db_url, "--format", "json", home=home)
    assert shown.returncode == 0, shown.stderr
    comments = [e["detail"]["comment"] for e in json.loads(shown.stdout)["events"] if e["name"].endswith("recorded")]
    assert comments == ["bad \ufffd"]
    since = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    for args in (("metrics", "--verify"), ("metrics", "--since", since), ("runs", "list")):
        done = _marsrag(*args, "--db", db_url, home=home)
        assert done.returncode == 0, (args, done.stderr)
    # The sink got every event, the rating's with its comment storable (a sink that failed to write it is not ok).
    sunk = [json.loads(line) for line in (home / "events.jsonl").read_bytes().decode("utf-8").splitlines()]
    assert [e["detail"]["comment"] for e in sunk if e["name"] == "loop.feedback.recorded"] == ["bad \ufffd"]
    assert data_dir() != home  # the sink written is this test's own, not the session's


def _cli(*args: str) -> tuple[int, str, str]:
    """``marsrag ARGS`` in this process, as argv brings them (an undecodable byte as a lone surrogate)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exited:
        main(list(args))
    code = exited.value.code
    assert isinstance(code, int)
    return code, out.getvalue(), err.getvalue()


#: Each CLI text argument with the rest of its command ({run} is a finished run's id).
CLI_TEXT = [
    ("run", "{text}"),
    ("run", "cache", "--session", "{text}"),
    ("run", "cache", "--workflow", "{text}"),
    ("follow", "{run}", "--goal", "{text}"),
    ("runs", "feedback", "{run}", "--on", "answer", "--rating", "up", "--comment", "{text}"),
    ("runs", "feedback", "{run}", "--on", "{text}", "--rating", "up"),
    ("runs", "show", "{text}"),
    ("runs", "list", "--session", "{text}"),
    ("metrics", "--workflow", "{text}"),
]


def _stored(db: str) -> tuple[int, int]:
    with open_store(db) as store:
        runs = store.list_runs(limit=10_000)
        return len(runs), sum(len(store.get_events(run.run_id)) for run in runs)


@pytest.mark.parametrize("command", CLI_TEXT, ids=[" ".join(c).replace("{text}", "TEXT") for c in CLI_TEXT])
def test_cli_text_arguments_are_stored_storable_or_refused_in_one_line(
    command: tuple[str, ...], db_url: str, tmp_path: Path
) -> None:
    """Any text (undecodable bytes as argv brings them, NUL, controls, RTL marks) in a CLI text argument: exit 0,
    or exit 2 with one line and nothing stored; whatever was stored reads back, the output encodes as UTF-8."""
    code, out, _ = _cli("run", "Cache restarts and checkout latency", "--db", db_url, "--llm", "composer",
                        "--format", "json")  # fmt: skip
    assert code == 0
    run_id = json.loads(out)["run_id"]
    texts = st.one_of(TEXT, st.binary(min_size=1, max_size=12).map(os.fsdecode))

    @fuzz(6)
    @given(texts)
    def check(value: str) -> None:
        before = _stored(db_url)
        args = [part.replace("{run}", run_id).replace("{text}", value) for part in command]
        code, out, err = _cli(
            *args, "--db", db_url, *(("--llm", "composer") if command[0] in ("run", "follow") else ())
        )
        assert code in (0, 2), err
        (out + err).encode("utf-8")  # what reached the terminal can be written to it
        if code == 2:
            assert len(err.strip().splitlines()) == 1, err
            assert _stored(db_url) == before, "stored behind a refusal"

    check()
    with open_store(db_url) as store:
        for stored in store.list_runs(limit=10_000):
            read = store.read_run(stored.run_id)
            json.dumps([r.model_dump(mode="json") for r in (read[0], *read[1])], ensure_ascii=False).encode()
        verdict = verify(store)
    assert verdict.ok, [d.line() for d in verdict.differences]
