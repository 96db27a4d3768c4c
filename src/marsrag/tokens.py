"""The one tokenizer: words of free text, used by routing, retrieval queries, the support signal and the composer.

Letters and digits in any script make a word; ``_`` and punctuation split words, as both databases'
full-text tokenizers do. Words are case-folded; stopwords (function words, and the filler of next-step
questions) carry no meaning for matching and are dropped by every caller.

Two stemmings of those words: :func:`tokens` strips a few suffixes (what routing and the composer were tuned
on); :func:`stems` takes each word's dictionary form (lemminflect: "worn" is "wear", "spent" is "spend") and
then Snowball's English stem of it (which also joins "configure" with "configuration", "migrate" with
"migration"): the knowledge base's term statistics and the support signal count those, because a goal and a
passage rarely use the same form of a word.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

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


#: Each byte of ASCII text as :func:`words` reads it: a letter or digit as its lower case, anything else a space
#: (``[^\W_]`` is ``[A-Za-z0-9]`` on ASCII, and casefolding ASCII is lowering).
_ASCII_WORDS = bytes(ord(char.lower()) if char.isascii() and char.isalnum() else 32 for char in map(chr, range(256)))
#: A character outside ASCII and outside words (a curly quote, a dash, an arrow): to :func:`words`, a space.
_FOREIGN_SEPARATOR = re.compile(r"[^\w\x00-\x7f]")


def word_list(text: str) -> list[str]:
    """The words :func:`words` yields, as a list; split at C speed when they are all ASCII."""
    plain = _ascii(text)
    if plain is None:
        return list(words(text))
    return [word for word in plain.encode().translate(_ASCII_WORDS).decode().split() if word not in STOPWORDS]


def ascii_words(text: str) -> list[bytes] | None:
    """The words :func:`words` finds, stopwords included, as bytes split at C speed; None if one is not ASCII."""
    plain = _ascii(text)
    return None if plain is None else plain.encode().translate(_ASCII_WORDS).split()


def _ascii(text: str) -> str | None:
    """``text`` with the same words and only ASCII characters (separators outside ASCII made spaces), if it can be."""
    if text.isascii():
        return text
    plain = _FOREIGN_SEPARATOR.sub(" ", text)
    return plain if plain.isascii() else None


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


#: Longer "words" are noise (hashes, base64): never counted as terms.
MAX_STEM_CHARS = 40


#: The part of speech whose dictionary form a word takes when it has several ("opening": "open", the verb).
_LEMMA_ORDER = ("VERB", "NOUN", "ADJ", "ADV")


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    # lazy: a read-only command never stems.
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def readings(word: str) -> dict[str, tuple[str, ...]]:
    """The parts of speech a (case-folded) word can be, each with its dictionary forms: lemminflect's lexicon.

    ``readings("stages")`` is ``{"NOUN": ("stage",), "VERB": ("stage",)}``; a function word ("if", "the") or
    an unknown one has none.
    """
    # lazy: its lexicon takes about 0.3 s to load, and a read-only command never needs it.
    from lemminflect import getAllLemmas

    return dict(getAllLemmas(word))


@lru_cache(maxsize=65536)
def _snowball(word: str) -> str:
    forms = readings(word)
    lemma = next((forms[tag][0] for tag in _LEMMA_ORDER if forms.get(tag)), word)
    stem = str(_stemmer().stemWord(lemma.casefold()))
    # Snowball ends a verb in -y with "i" ("amplify": "amplifi") but stems its -ication noun without it
    # ("amplification": "amplif"): the "i" goes, so that the verb and its noun meet.
    if len(stem) > 4 and stem[-1] == "i" and stem[-2] not in _VOWELS:
        stem = stem[:-1]
    return stem


_VOWELS = frozenset("aeiouy")


def stems(text: str) -> list[str]:
    """The Snowball stems of the content words of more than two characters (and at most MAX_STEM_CHARS), in order."""
    return [_snowball(word) for word in words(text) if 2 < len(word) <= MAX_STEM_CHARS]


@lru_cache(maxsize=65536)
def _snowball_only(word: str) -> str:
    return str(_stemmer().stemWord(word))


def surface_stems(text: str) -> list[str]:
    """Snowball stems of the words as written (no dictionary form first), as :func:`stems` selects them.

    For the contract's rules: ``marsrag validate`` must start fast, and lemminflect's lexicon loads NumPy.
    """
    return [_snowball_only(word) for word in word_list(text) if 2 < len(word) <= MAX_STEM_CHARS]
