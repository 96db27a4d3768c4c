"""``marsrag init``: scaffold a project folder, as ``crewai create crew`` does, that runs and tests at once.

The template ships in this package (``template/``, read with :mod:`importlib.resources`): ``marsrag.toml``
(which marks the project's root, see :mod:`marsrag.project`), ``pyproject.toml`` (MarsRAG and pytest, so
``pip install -e '.[test]'`` sets up its environment), ``config/`` (agents, narrative tasks with the canonical
template at the current contract version, a workflow), ``knowledge/`` (two Markdown documents), ``tests/`` and
``pytest.ini`` (the Loop Contract regression tests through :mod:`marsrag.pytest_plugin`),
``.pre-commit-config.yaml`` (the contract lint hook), ``.env.example``, ``.gitignore`` and a README. Files whose
names start with ``dot-`` become dotfiles and a ``.tmpl`` suffix is dropped, so packaging and linters leave them
alone; ``{{key}}`` placeholders are filled in (see :func:`_values`).

Everything that can be refused is refused before anything is written: the project's name (the rule is in
:mod:`marsrag.scaffold.names`), the place, what is in the way. The files are then written all at once or not
at all (:mod:`marsrag.scaffold._write`).
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath

from marsrag._version import __version__
from marsrag.contract.version import LOOP_CONTRACT_VERSION
from marsrag.errors import InputError
from marsrag.scaffold._write import ProjectWriteError, add_missing, create_folder
from marsrag.scaffold.names import distribution_name, project_name_problem
from marsrag.terminal import visible_name

__all__ = ["InitReport", "ProjectWriteError", "init_project"]


@dataclass
class InitReport:
    """What :func:`init_project` wrote and left alone (paths relative to the project folder)."""

    folder: Path
    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The lines ``marsrag init`` prints: what was written, what was kept, and the next steps.

        Every name is shown escaped (:func:`~marsrag.terminal.visible_name`), on its line.
        """
        folder = visible_name(str(self.folder))
        out = [f"Created {folder}/ ({len(self.written)} files)"]
        if self.kept:
            kept = ", ".join(map(visible_name, self.kept))
            out.append(f"Kept your {len(self.kept)} existing file(s): {kept}")
        out += [
            "Next steps (marsrag.toml marks the project: its config, knowledge and own store in .marsrag/):",
            f"  cd {shlex.quote(folder)}",
            "  pip install -e '.[test]'   # the project, MarsRAG and pytest, into this environment",
            "  marsrag ingest             # index knowledge/ (until then, answers say it does not cover the goal)",
            '  marsrag run "Checkout latency doubled after last night\'s cache restart"',
            "  marsrag lint               # the contract lint (.pre-commit-config.yaml runs it on commit)",
            "  pytest                     # tests/ and the Loop Contract regression tests of config/",
        ]
        return out


