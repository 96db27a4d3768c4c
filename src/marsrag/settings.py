"""MarsRAG's settings, resolved once: a command-line flag, else the environment, else the settings file, else a default.

Inside a project (a folder with ``marsrag.toml`` at its root, see :mod:`marsrag.project`), the settings file is
the project's ``marsrag.toml``, and the defaults are the project's: its config folder, its knowledge folder and
a store in its own data folder; ``$MARSRAG_CONFIG`` and the data directory's ``config.toml`` are not read, so
that no setting of theirs makes projects share a store again. Outside any project:

The settings file is TOML, named by ``$MARSRAG_CONFIG``, else ``<data dir>/config.toml``; it may set ``llm``,
``base_url``, ``db``, ``broker``, ``structured_output``, ``embedder``, ``embedder_url`` and ``similarity_scale``,
each a string. It is
read only when a flag or the environment leaves one of those unset, and then it says when it is wrong: a file
``$MARSRAG_CONFIG`` names that does not exist, an unknown key (with the closest known one suggested), a value
that is not a string or not of its kind are errors naming the file and the key (the default file need not
exist). ``--config`` names the *config folder* (agents, tasks, workflows), not this file.

This is the only module reading the configuration variables ``MARSRAG_CONFIG``, ``MARSRAG_LLM``,
``MARSRAG_BASE_URL``, ``MARSRAG_DB``, ``MARSRAG_BROKER``, ``MARSRAG_STRUCTURED_OUTPUT``, ``MARSRAG_EMBEDDER``,
``MARSRAG_EMBEDDER_URL``, ``MARSRAG_EMBEDDER_KEY``, ``MARSRAG_SIMILARITY_SCALE``, ``MARSRAG_TOKEN``,
``MARSRAG_ALLOWED_HOSTS``, ``MARSRAG_SWEEP_SECONDS``, ``MARSRAG_QUEUE``, ``MARSRAG_REDELIVER_AFTER``,
``MARSRAG_ACTION_TIMEOUT`` and the LLM call policy's ``MARSRAG_LLM_TIMEOUT``, ``MARSRAG_LLM_RETRIES``,
``MARSRAG_LLM_BACKOFF`` and ``MARSRAG_LLM_MAX_TOKENS`` (the data directory's ``MARSRAG_HOME`` is
:mod:`marsrag.paths`'; OpenTelemetry reads its own ``OTEL_*`` variables).
"""

from __future__ import annotations

import difflib
import math
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from marsrag.errors import InputError
from marsrag.paths import data_dir
from marsrag.project import MARKER, Project, find_project
from marsrag.urls import mask

__all__ = [
    "COMPOSER",
    "ENV",
    "FILE_KEYS",
    "STRUCTURED_OUTPUTS",
    "LlmCallSettings",
    "default_store_url",
    "resolve_settings",
    "settings_file",
]

#: The embedded default LLM: the offline composer (deterministic, grounded in retrieved passages; not an LLM).
COMPOSER = "composer"

#: How the LLM may be asked for structure (see :mod:`marsrag.llm.structured`); ``auto`` steps down on refusal.
STRUCTURED_OUTPUTS = ("auto", "json_schema", "json_object", "grammar", "prompt")

#: The environment variable of each setting a flag, the environment and the settings file can all give.
ENV = {
    "llm": "MARSRAG_LLM",
    "base_url": "MARSRAG_BASE_URL",
    "db": "MARSRAG_DB",
    "broker": "MARSRAG_BROKER",
    "structured_output": "MARSRAG_STRUCTURED_OUTPUT",
    "embedder": "MARSRAG_EMBEDDER",
    "embedder_url": "MARSRAG_EMBEDDER_URL",
    "similarity_scale": "MARSRAG_SIMILARITY_SCALE",
}
#: The keys the settings file may set.
FILE_KEYS = tuple(ENV)
#: The keys a project's ``marsrag.toml`` may set: the settings file's and the project's own.
PROJECT_KEYS = (*FILE_KEYS, "name", "config", "knowledge")

