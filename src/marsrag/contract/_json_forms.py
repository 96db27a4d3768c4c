"""Find a LoopOutput-shaped JSON object in text: exact parses first, repair last.

Shapes recovered: a bare object, one inside a code fence or surrounded by prose, a JSON string holding
JSON (double encoding), an object wrapped in a single-key object (``{"output": {...}}``) or in a
one-element list. Broken JSON is handled in two steps, each by a real parser rather than hand-written
fixes: Python-literal style (single quotes, trailing commas) by the standard library's
``ast.literal_eval``, which parses exactly that syntax, then anything else (comments, a missing brace,
unquoted keys) by ``json_repair``. Repair runs only when a field key is visible and the span is small.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from marsrag.contract.issues import ContractIssue
from marsrag.contract.rules import MAX_REPAIR_CHARS
from marsrag.contract.template import FIELDS

_FIELD_SET: Final = frozenset(FIELDS)
# A field name used as a key: quoted or bare, then a colon. Gates the repair step.
_JSONISH_KEY: Final = re.compile(r"(?:hook|grip|payoff|reinforce|loop)[\"']?\s*:", re.I)
# Escapes whose meaning differs between JSON and Python literals (JSON's "\/" for one).
_NON_PYTHON_ESCAPE: Final = re.compile(r"\\[^\"'\\nrtbfu]")
_NON_LETTERS: Final = re.compile(r"[^a-z]")
_MAX_UNWRAP_DEPTH: Final = 4
_MAX_DECODE_STARTS: Final = 16
_DECODER: Final = json.JSONDecoder()


def field_key(key: object) -> str | None:
    """The contract field a JSON key names (any case, stray punctuation ignored), or None."""
    if key in _FIELD_SET:
        return key
    if not isinstance(key, str):
        return None
    folded = _NON_LETTERS.sub("", key.casefold())
    return folded if folded in _FIELD_SET else None


def loads(text: str) -> Any:
    """``json.loads`` that answers None instead of raising on malformed or absurdly nested input."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def unwrap(value: Any, depth: int = 0) -> Mapping[str, Any] | None:
    """The mapping holding contract keys inside a parsed JSON value, or None.

    Never splits a list or a bare string into fields: an array of strings has no keys, so it is no answer.
    """
    if depth > _MAX_UNWRAP_DEPTH:
        return None
    if isinstance(value, dict):
        if not _FIELD_SET.isdisjoint(value) or any(field_key(key) for key in value):
            return value
        if len(value) == 1:
            return unwrap(next(iter(value.values())), depth + 1)
        return None
    if isinstance(value, list) and len(value) == 1:
        return unwrap(value[0], depth + 1)
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[", '"'):
            return unwrap(loads(text), depth + 1)
    return None


def normalize_keys(mapping: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[ContractIssue, ...]]:
    """Map keys to contract fields; unknown and duplicate keys become warnings (first value wins)."""
    if mapping.keys() <= _FIELD_SET:
        return dict(mapping), ()
    values: dict[str, Any] = {}
    notes: list[ContractIssue] = []
    for key, value in mapping.items():
        name = field_key(key)
        if name is None:
            notes.append(ContractIssue(None, "unknown_key", f"unknown key {str(key)[:60]!r} ignored"))
        elif name in values:
            notes.append(ContractIssue(name, "duplicate_key", f"key {str(key)[:60]!r} repeats {name}; ignored"))
        else:
            values[name] = value
    return values, tuple(notes)


def unknown_key_notes(json_text: str) -> tuple[ContractIssue, ...]:
    """Warnings for the keys of a JSON object that are not contract fields."""
    value = loads(json_text)
    return normalize_keys(value)[1] if isinstance(value, dict) else ()


def fence_bodies(region: str) -> Iterator[str]:
    """The contents of Markdown code fences (an unclosed last fence runs to the end)."""
    start = region.find("```")
    while start >= 0:
        line_end = region.find("\n", start + 3)
        if line_end < 0:
            return
        # The info string ("json", "python"...) is whatever follows the backticks on the opening line.
        end = region.find("```", line_end)
        yield region[line_end + 1 : end if end >= 0 else len(region)]
        if end < 0:
            return
        start = region.find("```", end + 3)


def json_spans(region: str) -> Iterator[str]:
    """Candidate JSON texts in a region, cheapest and most likely first."""
    if "```" in region:
        for body in fence_bodies(region):
            yield body.strip()
    stripped = region.strip()
    if stripped[:1] in ("{", "[", '"'):
        yield stripped
    first, last = region.find("{"), region.rfind("}")
    if 0 <= first < last:
        span = region[first : last + 1]
        if span != stripped:
            yield span


def decoded_objects(region: str) -> Iterator[Any]:
    """Objects decoded from successive ``{`` positions, for prose that itself contains braces."""
    start = region.find("{")
    for _ in range(_MAX_DECODE_STARTS):
        if start < 0:
            return
        try:
            yield _DECODER.raw_decode(region, start)[0]
        except (ValueError, RecursionError):
            pass
        start = region.find("{", start + 1)


def repair_span(region: str, start: int | None = None) -> str | None:
    """The text the repair step should parse: from the first bracket to the end of its fence or text.

    ``start`` is the index of the bracket when the caller already knows the region is one JSON document.
    """
    text = region
    if start is None:
        if "```" in region:
            text = next(fence_bodies(region), region)
        starts = [index for index in (text.find("{"), text.find("[")) if index >= 0]
        if not starts:
            return None
        start = min(starts)
    span = text[start:] if start else text
    if len(span) > MAX_REPAIR_CHARS or not _JSONISH_KEY.search(span):
        return None
    return span


@functools.cache
def _repair_loads() -> Callable[..., Any]:
    # Deferred: importing json_repair costs ~50 ms, which only broken JSON should pay.
    # lazy: json-repair, only broken JSON needs it
    from json_repair import loads as repair_loads

    return repair_loads


def repair(span: str) -> Mapping[str, Any] | None:
    """Parse a malformed JSON span: Python-literal syntax exactly, anything else with ``json_repair``."""
    if span.endswith("}") and "//" not in span and "/*" not in span and not _NON_PYTHON_ESCAPE.search(span):
        try:
            # Single quotes and trailing commas are Python literal syntax: parse it exactly, and fast.
            mapping = unwrap(ast.literal_eval(span))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            mapping = None
        if mapping is not None:
            return mapping
    try:
        # Every exact parse already failed on this text, so the library need not try json.loads again.
        value = _repair_loads()(span, skip_json_loads=True)
    except (ValueError, TypeError, IndexError, RecursionError):
        return None
    return unwrap(value)
