"""``.marsragignore``: files in a folder that ingest passes over, by gitignore-like patterns.

A ``.marsragignore`` file in any folder walked applies to everything below that folder. One pattern a line;
blank lines and lines starting with ``#`` are skipped. ``*`` matches any run of characters but ``/``, ``?``
one character but ``/``, ``[abc]`` one of a set (``[!abc]`` one not in it), ``**`` any number of folders. A
pattern with a ``/`` at its start or middle is relative to the folder of the ignore file (``/README.md`` is
that folder's README only); without one it matches a name at any depth (``draft-*.md``). A trailing ``/``
matches folders only. ``!pattern`` reads again what an earlier pattern ignored; the last pattern matching a
path decides, and a deeper ignore file decides before a shallower one. A file inside an ignored folder is not
read whatever the patterns say (the folder is not walked), as with git.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The name of the ignore file ingest reads in each folder it walks.
IGNORE_FILE = ".marsragignore"
#: An ignore file larger than this is not read (patterns, not documents, belong in it).
MAX_IGNORE_BYTES = 64 * 1024


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern[str]
    negate: bool
    folders_only: bool
    anchored: bool


@dataclass(frozen=True)
class IgnoreRules:
    """The patterns of one ignore file, read against paths relative to its folder."""

    rules: tuple[_Rule, ...]

    @classmethod
    def parse(cls, text: str) -> IgnoreRules:
        """The rules of an ignore file's text (lines that are not patterns are left out)."""
        rules = []
        for raw in text.splitlines():
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            line = line[1:] if negate else line
            if line.startswith("\\"):  # \# and \! name files that start with those characters
                line = line[1:]
            folders_only = line.endswith("/")
            line = line.rstrip("/")
            anchored = "/" in line
            line = line.lstrip("/")
            try:
                regex = re.compile(_translate(line))
            except re.error:  # a reversed range ([z-a]): a pattern that matches nothing, as in git
                continue
            if line:
                rules.append(_Rule(regex, negate, folders_only, anchored))
        return cls(tuple(rules))

    def verdict(self, relative: str, *, folder: bool) -> bool | None:
        """True when the last matching pattern ignores ``relative``, False when it reads it, None: no match."""
        name = relative.rsplit("/", 1)[-1]
        decided: bool | None = None
        for rule in self.rules:
            if rule.folders_only and not folder:
                continue
            if rule.regex.fullmatch(relative if rule.anchored else name):
                decided = not rule.negate
        return decided


def _translate(pattern: str) -> str:
    """A regular expression matching what the glob ``pattern`` matches."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            negated = body[0] in "!^"
            body = body[1:] if negated else body
            # A class never matches the folder separator, as in git.
            out.append("(?!/)")
            out.append(f"[{'^' if negated else ''}{''.join(re.escape(c) if c != '-' else c for c in body)}]")
            i = end + 1
        elif pattern[i] == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)
