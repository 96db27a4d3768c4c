"""What ``marsrag init`` accepts as a project's name: the rule, stated once, and its check.

A project's **name** is the last segment of the project folder's path (``support-bot`` for
``marsrag init ~/work/support-bot``; the folder's own name for ``marsrag init .``): the folder ``init`` creates
and the README's title. It

- is not empty (``/`` has no name) and is neither ``.`` nor ``..``;
- is text: it holds no undecodable byte (Python holds one as a lone surrogate, ``\\udcff`` for ``0xff``), no lone
  surrogate, and nothing the file system's encoding cannot write;
- holds no control character (Unicode category Cc: NUL, newline and tab included), no line or paragraph
  separator (Zl, Zp) and no bidirectional formatting character (embeddings, overrides, isolates), so it is
  one line that shows as itself;
- neither starts nor ends with whitespace;
- has at most 63 characters: at most 4 bytes each in UTF-8, so at most 252 bytes, within the 255-byte limit on
  one file name of ext4, XFS, Btrfs, APFS and the rest.

Anything else is accepted: spaces inside, dots, any script. :func:`project_name_problem` says why a name breaks
the rule; the folders above the project must exist already (``init`` creates only the project's own).
"""

from __future__ import annotations

import re
import sys
import unicodedata

__all__ = ["MAX_PROJECT_NAME_CHARS", "PROJECT_NAME_RULE", "distribution_name", "project_name_problem"]

#: The longest project name, in characters: 63 characters of at most 4 bytes fit a 255-byte file name.
MAX_PROJECT_NAME_CHARS = 255 // 4
#: The rule in words, for messages and help.
PROJECT_NAME_RULE = (
    f"1-{MAX_PROJECT_NAME_CHARS} characters of text, not . or .., no control character, line separator or "
    "bidirectional formatting character, no whitespace at either end"
)

# The categories no name may hold: controls, surrogates (undecodable bytes), line and paragraph separators.
_REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cs": "a lone surrogate",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
# Bidirectional classes of the explicit formatting characters (UAX #9): they reorder what follows them.
_BIDI_FORMATTING = frozenset({"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})


def project_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a project, as a phrase (``holds a control character (\\x0a) at character 4``).

    None when it can. The phrase shows every character it names escaped, so it prints on one line.
    """
    if not name:
        return "has no name: give the folder to create (DIRECTORY)"
    if name in (".", ".."):
        return f"{name!r} is not a project name: give the folder to create (DIRECTORY)"
    for position, character in enumerate(name, start=1):
        what = _refused_character(character)
        if what is not None:
            return f"the project name holds {what} at character {position}"
    if name != name.strip():
        return "the project name starts or ends with whitespace"
    if len(name) > MAX_PROJECT_NAME_CHARS:
        return f"the project name has {len(name):,} characters; the limit is {MAX_PROJECT_NAME_CHARS}"
    encoding = sys.getfilesystemencoding()
    try:
        name.encode(encoding)
    except UnicodeEncodeError as error:
        shown = f"\\u{ord(name[error.start]):04x}"
        return f"the project name holds {shown} at character {error.start + 1}, which {encoding} cannot write"
    return None


def _refused_character(character: str) -> str | None:
    """What ``character`` is, shown escaped, when no name may hold it; None when a name may."""
    code = ord(character)
    category = unicodedata.category(character)
    if category == "Cs" and 0xDC80 <= code <= 0xDCFF:
        # os.fsdecode's surrogateescape: the byte the file system (or argv) held, which no encoding decoded
        return f"an undecodable byte (\\x{code - 0xDC00:02x})"
    if category in _REFUSED_CATEGORIES:
        shown = f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
        return f"{_REFUSED_CATEGORIES[category]} ({shown})"
    if unicodedata.bidirectional(character) in _BIDI_FORMATTING:
        return f"a bidirectional formatting character (\\u{code:04x})"
    return None


def distribution_name(name: str) -> str:
    """The name ``pyproject.toml`` gives the project: ``name`` as a Python package (distribution) name.

    Package names are ASCII letters, digits, ``.``, ``_`` and ``-``, starting and ending with a letter or digit
    (PEP 508), compared normalized (PEP 503: lowercase, runs of ``.``, ``_``, ``-`` as one ``-``): every other run
    of characters becomes ``-``, and a name with nothing left is ``marsrag-project``.
    """
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    normalized = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    return normalized or "marsrag-project"
