"""Field names written in another script: a key whose sound is a field's name is that field's key.

A model answering in the user's language may keep the template's keys but write them in the user's script, by their
sound (``훅``, ``フック``, ``хук``, ``हुक`` are all "hook"). Which words do that is no table's business: a
transliteration keeps a name's consonants. Each word in another script that stands where a key stands (before a
separator or a closing bracket) is romanized (``anyascii``, which follows each script's standard romanization) and
reduced to its consonant skeleton, by classes of sounds one script writes with another's letters (``f``, ``p``,
``h`` and ``b``; ``k`` and ``g``; ``r`` and ``l``). A word whose skeleton is a field's, and no other field's, is
that field's key.

Only a text with all five fields keyed so, each by one word, is rewritten (those words at those places, nothing
else): a word or two that happen to sound like a field in prose key nothing.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from anyascii import anyascii

from marsrag.contract.fields import FIELDS

# A word in a script other than Latin (its letters and combining marks: not ASCII nor Latin-1/Extended, nor the
# blocks of punctuation, symbols and full-width forms), a few closing marks, then a separator or a closing bracket.
_WORD_CHARS: Final = r"[^\s\x00-\u024f\u2000-\u2bff\u3000-\u303f\ufe30-\ufe4f\uff00-\uff65\U0001f000-\U0001faff]"
_KEY: Final = re.compile(
    rf"(?<!{_WORD_CHARS})(?P<word>{_WORD_CHARS}{{1,16}})"
    r"(?=(?:\\?[\"'”»」』】〕）)\]*_])?[ \t]*(?:[:：=|｜】」』〕）]|\n))"
)
_NON_LATIN: Final = re.compile(r"[^\W\d_\x00-\u024f]")
_CLASSES: Final = {
    **dict.fromkeys("bpfvh", "P"),
    **dict.fromkeys("kgqx", "K"),
    **dict.fromkeys("rl", "R"),
    **dict.fromkeys("mn", "N"),
    **dict.fromkeys("sz", "S"),
    **dict.fromkeys("td", "T"),
    # "j" is a "g" where a script has no "g" (Arabic's ج), and only the field names' consonants matter.
    "j": "K",
}
_NOT_LETTERS: Final = re.compile(r"[^a-z]")
_SOFT_C: Final = re.compile(r"c(?=[eiy])")
# A doubled consonant written with a stop before it (kana's small tsu, romanized "t": "futku").
_GEMINATE: Final = re.compile(r"t(?=[bcdfghkpqstvxz])")
# A skeleton this long keeps its field even with one consonant lost (a non-rhotic "r": "riinfosu").
_LOOSE_LENGTH: Final = 4


def may_have_aliases(text: str) -> bool:
    """A cheap test: False means no word of the text is in a script other than Latin."""
    return not text.isascii() and _NON_LATIN.search(text) is not None


def aliased(text: str) -> str | None:
    """``text`` with its five fields' keys written in another script rewritten as the field names, or None when
    the text does not key all five so."""
    found: dict[str, str] = {}
    places: list[tuple[int, int, str]] = []
    for match in _KEY.finditer(text):
        word = match["word"]
        field = _field_of(word.casefold())
        if field is None:
            continue
        if found.setdefault(field, word) != word:
            return None  # two words for one field: not a key's spelling
        places.append((match.start(), match.end(), field))
    if len(found) != len(FIELDS):
        return None
    pieces: list[str] = []
    position = 0
    for start, end, field in places:
        pieces += [text[position:start], field]
        position = end
    return "".join(pieces) + text[position:]


@lru_cache(maxsize=1024)
def _field_of(word: str) -> str | None:
    """The one field whose name the word sounds like, or None."""
    skeleton = _skeleton(anyascii(word))
    if not skeleton:
        return None
    near = [(field, _distance(skeleton, target)) for field, target in _TARGETS.items()]
    best = min(distance for _, distance in near)
    fields = [field for field, distance in near if distance == best]
    if len(fields) != 1:
        return None
    allowed = 1 if len(_TARGETS[fields[0]]) >= _LOOSE_LENGTH else 0
    return fields[0] if best <= allowed else None


def _skeleton(romanized: str) -> str:
    """A romanized word's consonants by class of sound, repeats merged: "hook" and "훅" ("hug") are both ``PK``."""
    romanized = _NOT_LETTERS.sub("", romanized.casefold())
    romanized = romanized.replace("kh", "h").replace("ph", "f").replace("ch", "h").replace("ck", "k")
    romanized = _GEMINATE.sub("", _SOFT_C.sub("s", romanized)).replace("c", "k")
    classes: list[str] = []
    for letter in romanized:
        sound = _CLASSES.get(letter)
        if sound is not None and (not classes or classes[-1] != sound):
            classes.append(sound)
    return "".join(classes)


def _distance(first: str, second: str) -> int:
    """Levenshtein distance (skeletons are a few letters long)."""
    previous = list(range(len(second) + 1))
    for index, letter in enumerate(first, 1):
        current = [index]
        for other_index, other in enumerate(second, 1):
            current.append(
                min(
                    previous[other_index] + 1,
                    current[other_index - 1] + 1,
                    previous[other_index - 1] + (letter != other),
                )
            )
        previous = current
    return previous[-1]


_TARGETS: Final = {field: _skeleton(field) for field in FIELDS}
