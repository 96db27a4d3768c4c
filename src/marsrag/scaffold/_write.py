"""Writing a project all at once: built in a hidden folder on the same file system, then moved into place.

A new project folder is built whole in a hidden ``.marsrag-init-*`` folder beside it (in the same parent, so
on the same file system) and renamed into place, one ``rename(2)``: it appears complete or not at all. An
existing folder gets only its missing entries: they are built in a hidden folder inside it, then each is
moved in without replacing anything (a missing folder with one rename, which fails over anything but an empty
folder; a file by reserving its name with ``O_CREAT | O_EXCL``, which fails over anything, a dangling symlink
included, then renaming the built file over the reservation). Should a move fail, the entries moved already
are taken out again. The hidden folder is removed in every case.

An existing folder is filled in place rather than replaced, even an empty one: a folder cannot be renamed over
one that holds files, a shell standing in it (``mkdir bot && cd bot && marsrag init .``) would be left in a
removed folder, and its parent may not be writable (``marsrag init . --force`` in a folder of one's own).
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from marsrag.errors import InputError
from marsrag.terminal import visible_name

__all__ = ["STAGING_PREFIX", "ProjectWriteError", "add_missing", "create_folder"]

#: The hidden folder a project is built in starts with this.
STAGING_PREFIX = ".marsrag-init-"

#: (path in the project, content), the files to write.
Files = Sequence[tuple[str, bytes]]


class ProjectWriteError(InputError):
    """The project could not be written (the file system refused); what was written is taken out again."""


def create_folder(target: Path, files: Files, *, shown: str) -> None:
    """Create the folder ``target`` (missing; its parent exists) holding ``files``: all of them or nothing.

    Raises:
        ProjectWriteError: the file system refused a write; ``target`` was not created.
    """
    staging = _staging_folder(target.parent, shown=shown)
    try:
        _write_files(staging, files)
        # Over a folder not empty, a file or a symlink the rename fails; only an empty folder that appeared
        # since the check would be replaced, and it held nothing.
        os.rename(staging, target)
    except OSError as error:
        raise _failure(shown, _reason(error)) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already after the rename


def add_missing(target: Path, files: Files, *, missing_folders: set[str], shown: str) -> None:
    """Add ``files`` (all missing, with ``missing_folders`` the folders among theirs that are missing too) to
    the existing folder ``target``: all of them or none, never replacing an entry.

    Raises:
        ProjectWriteError: the file system refused a write, or an entry appeared at one of the files' or
            folders' places since they were found missing; what was moved in is taken out again.
    """
    staging = _staging_folder(target, shown=shown)
    moved: list[Path] = []
    entry = ""
    try:
        _write_files(staging, files)
        for entry in _entries_to_move(files, missing_folders):
            source, destination = staging / entry, target / entry
            if entry in missing_folders:
                os.rename(source, destination)
                moved.append(destination)
            else:
                descriptor = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                os.close(descriptor)
                moved.append(destination)
                os.replace(source, destination)
    except BaseException as error:
        stuck = _take_out(moved)
        if not isinstance(error, OSError):
            raise  # an interrupt: the project is taken out as for any failure, and the interrupt goes on
        raise _failure(shown, _reason(error), entry=entry, stuck=stuck) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _staging_folder(parent: Path, *, shown: str) -> Path:
    """A new empty folder in ``parent``, hidden, under a name no one uses, with the umask's permissions.

    Raises:
        ProjectWriteError: it cannot be made (``parent`` is not writable...): nothing was written.
    """
    reason = ""
    for _ in range(100):
        path = parent / f"{STAGING_PREFIX}{secrets.token_hex(6)}"
        try:
            os.mkdir(path)
        except FileExistsError:
            reason = os.strerror(errno.EEXIST)
            continue
        except OSError as error:
            reason = _reason(error)
            break
        return path
    raise _failure(shown, reason)


def _write_files(root: Path, files: Files) -> None:
    """Write ``files`` under ``root`` (a folder of ours), creating their folders."""
    for relative, data in files:
        destination = root / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        with destination.open("xb") as handle:
            handle.write(data)


def _entries_to_move(files: Files, missing_folders: set[str]) -> list[str]:
    """What to move in, in order: the topmost missing folder of each file, else the file itself."""
    entries: list[str] = []
    for relative, _data in files:
        parts = PurePosixPath(relative).parts
        folders = (PurePosixPath(*parts[:depth]).as_posix() for depth in range(1, len(parts)))
        entry = next((folder for folder in folders if folder in missing_folders), relative)
        if entry not in entries:
            entries.append(entry)
    return entries


def _take_out(moved: list[Path]) -> list[str]:
    """Remove what was moved in (ours, all of it), last first; the entries that could not be removed, shown."""
    stuck: list[str] = []
    for path in reversed(moved):
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError:
            stuck.append(visible_name(str(path)))
    return stuck


def _failure(shown: str, reason: str, *, entry: str = "", stuck: Sequence[str] = ()) -> ProjectWriteError:
    """The one line saying what could not be written, why, and that nothing was (else what is left)."""
    what = f"cannot add {visible_name(entry)}" if entry else "cannot write the project"
    undone = f"could not take out again: {', '.join(stuck)}" if stuck else "nothing was written"
    return ProjectWriteError(f"{shown}: {what} ({reason}); {undone}")


def _reason(error: OSError) -> str:
    return error.strerror or str(error)
