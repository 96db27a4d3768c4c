"""Reading config YAML safely, keeping where every key came from (file, line, column)."""

from __future__ import annotations

import reprlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from marsrag.errors import ConfigError
from marsrag.files import MAX_CONFIG_BYTES, UnreadableFileError, read_regular_file

KeyPath = tuple[str, ...]

#: Values quoted in messages are shown bounded: YAML aliases can make a value with billions of elements.
SHOWN = reprlib.Repr()
SHOWN.maxstring = SHOWN.maxother = 80
SHOWN.maxlevel = 2

# Safe loading only (no arbitrary objects); the C implementation when PyYAML was built with libyaml.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Position:
    """A 1-based line and column in a file."""

    line: int
    column: int


@dataclass(frozen=True)
class ScalarSpan:
    """Where a scalar value starts, and its YAML style (``|`` and ``>`` for block scalars)."""

    line: int
    column: int
    style: str | None


@dataclass(frozen=True)
class DuplicateKey:
    """A mapping key written twice in one mapping: where it first is and where it is again."""

    keys: KeyPath
    first: Position
    again: Position


@dataclass
class YamlDoc:
    """A parsed YAML file: its data, the position of every mapping key and of every scalar value.

    ``duplicates`` lists the keys written twice in one mapping (YAML data keeps only the last of each).
    """

    path: str
    data: Any
    positions: dict[KeyPath, Position] = field(default_factory=dict)
    scalars: dict[KeyPath, ScalarSpan] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    duplicates: list[DuplicateKey] = field(default_factory=list)

    def line_in_value(self, keys: KeyPath, offset: int, text: str) -> Position:
        """The position of character ``offset`` of the string value at ``keys`` (exact for ``|`` blocks)."""
        span = self.scalars.get(keys)
        if span is None:
            return self.position(*keys)
        if span.style == "|":
            line = span.line + 1 + text.count("\n", 0, offset)
            source = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
            indent = len(source) - len(source.lstrip())
            return Position(line, indent + offset - (text.rfind("\n", 0, offset) + 1) + 1)
        return Position(span.line, span.column)

    def position(self, *keys: str) -> Position:
        """Where the deepest known key of ``keys`` is (the file start when none is known)."""
        for end in range(len(keys), 0, -1):
            found = self.positions.get(keys[:end])
            if found is not None:
                return found
        return Position(1, 1)


def _nodes(root: yaml.Node) -> Iterator[tuple[yaml.Node, KeyPath]]:
    """Each node of the composed tree once, in document order, with its key path.

    Aliases share nodes: visiting each node once keeps "billion laughs" documents linear. An explicit stack,
    not recursion: libyaml composes 1,000 levels of nesting, deeper than Python's default recursion limit.
    """
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, KeyPath]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node, path
        children: list[tuple[yaml.Node, KeyPath]] = []
        if isinstance(node, yaml.MappingNode):
            children = [
                (value_node, (*path, str(key_node.value)))
                for key_node, value_node in node.value
                if isinstance(key_node, yaml.ScalarNode)
            ]
        elif isinstance(node, yaml.SequenceNode):
            children = [(item, (*path, str(index))) for index, item in enumerate(node.value)]
        # Reversed onto the stack so nodes are visited in document order, as the first position must win.
        stack.extend(reversed(children))


def _walk(root: yaml.Node, doc: YamlDoc) -> None:
    for node, path in _nodes(root):
        if isinstance(node, yaml.MappingNode):
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    mark = key_node.start_mark
                    doc.positions.setdefault((*path, str(key_node.value)), Position(mark.line + 1, mark.column + 1))
        elif isinstance(node, yaml.ScalarNode):
            mark = node.start_mark
            doc.scalars.setdefault(path, ScalarSpan(mark.line + 1, mark.column + 1, node.style))


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _duplicate_keys(root: yaml.Node) -> list[DuplicateKey]:
    # Read from the composed tree, before construction: constructing flattens merge keys (<<: *base) into
    # the mapping, where a key overriding a merged one is intended, not a duplicate.
    found: list[DuplicateKey] = []
    for node, path in _nodes(root):
        if not isinstance(node, yaml.MappingNode):
            continue
        first: dict[tuple[str, str], Position] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            mark = key_node.start_mark
            here = Position(mark.line + 1, mark.column + 1)
            # By tag and text: "1" and 1 are two keys, as they are in the data.
            key = (key_node.tag, str(key_node.value))
            if key in first:
                found.append(DuplicateKey((*path, str(key_node.value)), first[key], here))
            else:
                first[key] = here
    return found


def parse_yaml(text: str, path: str) -> YamlDoc:
    """Parse YAML text with the safe loader, recording key positions and keys written twice.

    Raises:
        ConfigError: the text is not valid YAML (the message names the file and line).
    """
    # One pass: compose the node tree (for key positions), then construct the data from that same tree.
    # libyaml's C loader when present: it is what keeps `marsrag lint` on many files fast.
    try:
        loader = _LOADER(text)
    except UnicodeEncodeError as error:
        # libyaml takes the text as UTF-8: a lone surrogate (text decoded with surrogateescape) cannot be.
        raise ConfigError(f"{path}: not UTF-8 text (character {error.start})") from None
    duplicates: list[DuplicateKey] = []
    try:
        node = loader.get_single_node()
        if node is not None:
            duplicates = _duplicate_keys(node)
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        raise ConfigError(f"{where}: invalid YAML: {error.problem or error.context}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: invalid YAML: {error}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid YAML: nested too deeply") from None
    except (ValueError, LookupError, TypeError, AttributeError, ArithmeticError) as error:
        # PyYAML's constructors raise plain errors for well-formed but impossible typed scalars: a 13th month
        # (2001-13-01), "!!int abc", an empty "!!int", "!!bool maybe", "!!timestamp x", an integer past
        # Python's 4,300-digit conversion limit.
        raise ConfigError(f"{path}: invalid YAML: a value cannot be read: {type(error).__name__}: {error}") from None
    finally:
        loader.dispose()
    doc = YamlDoc(path, data, lines=text.splitlines(), duplicates=duplicates)
    if node is not None:
        _walk(node, doc)
    return doc


def read_yaml(path: Path, display: str | None = None) -> YamlDoc:
    """Read and parse a YAML file.

    Raises:
        ConfigError: the file cannot be read, is not a regular file, is too large, or is not valid YAML.
    """
    name = display or str(path)
    try:
        raw = read_regular_file(path, limit=MAX_CONFIG_BYTES)
    except UnreadableFileError as error:
        raise ConfigError(f"{name}: cannot read: {error.reason}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{name}: not UTF-8 text (byte {error.start})") from None
    return parse_yaml(text, name)
