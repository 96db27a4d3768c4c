"""The ``marsrag`` command line: a thin Typer layer over the library.

Each command parses its arguments and calls one library function. Errors the user can fix print one line
on stderr and exit 2 (among them a store that cannot be opened); a store that fails during the work prints
its one-line reason and exits 1. No traceback is ever shown for bad input.

No ``from __future__ import annotations`` here, on purpose: Typer reads every command's annotations at each
start, and string annotations would be evaluated again (twice per command), a cost every command pays.
"""

import gc
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from marsrag._cli_help import HelpTyper, usage_message, where_group
from marsrag._version import __version__
from marsrag.errors import (
    IncompatibleRecordError,
    InputError,
    MarsRAGError,
    QueueUnavailableError,
    RunNotFoundError,
    StoreError,
    StoreUnavailableError,
)
from marsrag.settings import Settings, resolve_settings
from marsrag.terminal import visible, visible_json

if TYPE_CHECKING:
    from collections.abc import Callable

    from marsrag.events.sinks import EventSink
    from marsrag.render_live import RunProgress
    from marsrag.state import TaskProgress
    from marsrag.store.base import RunStore

app = HelpTyper(
    name="marsrag",
    cls=where_group(lambda: _where()),
    help="MarsRAG: CrewAI retrieval assistants whose answers follow the Loop Contract.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class ModeChoice(StrEnum):
    """Loop modes accepted on the command line."""

    hard = "hard"
    soft = "soft"
    none = "none"


class FormatChoice(StrEnum):
    """Output formats accepted on the command line."""

    text = "text"
    json = "json"


class LogFormatChoice(StrEnum):
    """Access log formats of ``marsrag serve``."""

    text = "text"
    json = "json"


class ExecutorChoice(StrEnum):
    """How ``marsrag serve`` executes runs in its own process."""

    auto = "auto"
    async_ = "async"
    thread = "thread"


# Options several commands share, spelled once; a command hands them to _settings, resolved once there.
DbOption = Annotated[
    str | None, typer.Option(help="Store URL; default MARSRAG_DB, the settings file, else a file in the data dir.")
]
ConfigOption = Annotated[Path | None, typer.Option(help="Config folder; default ./config or the shipped sample.")]
LlmOption = Annotated[str | None, typer.Option(help="composer (default), replay:FILE or a CrewAI model.")]
BaseUrlOption = Annotated[
    str | None, typer.Option(help="OpenAI-compatible server for --llm (Ollama, vLLM...); or MARSRAG_BASE_URL.")
]
StructuredOutputOption = Annotated[
    str | None,
    typer.Option(
        help="How the LLM is asked for structure: auto (default: the richest the server accepts), json_schema, "
        "json_object, grammar or prompt; or MARSRAG_STRUCTURED_OUTPUT."
    ),
]
EmbedderOption = Annotated[
    str | None,
    typer.Option(
        help="What embeds the knowledge base for hybrid search: wordllama (default, offline), none (keyword only) "
        "or PROVIDER/MODEL on an OpenAI-compatible /v1/embeddings endpoint; or MARSRAG_EMBEDDER."
    ),
]
EmbedderUrlOption = Annotated[
    str | None, typer.Option(help="The embeddings endpoint's base URL (http://host:port/v1); or MARSRAG_EMBEDDER_URL.")
]
BrokerOption = Annotated[
    str | None,
    typer.Option(help="Job queue (redis://host:6379/0) run by `marsrag worker`; default MARSRAG_BROKER, else none."),
]


def _settings(
    *,
    config: Path | None = None,
    llm: str | None = None,
    db: str | None = None,
    base_url: str | None = None,
    broker: str | None = None,
    structured_output: str | None = None,
    embedder: str | None = None,
    embedder_url: str | None = None,
) -> Settings:
    """The settings of this command: its flags, else the environment, else the settings file, else defaults.

    Kept for the command's error lines, which name the project and store when a store error is reported.
    """
    settings = resolve_settings(
        config=config,
        llm=llm,
        db=db,
        base_url=base_url,
        broker=broker,
        structured_output=structured_output,
        embedder=embedder,
        embedder_url=embedder_url,
    )
    _RESOLVED[:] = [settings]
    return settings


#: The settings the running command resolved (at most one): its error lines say where it looked.
_RESOLVED: list[Settings] = []


def _where() -> str:
    """Which project and store a command run here without flags would use (the root help's last line)."""
    try:
        return resolve_settings().where()
    except MarsRAGError as error:
        return f"the settings cannot be read: {error}"


@contextmanager
def _progress(format: FormatChoice) -> "Iterator[RunProgress | None]":
    """What a command shows people watching a run, in text format only: a line per task and handoff on stderr,
    and on a terminal a live line for the task being answered (cleared when the run ends)."""
    if format is not FormatChoice.text:
        yield None
        return
    from marsrag.render_live import RunProgress  # lazy: Rich

    with RunProgress() as progress:
        yield progress


def _sinks(progress: "RunProgress | None") -> "list[EventSink]":
    return [] if progress is None else [progress]


def _watchers(progress: "RunProgress | None") -> "list[Callable[[TaskProgress], object]]":
    return [] if progress is None else [progress.watch]


def _version_callback(value: bool) -> None:
    if value:
        _out(f"marsrag {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version_callback, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """MarsRAG: CrewAI retrieval assistants whose answers follow the Loop Contract."""


@app.command()
def validate(
    files: Annotated[
        list[str] | None, typer.Argument(help="Files holding raw task outputs; none or '-' reads stdin.")
    ] = None,
    mode: Annotated[ModeChoice, typer.Option(help="Loop mode deciding whether a task completes.")] = ModeChoice.hard,
    format: Annotated[FormatChoice, typer.Option(help="text for people, json for one object per line.")] = (
        FormatChoice.text
    ),
) -> None:
    """Validate raw task outputs against the Loop Contract, recovering the five sections without any LLM.

    Exit 0 when every input is valid, 1 when any is not, 2 when an input cannot be read.

    Example: marsrag validate answer.txt --mode soft --format json
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.contract import validate_output
    from marsrag.inputs import read_inputs

    any_invalid = False
    unreadable = 0
    render = _print_json if format is FormatChoice.json else _print_text
    for source, data in read_inputs(files or ["-"]):
        if isinstance(data, InputError):
            _error(str(data))
            unreadable += 1
            continue
        result = validate_output(data, mode=mode.value)
        any_invalid |= result.status != "valid"
        render(source, result.to_dict())
    raise typer.Exit(2 if unreadable else 1 if any_invalid else 0)


@app.command()
def schema(indent: Annotated[int, typer.Option(min=0, max=8, help="Spaces per indent level.")] = 2) -> None:
    """Print the JSON Schema of LoopOutput (draft 2020-12), for UIs and non-Python consumers.

    Example: marsrag schema > loop-output.schema.json
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.contract.schema import loop_output_json_schema

    _out_json(loop_output_json_schema(), indent=indent or None)


@app.command()
def lint(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="YAML files or config folders; default the project's config folder, else ./config."),
    ] = None,
    module: Annotated[
        list[str] | None, typer.Option(help="Lint Python-defined configs: package.module:factory (repeatable).")
    ] = None,
    format: Annotated[FormatChoice, typer.Option(help="text (path:line:col: RULE message) or json.")] = (
        FormatChoice.text
    ),
) -> None:
    """Check narrative task configs against the Loop Contract (rules LC001-LC004, LC1xx).

    In text format a last line sums up what was linted and found. A config folder with no tasks.yaml fails;
    one with tasks but no workflows.yaml is linted, with a warning that `marsrag run` needs workflows.
    Exit 0 when no finding is an error, 1 when any is (or there is no task to lint), 2 when a file cannot be
    read or is not valid YAML.

    Example: marsrag lint config/ --format json
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.tasks.lint import has_errors, lint_config, missing_tasks, missing_workflows, summary
    from marsrag.tasks.sources import config_set_from_factory, config_sets_from_paths

    if not paths and not module:
        folder = _settings().config or Path("config")  # the project's config folder, inside a project
        if not folder.is_dir():
            _error(
                "no ./config folder here (nor tasks.yaml to lint): name the config folder, e.g. marsrag lint config/"
            )
            raise typer.Exit(1)
        paths = [folder]
    config_sets = config_sets_from_paths(paths or [])
    config_sets += [config_set_from_factory(spec) for spec in module or []]
    for problem in filter(None, map(missing_tasks, config_sets)):
        _error(problem)
        raise typer.Exit(1)
    for warning in filter(None, map(missing_workflows, config_sets)):
        _error_line("warning", warning)
    findings = [finding for config in config_sets for finding in lint_config(config)]
    if format is FormatChoice.json:
        _out_json([finding.to_dict() for finding in findings])
    else:
        for finding in findings:
            _out(finding.to_text() + "\n")
        _out(summary(config_sets, findings) + "\n")
    raise typer.Exit(1 if has_errors(findings) else 0)


@app.command()
def init(
    directory: Annotated[
        str,
        typer.Argument(
            metavar="DIRECTORY",
            help="The project folder to create (an empty one may exist; its parent must); its name is 1-63 "
            "characters of text with no control character and no whitespace at either end.",
        ),
    ],
    force: Annotated[
        bool, typer.Option("--force", help="Add the missing files to a non-empty folder; existing files are kept.")
    ] = False,
) -> None:
    """Start a project, as `crewai create crew` does: config/ (agents, narrative tasks, a workflow), knowledge/,
    tests/ with the Loop Contract regression tests, pytest.ini, .pre-commit-config.yaml, .env.example, README.

    `cd DIRECTORY && marsrag run "..."` then works at once, offline (./config is found by itself). A folder that
    is not empty is refused (exit 2) unless --force; no existing file is ever overwritten and no symlink
    followed. The project is written whole or not at all: a bad name or anything in the way is refused (exit
    2) before anything is written.

    Example: marsrag init support-bot
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.scaffold import init_project

    for line in init_project(directory, force=force).lines():
        _out(line + "\n")


@app.command()
def ingest(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Markdown, text or HTML files, or folders (recursively); default, in a project: its knowledge folder."
        ),
    ] = None,
    db: DbOption = None,
    collection: Annotated[
        str | None,
        typer.Option(help="Put the documents in this collection; default: the resolved folder each path is in."),
    ] = None,
    format: Annotated[FormatChoice, typer.Option(help="text, or json (the ingest report).")] = FormatChoice.text,
    embedder: EmbedderOption = None,
    embedder_url: EmbedderUrlOption = None,
) -> None:
    """Ingest documents into the knowledge base: chunks by heading, kept with their source path and heading.

    A document is its collection plus its path (cited as given: docs/x.md for the folder docs), so folders of
    the same name elsewhere never replace each other. Re-ingesting an unchanged file does nothing; a changed
    file replaces its chunks, and each replacement is printed with its reason. Unreadable or binary files are
    skipped with a warning naming them.

    Inside a project (see `marsrag init`), PATHS default to the project's knowledge folder and the documents go
    to the project's own store.

    Example: marsrag ingest docs/ runbooks/restart.md --collection handbook
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.compose import ingest as ingest_into

    settings = _settings(db=db, embedder=embedder, embedder_url=embedder_url)
    if not paths:
        if settings.knowledge is None:
            raise InputError("name the files or folders to ingest (only a project has a default knowledge folder)")
        paths = [settings.knowledge]
    report = ingest_into(settings, paths, progress=format is FormatChoice.text, collection=collection)
    # Each skipped path reaches stderr once, as the library's own warning line (see _report_warnings).
    if format is FormatChoice.json:
        _out_json(report.to_dict(), default=str)
    else:
        for line in report.lines():
            _out(f"{line}\n")
        _out(f"ingested: {report.summary()}\n")


@app.command()
def run(
    goal: Annotated[str, typer.Argument(help="What the user wants; the first task's hook is anchored on it.")],
    workflow: Annotated[str | None, typer.Option(help="Workflow name; default: the first user-facing one.")] = None,
    config: ConfigOption = None,
    llm: LlmOption = None,
    db: DbOption = None,
    session: Annotated[
        str | None,
        typer.Option(
            help="Session id (1-128 letters, digits and - _ . :, starting with one of the first two); "
            "default a new session."
        ),
    ] = None,
    base_url: BaseUrlOption = None,
    structured_output: StructuredOutputOption = None,
    embedder: EmbedderOption = None,
    embedder_url: EmbedderUrlOption = None,
    collection: Annotated[
        list[str] | None,
        typer.Option(
            "--collection",
            help="Retrieve only from this knowledge base collection (repeatable); default: the workflow's "
            "collections, else all.",
        ),
    ] = None,
    format: Annotated[FormatChoice, typer.Option(help="text, or json (the runs show document).")] = FormatChoice.text,
) -> None:
    """Run a workflow for GOAL: each task's loop becomes the next task's hook; every step is stored.

    GOAL must not be blank nor longer than 100,000 characters, and holds no control characters but newline
    and tab. With --collection (or the workflow's collections:), retrieval keeps to those collections of the
    knowledge base; an unknown one is a usage error and nothing is stored. Exit 0 when every task executed
    (whatever their contract statuses), 1 when the run failed or the store failed to keep it, 2 on a usage
    error (a store that cannot be opened among them).

    Example: marsrag run "Checkout conversion fell 8% on Android" --llm replay:answers.jsonl --format json
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.goals import check_session_id, clean_goal

    # The API's rules, checked before anything is opened: a bad goal or session id stores nothing.
    goal, session = clean_goal(goal), check_session_id(session)
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.compose import run_goal

    settings = _settings(
        config=config,
        llm=llm,
        db=db,
        base_url=base_url,
        structured_output=structured_output,
        embedder=embedder,
        embedder_url=embedder_url,
    )
    with _stdout_kept_for(format), _progress(format) as progress:
        document = run_goal(
            settings,
            goal,
            workflow=workflow,
            session=session,
            sinks=_sinks(progress),
            collections=collection,
            watchers=_watchers(progress),
        )
    _print_run(document, format, settings)
    raise typer.Exit(0 if document["status"] == "completed" else 1)


@app.command()
def resume(
    run_id: Annotated[
        str,
        typer.Argument(help="The run to finish: its id or a unique prefix (see runs list; stale runs are resumable)."),
    ],
    config: ConfigOption = None,
    llm: LlmOption = None,
    db: DbOption = None,
    base_url: BaseUrlOption = None,
    structured_output: StructuredOutputOption = None,
    embedder: EmbedderOption = None,
    embedder_url: EmbedderUrlOption = None,
    format: Annotated[FormatChoice, typer.Option(help="text, or json (the runs show document).")] = FormatChoice.text,
) -> None:
    """Finish a run that stopped (a crash, a killed process) without redoing its committed tasks.

    Exit 0 when the run is completed, 1 when it failed again.

    Example: marsrag resume 3f2a9c... --llm openai/gpt-4o-mini
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.compose import resume_run

    settings = _settings(
        config=config,
        llm=llm,
        db=db,
        base_url=base_url,
        structured_output=structured_output,
        embedder=embedder,
        embedder_url=embedder_url,
    )
    with _stdout_kept_for(format), _progress(format) as progress:
        document = resume_run(settings, run_id, sinks=_sinks(progress), watchers=_watchers(progress))
    _print_run(document, format, settings)
    raise typer.Exit(0 if document["status"] == "completed" else 1)


@app.command()
def follow(
    run_id: Annotated[
        str, typer.Argument(help="The run whose next recommended question/action to follow: its id or a unique prefix.")
    ],
    workflow: Annotated[str | None, typer.Option(help="Workflow; default: the one the loop routed to.")] = None,
    goal: Annotated[
        str | None,
        typer.Option(help="Your own edit of the next action, asked instead of it (recorded as an edited follow)."),
    ] = None,
    config: ConfigOption = None,
    llm: LlmOption = None,
    db: DbOption = None,
    base_url: BaseUrlOption = None,
    structured_output: StructuredOutputOption = None,
    embedder: EmbedderOption = None,
    embedder_url: EmbedderUrlOption = None,
    format: Annotated[FormatChoice, typer.Option(help="text, or json (the runs show document).")] = FormatChoice.text,
) -> None:
    """Follow a run's next action: the next run of its session, with that action as the goal.

    The next action is the final loop when it is usable, else the fallback question (as the UI shows it).
    With --goal, the next run asks your edit of it instead (follow_kind edited; suggested when it is the
    next action word for word).

    Example: marsrag follow 3f2a9c... --goal "Which caches should be pre-warmed first?" --format json
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.compose import follow_run

    settings = _settings(
        config=config,
        llm=llm,
        db=db,
        base_url=base_url,
        structured_output=structured_output,
        embedder=embedder,
        embedder_url=embedder_url,
    )
    with _stdout_kept_for(format), _progress(format) as progress:
        document = follow_run(
            settings, run_id, workflow=workflow, goal=goal, sinks=_sinks(progress), watchers=_watchers(progress)
        )
    _print_run(document, format, settings)
    raise typer.Exit(0 if document["status"] == "completed" else 1)


@app.command()
def serve(
    host: Annotated[
        str,
        typer.Option(
            help="Address to bind; off loopback every request (reads too) needs MARSRAG_TOKEN (32+ characters)."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    db: DbOption = None,
    config: ConfigOption = None,
    llm: LlmOption = None,
    base_url: BaseUrlOption = None,
    structured_output: StructuredOutputOption = None,
    embedder: EmbedderOption = None,
    embedder_url: EmbedderUrlOption = None,
    run_threads: Annotated[
        int, typer.Option(min=1, max=64, help="Runs executing at once on the thread executor (without a broker).")
    ] = 2,
    executor: Annotated[
        ExecutorChoice,
        typer.Option(
            help="Without a broker: async (runs as tasks on one event loop), thread (--run-threads threads), "
            "auto: async when the LLM answers acall (CrewAI's LLMs, the composer, replay)."
        ),
    ] = ExecutorChoice.auto,
    concurrent_runs: Annotated[
        int, typer.Option(min=1, max=1024, help="Runs executing at once on the async executor.")
    ] = 64,
    broker: BrokerOption = None,
    shutdown_grace: Annotated[
        float,
        typer.Option(min=0, max=3600, help="On SIGTERM, seconds executing runs get to reach their next commit point."),
    ] = 30.0,
    log_format: Annotated[
        LogFormatChoice, typer.Option(help="One access line per request on stderr: text, or json (one object).")
    ] = LogFormatChoice.text,
) -> None:
    """Serve the web UI and JSON API: runs, their sections and badges, next actions, operator repair.

    Pages at /, /ask, /runs/ID, /sessions/ID; the API at /api (OpenAPI docs at /docs and /redoc, served
    offline). Off loopback, every request, reads included, but /health, /login and the static files needs the
    bearer token in MARSRAG_TOKEN (32+ characters; make one with
    python -c "import secrets; print(secrets.token_urlsafe(32))"). Each request is logged as one access line
    on stderr (--log-format text or json). Runs and repairs execute in this process,
    or, with a broker, on `marsrag worker` processes (any number of servers and workers on one PostgreSQL).
    Every 30 s the server hands runs no live process holds (left pending or running by a dead one) to its
    executor. Without a broker, runs execute in this process as tasks on one event loop (each waits on its
    LLM without holding a thread; --concurrent-runs at once) when the LLM answers acall, else on --run-threads
    threads (--executor chooses). On SIGTERM it stops accepting, lets executing runs reach their next commit
    point within the grace period, leaves the rest pending for the next server, and exits.

    Example: marsrag serve --port 8000 --db sqlite:///runs.db
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.web.server import serve as run_server
    from marsrag.web.settings import WebSettings

    settings = _settings(
        config=config,
        llm=llm,
        db=db,
        base_url=base_url,
        broker=broker,
        structured_output=structured_output,
        embedder=embedder,
        embedder_url=embedder_url,
    )
    web = WebSettings(
        settings,
        host=host,
        run_threads=run_threads,
        executor=executor.value,
        concurrent_runs=concurrent_runs,
        shutdown_grace=shutdown_grace,
    )
    run_server(web, port=port, log_format=log_format.value)


@app.command()
def worker(
    db: DbOption = None,
    config: ConfigOption = None,
    llm: LlmOption = None,
    base_url: BaseUrlOption = None,
    structured_output: StructuredOutputOption = None,
    embedder: EmbedderOption = None,
    embedder_url: EmbedderUrlOption = None,
    broker: BrokerOption = None,
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="Jobs executing at once in this process.")] = 1,
) -> None:
    """Execute queued runs and operator actions for `marsrag serve --broker`, until stopped.

    Start any number, on any machine sharing the store (PostgreSQL) and the broker. A worker killed
    mid-run leaves its job unacknowledged: after MARSRAG_REDELIVER_AFTER seconds (default 3600) another
    worker resumes the run from its last committed task. SIGTERM lets running jobs finish first.

    Example: marsrag worker --broker redis://127.0.0.1:6379/0 --db postgresql+psycopg://db/marsrag
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.compose import run_worker_process

    settings = _settings(
        config=config,
        llm=llm,
        db=db,
        base_url=base_url,
        broker=broker,
        structured_output=structured_output,
        embedder=embedder,
        embedder_url=embedder_url,
    )
    run_worker_process(settings, concurrency=concurrency)


@app.command()
def metrics(
    db: DbOption = None,
    since: Annotated[str | None, typer.Option(help="Start: 7d, 12h, 2w, a date or an ISO datetime (UTC).")] = None,
    until: Annotated[str | None, typer.Option(help="End (exclusive): a date (its end) or an ISO datetime.")] = None,
    workflow: Annotated[
        str | None, typer.Option(help="Only runs of this workflow (one the config or the store knows).")
    ] = None,
    config: ConfigOption = None,
    format: Annotated[FormatChoice, typer.Option(help="text, or json (name -> value, numerator, denominator).")] = (
        FormatChoice.text
    ),
    verify: Annotated[
        bool,
        typer.Option("--verify", help="Recount every figure from the raw rows and compare; exit 1 on a difference."),
    ] = False,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Recount the rollups the metrics are read from, from the raw rows.")
    ] = False,
) -> None:
    """Show the six loop metrics over all history, or a window of run creation times, per workflow or all.

    A rate whose denominator is empty is null (n/a), not 0. A workflow neither the config nor the store
    knows is an error (exit 2). Definitions are in docs/metrics.md. The figures are read from rollups that
    every write keeps; --verify checks them against the raw rows, --rebuild recounts them.

    Example: marsrag metrics --since 7d --workflow support_answer --format json
    """
    settings = _settings(config=config, db=db)
    if verify or rebuild:
        if since or until or workflow:
            raise InputError("--verify and --rebuild cover all history: drop --since, --until and --workflow")
        _check_rollups(settings.db, rebuild=rebuild, verify=verify, as_json=format is FormatChoice.json)
        return
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.metrics.service import metrics_document
    from marsrag.metrics.window import window as parse_window

    document = metrics_document(db=settings.db, since=since, until=until, workflow=workflow, config=settings.config)
    if format is FormatChoice.json:
        _out_json(document, ensure_ascii=True)
        return
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.render_text import print_metrics

    scope = parse_window(since, until).describe() + (f", workflow {workflow}" if workflow else ", all workflows")
    print_metrics(document, scope)


def _check_rollups(db: str | None, *, rebuild: bool, verify: bool, as_json: bool) -> None:
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.metrics.service import check_rollups

    result = check_rollups(db=db, rebuild=rebuild, verify=verify)
    if as_json:
        _out_json(result, ensure_ascii=True)
    else:
        if result["rebuilt"] is not None:
            _out(f"Rebuilt the metric rollups from the raw rows: {result['rebuilt']} rollup rows.\n")
        if verify:
            for difference in result["differences"]:
                _out(
                    f"DIFFERENT  {difference['what']}: rollups {difference['rollups']}, raw rows {difference['rows']}\n"
                )
            verdict = "match" if result["ok"] else f"differ in {len(result['differences'])} of"
            _out(f"The rollups {verdict} the raw rows' recount ({result['checked']} figures checked).\n")
    raise typer.Exit(0 if result["ok"] else 1)


@app.command()
def review(
    db: DbOption = None,
    week: Annotated[str | None, typer.Option(help="ISO week YYYY-Www; default the last complete week.")] = None,
    out: Annotated[
        str | None, typer.Option(metavar="FILE", help="Write to FILE.html (standalone) or FILE.md; default stdout.")
    ] = None,
    workflow: Annotated[
        str | None, typer.Option(help="Review only this workflow (one the config or the store knows).")
    ] = None,
    config: ConfigOption = None,
) -> None:
    """The weekly review: the six metrics and their change from the week before, charts, the workflows and
    tasks with the most repairs and fallbacks, and example failures; of all workflows or one.

    Example: marsrag review --week 2026-W48 --out review.html
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.metrics.review_service import review as weekly

    settings = _settings(config=config, db=db)
    text = weekly(db=settings.db, week=week, out=out, workflow=workflow, config=settings.config)
    if out is None:
        _out(text if text.endswith("\n") else text + "\n")
    else:
        _out(f"Wrote the review to {out}\n")


