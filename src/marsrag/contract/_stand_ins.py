"""Stand-ins for content (contract 1.2.0, 1.3.0): what small models write in a field instead of an answer.

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
  field, as a model pastes the template into its answer.

Each check starts with a test of one or two characters or of the length; stems (Snowball, loaded on first use)
are taken only for a short field whose words already look like the template's. Real answers pass those tests
often (sentences hold ``.``, and common words share the template's prefixes): measured on the tests' sample
answer, the rules cost about 135 microseconds for its five fields, most of it the path pattern and the stems;
the quoted-instruction check about 2 (one substring test gates it).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from marsrag.contract.example import WORKED_EXAMPLE
from marsrag.contract.fields import FIELDS, SECTION_INSTRUCTIONS
from marsrag.tokens import surface_stems, words

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


def reference_only(value: str) -> bool:
    """Whether a value is only source references: no word is left once they (and their lead words) are removed."""
    if len(value) > _MAX_REFERENCE_CHARS or not _REFERENCE_TRIGGERS.intersection(value):
        return False
    rest = SOURCE_HEADER.sub(" ", value)
    rest = CITATION.sub(" ", rest)
    rest = PATH.sub(" ", rest)
    if rest == value:
        return False
    return not any(word not in REFERENCE_WORDS for word in words(rest))


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
_SPAN_TRIGGERS: Final = frozenset("[{<")


def bracketed_placeholder(value: str) -> bool:
    """Whether a value is made of placeholder spans: no word outside them, or more words in them than around."""
    if not _SPAN_TRIGGERS.intersection(value):
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
def _prefixes() -> frozenset[str]:
    """The first four letters of every template, meta and example word: the cheap test before stemming."""
    text = " ".join([*SECTION_INSTRUCTIONS.values(), *META_WORDS, *WORKED_EXAMPLE.values()])
    return frozenset(word[:4] for word in words(text) if len(word) > 2)


def restated_instruction(value: str) -> str | None:
    """``"instruction"`` when a value rewords the template, ``"example"`` when it copies the example, else None."""
    if len(value) > _MAX_INSTRUCTION_CHARS:
        return None
    body = _LABEL.sub("", value)
    prefixes = _prefixes()
    if sum(1 for word in words(body) if word[:4] in prefixes) < MIN_ALL:
        return None
    found = surface_stems(body)
    if not found:
        return None
    distinct = set(found)
    template, verbs, example = _vocabulary()
    if any(len(distinct & field) >= EXAMPLE_SHARE * len(distinct | field) for field in example):
        return "example"
    if SPECIFIC.search(body):
        return None
    shared = len(distinct & template)
    share = shared / len(distinct)
    if shared == len(distinct) >= MIN_ALL or (
        shared >= MIN_SHARED and (share >= INSTRUCTION_SHARE or (found[0] in verbs and share >= VERB_SHARE))
    ):
        return "instruction"
    return None


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
QUOTE_GATE: Final = _common_part(tuple(text[1:] for text in QUOTED_INSTRUCTIONS))


def quotes_instruction(value: str) -> bool:
    """Whether a value holds one of the template's instruction lines word for word, whatever surrounds it.

    A whole field that rewords an instruction is :func:`restated_instruction`'s; this finds the instruction
    pasted into a longer text ("Let's break it down: 1. HOOK: Open with one clear tension or stakes statement
    anchored to the user goal. 2. ..."), which says nothing about the goal where it stands.
    """
    return QUOTE_GATE in value and _QUOTED.search(value) is not None


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
    }