SETTINGS_FILE_ENV = "MARSRAG_CONFIG"
TOKEN_ENV = "MARSRAG_TOKEN"
ALLOWED_HOSTS_ENV = "MARSRAG_ALLOWED_HOSTS"
QUEUE_ENV = "MARSRAG_QUEUE"
REDELIVER_AFTER_ENV = "MARSRAG_REDELIVER_AFTER"
ACTION_TIMEOUT_ENV = "MARSRAG_ACTION_TIMEOUT"
LLM_TIMEOUT_ENV = "MARSRAG_LLM_TIMEOUT"
LLM_RETRIES_ENV = "MARSRAG_LLM_RETRIES"
LLM_BACKOFF_ENV = "MARSRAG_LLM_BACKOFF"
LLM_MAX_TOKENS_ENV = "MARSRAG_LLM_MAX_TOKENS"
LLM_STREAM_ENV = "MARSRAG_LLM_STREAM"
#: The key of an embeddings endpoint that wants one (never in a settings file: a secret stays in the environment).
EMBEDDER_KEY_ENV = "MARSRAG_EMBEDDER_KEY"
#: The embedded default embedder: WordLlama's static embeddings, offline, no key (see marsrag.rag.embedders).
DEFAULT_EMBEDDER = "wordllama"
#: Whether LLMs stream their answers: ``auto`` (model servers do, the offline composer answers at once), on, off.
STREAM_SETTINGS = ("auto", "on", "off")
SWEEP_SECONDS_ENV = "MARSRAG_SWEEP_SECONDS"


