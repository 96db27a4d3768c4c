"""A list of words as one regex that tests each character once (a trie), for patterns on the hot path.

``re`` tries the branches of an alternation one after another, so ``eos|eot|end_of_turn|...`` costs one
attempt per word at every candidate position; the same words factored by their prefixes fail at the first
character that no word continues with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypeAlias

_Node: TypeAlias = dict[str, "_Node"]


def trie_pattern(words: Iterable[str]) -> str:
    """A non-capturing regex matching exactly ``words`` (longest first where one is a prefix of another)."""
    root: _Node = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return _pattern(root)


def _pattern(node: _Node) -> str:
    ends = "" in node
    branches = [re.escape(char) + _pattern(child) for char, child in sorted(node.items()) if char]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    if ends:
        return f"(?:{body})?"
    return body
