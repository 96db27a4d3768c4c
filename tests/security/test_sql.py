"""SQL only with bound parameters: no SQL text is built by string formatting (a static scan of the package), and
hostile strings in goals, session ids, run and task ids and filters, through the API and the CLI, are data.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from sqlalchemy import MetaData, create_engine, func, inspect, select

from marsrag.errors import InputError
from tests.web.conftest import Site, answer

pytestmark = pytest.mark.crewai

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "marsrag"
#: Calls whose first argument is SQL text.
SQL_CALLS = {"text", "exec_driver_sql", "execute", "executemany", "executescript"}
#: (file relative to src/marsrag, function, the interpolated expression) -> why it is safe.
ALLOWLIST = {
    ("store/_engine.py", "_sqlite_connect", "SQLITE_BUSY_TIMEOUT_MS"): (
        "a module constant int; SQLite PRAGMAs take no bound parameters"
    ),
    ("store/migrations/versions/0002_knowledge_base.py", "downgrade", "trigger"): (
        "a trigger name from a constant tuple in the same loop; DDL takes no bound parameters"
    ),
    ("store/_ranking.py", "weighted_search", "score,queries,scope"): (
        "placeholder names numbered by a word count (:t0, :w0, ...) and a constant scope clause: every word, "
        "weight and collection is a bound parameter"
    ),
}

INJECTIONS = (
    "'; DROP TABLE runs; --",
    '"); DROP TABLE task_states; --',
    "x' OR '1'='1",
    "1; DELETE FROM events",
    "%' OR 1=1 --",
    "\\'; DROP TABLE attempts; --",
)


@dataclass(frozen=True)
class Finding:
    """SQL text built from a formatted string."""

    path: str
    line: int
    function: str
    interpolated: tuple[str, ...]

    def key(self) -> tuple[str, str, str]:
        return (self.path, self.function, ",".join(self.interpolated))


def _formatted(node: ast.expr) -> tuple[str, ...] | None:
    """The interpolated expressions if ``node`` is an f-string, a ``+``/``%`` of strings or ``.format``; else None."""
    if isinstance(node, ast.JoinedStr):
        return tuple(ast.unparse(v.value) for v in node.values if isinstance(v, ast.FormattedValue))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        parts = [node.left, node.right]
        if any(isinstance(p, ast.Constant) and isinstance(p.value, str) for p in parts) or any(
            _formatted(p) is not None for p in parts if isinstance(p, ast.expr)
        ):
            return tuple(ast.unparse(p) for p in parts if not (isinstance(p, ast.Constant)))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return tuple(ast.unparse(a) for a in [*node.args, *(k.value for k in node.keywords)])
    return None


def scan(source: str, path: str) -> list[Finding]:
    """Every SQL call in ``source`` whose SQL argument is formatted text, directly or through a local variable."""
    tree = ast.parse(source)
    findings: list[Finding] = []
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    scopes: list[tuple[str, ast.AST]] = [(f.name, f) for f in functions] + [("<module>", tree)]
    seen: set[int] = set()
    for name, scope in scopes:
        assigned: dict[str, ast.expr] = {}
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                assigned[node.targets[0].id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                assigned[node.target.id] = node.value
        for node in ast.walk(scope):
            if not isinstance(node, ast.Call) or id(node) in seen or not node.args:
                continue
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if callee not in SQL_CALLS:
                continue
            seen.add(id(node))
            argument = node.args[0]
            if isinstance(argument, ast.Name) and argument.id in assigned:
                argument = assigned[argument.id]
            interpolated = _formatted(argument)
            if interpolated is not None:
                findings.append(Finding(path, node.lineno, name, interpolated))
    return findings


def test_the_scan_finds_every_kind_of_formatted_sql() -> None:
    """f-strings, concatenation, %-formatting, .format, through a variable, for each SQL call: all found."""
    source = """
def bad(connection, name, run_id):
    connection.execute(text(f"SELECT * FROM runs WHERE run_id = '{run_id}'"))
    connection.exec_driver_sql("DELETE FROM runs WHERE goal = '" + name + "'")
    connection.execute("SELECT %s" % name)
    cursor.executemany("INSERT INTO {} VALUES (?)".format(name), [])
    query = f"DROP TABLE {name}"
    connection.exec_driver_sql(query)
def good(connection, run_id):
    connection.execute(text("SELECT * FROM runs WHERE run_id = :r"), {"r": run_id})
    connection.exec_driver_sql("BEGIN IMMEDIATE")
