"""Answers written as a configuration file, read by the standard library's own parsers: TOML (``tomllib``, its
multi-line and literal strings and line-ending backslashes) and INI (``configparser``, its indented continuation
lines). Each file reads as the mapping of its sections, walked like a JSON document's.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from typing import Any, Final

# A key and its value at a line start, as both formats write them ("hook = ...", "grip: ...").
_ASSIGNMENT: Final = re.compile(r"(?m)^[ \t]*[\w.\"'-]{1,40}[ \t]*=")
_MAX_CHARS: Final = 32_768


def may_be_config(text: str) -> bool:
    """A cheap test: False means the text has no ``key = value`` line."""
    return "=" in text and len(text) <= _MAX_CHARS and _ASSIGNMENT.search(text) is not None


def config_values(text: str) -> list[Any]:
    """The mappings ``text`` reads as: a TOML document, else an INI file (its sections, keys in their case)."""
    try:
        return [tomllib.loads(text)]
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        pass
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",), default_section="\x00")
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys as written
    try:
        parser.read_string(text if text.lstrip().startswith("[") else "[\x00]\n" + text)
    except (configparser.Error, ValueError):
        return []
    return [{name: dict(parser.items(name)) for name in parser.sections()}]