@app.command()
def tune(
    db: DbOption = None,
    config: ConfigOption = None,
    since: Annotated[str | None, typer.Option(help="Only runs from: 28d, 2w, a date or an ISO datetime.")] = None,
    until: Annotated[str | None, typer.Option(help="Only runs before: a date (its end) or an ISO datetime.")] = None,
    min_executions: Annotated[int, typer.Option(min=1, help="Narrative task executions needed to tune.")] = 20,
    write: Annotated[
        bool,
        typer.Option(
            "--write", help="Write the recommended modes into the config's workflows.yaml (ending won experiments)."
        ),
    ] = False,
    workflow: Annotated[
        str | None, typer.Option(help="Only this workflow (one the config or the store knows).")
    ] = None,
    format: Annotated[FormatChoice, typer.Option(help="text or json.")] = FormatChoice.text,
) -> None:
    """Recommend a loop_mode per workflow from the measured outcomes, with the reasons and numbers behind it.

    A workflow with an experiment is decided by it: the winning arm's loop_mode once every arm has the planned
    sessions and the interval excludes 0, else how many more sessions it needs. Nothing changes unless --write
    is given; then only the loop_mode lines of the config folder's workflows.yaml change, and an ended
    experiment's block becomes the winner's loop_mode line (./config/workflows.yaml in a `marsrag init`
    project, found by itself); the config must still load (lint included) or nothing is written. The rules are
    in docs/metrics.md and docs/experiments.md.

    Example: marsrag tune --since 28d --write
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.metrics.tune_service import tune as tune_modes

    settings = _settings(config=config, db=db)
    result = tune_modes(
        db=settings.db,
        config=str(settings.config) if settings.config is not None else None,
        since=since,
        until=until,
        min_executions=min_executions,
        write=write,
        workflow=workflow,
    )
    if format is FormatChoice.json:
        _out_json(result, ensure_ascii=True)
        return
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.render_text import print_tune

    print_tune(result)


experiment_app = HelpTyper(
    help="Experiments on a workflow's loop mode: compare the arms with confidence intervals.", no_args_is_help=True
)
app.add_typer(experiment_app, name="experiment")


@experiment_app.command("report")
def experiment_report(
    workflow: Annotated[str, typer.Argument(help="A workflow of the config that declares an experiment.")],
    db: DbOption = None,
    config: ConfigOption = None,
    since: Annotated[str | None, typer.Option(help="Start: 7d, 12h, 2w, a date or an ISO datetime (UTC).")] = None,
    until: Annotated[str | None, typer.Option(help="End (exclusive): a date (its end) or an ISO datetime.")] = None,
    format: Annotated[FormatChoice, typer.Option(help="text, or json (experiment, arms, differences).")] = (
        FormatChoice.text
    ),
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
) -> None:
    """Report a workflow's experiment: per arm the loop metrics with numerators and denominators, and each arm
    against the first on every metric with its 95% interval and the sessions needed at 80% power.

    The report checks the split (sample ratio mismatch), flags an arm worse on a guardrail (fallback and repair
    rates) and warns while the planned sample size is not reached: reading a fixed-horizon test repeatedly
    inflates false positives. A workflow without an experiment is an error (exit 2). See docs/experiments.md.

    Example: marsrag experiment report support_answer --since 28d --format json
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.metrics.experiment_service import experiment_report as read_experiment
    from marsrag.metrics.window import window as parse_window

    settings = _settings(config=config, db=db)
    report = read_experiment(workflow, db=settings.db, config=settings.config, since=since, until=until)
    document = report.to_dict()
    if as_json or format is FormatChoice.json:
        _out_json(document, ensure_ascii=True)
        return
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.render_text import print_experiment

    print_experiment(document, parse_window(since, until).describe())