"""
    found = scan(source, "x.py")
    assert sorted((f.line, f.function) for f in found) == [(3, "bad"), (4, "bad"), (5, "bad"), (6, "bad"), (8, "bad")]


def test_no_sql_is_built_by_string_formatting_outside_the_allowlist() -> None:
    """Every SQL call in src/marsrag passes constant text or a SQLAlchemy construct (or is allowlisted, with why)."""
    findings: list[Finding] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        findings += scan(path.read_text(encoding="utf-8"), path.relative_to(PACKAGE).as_posix())
    unexpected = [f for f in findings if f.key() not in ALLOWLIST]
    assert unexpected == [], "SQL built from formatted strings: bind parameters instead (or allowlist with a reason)"
    stale = set(ALLOWLIST) - {f.key() for f in findings}
    assert stale == set(), f"allowlist entries that no longer match anything: {stale}"


# -- dynamic: hostile strings are data --------------------------------------------------------------------------


def table_counts(db: str) -> dict[str, int]:
    """Every table of the store with its row count."""
    engine = create_engine(db)
    try:
        metadata = MetaData()
        metadata.reflect(engine)
        with engine.connect() as connection:
            return {
                name: int(connection.execute(select(func.count()).select_from(table)).scalar_one())
                for name, table in metadata.tables.items()
            }
    finally:
        engine.dispose()


def test_hostile_strings_through_the_api_are_data(site_factory: Callable[..., Site]) -> None:
    """Goals, workflows, session ids, run and task ids and metric filters: stored or refused, tables intact."""
    site = site_factory([answer()] * (3 * len(INJECTIONS) + 3))
    site.start("a first goal")
    tables = set(inspect(site.backend.store.engine).get_table_names())
    for hostile in INJECTIONS:
        run_id = site.start(hostile)
        assert site.client.get(f"/api/runs/{run_id}").json()["goal"] == hostile
        assert site.client.post("/api/runs", json={"goal": "g", "workflow": hostile}).status_code == 422
        assert site.client.post("/api/runs", json={"goal": "g", "session_id": hostile}).status_code == 422
        quoted = quote(hostile, safe="")
        assert site.client.get(f"/api/runs/{quoted}").status_code == 404
        assert site.client.post(f"/api/runs/{quoted}/follow").status_code == 404
        assert site.client.post(f"/api/runs/{run_id}/tasks/{quoted}/repair").status_code == 404
        assert site.client.get(f"/sessions/{quoted}").status_code == 404
        for path in ("/api/metrics", "/api/metrics/failures", "/api/metrics/daily", "/dashboard"):
            response = site.client.get(f"{path}?{urlencode({'workflow': hostile})}")
            assert response.status_code == 200, (path, response.text)
        assert site.client.get(f"/api/runs?{urlencode({'session_id': hostile})}").status_code == 422
        assert site.client.get(f"/api/metrics?{urlencode({'since': hostile})}").status_code == 422
    assert set(inspect(site.backend.store.engine).get_table_names()) == tables
    rows = site.client.get("/api/runs?limit=1000").json()
    assert len(rows) == 1 + len(INJECTIONS)
    assert table_counts(site.db)["runs"] == 1 + len(INJECTIONS)


def test_hostile_strings_through_the_cli_are_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``marsrag run`` with hostile goals (a hostile --session is refused), runs show/repair, metrics with hostile ids.

    The first run is a real process; the rest call the same Typer app in this process (each process costs seconds).
    """
    from typer.testing import CliRunner

    from marsrag.cli import app

    db = f"sqlite:///{tmp_path}/cli.db"
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps({"output": answer()}) + "\n" for _ in range(3)), "utf-8")
    env = {**os.environ, "MARSRAG_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "h")}
    monkeypatch.setenv("MARSRAG_HOME", env["MARSRAG_HOME"])
    hostile = INJECTIONS[0]
    command = [sys.executable, "-m", "marsrag", "run", hostile, "--session", "s-1", "--db", db]
    ran = subprocess.run(
        [*command, "--llm", f"replay:{replay}", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    document = json.loads(ran.stdout)
    assert (document["goal"], document["session_id"]) == (hostile, "s-1")
    runner = CliRunner()
    for other in INJECTIONS[1:3]:
        replay.write_text("".join(json.dumps({"output": answer()}) + "\n" for _ in range(3)), "utf-8")
        result = runner.invoke(app, ["run", other, "--session", "s-1", "--db", db, "--llm", f"replay:{replay}"])
        assert result.exit_code == 0, result.output
    before = table_counts(db)
    for other in INJECTIONS:
        # A session id is letters, digits and - _ . : only: an injection is refused before anything opens.
        refused = runner.invoke(app, ["run", "g", "--session", other, "--db", db, "--llm", f"replay:{replay}"])
        assert refused.exit_code != 0 and isinstance(refused.exception, InputError), refused.output
        assert runner.invoke(app, ["runs", "show", other, "--db", db]).exit_code != 0
        # An unknown workflow, named back as text: looked up as data, never run as SQL.
        metrics = runner.invoke(app, ["metrics", "--db", db, "--workflow", other, "--format", "json"])
        assert isinstance(metrics.exception, InputError) and "unknown workflow" in str(metrics.exception)
        repair = ["runs", "repair", "--db", db, "--llm", f"replay:{replay}", other, other]
        assert runner.invoke(app, repair).exit_code != 0
    listed = runner.invoke(app, ["runs", "list", "--db", db, "--format", "json"])
    assert listed.exit_code == 0
    assert sorted(row["goal"] for row in json.loads(listed.stdout)) == sorted(INJECTIONS[:3])
    assert table_counts(db) == before
