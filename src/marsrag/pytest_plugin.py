"""A pytest plugin: spec section 6's six regression tests for every narrative task of a config folder.

``pytest --loop-contract config/`` (or ``loop_contract = config`` in the ini file, used when pytest runs with
no path arguments) adds one test per narrative task and check, ``loop_contract[TASK-CHECK]``, each a real
CrewAI crew kicked off with the replay LLM (see :mod:`marsrag.regression`). ``--loop-contract-llm MODEL``
adds one smoke test per task, ``loop_contract[TASK-smoke]``, against that model. Registered as the
``pytest11`` entry point ``marsrag.pytest_plugin``; without an installed package, ``-p marsrag.pytest_plugin``.

Nothing heavy loads until a test runs; CrewAI's and MarsRAG's files go to pytest's temporary directory,
never the home directory.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest

from marsrag.errors import MarsRAGError

__all__ = ["LoopContractFile", "LoopContractItem"]

_ENV_KEYS = ("HOME", "MARSRAG_HOME", "CREWAI_STORAGE_DIR")


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's options and ini keys."""
    group = parser.getgroup("loop-contract", "MarsRAG Loop Contract regression tests")
    group.addoption(
        "--loop-contract",
        metavar="PATH",
        default=None,
        help="Config folder (agents.yaml, tasks.yaml): add the six spec regression tests per narrative task.",
    )
    group.addoption(
        "--loop-contract-llm",
        metavar="MODEL",
        default=None,
        help="Also run each narrative task once against this model (a CrewAI model string, composer or "
        "replay:FILE); the task must be stored valid or partial.",
    )
    group.addoption(
        "--loop-contract-base-url",
        metavar="URL",
        default=None,
        help="OpenAI-compatible server for --loop-contract-llm (Ollama, llama.cpp, vLLM).",
    )
    group.addoption(
        "--loop-contract-answers",
        metavar="DIR",
        default=None,
        help="Folder of recorded answers, TASK.txt, replayed instead of the generated conforming answer.",
    )
    parser.addini("loop_contract", "Config folder for the Loop Contract tests, run when pytest has no arguments.")
    parser.addini("loop_contract_answers", "Folder of recorded answers (TASK.txt) for the Loop Contract tests.")


def _folder(config: pytest.Config) -> Path | None:
    """The config folder to test: --loop-contract, else the ini key when pytest was given no path arguments."""
    given = config.getoption("loop_contract")
    if given:
        return Path(given)
    ini = str(config.getini("loop_contract") or "").strip()
    if not ini or config.args_source is pytest.Config.ArgsSource.ARGS:
        return None
    return config.rootpath / ini