runs_app = HelpTyper(
    help="Stored runs: list them, show one, repair a task or regenerate its failing sections, rate one.",
    no_args_is_help=True,
)
app.add_typer(runs_app, name="runs")


@runs_app.command("list")
def runs_list(
    db: DbOption = None,
    limit: Annotated[int | None, typer.Option(min=1, help="At most this many runs, newest first.")] = None,
    format: Annotated[FormatChoice, typer.Option(help="text or json.")] = FormatChoice.text,
) -> None:
    """List stored runs, newest first.

    Below 120 columns each run shows its short id: the shortest prefix of at least 8 characters no other run
    shares, which every command taking a run id accepts (JSON rows have both, run_id and short_id).

    Example: marsrag runs list --format json
    """
    # lazy: only this command's library loads (the store, not the runtime: read-only commands start fast)
    from marsrag.views.document import list_runs

    rows = list_runs(db=_settings(db=db).db, limit=limit)
    if format is FormatChoice.json:
        _out_json(rows)
        return
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.render_runs import print_run_rows

    print_run_rows(rows)


@runs_app.command("show")
def runs_show(
    run_id: Annotated[str, typer.Argument(help="The run's id or a unique prefix of it (see runs list).")],
    db: DbOption = None,
    format: Annotated[FormatChoice, typer.Option(help="text or json.")] = FormatChoice.text,
) -> None:
    """Show one run: its tasks' sections and statuses, transitions, summary and events.

    Example: marsrag runs show 3f2a9c... --format json
    """
    settings = _settings(db=db)
    if format is FormatChoice.json:
        # lazy: only this command's library loads (the store, not the runtime: read-only commands start fast)
        from marsrag.views.document import show_run

        _out_json(show_run(db=settings.db, run_id=run_id))
        return
    # lazy: SQLAlchemy, kept off the fast commands (validate, schema, lint)
    from marsrag.store import open_store

    # One store opened for both the prefix and the view (opening it checks the schema version: not free).
    with open_store(settings.db) as store:
        _print_run_text(store, store.resolve_run_id(run_id), settings)