def init_project(folder: str | os.PathLike[str], *, force: bool = False) -> InitReport:
    """Write the project template into ``folder``: all of it or nothing, never over an existing entry.

    A missing ``folder`` is created (its parent must exist), built whole beside it and renamed into place. An
    existing one, empty or (with ``force``) not, gets the missing files; an entry at a file's place (a file, a
    folder, a symlink, dangling or not) is kept as it is and never followed.

    Raises:
        InputError: the project's name breaks :data:`~marsrag.scaffold.names.PROJECT_NAME_RULE`; ``folder`` is
            a file or a dangling symlink, its parent is missing, it is not empty and ``force`` is not given, or
            the place of one of the template's folders holds something else than a folder (a file, a symlink:
            nothing is written through one). Nothing is written then.
        ProjectWriteError: the file system refused a write; what was written is taken out again.
    """
    text = os.fspath(folder)
    if not text:
        raise InputError("the project folder is empty: give the folder to create (DIRECTORY)")
    shown = visible_name(text)
    if "\x00" in text:
        raise InputError(f"{shown}: the path holds a NUL character (\\x00)")
    target = Path(text)
    name = _project_name(target, shown)
    problem = project_name_problem(name)
    if problem is not None:
        raise InputError(f"{shown}: {problem}")
    files = _render(name)
    try:
        info = os.stat(target)  # followed: DIRECTORY may be a symlink to the folder meant
    except FileNotFoundError:
        _check_creatable(target, shown)
        create_folder(target, files, shown=shown)
        return InitReport(target, written=[relative for relative, _ in files])
    except OSError as error:
        raise InputError(f"{shown}: {error.strerror or error}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise InputError(f"{shown}: exists and is not a folder")
    try:
        if not force and _occupied(target):
            raise InputError(f"{shown}: folder is not empty; give --force to add the missing files (yours are kept)")
        report, missing_folders = _plan(target, files)
    except OSError as error:  # the folder cannot be listed, or an entry of it looked at
        where = visible_name(error.filename) if isinstance(error.filename, str) else shown
        raise InputError(f"{where}: {error.strerror or error}") from None
    if report.written:
        wanted = set(report.written)
        todo = [(relative, data) for relative, data in files if relative in wanted]
        add_missing(target, todo, missing_folders=missing_folders, shown=shown)
    return report


def _project_name(target: Path, shown: str) -> str:
    """The project's name: DIRECTORY's last segment, or the folder's own name for ``.``, ``..`` or ``/``."""
    if target.name not in ("", ".", ".."):
        return target.name
    try:
        return target.resolve().name
    except OSError as error:  # the working directory was removed
        raise InputError(f"{shown}: {error.strerror or error}") from None


def _check_creatable(target: Path, shown: str) -> None:
    """Refuse a missing ``target`` that is a dangling symlink or whose parent folder is missing."""
    if os.path.lexists(target):
        raise InputError(f"{shown}: is a dangling symlink; remove it, or give another folder")
    parent = target.parent
    if not parent.is_dir():
        raise InputError(
            f"{shown}: {visible_name(str(parent))} is not an existing folder (init creates only the project's own)"
        )


def _occupied(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return next(entries, None) is not None


def _plan(target: Path, files: list[tuple[str, bytes]]) -> tuple[InitReport, set[str]]:
    """What to add to the existing folder ``target`` (the report's ``written``) and what is kept, with the
    folders missing; refuses anything but a real folder where the project needs one.

    Raises:
        InputError: a template folder's place holds a file, a symlink (dangling or not) or another entry.
        OSError: an entry cannot be looked at.
    """
    report = InitReport(target)
    missing_folders: set[str] = set()
    for folder in _folders(files):
        if PurePosixPath(folder).parent.as_posix() in missing_folders:
            missing_folders.add(folder)
            continue
        kind = _kind(target / folder)
        if kind is None:
            missing_folders.add(folder)
        elif kind != "a folder":
            raise InputError(
                f"{visible_name(str(target / folder))}: is {kind}, where the project needs a folder (init never "
                "writes through a symlink nor replaces a file): move it away, or give another folder"
            )
    for relative, _ in files:
        in_missing_folder = PurePosixPath(relative).parent.as_posix() in missing_folders
        if in_missing_folder or _kind(target / relative) is None:
            report.written.append(relative)
        else:
            report.kept.append(relative)
    return report, missing_folders


def _kind(path: Path) -> str | None:
    """What is at ``path``, the symlink itself when it is one (``a dangling symlink``); None when nothing."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        return "a symlink" if os.path.exists(path) else "a dangling symlink"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a file"
    return "a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"


def _folders(files: list[tuple[str, bytes]]) -> list[str]:
    """The folders the files are in (``config``, ``a/b``...), each after its parent."""
    found: list[str] = []
    for relative, _ in files:
        for folder in reversed(PurePosixPath(relative).parents[:-1]):
            if folder.as_posix() not in found:
                found.append(folder.as_posix())
    return sorted(found, key=lambda folder: (folder.count("/"), folder))


def _render(name: str) -> list[tuple[str, bytes]]:
    """The template's files as they are written for the project ``name``: (path in the project, bytes).

    Each ``{{key}}`` of :func:`_values` in a file is replaced by its value (the template holds no other ``{{``).
    """
    values = _values(name)
    rendered: list[tuple[str, bytes]] = []
    for relative, source in _template_files(resources.files(__package__).joinpath("template")):
        text = source.read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        rendered.append((relative, text.encode("utf-8")))
    return rendered


def _values(name: str) -> dict[str, str]:
    """What the template's placeholders stand for, for the project ``name``."""
    return {
        "name": name,
        # A TOML basic string: JSON's escapes of quotes, backslashes and control characters are TOML's too.
        "name_toml": json.dumps(name, ensure_ascii=False),
        "distribution": distribution_name(name),
        # The floor is the release that wrote the project: its config relies on what that release reads.
        "marsrag_version": __version__,
        "contract_version": LOOP_CONTRACT_VERSION,
    }


def _template_files(root: Traversable, prefix: str = "") -> list[tuple[str, Traversable]]:
    """(path in the project, template file), in a stable order."""
    found: list[tuple[str, Traversable]] = []
    for item in sorted(root.iterdir(), key=lambda entry: entry.name):
        if item.name == "__pycache__":
            continue
        name = item.name.removesuffix(".tmpl")
        if name.startswith("dot-"):
            name = "." + name.removeprefix("dot-")
        if item.is_dir():
            found += _template_files(item, f"{prefix}{name}/")
        else:
            found.append((f"{prefix}{name}", item))
    return found
