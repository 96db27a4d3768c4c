"""A document's identity in the knowledge base: its collection and its path; what a collection is named.

The path (``kb/doc.md``) is what citations show: short, relative to the parent of the folder (or file) given
to ingest. Alone it is not unique (``one/kb`` and ``two/kb`` both hold ``kb/doc.md``), so a document is its
collection and its path. The collection is the name given to ingest (``--collection``), else the resolved
folder the paths are relative to: the same folder is the same collection from any working directory (so
ingesting it again finds its documents unchanged), and two folders are two collections.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from marsrag.errors import InputError

__all__ = ["MAX_COLLECTION_CHARS", "check_collection", "default_collection"]

#: Longest collection name accepted (a resolved path as the default may be longer: it is not checked).
MAX_COLLECTION_CHARS = 200


def default_collection(root: str | Path) -> str:
    """The collection of the documents found under ``root`` when none is named: the folder their paths start in.

    That is the parent of ``root`` as given (a symlinked folder keeps its own name in the paths), resolved.
    """
    # abspath, not resolve, first: the last part is the name the paths start with, the user's name for it.
    return str(Path(os.path.abspath(root)).parent.resolve())


def check_collection(name: str) -> str:
    """``name`` if it can name a collection: not blank, at most :data:`MAX_COLLECTION_CHARS`, no control characters.

    Raises:
        InputError: it cannot (the message says why).
    """
    if not name.strip():
        raise InputError("the collection name is empty; give a name such as 'handbook'")
    if len(name) > MAX_COLLECTION_CHARS:
        raise InputError(f"the collection name is {len(name)} characters long; at most {MAX_COLLECTION_CHARS}")
    # Reports print the name on one line, and a name that looks like another must not be one.
    if any(unicodedata.category(char) in ("Cc", "Cf", "Cs") for char in name) or name != name.strip():
        raise InputError(
            f"the collection name {name!r} has control characters or surrounding spaces; use printable text"
        )
    return name