def _answers(config: pytest.Config) -> Path | None:
    given = config.getoption("loop_contract_answers")
    if given:
        return Path(given)
    ini = str(config.getini("loop_contract_answers") or "").strip()
    return config.rootpath / ini if ini else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the loop contract tests (before -k and -m select among the items)."""
    folder = _folder(config)
    if folder is None:
        return
    # lazy: the plugin loads in every pytest run where MarsRAG is installed; its library only when asked for
    from marsrag.regression import CHECKS, narrative_tasks

    try:
        tasks = narrative_tasks(folder)
    except MarsRAGError as error:
        raise pytest.UsageError(f"--loop-contract {folder}: {error}") from None
    if not tasks:
        raise pytest.UsageError(f"--loop-contract {folder}: no narrative task in {folder / 'tasks.yaml'}")
    llm = config.getoption("loop_contract_llm")
    checks = [*CHECKS, *(["smoke"] if llm else [])]
    source = folder / "tasks.yaml"
    try:
        where = source.resolve().relative_to(config.rootpath.resolve()).as_posix()
    except ValueError:
        where = source.resolve().as_posix()
    tests = LoopContractFile.from_parent(session, path=source, nodeid=where, tasks=tasks, checks=checks)
    # Collected as pytest collects a test file (its report counted, "collected N items" included), after the
    # files of the test paths, before -k and -m select among the items.
    items.extend(session.genitems(tests))


class LoopContractFile(pytest.File):
    """A config folder's ``tasks.yaml``, collected: one :class:`LoopContractItem` per narrative task and check."""

    def __init__(self, *, tasks: list[str], checks: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tasks = tasks
        self.checks = checks

    def collect(self) -> list[pytest.Item]:
        """The items, task by task."""
        return [
            LoopContractItem.from_parent(self, name=f"loop_contract[{task}-{check}]", task=task, check=check)
            for task in self.tasks
            for check in self.checks
        ]


class LoopContractItem(pytest.Item):
    """One regression check of one narrative task, run on a real crew."""

    def __init__(self, *, task: str, check: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.task = task
        self.check = check
        self.folder = _folder(self.config) or Path(".")
        self.add_marker(pytest.mark.loop_contract)

    def runtest(self) -> None:
        """Run the check in a temporary directory of its own."""
        # lazy: the plugin loads in every pytest run where MarsRAG is installed; its library only when asked for
        from marsrag.regression import CHECKS, SMOKE, run_check, run_smoke

        base = self.config.stash.get(_BASE, None) or _prepare(self.config)
        workdir = Path(tempfile.mkdtemp(prefix=f"{self.task}-{self.check}-", dir=base))
        with warnings.catch_warnings():
            # CrewAI's own deprecation notices (function_calling_llm...) are not the user's to fix.
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"crewai(\.|$)")
            if self.check == "smoke":
                report = run_smoke(self.folder, self.task, _smoke_llm(self.config), workdir)
            else:
                answers = _answers(self.config)
                recorded = answers / f"{self.task}.txt" if answers else None
                answer = recorded.read_text(encoding="utf-8") if recorded and recorded.is_file() else None
                report = run_check(self.folder, self.task, self.check, workdir, answer=answer)
        self.user_properties.append(("attempts", report.describe()))
        self.add_report_section("call", "loop contract", report.describe() + f"\n({CHECKS.get(self.check, SMOKE)})")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        """The check's own message for contract failures; a traceback for anything else."""
        if isinstance(excinfo.value, MarsRAGError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the test comes from: the config folder's tasks.yaml."""
        return self.folder / "tasks.yaml", None, self.name


def pytest_configure(config: pytest.Config) -> None:
    """Declare the marker the loop contract tests carry."""
    config.addinivalue_line("markers", "loop_contract: a Loop Contract regression test of a config's narrative task")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Give back the environment variables the tests pointed at temporary directories."""
    saved = config.stash.get(_SAVED, None)
    if saved is None:
        return
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


_SAVED = pytest.StashKey[dict[str, str | None]]()
_BASE = pytest.StashKey[Path]()


def _prepare(config: pytest.Config) -> Path:
    """Point MarsRAG's and CrewAI's data into pytest's temporary directory; import CrewAI with a throwaway home.

    CrewAI writes under ``~`` (a credentials key, a settings probe) when it is imported, whatever its storage
    directory says: so it is imported here with ``HOME`` set to a temporary folder, then ``HOME`` is restored.
    """
    factory = getattr(config, "_tmp_path_factory", None)
    base = factory.mktemp("loop-contract") if factory is not None else Path(tempfile.mkdtemp(prefix="loop-contract-"))
    config.stash[_SAVED] = {key: os.environ.get(key) for key in _ENV_KEYS}
    config.stash[_BASE] = base
    os.environ["MARSRAG_HOME"] = str(base / "marsrag")
    # lazy: the plugin loads in every pytest run where MarsRAG is installed; its library only when asked for
    from marsrag.integrations.crewai_env import prepare_crewai_environment

    prepare_crewai_environment(base / "marsrag")
    if "crewai" not in sys.modules:
        home = os.environ.get("HOME")
        os.environ["HOME"] = str(base / "home")
        (base / "home").mkdir(exist_ok=True)
        try:
            import crewai  # noqa: F401 # lazy: imported now for its import-time files to land in the throwaway home
        finally:
            if home is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = home
    return base


def _smoke_llm(config: pytest.Config) -> Any:
    """The LLM of --loop-contract-llm, as ``marsrag run --llm`` makes it (call policy included)."""
    # lazy: the plugin loads in every pytest run where MarsRAG is installed; its library only when asked for
    from marsrag.llm.select import resolve_llm

    return resolve_llm(config.getoption("loop_contract_llm"), base_url=config.getoption("loop_contract_base_url"))
