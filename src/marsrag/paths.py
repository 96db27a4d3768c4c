"""Where MarsRAG keeps its data: ``$MARSRAG_HOME``, else ``$XDG_DATA_HOME/marsrag``, else ``~/.local/share/marsrag``."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """The data directory (not created here)."""
    explicit = os.environ.get("MARSRAG_HOME")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "marsrag"
