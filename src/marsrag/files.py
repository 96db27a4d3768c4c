"""Reading a file a user names: regular files only, never more than a cap, so no path can hang or exhaust us.

Config files, replay scripts and the outputs ``marsrag validate`` reads all come through
:func:`read_regular_file`. A named pipe would block the open until a writer comes, ``/dev/zero`` never ends and
``/dev/stdin`` waits for a terminal: only a regular file (a symlink is followed to its target) is opened, and
at most one byte past the cap is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from marsrag.errors import InputError

__all__ = ["MAX_CONFIG_BYTES", "UnreadableFileError", "read_regular_file"]

#: Config files (and replay scripts) larger than this are refused unread: they are hand-written, not data.
MAX_CONFIG_BYTES = 1_048_576

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnreadableFileError(InputError):
    """A named file cannot be read: missing, unreadable, not a regular file, or over its size cap."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        #: Why, as a phrase to follow "cannot read FILE: " (``it is a named pipe (FIFO), not a regular file``).
        self.reason = reason


def read_regular_file(path: str | Path, *, limit: int, cut: bool = False) -> bytes:
    """The bytes of the regular file at ``path``, refused when it holds more than ``limit`` bytes.

    With ``cut``, a larger file is not refused: its first ``limit + 1`` bytes are returned, enough for the
    caller to tell (and report) that it is too long without holding all of it.

    Raises:
        UnreadableFileError: the file is missing or unreadable, is not a regular file, or (without ``cut``)
            holds more than ``limit`` bytes.
    """
    try:
        # Checked before opening: opening a FIFO for reading blocks, and opening some devices has effects.
        _check_regular(path, os.stat(path).st_mode)
        # O_NONBLOCK: should the path become a FIFO after the check, the open still returns at once.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise UnreadableFileError(path, error.strerror or str(error)) from None
    with os.fdopen(descriptor, "rb") as handle:
        try:
            info = os.fstat(handle.fileno())
            _check_regular(path, info.st_mode)
            if info.st_size > limit and not cut:
                raise _too_large(path, limit)
            data = handle.read(limit + 1)
        except OSError as error:
            raise UnreadableFileError(path, error.strerror or str(error)) from None
    if len(data) > limit and not cut:
        raise _too_large(path, limit)  # it grew after the fstat
    return data


def _check_regular(path: str | Path, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), None)
    if kind == "a directory":
        raise UnreadableFileError(path, "it is a directory")
    raise UnreadableFileError(path, f"it is {kind}, not a regular file" if kind else "it is not a regular file")


def _too_large(path: str | Path, limit: int) -> UnreadableFileError:
    return UnreadableFileError(path, f"it is larger than {limit:,} bytes")