@dataclass(frozen=True)
class LlmCallSettings:
    """How every LLM call is made: a time limit per attempt and retries with backoff for transport errors.

    Attributes:
        timeout: seconds one attempt may take (``$MARSRAG_LLM_TIMEOUT``, default 120; ``0`` gives None: no limit).
        retries: attempts after the first, for transport errors only (``$MARSRAG_LLM_RETRIES``, default 2).
        backoff: the first retry's delay in seconds, doubled per retry (``$MARSRAG_LLM_BACKOFF``, default 1).
        max_tokens: the most tokens an answer may have (``$MARSRAG_LLM_MAX_TOKENS``; None, the default: the
            provider's own limit). A local model that never stops writing holds its server past any time limit;
            a cut answer fails ``truncated``.
        stream: whether answers are streamed (``$MARSRAG_LLM_STREAM``): ``auto`` (default: a model server streams,
            so a viewer sees the answer forming; the offline composer answers at once), ``on`` (the composer too)
            or ``off``. Streaming never changes what is validated and stored.
    """

    timeout: float | None = 120.0
    retries: int = 2
    backoff: float = 1.0
    max_tokens: int | None = None
    stream: str = "auto"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LlmCallSettings:
        """The values of ``MARSRAG_LLM_TIMEOUT``, ``_RETRIES``, ``_BACKOFF``, ``_MAX_TOKENS`` and ``_STREAM``.

        Raises:
            InputError: a variable is set to something that is not a usable number (the message names it).
        """
        env = os.environ if environ is None else environ
        timeout = _number(env, LLM_TIMEOUT_ENV, 120.0)
        retries = _number(env, LLM_RETRIES_ENV, 2)
        backoff = _number(env, LLM_BACKOFF_ENV, 1.0)
        if retries != int(retries):
            raise InputError(f"{LLM_RETRIES_ENV} must be a whole number >= 0, got {env[LLM_RETRIES_ENV]!r}")
        max_tokens = _number(env, LLM_MAX_TOKENS_ENV, 0)
        if max_tokens != int(max_tokens):
            raise InputError(f"{LLM_MAX_TOKENS_ENV} must be a whole number >= 0, got {env[LLM_MAX_TOKENS_ENV]!r}")
        stream = env.get(LLM_STREAM_ENV, "").strip().lower() or "auto"
        if stream not in STREAM_SETTINGS:
            choices = ", ".join(STREAM_SETTINGS)
            raise InputError(f"{LLM_STREAM_ENV} must be one of {choices}, got {env[LLM_STREAM_ENV]!r}")
        return cls(
            timeout=timeout or None,
            retries=int(retries),
            backoff=backoff,
            max_tokens=int(max_tokens) or None,
            stream=stream,
        )


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything configurable about where MarsRAG reads and writes and what it runs with.

    Attributes:
        data_dir: where MarsRAG keeps its data: the project's ``.marsrag/``, else ``$MARSRAG_HOME``, else the XDG
            data directory.
        settings_file: the TOML settings file consulted (the project's ``marsrag.toml``, else ``$MARSRAG_CONFIG``,
            else ``<data dir>/config.toml``).
        project: the project around the working directory (None: outside any).
        project_name: its name (its file's ``name``, else its folder's name).
        knowledge: the project's knowledge folder, what ``marsrag ingest`` reads when given no path (None
            outside a project).
        config: the config folder (None: ``./config`` when present, else the shipped sample).
        llm: ``composer`` (default), ``replay:FILE`` or a CrewAI model string.
        base_url: the OpenAI-compatible server for ``llm`` (Ollama, vLLM...).
        db: the store URL (default: a SQLite file in the data directory).
        broker: the job queue's Redis URL; None: runs and actions execute in-process.
        token: the bearer token every web request (reads too) needs off loopback (``$MARSRAG_TOKEN``; blank is none).
        allowed_hosts: extra Host names a loopback web server answers to (``$MARSRAG_ALLOWED_HOSTS``, commas).
        sweep_seconds: how often a server hands runs no live process holds to its executor
            (``$MARSRAG_SWEEP_SECONDS``, default 30; 0: only when it starts).
        queue: the queue's name (``$MARSRAG_QUEUE``, default ``marsrag``): servers and workers must agree.
        redeliver_after: seconds before an unacknowledged job goes to another worker (``$MARSRAG_REDELIVER_AFTER``).
        action_timeout: seconds a server waits for a worker's operator action (``$MARSRAG_ACTION_TIMEOUT``).
        llm_calls: the time limit and transport retries of every LLM call (``$MARSRAG_LLM_*``).
        structured_output: how the LLM is asked for structure: ``auto`` (default), ``json_schema``,
            ``json_object``, ``grammar`` or ``prompt``.
        embedder: what embeds the knowledge base for hybrid search: ``wordllama`` (default, offline), ``none``
            (keyword search only) or ``PROVIDER/MODEL`` on an OpenAI-compatible ``/v1/embeddings`` endpoint.
        embedder_url: that endpoint's base URL (``http://host:port/v1``).
        embedder_key: its key (``$MARSRAG_EMBEDDER_KEY``, else ``$OPENAI_API_KEY`` for ``openai/...``).
        similarity_scale: the embedder's calibrated cosines (weak, strong) for the support signal, written
            ``WEAK,STRONG`` (``marsrag kb calibrate`` measures them); None: the one known for the embedder.
    """

    data_dir: Path
    settings_file: Path
    db: str
    project: Project | None = None
    project_name: str | None = None
    knowledge: Path | None = None
    config: Path | None = None
    llm: str = COMPOSER
    base_url: str | None = None
    broker: str | None = None
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    sweep_seconds: float = 30.0
    queue: str = "marsrag"
    redeliver_after: float = 3600.0
    action_timeout: float = 300.0
    llm_calls: LlmCallSettings = LlmCallSettings()
    structured_output: str = "auto"
    embedder: str = DEFAULT_EMBEDDER
    embedder_url: str | None = None
    embedder_key: str | None = None
    similarity_scale: tuple[float, float] | None = None

    @classmethod
    def resolve(
        cls,
        *,
        config: str | Path | None = None,
        llm: str | None = None,
        base_url: str | None = None,
        db: str | None = None,
        broker: str | None = None,
        structured_output: str | None = None,
        embedder: str | None = None,
        embedder_url: str | None = None,
        similarity_scale: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Settings:
        """The settings from these flags (None: not given), else the environment, else the settings file, else defaults.

        The queue's name and timeouts are read (and checked) only when there is a broker to use them.

        Raises:
            InputError: the settings file is not readable TOML or sets a key to a non-string, an LLM call
                variable is not a usable number, ``structured_output`` is not one of its values,
                ``similarity_scale`` is not two cosines ``WEAK,STRONG`` with weak below strong, or (with a
                broker) a queue timeout is not a positive number of seconds.
        """
        env = os.environ if environ is None else environ
        project = find_project()
        if project is not None:
            home, path = project.data_dir, project.file
            from_file = _FileValues(path, explicit=True, keys=PROJECT_KEYS)
        else:
            home, path = data_dir(), settings_file(env)
            from_file = _FileValues(path, explicit=bool(env.get(SETTINGS_FILE_ENV)))
        flags = {
            "llm": llm,
            "base_url": base_url,
            "db": db,
            "broker": broker,
            "structured_output": structured_output,
            "embedder": embedder,
            "embedder_url": embedder_url,
            "similarity_scale": similarity_scale,
        }

        def pick(name: str) -> str | None:
            return _text(flags[name]) or _text(env.get(ENV[name])) or from_file.get(name)

        db_url = _text(db) or _text(env.get(ENV["db"]))
        if db_url is None and (from_file_db := from_file.get("db")) is not None:
            db_url = _in_project(from_file_db, project) if project is not None else from_file_db

        chosen_broker = pick("broker")
        chosen_embedder = pick("embedder") or DEFAULT_EMBEDDER
        queue_options: dict[str, Any] = {}
        if chosen_broker:
            queue_options = {
                "queue": _text(env.get(QUEUE_ENV)) or "marsrag",
                "redeliver_after": _seconds(env, REDELIVER_AFTER_ENV, 3600.0),
                "action_timeout": _seconds(env, ACTION_TIMEOUT_ENV, 300.0),
            }
        return cls(
            data_dir=home,
            settings_file=path,
            project=project,
            project_name=(from_file.get("name") or project.root.name) if project is not None else None,
            knowledge=project.path(from_file.get("knowledge") or "knowledge") if project is not None else None,
            config=Path(config) if config is not None else _project_config(project, from_file),
            llm=pick("llm") or COMPOSER,
            base_url=pick("base_url"),
            db=db_url or default_store_url(home),
            broker=chosen_broker,
            token=_text(env.get(TOKEN_ENV)),
            allowed_hosts=tuple(name.strip() for name in env.get(ALLOWED_HOSTS_ENV, "").split(",") if name.strip()),
            sweep_seconds=_number(env, SWEEP_SECONDS_ENV, 30.0),
            llm_calls=LlmCallSettings.from_env(env),
            structured_output=_structured_output(pick("structured_output")),
            embedder=chosen_embedder,
            embedder_url=pick("embedder_url"),
            similarity_scale=_similarity_scale(pick("similarity_scale")),
            embedder_key=_text(env.get(EMBEDDER_KEY_ENV))
            or (_text(env.get("OPENAI_API_KEY")) if chosen_embedder.lower().startswith("openai/") else None),
            **queue_options,
        )

    def where(self, *, brief: bool = False) -> str:
        """Which project and store a command uses, in words: ``project NAME (ROOT), store URL``; ``brief``:
        ``project NAME, store URL``, or only ``store URL`` outside a project (for error lines)."""
        store = f"store {mask(self.db)}"
        if self.project is None:
            return store if brief else f"no project (no {MARKER} in this folder or above), {store}"
        if brief:
            return f"project {self.project_name}, {store}"
        return f"project {self.project_name} ({self.project.root}), {store}"


def _project_config(project: Project | None, from_file: _FileValues) -> Path | None:
    """The project's config folder: its file's ``config``, else ``config/`` at its root when present; None outside
    a project (or when the project has none: ``./config``, else the shipped sample, as outside)."""
    if project is None:
        return None
    named = from_file.get("config")
    if named is not None:
        return project.path(named)
    folder = project.root / "config"
    return folder if folder.is_dir() else None


def _in_project(url: str, project: Project) -> str:
    """``url``, with a relative SQLite file made relative to the project's root (not the working directory)."""
    scheme, separator, rest = url.partition("://")
    if not (separator and scheme.lower().startswith("sqlite")) or not rest.startswith("/") or rest.startswith("//"):
        return url
    file = rest[1:]
    if not file or file.startswith((":memory:", "file:")) or "mode=memory" in file:
        return url
    return f"{scheme}:///{quote(str(project.root), safe='/').rstrip('/')}/{file}"


