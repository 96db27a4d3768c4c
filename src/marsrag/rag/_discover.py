"""Finding the files to ingest under the paths given: recursive, sorted, and confined to those paths.

A symlink is followed only when its target lies inside one of the given roots (resolved), so linking to
``/etc`` or ``~/.ssh`` from a docs folder cannot pull those files into the knowledge base. A file reached twice
(through a link and directly) is read once, under its direct path. Only regular files are read: FIFOs, sockets
and devices found in a folder are passed over, and named directly they are skipped with a reason. Each file is
found with its identity (:mod:`marsrag.rag.identity`): its root's collection and its path. Files and folders a
``.marsragignore`` pattern names are passed over (:mod:`marsrag.rag._ignore`); a file named directly is read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from marsrag.errors import InputError
from marsrag.rag._ignore import IGNORE_FILE, MAX_IGNORE_BYTES, IgnoreRules
from marsrag.rag.identity import default_collection
from marsrag.rag.readers import is_supported
from marsrag.rag.report import SkippedFile


@dataclass(frozen=True)
class Found:
    """A file to read: its collection and document key, the path to open (as the user wrote it), its real path."""

    collection: str
    key: str
    path: Path
    real: Path
    via_link: bool


@dataclass
class Discovery:
    """The files to read, in order, and what was passed over."""

    files: list[Found] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    ignored: int = 0


@dataclass
class _Root:
    given: Path
    real: Path


def discover(paths: Iterable[str | Path], *, collection: str | None = None) -> Discovery:
    """The supported files under ``paths`` (files or folders, walked recursively, in sorted order).

    Document keys are relative to each root's parent (``docs/runbooks/x.md`` for the folder ``docs``), so the
    same file keeps its key whatever the working directory. Each root's files are in ``collection``, else in
    the root's :func:`~marsrag.rag.identity.default_collection`. Two files of one collection and key (two
    roots of the same name in a named collection) cannot both be read: the later is skipped, with the reason.

    Raises:
        InputError: a path does not exist.
    """
    roots = []
    for raw in paths:
        given = Path(raw)
        try:
            exists = given.exists()
        except OSError as error:  # exists() answers False only for missing paths: a name too long raises
            raise InputError(f"{str(raw)!r} cannot be used: {error.strerror or error}") from None
        if not exists:
            raise InputError(f"{str(raw)!r} does not exist (or is a broken symlink)")
        roots.append(_Root(given, given.resolve()))
    walker = _Walker([root.real for root in roots])
    for root in roots:
        walker.collection = default_collection(root.given) if collection is None else collection
        # abspath, not resolve: the key keeps the name the user gave (a symlinked folder's own name).
        name = Path(os.path.abspath(root.given)).name
        if root.real.is_dir():
            walker.walk(root.given, PurePosixPath(name), root.real)
        elif root.real.is_file():
            walker.file(root.given, PurePosixPath(name), root.real, via_link=False, explicit=True)
        else:
            # Named directly, a FIFO would block the read forever and a device (/dev/zero) is no document.
            walker.skip(root.given, "not a regular file (a FIFO, socket or device): not read")
    return walker.result()


class _Walker:
    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self.found: list[Found] = []
        self.discovery = Discovery()
        self.walked: set[Path] = set()
        #: The collection of the root being walked.
        self.collection = ""
        #: The ignore files of the folders being walked, outermost first, each with its folder's key.
        self.ignores: list[tuple[PurePosixPath, IgnoreRules]] = []

    def inside(self, real: Path) -> bool:
        return any(real == root or real.is_relative_to(root) for root in self.roots)

    def walk(self, folder: Path, key: PurePosixPath, real: Path) -> None:
        if real in self.walked:  # a link back to a folder already walked (or a loop)
            return
        self.walked.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError as error:
            self.skip(folder, f"cannot list the folder: {error.strerror or error}")
            return
        rules = self.read_ignore(folder / IGNORE_FILE)
        if rules is not None:
            self.ignores.append((key, rules))
        try:
            self.entries(folder, key, real, entries)
        finally:
            if rules is not None:
                self.ignores.pop()

    def entries(self, folder: Path, key: PurePosixPath, real: Path, entries: list[os.DirEntry[str]]) -> None:
        for entry in entries:
            path, entry_key = folder / entry.name, key / entry.name
            try:
                if entry.name == IGNORE_FILE:  # read by walk, not a document
                    continue
                # Not counted with the files of other types: the user named these, so they are no news.
                if self.ignored(entry_key, folder=entry.is_dir()):
                    continue
                if entry.is_symlink():
                    self.link(path, entry_key)
                elif entry.is_dir():
                    self.walk(path, entry_key, real / entry.name)
                elif entry.is_file():
                    self.file(path, entry_key, real / entry.name, via_link=False)
                # Sockets, FIFOs and devices are not documents (and opening a FIFO would block).
            except OSError as error:
                self.skip(path, f"cannot read: {error.strerror or error}")

    def read_ignore(self, path: Path) -> IgnoreRules | None:
        """The rules of the ignore file at ``path``, None when there is none or it cannot be used (with why)."""
        try:
            if not os.path.lexists(path):
                return None
            real = path.resolve()
            if not self.inside(real):
                self.skip(path, f"symlink to {real}, outside the paths given: not followed")
                return None
            if not real.is_file():
                self.skip(path, "not a regular file: its patterns are not used")
                return None
            if real.stat().st_size > MAX_IGNORE_BYTES:
                self.skip(path, f"larger than {MAX_IGNORE_BYTES // 1024} KiB: its patterns are not used")
                return None
            return IgnoreRules.parse(real.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            self.skip(path, "not UTF-8 text: its patterns are not used")
        except OSError as error:
            self.skip(path, f"cannot read: {error.strerror or error}")
        return None

    def ignored(self, key: PurePosixPath, *, folder: bool) -> bool:
        """Whether an ignore file of the folders walked passes over ``key`` (the deepest that has a say decides)."""
        for base, rules in reversed(self.ignores):
            verdict = rules.verdict(str(key.relative_to(base)), folder=folder)
            if verdict is not None:
                return verdict
        return False

    def link(self, path: Path, key: PurePosixPath) -> None:
        target = path.resolve()
        if not target.exists():
            self.skip(path, "broken symlink")
        elif not self.inside(target):
            self.skip(path, f"symlink to {target}, outside the paths given: not followed")
        elif target.is_dir():
            self.walk(path, key, target)
        elif target.is_file():
            self.file(path, key, target, via_link=True)

    def file(self, path: Path, key: PurePosixPath, real: Path, *, via_link: bool, explicit: bool = False) -> None:
        if is_supported(key.name):
            self.found.append(Found(self.collection, str(key), path, real, via_link))
        elif explicit:
            self.skip(path, f"unsupported file type {key.suffix or '(no suffix)'!r}")
        else:
            self.discovery.ignored += 1

    def skip(self, path: Path, reason: str) -> None:
        self.discovery.skipped.append(SkippedFile(str(path), reason))

    def result(self) -> Discovery:
        # One entry per real file, preferring a direct path over a link; one real file per identity.
        chosen: dict[Path, Found] = {}
        for found in self.found:
            if found.real not in chosen or (chosen[found.real].via_link and not found.via_link):
                chosen[found.real] = found
        by_key: dict[tuple[str, str], Found] = {}
        for found in self.found:
            if chosen[found.real] is not found:
                continue
            identity = (found.collection, found.key)
            if identity in by_key:
                other = by_key[identity].path
                where = f"{found.key!r} in collection {found.collection!r}"
                self.skip(found.path, f"same document {where} as {other} (from another root): not read")
                continue
            by_key[identity] = found
            self.discovery.files.append(found)
        return self.discovery
