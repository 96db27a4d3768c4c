"""Stand-ins for content (contract 1.2.0 to 1.4.0): what small models write in a field instead of an answer.

Four shapes, each found by what it is made of, never by a list of observed outputs:

- **a bare source reference**: the field without its citation markers (``[1]``, ``[2, 3]``, ``[^1]``), paths,
  URLs, anchors and source header lines (``[1] runbooks/cache.md#Warm-up``) has no word left but the words
  that introduce a reference ("see", "source");
- **a bracketed placeholder**: the field has no word outside its short bracketed, angled or braced spans
  (``[insert action/topic here]``, ``<your answer>``, ``[{json}}``), or its spans hold more words than the
  few outside them (``Next: [describe the action to take]``). Citation markers, Markdown links and lone markup
  tags are not spans; a span holding a sentence (it ends in ``.``, ``!`` or ``?``) or many words is content;
- **a reworded instruction**: most of the field's content words (Snowball stems as written,
  :func:`marsrag.tokens.surface_stems`) are the
  vocabulary of the canonical template's instruction lines and the words a prompt uses about the answer
  itself (``answer``, ``section``, ``write``...): "To deliver specific value, recommendation, or
  resolution" is PAYOFF's instruction, not a payoff. A field naming anything specific (a number, an acronym,
  a code-like token, a quotation) is content whatever its words; so is one sharing only a word or two with
  the template. The same measure against the prompt's worked example (:mod:`marsrag.contract.example`) finds
  a field that copies it;
- **a quoted instruction** (1.3.0): one of the template's instruction lines word for word inside a longer
  field, as a model pastes the template into its answer;
- **a field described** (1.4.0): only the template's vocabulary and a field's name ("An example hook
  sentence."), a description of the content instead of the content.

Each rule first takes a fast path that settles a real answer without its patterns, and answers as they would
(``tests/contract/test_stand_in_fast_paths.py`` compares both on generated text): a word of the field's own that
no reference pattern can reach; brackets that only open citation markers; fewer than two words starting like
the template's or the example's, counted at C speed on ASCII words; an instruction's text as a substring before
its pattern. Stems (Snowball, loaded on first use) are taken only for a short field past that count. Measured on
the tests' sample answer, the rules cost about 19 microseconds for its five fields (135 before the fast paths),
most of it that count (and the stems and sets of the two fields past it); the quoted-instruction check about 1.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Final, TypeVar

from marsrag.contract.example import WORKED_EXAMPLE
from marsrag.contract.fields import FIELDS, SECTION_INSTRUCTIONS
from marsrag.tokens import STOPWORDS, ascii_words, surface_stems, word_list, words

# -- bare source references -----------------------------------------------------------------------------------

#: A citation marker: ``[1]``, ``[1, 2]``, ``[1-3]``, ``[^1]`` (also without the caret), ``【1】``.
CITATION: Final = re.compile(r"[\[【]\^?\d{1,3}(?:\s*[,;–-]\s*\^?\d{1,3})*[\]】]")
#: A source header as the prompt lists sources: a citation marker, a path and an anchor that may hold spaces,
#: to the end of the line (a sentence after the anchor ends in punctuation, and is not taken for the anchor).
SOURCE_HEADER: Final = re.compile(r"(?m)[\[【]\d{1,3}[\]】][ \t]*\S*#[^\n.!?]{0,120}$")
#: A path, URL, file name or anchor: a token with a slash or a ``#``, or a name with a file extension.
PATH: Final = re.compile(r"\S*[\w.~-][/\\#]\S*|#[\w-]+|\b[\w~-][\w.~-]*\.[A-Za-z][A-Za-z0-9]{0,4}\b")
#: Words that only introduce a reference ("see [1]", "Source: runbooks/x.md").
REFERENCE_WORDS: Final = frozenset(
    "see source sources ref refs reference references cf cite cited citation citations according doc docs".split()
)
_REFERENCE_TRIGGERS: Final = frozenset("[【/\\#.")
_MAX_REFERENCE_CHARS: Final = 400
#: A token (between whitespace) with none of the characters a reference is found by: brackets, slashes, ``#``, ``.``.
_PLAIN_TOKEN: Final = re.compile(r"(?<!\S)[^\s\[\]【】/\\#.]++(?!\S)")
#: A sentence's end on the rest of the line: a source header's anchor cannot run across it.
_LINE_STOP: Final = re.compile(r"[^\n.!?]*[.!?]")


def reference_only(value: str) -> bool:
    """Whether a value is only source references: no word is left once they (and their lead words) are removed."""
    if len(value) > _MAX_REFERENCE_CHARS or _keeps_a_word(value) or not _REFERENCE_TRIGGERS.intersection(value):
        return False
    rest = SOURCE_HEADER.sub(" ", value)
    rest = CITATION.sub(" ", rest)
    rest = PATH.sub(" ", rest)
    if rest == value:
        return False
    return not any(word not in REFERENCE_WORDS for word in words(rest))


def _keeps_a_word(value: str) -> bool:
    """Whether a value has a word of its own (not a reference word) that :func:`reference_only` cannot remove."""
    # The fast answer for real text, exact: a plain token (_PLAIN_TOKEN) with a word not all digits is left whole
    # by every removal. A PATH match is a run of non-spaces holding "/", "\\", "#" or "." (so it is not inside a
    # plain token); a CITATION match starts and ends with a bracket and between them holds digits, spaces and
    # "^,;–-" only (so it cannot cover the token's letter); a SOURCE_HEADER match is a marker, non-spaces up to a
    # "#", then an anchor to the end of the line without ".", "!" or "?" (so it needs a "#", and cannot reach a
    # token with a sentence's end after it on its line).
    anchored = "#" in value
    position = 0
    while (token := _PLAIN_TOKEN.search(value, position)) is not None:
        if _own_word(token.group()) and not (anchored and _LINE_STOP.match(value, token.start()) is None):
            return True
        position = token.end()
    return False


@lru_cache(maxsize=4096)  # the first tokens of a sentence are common words
def _own_word(token: str) -> bool:
    """Whether a token has a word neither a reference word nor all digits."""
    return any(word not in REFERENCE_WORDS and not word.isdecimal() for word in word_list(token))


# -- bracketed placeholders -----------------------------------------------------------------------------------

#: A Markdown link (its text is content, its target a reference).
_MARKDOWN_LINK: Final = re.compile(r"!?\[([^\[\]\n]*)\]\([^()\s]*\)")
#: A short bracketed, braced or angled span with no bracket inside (innermost first); an angle span starts and
#: ends with a non-space, so comparisons (``p99 < 200 ms and p50 > 80 ms``) are not spans.
SPAN: Final = re.compile(
    r"\[[^\[\]{}<>\n]{0,80}\]|\{[^{}\[\]<>\n]{0,80}\}|<(?=[^\s<>])[^<>{}\[\]\n]{0,80}(?<=[^\s<>])>"
)
#: A lone markup tag (``<b>``, ``</b>``, ``<br/>``): formatting, neither content nor placeholder.
_MARKUP: Final = re.compile(r"</?[A-Za-z][\w:-]{0,15}\s*/?>")
#: A span holding more content words than this, or ending a sentence, holds content.
MAX_SPAN_WORDS: Final = 8
#: A field with more content words than this outside its spans is content, however many its spans hold.
MAX_WORDS_AROUND: Final = 3
_SENTENCE_END: Final = re.compile(r"[.!?…][\"')\]]*\s*$")
_BRACKETS: Final = re.compile(r"[\[\]{}<>【】]")


def bracketed_placeholder(value: str) -> bool:
    """Whether a value is made of placeholder spans: no word outside them, or more words in them than around."""
    if "{" not in value and "<" not in value and _only_citations_open(value):
        return False
    text = CITATION.sub(" ", _MARKDOWN_LINK.sub(r"\1", value))
    inside = spans = 0

    def drop(match: re.Match[str]) -> str:
        nonlocal inside, spans
        span = match.group()
        if _MARKUP.fullmatch(span):
            return " "
        inner = span[1:-1]
        count = sum(1 for _ in words(inner))
        if count > MAX_SPAN_WORDS or (count > 2 and _SENTENCE_END.search(inner)):
            return f" {inner} "  # bracketed content: its words count as outside
        inside += count
        spans += 1
        return " "

    for _ in range(4):  # nested spans, innermost first: "[{json}}" is "{json}" inside a broken "[...}"
        shorter = SPAN.sub(drop, text)
        if shorter == text:
            break
        text = shorter
    if not spans:
        return False
    around = sum(1 for _ in words(_BRACKETS.sub(" ", text)))
    return around == 0 or (inside > around and around <= MAX_WORDS_AROUND)


def _only_citations_open(value: str) -> bool:
    """Whether every ``[`` in a value opens a citation marker (true when it has none)."""
    # With no "{" or "<" either, no span is left to open once links and markers are gone, exactly: a link's text
    # holds no "[", and a link takes a marker's "[" with it or leaves the marker whole (a marker has no "!" or "["
    # after its first character, nor the ")" a link ends with).
    start = value.find("[")
    while start != -1:
        marker = CITATION.match(value, start)
        if marker is None:
            return False
        start = value.find("[", marker.end())
    return True


# -- reworded instructions and the copied example -------------------------------------------------------------

#: Words a prompt uses about the answer itself, beside the template's own: an instruction reworded with them
#: ("Write a clear answer about the user goal") is still an instruction.
META_WORDS: Final = (
    "answer response section sentence paragraph write insert topic example content summary summarize describe "
    "explain include mention placeholder field detail relevant appropriate".split()
)
#: The first content word of an instruction: the template's verbs and the verbs a prompt uses about writing.
INSTRUCTION_VERBS: Final = (
    "open provide deliver strengthen end write insert describe explain include mention give state offer "
    "summarize add list".split()
)
#: A field whose content stems are at least this share of the template's vocabulary (and at least
#: MIN_SHARED of them) restates an instruction; so does one opening with an instruction verb at VERB_SHARE, or
#: one whose every stem (at least MIN_ALL) is the template's. Fewer shared stems are a word in common.
INSTRUCTION_SHARE: Final = 0.6
VERB_SHARE: Final = 0.5
MIN_SHARED: Final = 3
MIN_ALL: Final = 2
#: A field sharing this share of its stems with one field of the worked example copies it.
EXAMPLE_SHARE: Final = 0.7
_MAX_INSTRUCTION_CHARS: Final = 300
#: What makes a field specific, so content whatever its words: a digit, an acronym, a code-like token, a quotation.
SPECIFIC: Final = re.compile(r"\d|\b[A-Z]{2,}s?\b|\w[._/]\w|`|\"[^\"]{3,}\"|“")
_LABEL: Final = re.compile(r"^\W*(?:" + "|".join(FIELDS) + r")\W*[:\-–—]\s*", re.IGNORECASE)


@lru_cache(maxsize=1)
def _vocabulary() -> tuple[frozenset[str], frozenset[str], tuple[frozenset[str], ...]]:
    """The template's stems, the instruction verbs' stems and each example field's stems (stemming loads here)."""
    template = " ".join([*SECTION_INSTRUCTIONS.values(), *META_WORDS])
    return (
        frozenset(surface_stems(template)),
        frozenset(surface_stems(" ".join(INSTRUCTION_VERBS))),
        tuple(frozenset(surface_stems(text)) for text in WORKED_EXAMPLE.values()),
    )


@lru_cache(maxsize=1)
def _field_stems() -> frozenset[str]:
    """The stems of the five field names."""
    return frozenset(surface_stems(" ".join(FIELDS)))


@lru_cache(maxsize=1)
def _example_stems() -> frozenset[str]:
    """The stems of the whole worked example."""
    return frozenset().union(*_vocabulary()[2])


@lru_cache(maxsize=1)
def _prefixes() -> frozenset[str]:
    """The first four letters of every template, meta and example word: the cheap test before stemming."""
    text = " ".join([*SECTION_INSTRUCTIONS.values(), *META_WORDS, *WORKED_EXAMPLE.values()])
    return frozenset(word[:4] for word in words(text) if len(word) > 2)


_T = TypeVar("_T")
#: How many words' answers :class:`_PerWord` remembers at most (then it forgets them all at once).
_MAX_REMEMBERED_WORDS: Final = 65536


class _PerWord(dict[bytes, _T]):
    """A function's answers for words as :func:`marsrag.tokens.ascii_words` gives them, remembered."""

    def __init__(self, answer: Callable[[str], _T]) -> None:
        super().__init__()
        self._answer = answer

    def __missing__(self, word: bytes) -> _T:
        if len(self) >= _MAX_REMEMBERED_WORDS:
            self.clear()
        self[word] = answer = self._answer(word.decode())
        return answer


def _counted(word: str) -> int:
    """1 for a word :func:`restated_instruction` counts (no stopword, its first four letters a template or
    example word's), else 0."""
    return int(word not in STOPWORDS and word[:4] in _prefixes())


def _surface_stem(word: str) -> str | None:
    """A word's surface stem, None when :func:`marsrag.tokens.surface_stems` leaves it out."""
    found = surface_stems(word)
    return found[0] if found else None


# Every field pays the count and most stop at it: a dict lookup per word, mapped at C speed, is the cheapest exact
# form found (words recur, so the answers are remembered); the stems likewise, for the fields past it.
_COUNTED: Final = _PerWord(_counted)
_SURFACE_STEMS: Final = _PerWord(_surface_stem)


def _template_count(body: str, ascii_found: list[bytes] | None) -> int:
    """How many of a text's words (``ascii_found``, when all are ASCII) start like a template or example word."""
    if ascii_found is not None:
        return sum(map(_COUNTED.__getitem__, ascii_found))
    prefixes = _prefixes()
    return sum(1 for word in words(body) if word[:4] in prefixes)


def _stems(body: str, ascii_found: list[bytes] | None) -> list[str]:
    """A text's surface stems (from ``ascii_found``, when all its words are ASCII)."""
    if ascii_found is not None:
        return [stem for stem in map(_SURFACE_STEMS.__getitem__, ascii_found) if stem is not None]
    return surface_stems(body)


def restated_instruction(value: str) -> str | None:
    """``"instruction"`` when a value rewords the template, ``"example"`` when it copies the example, else None."""
    if len(value) > _MAX_INSTRUCTION_CHARS:
        return None
    body = _LABEL.sub("", value)
    ascii_found = ascii_words(body)
    if _template_count(body, ascii_found) < MIN_ALL:
        return None
    found = _stems(body, ascii_found)
    if not found:
        return None
    distinct = set(found)
    template, verbs, example = _vocabulary()
    # A copy has EXAMPLE_SHARE of its own stems in one example field (their union is no smaller than the copy, and
    # the product grows with it), so in the whole example: one set test before the five.
    if len(distinct & _example_stems()) >= EXAMPLE_SHARE * len(distinct) and any(
        len(distinct & field) >= EXAMPLE_SHARE * len(distinct | field) for field in example
    ):
        return "example"
    shared = len(distinct & template)
    share = shared / len(distinct)
    # SPECIFIC last: its search costs more than the sets (each position tries every branch).
    if (
        shared == len(distinct) >= MIN_ALL
        or (shared >= MIN_SHARED and (share >= INSTRUCTION_SHARE or (found[0] in verbs and share >= VERB_SHARE)))
    ) and not SPECIFIC.search(body):
        return "instruction"
    return None


# -- a field described in the prompt's words (1.4.0) ------------------------------------------------------------


def describes_a_field(value: str) -> bool:
    """Whether a value only describes a field in the words a prompt uses about the answer ("An example hook
    sentence.", "Example loop.", "A hook for the loop section."): every stem is the template's vocabulary or a
    field's name, with at least one of each. The fields named alone ("the hook, the grip") and anything specific
    (a number, an acronym, code) are content."""
    if len(value) > _MAX_INSTRUCTION_CHARS:
        return False
    folded = value.casefold()
    if not any(name in folded for name in FIELDS):  # five substring tests settle almost every real answer
        return False
    body = _LABEL.sub("", value)
    ascii_found = ascii_words(body)
    distinct = set(_stems(body, ascii_found))
    fields = _field_stems()
    if not distinct & fields or distinct <= fields or not distinct <= _vocabulary()[0] | fields:
        return False
    return not SPECIFIC.search(body)


# -- an instruction quoted inside a longer field (1.3.0) ----------------------------------------------------------

#: Each instruction as a model copies it into a longer field: its first letter in either case (a sentence may
#: start with it, or run on into it), the rest as written, the final period optional.
QUOTED_INSTRUCTIONS: Final = tuple(text.rstrip(".") for text in SECTION_INSTRUCTIONS.values())
_QUOTED: Final = re.compile("|".join(f"(?i:{re.escape(text[0])}){re.escape(text[1:])}" for text in QUOTED_INSTRUCTIONS))


def _common_part(texts: tuple[str, ...]) -> str:
    """The longest text found in every one of ``texts`` (empty when they share nothing)."""
    first = min(texts, key=len)
    for size in range(len(first), 0, -1):
        for start in range(len(first) - size + 1):
            part = first[start : start + size]
            if all(part in text for text in texts):
                return part
    return ""


#: What every instruction contains (derived: " or " for the canonical template): a field without it quotes none,
#: found with one substring test, so real answers almost never pay for the search.
_QUOTED_RESTS: Final = tuple(text[1:] for text in QUOTED_INSTRUCTIONS)
QUOTE_GATE: Final = _common_part(_QUOTED_RESTS)


def quotes_instruction(value: str) -> bool:
    """Whether a value holds one of the template's instruction lines word for word, whatever surrounds it.

    A whole field that rewords an instruction is :func:`restated_instruction`'s; this finds the instruction
    pasted into a longer text ("Let's break it down: 1. HOOK: Open with one clear tension or stakes statement
    anchored to the user goal. 2. ..."), which says nothing about the goal where it stands.
    """
    # Substrings first, as the pattern tries every instruction at every position: a quote holds the gate and the
    # rest of its instruction after the first letter as written.
    return QUOTE_GATE in value and any(rest in value for rest in _QUOTED_RESTS) and _QUOTED.search(value) is not None


def snapshot() -> dict[str, object]:
    """These rules' parameters as plain data, for the contract's versioned snapshot."""
    return {
        "reject_reference_only": {
            "citation": CITATION.pattern,
            "source_header": SOURCE_HEADER.pattern,
            "path": PATH.pattern,
            "reference_words": sorted(REFERENCE_WORDS),
        },
        "placeholder_bracketed_spans": {
            "span": SPAN.pattern,
            "max_span_words": MAX_SPAN_WORDS,
            "max_words_around": MAX_WORDS_AROUND,
        },
        # Since 1.3.0: an instruction line quoted word for word inside a longer field.
        "reject_instruction_quoted": {"instructions": list(QUOTED_INSTRUCTIONS), "first_letter_any_case": True},
        "reject_template_reworded": {
            "vocabulary": "stems of the template's instruction lines and meta_words",
            "meta_words": list(META_WORDS),
            "instruction_verbs": list(INSTRUCTION_VERBS),
            "min_shared": MIN_SHARED,
            "min_all": MIN_ALL,
            "share": INSTRUCTION_SHARE,
            "verb_share": VERB_SHARE,
            "specific": SPECIFIC.pattern,
        },
        "reject_example_echo": {"example": dict(WORKED_EXAMPLE), "share": EXAMPLE_SHARE},
        # Since 1.4.0: a field described in the template's vocabulary and a field's name, and nothing else.
        "reject_field_description": {
            "vocabulary": "stems of the template's instruction lines and meta_words, and of the field names",
            "needs": "a field name and another word, none specific",
        },
    }