def _structured_output(value: str | None) -> str:
    if value is None:
        return "auto"
    if value not in STRUCTURED_OUTPUTS:
        raise InputError(f"structured_output must be one of {', '.join(STRUCTURED_OUTPUTS)}, got {value!r}")
    return value


def _similarity_scale(value: str | None) -> tuple[float, float] | None:
    """``WEAK,STRONG`` as two cosines (None: not set).

    Raises:
        InputError: not two numbers with -1 <= weak < strong <= 1.
    """
    if value is None:
        return None
    parsed = _cosines(value)
    if parsed is None:
        raise InputError(f"similarity_scale must be {_SCALE_RULE}, got {value!r}")
    return parsed


#: What a ``similarity_scale`` value must be, for its error lines.
_SCALE_RULE = "two cosines WEAK,STRONG with -1 <= weak < strong <= 1 (0.47,0.65)"


def _cosines(value: str) -> tuple[float, float] | None:
    parts = [part.strip() for part in value.split(",")]
    if len(parts) != 2:
        return None
    try:
        weak, strong = float(parts[0]), float(parts[1])
    except ValueError:
        return None
    return (weak, strong) if -1.0 <= weak < strong <= 1.0 else None


#: :meth:`Settings.resolve` as a function.
resolve_settings = Settings.resolve


