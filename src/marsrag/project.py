"""A MarsRAG project: a folder whose root holds ``marsrag.toml``, found from the working directory upwards.

As git finds ``.git`` and pytest its ``pytest.ini``, every ``marsrag`` command looks for ``marsrag.toml`` in the
working directory, then in each parent; the first one found marks the project's root (``marsrag init`` writes
it). Inside a project, commands use the project's settings (that file), its config folder, its knowledge
folder and its own data folder, ``.marsrag/`` at the root (git-ignored): the default store is a SQLite file
there, so projects never share runs or knowledge. Outside any project, the data directory of
:mod:`marsrag.paths` and its ``config.toml`` apply as before.

The file is TOML, with the settings file's keys (``llm``, ``base_url``, ``db``, ``broker``,
``structured_output``) and three of its own: ``name`` (default: the folder's name), ``config`` (the config
folder, default ``config``) and ``knowledge`` (what ``marsrag ingest`` reads when given no path, default
``knowledge``); relative paths, a relative SQLite file in ``db`` included, are relative to the project's root.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from marsrag.paths import data_dir

__all__ = ["DATA_FOLDER", "MARKER", "Project", "current_data_dir", "find_project", "prepare_data_dir"]

#: The file marking a project's root (and holding its settings).
MARKER = "marsrag.toml"
#: The project's own data folder at its root: the default store, events, CrewAI's files.
DATA_FOLDER = ".marsrag"


@dataclass(frozen=True)
class Project:
    """A project folder: its root holds :data:`MARKER`."""

    root: Path

    @property
    def file(self) -> Path:
        """The project's settings file, which marks its root."""
        return self.root / MARKER

    @property
    def data_dir(self) -> Path:
        """Where the project keeps its data (``.marsrag/`` at its root; made on first use, git-ignored)."""
        return self.root / DATA_FOLDER

    def path(self, value: str) -> Path:
        """``value`` (a path from the project's file) relative to the project's root when it is relative."""
        given = Path(value).expanduser()
        return given if given.is_absolute() else self.root / given


def find_project(start: Path | None = None) -> Project | None:
    """The project holding ``start`` (default: the working directory): the nearest folder, ``start`` itself or a
    parent, with a :data:`MARKER` file; None outside any project (or when the working directory is gone)."""
    try:
        here = (start or Path.cwd()).resolve()
    except OSError:  # the working directory was removed
        return None
    for folder in (here, *here.parents):
        if (folder / MARKER).is_file():
            return Project(folder)
    return None


def current_data_dir() -> Path:
    """The data folder of the project around the working directory, else the data directory."""
    project = find_project()
    return project.data_dir if project is not None else data_dir()


def prepare_data_dir(folder: Path) -> None:
    """Create ``folder`` (a data folder of ours); a project's gets a ``.gitignore`` keeping it out of git.

    Raises:
        OSError: the folder cannot be created.
    """
    folder.mkdir(parents=True, exist_ok=True)
    if folder.name == DATA_FOLDER and (folder.parent / MARKER).is_file():
        ignore = folder / ".gitignore"
        if not ignore.exists():
            # As pytest's cache folder does: ignored wherever the project's own .gitignore stops short.
            ignore.write_text("# Written by marsrag: this project's runs and knowledge base stay out of git.\n*\n")