kb_app = HelpTyper(
    help="The knowledge base: list its collections and documents, remove documents or a whole collection.",
    no_args_is_help=True,
)
app.add_typer(kb_app, name="kb")


@kb_app.command("list")
def kb_list(
    db: DbOption = None,
    collection: Annotated[str | None, typer.Option(help="Only this collection and its documents.")] = None,
    format: Annotated[FormatChoice, typer.Option(help="text, or json (collections, then documents).")] = (
        FormatChoice.text
    ),
) -> None:
    """List the knowledge base: its collections (documents, chunks), then each document with its chunk count
    and when it was ingested (UTC).

    A document's path is the one its citations show; `marsrag kb remove PATH` takes it as shown.

    Example: marsrag kb list --format json
    """
    # lazy: only this command's library loads (the store, not the runtime: read-only commands start fast)
    from marsrag.rag.manage import listing

    found = listing(db=_settings(db=db).db, collection=collection)
    if format is FormatChoice.json:
        _out_json(found.to_dict())
        return
    if not found.documents:
        _out("The knowledge base is empty: add documents with marsrag ingest PATH\n")
        return
    # lazy: Rich, only for people reading a terminal
    from marsrag.render_knowledge import print_knowledge

    print_knowledge(found.to_dict())


@kb_app.command("remove")
def kb_remove(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Documents as kb list and citations show them (a folder of them too), or the files or folders "
            "they were ingested from."
        ),
    ] = None,
    collection: Annotated[
        str | None,
        typer.Option(help="Without PATH: remove this whole collection. With PATH: only its documents."),
    ] = None,
    db: DbOption = None,
    format: Annotated[FormatChoice, typer.Option(help="text, or json (what was removed).")] = FormatChoice.text,
) -> None:
    """Remove documents, or a whole collection, from the knowledge base, with their chunks.

    All or nothing: a PATH that matches no document (or documents of several collections, without
    --collection) is a usage error (exit 2) and nothing is removed. Runs keep the passages they cited: runs
    show still shows them. Later runs never retrieve the removed documents.

    Example: marsrag kb remove kb/old-runbook.md --collection handbook
    """
    # lazy: only this command's library loads (the store, not the runtime)
    from marsrag.rag.manage import removal

    report = removal(list(paths or []), db=_settings(db=db).db, collection=collection)
    if format is FormatChoice.json:
        _out_json(report.to_dict())
        return
    for document in report.documents:
        _out(f"removed {document.path} ({document.chunks} chunks) from {document.collection}\n")
    _out(f"removed: {report.summary()}\n")