def settings_file(environ: Mapping[str, str] | None = None) -> Path:
    """The settings file: ``$MARSRAG_CONFIG``, else ``<data dir>/config.toml`` (it need not exist)."""
    explicit = (os.environ if environ is None else environ).get(SETTINGS_FILE_ENV)
    return Path(explicit) if explicit else data_dir() / "config.toml"


def default_store_url(home: Path | None = None) -> str:
    """The store URL when nothing names one: ``marsrag.db`` in the data directory."""
    # Quoted because SQLAlchemy unquotes the path part of a URL ('%', '?' and '#' would be misread).
    return f"sqlite:///{quote(str((home or data_dir()) / 'marsrag.db'), safe='/')}"


class _FileValues:
    """The settings file's values, read on first use: a file nobody needs is never opened (nor its errors raised).

    ``explicit``: the file was named by ``$MARSRAG_CONFIG``, so it must exist (the default one need not).
    """

    def __init__(self, path: Path, *, explicit: bool = False, keys: tuple[str, ...] = FILE_KEYS) -> None:
        self.path = path
        self.explicit = explicit
        self.keys = keys
        self._values: dict[str, Any] | None = None

    def get(self, key: str) -> str | None:
        if self._values is None:
            self._values = self._read()
        value = self._values.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise InputError(f"{self.path}: {key} must be a string, not {type(value).__name__}")
        text = _text(value)
        problem = _FILE_CHECKS[key](text) if text is not None else None
        if problem is not None:
            raise InputError(f"{self.path}: {key} = {value!r}: {problem}")
        return text

    def _read(self) -> dict[str, Any]:
        if not self.path.is_file():
            if self.explicit:
                what = "is not a file" if self.path.exists() else "does not exist"
                raise InputError(f"{self.path}: the settings file {SETTINGS_FILE_ENV} names {what}")
            return {}
        try:
            with self.path.open("rb") as handle:
                values = tomllib.load(handle)
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise InputError(f"{self.path}: not a readable TOML settings file: {error}") from None
        for key in values:
            if key not in self.keys:
                raise InputError(f"{self.path}: unknown key {key!r}: {_suggestion(key, self.keys)}")
        return values


def _suggestion(key: str, keys: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, keys, n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{hint}the settings file may set {', '.join(keys)}"


def _url_problem(kind: str, *schemes: str) -> Callable[[str], str | None]:
    """A check that a value is a URL whose scheme starts with one of ``schemes`` (``postgresql+psycopg`` too)."""

    def check(value: str) -> str | None:
        scheme, separator, _ = value.partition("://")
        if separator and scheme.lower().startswith(schemes):
            return None
        return f"not {kind} ({' or '.join(f'{scheme}://...' for scheme in schemes)})"

    return check


def _choice_problem(value: str) -> str | None:
    return None if value in STRUCTURED_OUTPUTS else f"must be one of {', '.join(STRUCTURED_OUTPUTS)}"


#: What each key of the settings file must hold: a check giving the problem in words, or None.
_FILE_CHECKS: dict[str, Callable[[str], str | None]] = {
    "llm": lambda value: None,
    "base_url": _url_problem("an HTTP URL", "http"),
    "db": _url_problem("a store URL", "sqlite", "postgresql"),
    "broker": _url_problem("a Redis URL", "redis"),
    "structured_output": _choice_problem,
    "embedder": lambda value: None,
    "embedder_url": _url_problem("an HTTP URL", "http"),
    "similarity_scale": lambda value: None if _cosines(value) is not None else f"not {_SCALE_RULE}",
    "name": lambda value: None,
    "config": lambda value: None,
    "knowledge": lambda value: None,
}


def _text(value: str | None) -> str | None:
    """``value`` stripped; blank is unset."""
    return (value or "").strip() or None


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    """The number ``env[name]`` holds (a finite number >= 0), else ``default`` when unset or blank."""
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value >= 0 and math.isfinite(value)):
        raise InputError(f"{name} must be a number >= 0, got {text!r}")
    return value


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"{name}={raw!r}: not a number of seconds") from None
    if value <= 0:
        raise InputError(f"{name}={raw!r}: must be more than 0 seconds")
    return value
