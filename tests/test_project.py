"""A project: ``marsrag.toml`` found from the working directory upwards; inside one, its settings and store."""

from __future__ import annotations

from pathlib import Path

import pytest

from marsrag.errors import InputError
from marsrag.project import MARKER, find_project
from marsrag.settings import default_store_url, resolve_settings
from marsrag.store import open_store


@pytest.fixture
def outside(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No setting in the environment; a data directory of its own, whose config.toml names a store."""
    for name in ("MARSRAG_LLM", "MARSRAG_BASE_URL", "MARSRAG_DB", "MARSRAG_BROKER", "MARSRAG_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "data"
    home.mkdir()
    (home / "config.toml").write_text('db = "sqlite:////shared.db"\nllm = "home/model"\n', encoding="utf-8")
    monkeypatch.setenv("MARSRAG_HOME", str(home))
    return home


def project(root: Path, text: str = "") -> Path:
    root.mkdir(parents=True)
    (root / MARKER).write_text(text, encoding="utf-8")
    return root


def test_the_marker_is_found_from_any_folder_below_the_root(tmp_path: Path) -> None:
    """The nearest marsrag.toml, in the folder or a parent, marks the project; none: outside any project."""
    root = project(tmp_path / "bot")
    deep = root / "a" / "b"
    deep.mkdir(parents=True)
    found = find_project(deep)
    assert found is not None and found == find_project(root) and found.root == root.resolve()
    inner = project(root / "a" / "inner")
    nearest = find_project(inner / ".")
    assert nearest is not None and nearest.root == inner.resolve()
    assert find_project(tmp_path) is None
    (tmp_path / "folder-not-file").mkdir()
    (tmp_path / "folder-not-file" / MARKER).mkdir()
    assert find_project(tmp_path / "folder-not-file") is None


def test_inside_a_project_its_store_config_and_knowledge_are_the_defaults(
    outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The data directory's config.toml is not read inside a project: its store is the project's own file."""
    root = project(tmp_path / "bot", 'name = "Support bot"\n')
    (root / "config").mkdir()
    (root / "sub").mkdir()
    monkeypatch.chdir(root / "sub")
    settings = resolve_settings()
    assert settings.project is not None and settings.project.root == root.resolve()
    assert settings.project_name == "Support bot"
    assert settings.data_dir == root.resolve() / ".marsrag"
    assert settings.db == default_store_url(root.resolve() / ".marsrag")
    assert (settings.config, settings.knowledge) == (root.resolve() / "config", root.resolve() / "knowledge")
    assert settings.llm == "composer"  # not the data directory's home/model
    assert settings.where() == f"project Support bot ({root.resolve()}), store {settings.db}"
    monkeypatch.chdir(tmp_path)
    away = resolve_settings()
    assert (away.project, away.db, away.llm, away.knowledge) == (None, "sqlite:////shared.db", "home/model", None)
    assert away.where(brief=True) == "store sqlite:////shared.db"


def test_the_projects_file_sets_what_the_settings_file_sets_and_its_own_folders(
    outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Relative folders and a relative SQLite file are the project root's; the environment and flags still win."""
    root = project(
        tmp_path / "bot",
        'config = "crew"\nknowledge = "docs"\ndb = "sqlite:///state/runs.db"\nllm = "project/model"\n',
    )
    monkeypatch.chdir(root)
    (root / "deeper").mkdir()
    monkeypatch.chdir(root / "deeper")
    settings = resolve_settings()
    here = root.resolve()
    assert (settings.config, settings.knowledge) == (here / "crew", here / "docs")
    assert settings.db == f"sqlite:///{here}/state/runs.db"
    assert settings.llm == "project/model"
    monkeypatch.setenv("MARSRAG_DB", "sqlite:////env.db")
    monkeypatch.setenv("MARSRAG_LLM", "env/model")
    assert (resolve_settings().db, resolve_settings().llm) == ("sqlite:////env.db", "env/model")
    assert resolve_settings(db="sqlite:////flag.db", config="elsewhere").db == "sqlite:////flag.db"
    assert resolve_settings(config="elsewhere").config == Path("elsewhere")


def test_marsrag_config_is_not_read_inside_a_project(
    outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A settings file MARSRAG_CONFIG names applies outside projects only (or every project would share its store)."""
    named = tmp_path / "named.toml"
    named.write_text('db = "sqlite:////named.db"\n', encoding="utf-8")
    monkeypatch.setenv("MARSRAG_CONFIG", str(named))
    root = project(tmp_path / "bot")
    monkeypatch.chdir(root)
    assert resolve_settings().db == default_store_url(root.resolve() / ".marsrag")
    monkeypatch.chdir(tmp_path)
    assert resolve_settings().db == "sqlite:////named.db"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('nmae = "x"\n', "unknown key 'nmae': did you mean 'name'?"),
        ("knowledge = 3\n", "knowledge must be a string, not int"),
        ('db = "mysql://x"\n', "db = 'mysql://x': not a store URL"),
        ("name = \n", "not a readable TOML settings file"),
    ],
)
def test_a_bad_project_file_is_one_error_naming_it(
    text: str, message: str, outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project's file is checked as the settings file is: the message names the file and the key."""
    root = project(tmp_path / "bot", text)
    monkeypatch.chdir(root)
    with pytest.raises(InputError) as caught:
        resolve_settings().knowledge  # noqa: B018 - resolving is what raises
    assert str(caught.value).startswith(f"{root.resolve() / MARKER}: ")
    assert message in str(caught.value)


def test_the_projects_store_is_made_on_first_use_and_kept_out_of_git(
    outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening the default store creates .marsrag/ with a .gitignore of its own; outside, nothing is made there."""
    root = project(tmp_path / "bot")
    monkeypatch.chdir(root)
    with open_store(resolve_settings().db) as store:
        assert store.list_runs() == []
    assert (root / ".marsrag" / "marsrag.db").is_file()
    assert (root / ".marsrag" / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
