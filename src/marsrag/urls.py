"""Store URLs as they may be shown: with any password masked. Cheap to import (no SQLAlchemy)."""

from __future__ import annotations

import re

__all__ = ["mask"]

_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")


def mask(text: str) -> str:
    """A URL string with any password replaced by ``***`` (also for URLs that cannot be parsed)."""
    return _PASSWORD.sub(r"\1***@", text)