@kb_app.command("calibrate")
def kb_calibrate(
    inside: Annotated[Path, typer.Option(help="Goals the knowledge base answers, one per line (# starts a comment).")],
    outside: Annotated[Path, typer.Option(help="Goals it does not cover, one per line, some in its vocabulary.")],
    db: DbOption = None,
    embedder: EmbedderOption = None,
    embedder_url: EmbedderUrlOption = None,
    format: Annotated[FormatChoice, typer.Option(help="text, or json (the scale and each goal's cosine).")] = (
        FormatChoice.text
    ),
) -> None:
    """Measure the embedder's similarity scale on your knowledge base: the value of the similarity_scale setting.

    The support signal counts a passage's similarity to the question as evidence only on a scale calibrated
    for the embedder (only the embedded default's is known): with it, a question worded away from the
    documents' words that the knowledge base does answer is not reported as not covered. Each goal's best
    passage cosine is measured; weak is set just above the highest cosine of a goal outside the knowledge
    base, strong at the upper quartile of those inside.

    Example: marsrag kb calibrate --inside answered.txt --outside not-covered.txt --embedder ollama/nomic-embed-text
    """
    # lazy: only this command's library loads (the store and the embedder, not the runtime)
    from marsrag.compose import open_knowledge_base
    from marsrag.rag.calibration import measure, read_goals

    settings = _settings(db=db, embedder=embedder, embedder_url=embedder_url)
    inside_goals, outside_goals = read_goals(inside), read_goals(outside)
    with open_knowledge_base(settings) as kb:
        calibration = measure(kb, inside_goals, outside_goals)
    if format is FormatChoice.json:
        _out_json(calibration.to_dict())
        return
    for label, measured in (("inside", calibration.inside), ("outside", calibration.outside)):
        for goal, cosine in measured:
            _out(f"{label:7} {cosine:6.3f}  {goal}\n")
    _out(
        f"{calibration.embedder}: weak {calibration.scale.weak:.2f}, strong {calibration.scale.strong:.2f}\n"
        f'set it: similarity_scale = "{calibration.setting}" in the settings file, or '
        f"MARSRAG_SIMILARITY_SCALE={calibration.setting}\n"
    )


