"""Storable text: what every database MarsRAG writes to accepts."""

from __future__ import annotations

import re

# A lone surrogate (a byte smuggled into a str by "surrogateescape", e.g. from argv) cannot be encoded as
# UTF-8 by any driver, and PostgreSQL stores no NUL in text: both become U+FFFD, as a lossy decode would give.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def has_unstorable(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate or a NUL."""
    if text.isascii():  # the common case, checked in C: no surrogate possible
        return "\x00" in text
    return _UNSTORABLE.search(text) is not None


def storable(text: str) -> str:
    """``text`` with each lone surrogate and NUL replaced by U+FFFD."""
    return _UNSTORABLE.sub("\ufffd", text)
