"""The read-only commands start fast: each, run as a process on a real SQLite store, imports only what it uses.

``metrics``, ``runs list``, ``runs show``, ``review``, ``validate``, ``schema`` and ``lint`` never import CrewAI,
Alembic (the store is at the newest revision, which opening it recognises without Alembic), the web stack, the
job queue, the LLM clients, the JSON repair library, MarsRAG's runtime or the experiments' statistics (NumPy,
SciPy, statsmodels). The store commands never load the
config loader (PyYAML), the contract's model and validator, nor on SQLite the PostgreSQL dialect; Rich loads only
to print text for people.
``bench/coldstart_bench.py`` times these commands.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from marsrag.store import open_store
from marsrag.tasks.loader import sample_config_dir
from tests.contract.samples import CLEAN_JSON
from tests.metrics.history import D1, write_history

#: Never imported by a read-only command: the framework, migrations, the web stack, the queue, LLM clients.
NEVER = (
    "crewai",
    "alembic",
    "fastapi",
    "starlette",
    "jinja2",
    "uvicorn",
    "litellm",
    "openai",
    "httpx",
    "celery",
    "kombu",
    "redis",
    "prometheus_client",
    "opentelemetry",
    "json_repair",
    "psycopg",
    "playwright",
    # The experiment report's statistics: only `experiment report` and `tune` load them.
    "numpy",
    "scipy",
    "statsmodels",
    "marsrag.experiments.statistics",
    "marsrag.compose",
    "marsrag.runtime",
    "marsrag.integrations",
    "marsrag.llm",
    "marsrag.rag",
    "marsrag.queue",
    "marsrag.events",
    "marsrag.tracing",
    "marsrag.web",
)
#: Not imported by the commands reading the store: the config loader, the contract's model and validator, and
#: (on SQLite) the PostgreSQL dialect, which a dialect keyword in the schema (``postgresql_where``) would load.
NOT_FOR_THE_STORE = (
    "yaml",
    "marsrag.tasks",
    "marsrag.contract.model",
    "marsrag.contract.validate",
    "sqlalchemy.dialects.postgresql",
)
#: Not imported by the commands that never open a store.
NOT_WITHOUT_A_STORE = ("sqlalchemy", "marsrag.store", "marsrag.state")

# Runs the CLI in this process, then writes the names of every module it loaded to the file named first.
_PROBE = """
import gc, json, sys
from marsrag.cli import main
out, args = sys.argv[1], sys.argv[2:]
try:
    main(args)
except SystemExit as exit:
    code = exit.code
with open(out, "w", encoding="utf-8") as file:
    json.dump({"exit": code, "modules": sorted(sys.modules), "gc": [gc.isenabled(), gc.get_freeze_count()]}, file)
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite store file at the newest revision holding the five runs of ``tests.metrics.history``."""
    url = f"sqlite:///{tmp_path_factory.mktemp('cold') / 'runs.db'}"
    with open_store(url) as opened:
        write_history(opened)
    return url


def probed(tmp_path: Path, *args: str) -> dict[str, Any]:
    """What ``marsrag ARGS`` run as a fresh process (which must exit 0) loaded, and its collector's state after."""
    out = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(out), *args], capture_output=True, text=True, check=False)
    assert out.exists(), proc.stderr
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    assert report["exit"] in (0, None), proc.stderr
    assert proc.stdout.strip(), "the command printed nothing"
    return report


def loaded(tmp_path: Path, *args: str) -> set[str]:
    """The modules ``marsrag ARGS`` loads as a fresh process (which must exit 0), and their parent packages."""
    return set(probed(tmp_path, *args)["modules"])


def imported(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The ``names`` (packages or modules) of which ``modules`` holds the module or one of its submodules."""
    return sorted(name for name in names if any(m == name or m.startswith(f"{name}.") for m in modules))


_WEEK = "{}-W{:02d}".format(*D1.isocalendar()[:2])


#: Each command reading the store (the store URL is added), and whether it prints with Rich.
STORE_COMMANDS: list[tuple[tuple[str, ...], bool]] = [
    (("metrics",), True),
    (("metrics", "--format", "json"), False),
    (("runs", "list"), True),
    (("runs", "list", "--format", "json"), False),
    (("runs", "show", "r5"), True),
    (("runs", "show", "r5", "--format", "json"), False),
    (("review", "--week", _WEEK), False),
]


@pytest.mark.parametrize(("args", "rich"), STORE_COMMANDS, ids=[" ".join(args) for args, _ in STORE_COMMANDS])
def test_the_store_commands_import_the_store_and_nothing_heavy(
    tmp_path: Path, store: str, args: tuple[str, ...], rich: bool
) -> None:
    """A command reading the store loads SQLAlchemy, not Alembic, the runtime or the config loader; Rich for text."""
    modules = loaded(tmp_path, *args, "--db", store)
    assert "sqlalchemy" in modules  # the store was read
    assert imported(modules, (*NEVER, *NOT_FOR_THE_STORE)) == []
    assert ("rich" in modules) is rich


#: The knowledge base commands (the store URL is added): the listing and removal, none of ingest's parts.
KB_COMMANDS: list[tuple[str, ...]] = [("kb", "list"), ("kb", "list", "--format", "json")]
#: What ingest and retrieval load, and the knowledge base commands do not.
NOT_FOR_THE_KB = tuple(
    name
    for name in (*NEVER, *NOT_FOR_THE_STORE, "marsrag.rag.knowledge", "marsrag.rag.readers")
    if name != "marsrag.rag"
)


@pytest.mark.parametrize("args", KB_COMMANDS, ids=[" ".join(args) for args in KB_COMMANDS])
def test_the_kb_commands_import_the_store_and_the_listing_only(
    tmp_path: Path, store: str, args: tuple[str, ...]
) -> None:
    """``kb list`` loads SQLAlchemy and the listing (marsrag.rag.manage), not the readers, chunker or runtime."""
    modules = loaded(tmp_path, *args, "--db", store)
    assert "sqlalchemy" in modules and "marsrag.rag.manage" in modules
    assert imported(modules, NOT_FOR_THE_KB) == []
    assert sorted(m for m in modules if m.startswith("marsrag.rag.")) == ["marsrag.rag.manage"]


@pytest.mark.parametrize(
    ("command", "extra"),
    [("validate", ("yaml",)), ("schema", ("yaml", "rich")), ("lint", ("rich",))],
    ids=["validate", "schema", "lint"],
)
def test_the_commands_without_a_store_import_no_sqlalchemy(
    tmp_path: Path, command: str, extra: tuple[str, ...]
) -> None:
    """validate (of a clean answer), schema and lint load neither SQLAlchemy nor the store, nor anything heavy."""
    answer = tmp_path / "answer.json"
    answer.write_text(CLEAN_JSON, encoding="utf-8")
    args = {"validate": [str(answer)], "schema": [], "lint": [str(sample_config_dir())]}[command]
    modules = loaded(tmp_path, command, *args)
    assert imported(modules, (*NEVER, *NOT_WITHOUT_A_STORE, *extra)) == []


def test_the_cli_freezes_its_start_up_heap_and_keeps_the_collector_on(tmp_path: Path, store: str) -> None:
    """What the CLI loaded before its command is frozen (the collector skips it); collection itself stays on.

    Freezing is what saves a read-only command the repeated full collections of its start-up; turning the
    collector off instead would leave long-running commands (serve, worker) collecting nothing.
    """
    enabled, frozen = probed(tmp_path, "runs", "list", "--db", store)["gc"]
    assert enabled is True and frozen > 10_000