@contextmanager
def _stdout_kept_for(format: FormatChoice) -> Iterator[None]:
    """With ``--format json``, send what dependencies print meanwhile (CrewAI's console warnings) to stderr.

    stdout then holds the JSON document alone, so scripts can parse it.
    """
    if format is not FormatChoice.json:
        yield
        return
    with redirect_stdout(sys.stderr):
        yield


def _act(action: str, run_id: str, task_id: str, settings: Settings, format: FormatChoice) -> None:
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.compose import act_on_task

    with _stdout_kept_for(format):
        document = act_on_task(settings, action, run_id, task_id)
    _print_run(document, format, settings)
    status = next(t["validation"]["status"] for t in document["tasks"] if t["task_id"] == task_id)
    raise typer.Exit(0 if status == "valid" else 1)


@runs_app.command("repair")
def runs_repair(
    run_id: Annotated[str, typer.Argument(help="The run: its id or a unique prefix.")],
    task_id: Annotated[str, typer.Argument(help="The failed (or partial) task to repair.")],
    config: ConfigOption = None,
    llm: LlmOption = None,
    db: DbOption = None,
    base_url: BaseUrlOption = None,
    structured_output: StructuredOutputOption = None,
    embedder: EmbedderOption = None,
    embedder_url: EmbedderUrlOption = None,
    format: Annotated[FormatChoice, typer.Option(help="text, or json (the runs show document).")] = FormatChoice.text,
) -> None:
    """Run a task's repair again (the web UI's "Run repair task"); exit 0 when the task is valid after it.

    Earlier attempts are kept; the transition out of the task is re-planned when its loop changes.

    Example: marsrag runs repair 3f2a9c... diagnose
    """
    _act(
        "repair",
        run_id,
        task_id,
        _settings(
            config=config,
            llm=llm,
            db=db,
            base_url=base_url,
            structured_output=structured_output,
            embedder=embedder,
            embedder_url=embedder_url,
        ),
        format,
    )


