"""The one tokenizer: words of free text, used by routing, retrieval queries and the offline composer.

Letters and digits in any script make a word; ``_`` and punctuation split words, as both databases'
full-text tokenizers do. Words are case-folded; stopwords (function words, and the filler of next-step
questions) carry no meaning for matching and are dropped by every caller.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_WORD = re.compile(r"[^\W_]+")

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her
    here hers herself him himself his how i if in into is it its itself just me more most my myself next no nor
    not now of off on once only or other our ours ourselves out over own per same she should so some step such
    than that the their theirs them themselves then there these they this those through to too under until up
    us very was we were what when where which while who whom why will with would you your yours yourself
    yourselves
    """.split()
)


def words(text: str) -> Iterator[str]:
    """The case-folded words of ``text`` that are not stopwords, in order (repeats kept)."""
    for match in _WORD.finditer(text):
        word = match.group().casefold()
        if word not in STOPWORDS:
            yield word


def stem(word: str) -> str:
    """A light suffix stripper, enough for "changes"/"change", "planned"/"plan", "diagnosed"/"diagnose"."""
    if len(word) > 5 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 4 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word


def tokens(text: str) -> list[str]:
    """Stemmed content words of more than two characters: what routing and the composer match on."""
    return [stem(word) for word in words(text) if len(word) > 2]
