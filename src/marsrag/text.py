"""Storable text: the one rule for text entering MarsRAG, which every database and sink it writes to accepts.

Text reaches MarsRAG from everywhere: API bodies (a JSON ``\\ud800`` escape decodes to a lone surrogate), command
line arguments and file names (undecodable bytes arrive as lone surrogates by ``surrogateescape``), settings,
model output, event details. No driver can encode a lone surrogate as UTF-8, PostgreSQL stores no NUL in text and
its JSON functions reject both as escapes, and a sink writing UTF-8 fails on them. So each lone surrogate (and,
where text is stored, each NUL) becomes U+FFFD, as a lossy UTF-8 decode would give: the user's text is kept,
only the unencodable character is marked. It is applied where text becomes a record (``marsrag.state.Record``
validates every record through :func:`storable_value`), at the HTTP boundary (:func:`decodable`), and again by
the store for every SQL parameter and JSON value (the last line of defence, which also repairs what older
versions stored).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# What json.dumps (ensure_ascii) writes for a surrogate or a NUL. An escaped backslash followed by "ud800"
# matches too: that only costs a needless (and harmless) second look at the value.
_UNSTORABLE_ESCAPE = re.compile(r"\\u(?:d[89a-f][0-9a-f]{2}|0000)", re.IGNORECASE)


def has_unstorable(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate or a NUL."""
    if "\x00" in text:
        return True
    if text.isascii():  # the common case, checked in C: no surrogate possible
        return False
    try:
        # A lone surrogate is exactly what UTF-8 cannot encode; the encoder scans five times faster than a regex.
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def storable(text: str) -> str:
    """``text`` with each lone surrogate and NUL replaced by U+FFFD."""
    return _UNSTORABLE.sub("\ufffd", text)


def decodable(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a NUL is kept, for the field's own rule to judge)."""
    if text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


def storable_value(value: Any) -> Any:
    """``value`` with :func:`storable` applied to every string in it, keys included, through dicts, lists and tuples.

    Returns ``value`` itself when nothing needs replacing (the common case costs one walk, no copy). Other
    objects (numbers, records, datetimes) are returned as they are.
    """
    return _cleaned(value, storable) if _unstorable_in(value) else value


def decodable_value(value: Any) -> Any:
    """``value`` with :func:`decodable` applied to every string in it (as :func:`storable_value` walks)."""
    return _cleaned(value, decodable) if _unstorable_in(value) else value


def has_unstorable_escape(json_text: str) -> bool:
    """Whether JSON text may hold an escaped lone surrogate or NUL (``\\ud800``, ``\\u0000``).

    A surrogate pair's escapes (an emoji's, as ``json.dumps`` writes it) and an escaped backslash followed by
    ``ud800`` say yes too: decoding the value tells, and costs only the rare text that holds such escapes.
    """
    return "\\u" in json_text and _UNSTORABLE_ESCAPE.search(json_text) is not None


def storable_json(value: Any) -> str:
    """``value`` as JSON text (``json.dumps``, ASCII-escaped) holding no escaped lone surrogate or NUL."""
    text = json.dumps(value)
    return json.dumps(storable_value(value)) if has_unstorable_escape(text) else text


def loads_storable(text: str | bytes) -> Any:
    """``json.loads(text)``, with the strings of a value stored before this rule made storable."""
    value = json.loads(text)
    as_text = text if isinstance(text, str) else text.decode("utf-8", "replace")
    return storable_value(value) if has_unstorable_escape(as_text) else value


def _unstorable_in(value: Any) -> bool:
    kind = type(value)
    if kind is str:
        return has_unstorable(value)
    if kind is dict or isinstance(value, dict):
        return any(_unstorable_in(k) or _unstorable_in(v) for k, v in value.items())
    if kind is list or kind is tuple or isinstance(value, list | tuple):
        return any(type(item) is str and has_unstorable(item) or _unstorable_in(item) for item in value)
    return isinstance(value, str) and has_unstorable(value)  # a str subclass (an enum's value)


def _cleaned(value: Any, clean: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {_cleaned(k, clean): _cleaned(v, clean) for k, v in value.items()}
    if isinstance(value, list):
        return [_cleaned(item, clean) for item in value]
    if isinstance(value, tuple):
        return tuple(_cleaned(item, clean) for item in value)
    return value


__all__ = [
    "decodable",
    "decodable_value",
    "has_unstorable",
    "has_unstorable_escape",
    "loads_storable",
    "storable",
    "storable_json",
    "storable_value",
]