@runs_app.command("regenerate")
def runs_regenerate(
    run_id: Annotated[str, typer.Argument(help="The run: its id or a unique prefix.")],
    task_id: Annotated[str, typer.Argument(help="The partial (or failed) task whose failing sections to redo.")],
    config: ConfigOption = None,
    llm: LlmOption = None,
    db: DbOption = None,
    base_url: BaseUrlOption = None,
    structured_output: StructuredOutputOption = None,
    embedder: EmbedderOption = None,
    embedder_url: EmbedderUrlOption = None,
    format: Annotated[FormatChoice, typer.Option(help="text, or json (the runs show document).")] = FormatChoice.text,
) -> None:
    """Regenerate only a task's failing sections and merge them with the passing ones (the UI's "Regenerate section").

    Example: marsrag runs regenerate 3f2a9c... diagnose --format json
    """
    _act(
        "regenerate",
        run_id,
        task_id,
        _settings(
            config=config,
            llm=llm,
            db=db,
            base_url=base_url,
            structured_output=structured_output,
            embedder=embedder,
            embedder_url=embedder_url,
        ),
        format,
    )


class FeedbackTargetChoice(StrEnum):
    """What ``runs feedback`` rates."""

    answer = "answer"
    next_action = "next_action"


class FeedbackRatingChoice(StrEnum):
    """How ``runs feedback`` rates it."""

    up = "up"
    down = "down"


@runs_app.command("feedback")
def runs_feedback(
    run_id: Annotated[str, typer.Argument(help="The finished run to rate: its id or a unique prefix.")],
    on: Annotated[FeedbackTargetChoice, typer.Option(help="What to rate: the answer or the next action.")],
    rating: Annotated[FeedbackRatingChoice, typer.Option(help="up (helpful) or down (not helpful).")],
    comment: Annotated[str | None, typer.Option(help="Why, in a sentence (at most 2,000 characters).")] = None,
    db: DbOption = None,
    format: Annotated[FormatChoice, typer.Option(help="text, or json (the stored event).")] = FormatChoice.text,
) -> None:
    """Rate a run's answer or next action, as the run page's thumbs do (a loop.feedback.recorded event).

    Rating a part again replaces its earlier rating in the metrics (helpful_rate).

    Example: marsrag runs feedback 3f2a9c... --on answer --rating up --comment "Found the root cause"
    """
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.compose import rate_run

    event = rate_run(_settings(db=db), run_id, on=on.value, rating=rating.value, comment=comment)
    if format is FormatChoice.json:
        _out_json(event)
        return
    said = "helpful" if rating is FeedbackRatingChoice.up else "not helpful"
    what = "answer" if on is FeedbackTargetChoice.answer else "next action"
    _out(f"Recorded: the {what} of run {event['run_id']} rated {said} ({rating.value}).\n")


