"""Answers written as YAML, read by a YAML parser when they use what the label grammar cannot read.

``hook: ...`` lines are labels already; YAML needs its own parser for block scalars (``grip: >`` or ``|``
with the text indented below), quoted scalars with escapes, comments between keys and nesting under a wrapper
key. Those texts (and any ``yaml`` fence) are parsed with PyYAML's safe loader, imported only then.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Final

from marsrag.contract._json_forms import object_from_pairs
from marsrag.contract.rules import MAX_REPAIR_CHARS

_YAML_FENCE: Final = re.compile(
    r"(?:```|~~~)[ \t]*(?:yaml|yml)[ \t]*\n(?P<body>.*?)(?:\n[ \t]*(?:```|~~~)|\Z)", re.IGNORECASE | re.DOTALL
)
# A field key whose value is a block scalar, a quoted scalar or a comment: YAML the label grammar misreads.
_YAML_KEY: Final = re.compile(
    r"^[ \t]*(?:-[ \t]+)?[\"']?(?:hook|grip|payoff|reinforce|loop)[\"']?[ \t]*:[ \t]*"
    r"(?:[|>][-+]?[ \t]*(?:#.*)?$|[\"'])",
    re.IGNORECASE | re.MULTILINE,
)
_SCALAR_HINT: Final = re.compile(r":[ \t]?[|>\"']")
# A line that can continue a YAML mapping at its left margin: a key, a list item, a comment, a document mark.
_MARGIN_LINE: Final = re.compile(r"(?:[-#]|---|\.\.\.|[\"']?[\w -]{1,40}[\"']?[ \t]*:)")


def yaml_document(text: str) -> tuple[int, str] | None:
    """The YAML text to parse and where it starts, or None when the text does not look like YAML.

    That is a ``yaml`` fence's body, or the block of lines around the first key YAML must read: from it (or
    from the wrapper key it is indented under) to the first line at the left margin that YAML cannot continue.
    """
    if "`" in text or "~" in text:
        fence = _YAML_FENCE.search(text)
        if fence is not None:
            return fence.start("body"), fence["body"]
    # A quick scan from colon to colon first: a labelled answer without block or quoted scalars stops here.
    if _SCALAR_HINT.search(text) is None:
        return None
    key = _YAML_KEY.search(text)
    if key is None:
        return _whole_document(text)
    lines = text[: key.start()].split("\n")
    first = len(lines) - 1
    if text[key.start() : key.start() + 1] in (" ", "\t"):
        while first > 0 and not lines[first - 1].strip():
            first -= 1
        if first > 0 and lines[first - 1].rstrip().endswith(":"):
            first -= 1  # the wrapper key the answer is nested under
    start = sum(len(line) + 1 for line in lines[:first])
    block: list[str] = []
    for line in text[start:].split("\n"):
        if line.strip() and line[:1] not in (" ", "\t") and block and not _MARGIN_LINE.match(line):
            break
        block.append(line)
    return start, "\n".join(block)


# A YAML file: its first line a key at the margin (after comments or a document mark), and a block scalar in it.
_FIRST_KEY: Final = re.compile(r"(?:[ \t]*(?:#[^\n]*|---[ \t]*)?\n)*[\"']?[\w.-]{1,40}[\"']?[ \t]*:(?:[ \t]|$)", re.M)
_BLOCK_SCALAR: Final = re.compile(r":[ \t]*[|>][-+]?[ \t]*$", re.MULTILINE)


def _whole_document(text: str) -> tuple[int, str] | None:
    """The whole text, when it is a YAML file holding a block scalar (a saved chat session, a record): the answer is
    in one of its strings, which only the parser reads whole (a block scalar ends where the next key starts)."""
    if _FIRST_KEY.match(text) is None or _BLOCK_SCALAR.search(text) is None:
        return None
    return 0, text


def load(document: str) -> Any:
    """The parsed YAML, or None when it does not parse (or is too large to try)."""
    if len(document) > MAX_REPAIR_CHARS:
        return None
    yaml = _yaml()
    try:
        return yaml.load(document, Loader=_loader())  # noqa: S506 - a safe loader
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return None


@functools.cache
def _loader() -> Any:
    """PyYAML's safe loader (its C one when built), whose mappings keep a field key given twice with different
    values as a conflict, as the JSON decoder does, instead of silently the last."""
    yaml = _yaml()

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        pass

    def mapping(loader: Any, node: Any) -> dict[Any, Any]:
        loader.flatten_mapping(node)  # merge keys ("<<") first, as the safe loader does
        return object_from_pairs(
            [
                (loader.construct_object(key, deep=True), loader.construct_object(value, deep=True))
                for key, value in node.value
            ]
        )

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return Loader


@functools.cache
def _yaml() -> Any:
    # Deferred: importing PyYAML costs ~15 ms, which only a YAML answer should pay.
    # lazy: PyYAML, only YAML answers need it
    import yaml

    return yaml