def _print_run(document: dict[str, Any], format: FormatChoice, settings: Settings) -> None:
    if format is FormatChoice.json:
        _out_json(document)
        return
    # lazy: SQLAlchemy, kept off the fast commands (validate, schema, lint)
    from marsrag.store import open_store

    with open_store(settings.db) as store:
        _print_run_text(store, document["run_id"], settings)


def _print_run_text(store: "RunStore", run_id: str, settings: Settings) -> None:
    """The run as text: the view model the web pages render (cards, badge, header, next action), read back stored,
    then where it is stored and how to show it again."""
    # lazy: Rich, kept off the fast commands (validate, schema, lint)
    from marsrag.render_runs import print_run
    from marsrag.urls import mask
    from marsrag.views.viewmodel import read_run_view

    print_run(read_run_view(store, run_id))
    where = mask(settings.db)  # never print a password
    if settings.project is not None:
        # Inside the project the store needs no naming: any folder of it finds the same one.
        _out(
            f"\nState stored in project {settings.project_name}'s store {where}; "
            f"show it again with: marsrag runs show {run_id}\n"
        )
    else:
        _out(f"\nState stored in {where}; show it again with: marsrag runs show {run_id} --db '{where}'\n")


def _print_json(source: str, result: dict[str, Any]) -> None:
    _out_json({"source": source, **result})


def _print_text(source: str, result: dict[str, Any]) -> None:
    # lazy: only this command's library loads (validate, schema and lint start fast)
    from marsrag.render_text import print_result

    print_result(source, result)


def _error(message: str) -> None:
    _error_line("error", message)


def _error_line(kind: str, message: str) -> None:
    sys.stderr.write(visible(f"marsrag: {kind}: {message}") + "\n")


def _out(text: str) -> None:
    """Write ``text`` to stdout with its control characters made visible: every human line of the CLI."""
    sys.stdout.write(visible(text))


def _out_json(value: Any, **options: Any) -> None:
    """Write ``value`` to stdout as one JSON document (one line unless indented) with no raw control character."""
    sys.stdout.write(visible_json(value, **options) + "\n")


class _OneLine(logging.Formatter):
    """Library warnings as the CLI's own lines: ``marsrag: warning: ...``, one line, no traceback."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(f"marsrag: {record.levelname.lower()}: {' '.join(record.getMessage().split())}")


def _report_warnings() -> None:
    """Send MarsRAG's warnings (a failing event sink...) to stderr as single lines (idempotent)."""
    logger = logging.getLogger("marsrag")
    if not any(isinstance(handler.formatter, _OneLine) for handler in logger.handlers):
        handler = logging.StreamHandler()
        handler.setLevel(logging.WARNING)
        handler.setFormatter(_OneLine())
        logger.addHandler(handler)


#: Store errors that are still usage errors (exit 2): a store that cannot be opened, an unknown run, a record
#: this MarsRAG cannot read, a job queue that cannot be reached.
_USAGE_STORE_ERRORS = (StoreUnavailableError, RunNotFoundError, IncompatibleRecordError, QueueUnavailableError)


def exit_code(error: MarsRAGError) -> int:
    """1 for a store that failed during the work (a write refused, the database lost), 2 for the rest."""
    failed = isinstance(error, StoreError) and not isinstance(error, _USAGE_STORE_ERRORS)
    return 1 if failed else 2


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; usage errors become one line on stderr and exit code 2, never a traceback."""
    # What is loaded by now (Typer, the CLI's modules) lives as long as the process. Frozen, the cyclic
    # collector stops walking it again at each full collection of a command's start-up, whose imports and
    # models allocate in bursts: about a tenth of a read-only command's start (bench/coldstart_bench.py).
    # The collector stays on, so long-running commands (serve, worker) collect their own garbage as before.
    gc.freeze()
    _report_warnings()
    try:
        code = app(args=argv, prog_name="marsrag", standalone_mode=False)
    except typer.TyperException as error:  # typer's (vendored click) usage and parameter errors
        ctx = getattr(error, "ctx", None)
        if type(error).__name__ == "NoArgsIsHelpError" and ctx is not None:
            _out(ctx.get_help() + "\n")
        else:
            message = error.format_message() if hasattr(error, "format_message") else str(error)
            _error(usage_message(message) or type(error).__name__)
        code = 2
    except (typer.Abort, KeyboardInterrupt):
        _error("aborted")
        code = 130
    except MarsRAGError as error:
        # A store's error names the project and store looked in: "no run" means nothing in the wrong store.
        where = f" ({_RESOLVED[0].where(brief=True)})" if _RESOLVED and isinstance(error, StoreError) else ""
        _error(str(error) + where)
        code = exit_code(error)
    except Exception as error:  # noqa: BLE001 - a bug is reported in one line; MARSRAG_DEBUG=1 shows the traceback
        if os.environ.get("MARSRAG_DEBUG"):
            raise
        _error(f"internal error: {type(error).__name__}: {error} (set MARSRAG_DEBUG=1 for the traceback)")
        code = 1
    sys.exit(code if isinstance(code, int) else 0)
